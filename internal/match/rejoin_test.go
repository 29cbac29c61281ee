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

// TestRejoin: a machine crashes, restarts (a new process: a fresh arena,
// a new session joining in progress) and takes its players back; every
// machine ends in the offline re-simulation's state, the stand-in's
// inputs for its absence included, on 2 and on 4 machines.
func TestRejoin(t *testing.T) {
	for _, tc := range []struct {
		players int
		after   time.Duration
	}{{2, 2 * time.Second}, {4, 7 * time.Second}, {2, 7 * time.Second}} {
		t.Run(fmt.Sprintf("%dp-after%v", tc.players, tc.after), func(t *testing.T) {
			p, err := netsim.ParseProfile("wifi")
			require.NoError(t, err)
			r := match.Run(match.Config{Players: tc.players, Frames: 1500, Seed: 3, Profile: p,
				DropAt: 300, DropMachine: 1, RejoinAfter: tc.after, StandIn: true})
			require.NoError(t, r.Err)
			require.True(t, r.Completed, "ticks %d", r.Ticks)
			assert.True(t, r.Verified, r.Desync)
			rj := r.Rejoin
			assert.True(t, rj.Rejoined)
			assert.True(t, rj.Verified)
			assert.Greater(t, rj.Back, rj.From)
			assert.Zero(t, r.Suspects, "nobody is suspected of anything: %v", r.Suspected)
			t.Logf("from %d back %d, join %v, state %d B", rj.From, rj.Back, rj.JoinTime, rj.StateSize)
		})
	}
}

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
