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

// TestRejoinRefutesALyingSource: of 4 machines, the one the machine that
// comes back watches first alone hands it a corrupted state; the others'
// checksums of the take-over frame refute it. The joiner watches through
// another machine, takes over from a state every machine confirmed,
// verifies, and names the liar (SuspectDesync). (It used to stop at the
// first refutation: ErrJoinState, on one machine's word.)
func TestRejoinRefutesALyingSource(t *testing.T) {
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	c := match.Config{Players: 4, Frames: 1500, Seed: 4, Profile: p, DropAt: 300, DropMachine: 1, RejoinAfter: 2 * time.Second}
	honest := match.Run(c)
	require.NoError(t, honest.Err)
	require.True(t, honest.Rejoin.Rejoined)
	first := honest.Rejoin.Source
	c.CorruptJoinState, c.CorruptJoinStateBy = true, first+1
	r := match.Run(c)
	require.NoError(t, r.Err)
	assert.True(t, r.Rejoin.Rejoined)
	assert.True(t, r.Verified, r.Desync)
	assert.Equal(t, 1, r.Rejoin.Refuted, "machine %d's state, watched first, was refuted", first)
	assert.NotEqual(t, first, r.Rejoin.Source, "the state came from another machine")
	assert.Positive(t, r.Suspected[rollback.SuspectDesync], "the lying source was not named")
	assert.Zero(t, honest.Suspects)
}
