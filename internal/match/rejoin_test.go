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

// TestLateJoin: machines whose slots are reserved (rollback.Peer.Late)
// start mid-match as sessions joining in progress, and take their players
// from the stand-in at an agreed frame; every machine ends in the offline
// re-simulation's state, the stand-in's inputs from frame 0 included. The
// last case has a machine crash and come back in the same match.
func TestLateJoin(t *testing.T) {
	for _, tc := range []struct {
		name    string
		players int
		late    []match.LateJoin
		rejoin  bool
	}{
		{"2p", 2, []match.LateJoin{{Machine: 1, At: 3 * time.Second}}, false},
		{"4p-two-late", 4, []match.LateJoin{{Machine: 2, At: time.Second}, {Machine: 3, At: 9 * time.Second}}, false},
		{"4p-late-and-rejoin", 4, []match.LateJoin{{Machine: 3, At: 4 * time.Second}}, true},
		{"4p-late-after-rejoin", 4, []match.LateJoin{{Machine: 3, At: 14 * time.Second}}, true},
		{"4p-late-before-rejoin", 4, []match.LateJoin{{Machine: 3, At: 1 * time.Second}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := netsim.ParseProfile("wifi")
			require.NoError(t, err)
			c := match.Config{Players: tc.players, Frames: 1500, Seed: 5, Profile: p, Late: tc.late, StandIn: true}
			if tc.rejoin {
				c.DropAt, c.DropMachine, c.RejoinAfter = 200, 1, 3*time.Second
			}
			r := match.Run(c)
			require.NoError(t, r.Err)
			require.True(t, r.Completed, "ticks %d, detected %v, desync %s", r.Ticks, r.Detected, r.Desync)
			assert.True(t, r.Verified, r.Desync)
			require.Len(t, r.Late, len(tc.late))
			for k, l := range r.Late {
				assert.True(t, l.Verified, "late machine %d", tc.late[k].Machine)
				assert.Positive(t, l.Back)
				assert.Positive(t, l.StateSize)
				t.Logf("machine %d: at %v, took over at frame %d after %v, state %d B", tc.late[k].Machine, tc.late[k].At, l.Back, l.JoinTime, l.StateSize)
			}
			if tc.rejoin {
				assert.True(t, r.Rejoin.Verified)
			}
			assert.Zero(t, r.Suspects, "nobody is suspected of anything: %v", r.Suspected)
		})
	}
}

// TestRejoinAfterTheWindow: a machine that comes back after the others'
// RejoinWindow is refused by silence (nobody lets it watch); it fails
// with ErrJoinTimeout within HandshakeTimeout of its restart, naming the
// window. It watched through one machine after another for ever.
func TestRejoinAfterTheWindow(t *testing.T) {
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	r := match.Run(match.Config{Players: 2, Frames: 1500, Seed: 3, Profile: p,
		DropAt: 300, DropMachine: 1, RejoinAfter: 9 * time.Second, RejoinWindow: time.Second, StandIn: true})
	require.ErrorIs(t, r.Err, rollback.ErrJoinTimeout)
	assert.Contains(t, r.Err.Error(), "RejoinWindow")
	t.Log(r.Err)
}
