//go:build rewind_adversary

package match_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// The tests here use the soak's test hooks (Config.NoStatements,
// Config.CorruptJoinState), compiled only with the build tag
// rewind_adversary (make test passes it).

// TestRejoinCorruptState: every machine hands the one that comes back a
// state with one bit flipped; their checksums of the take-over frame
// differ from its own, and it never plays: ErrJoinState. (With the
// comparison taken out of joinStep, this test fails: the joiner takes
// over with the corrupted state.)
func TestRejoinCorruptState(t *testing.T) {
	for _, players := range []int{2, 4} {
		t.Run(fmt.Sprintf("%dp", players), func(t *testing.T) {
			p, err := netsim.ParseProfile("wifi")
			require.NoError(t, err)
			r := match.Run(match.Config{Players: players, Frames: 1200, Seed: 4, Profile: p,
				DropAt: 300, DropMachine: 1, RejoinAfter: 2 * time.Second, CorruptJoinState: true})
			require.ErrorIs(t, r.Err, rollback.ErrJoinState)
			assert.False(t, r.Rejoin.Rejoined)
			assert.Contains(t, r.Err.Error(), "not played")
		})
	}
}
