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

// TestLockstep plays whole lockstep matches, 2 and 4 players at 60 Hz and at
// 10 Hz, and checks every machine ends in the offline re-simulation's state
// without a single rollback.
func TestLockstep(t *testing.T) {
	t.Parallel()
	wifi, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	for _, tc := range []struct {
		players, hz, frames int
	}{{2, 60, 1800}, {4, 60, 1800}, {2, 10, 300}, {4, 10, 300}} {
		t.Run(fmt.Sprintf("%dp-%dHz", tc.players, tc.hz), func(t *testing.T) {
			seeds := uint64(3)
			if match.RaceEnabled {
				seeds = 1 // a sample (make race): make test runs the three without the race detector
			}
			for seed := uint64(1); seed <= seeds; seed++ {
				r := match.Run(match.Config{Players: tc.players, Frames: tc.frames, Seed: seed, Profile: wifi,
					Lockstep: true, TickRate: tc.hz, Extrapolate: true})
				require.NoError(t, r.Err)
				require.True(t, r.Completed, "seed %d", seed)
				require.True(t, r.Verified, "seed %d: %s", seed, r.Desync)
				assert.Zero(t, r.Rollbacks, "lockstep never rolls back")
				assert.Zero(t, r.ResimulatedFrames)
				// The match lasts its frames at the tick rate, plus the start.
				want := time.Duration(tc.frames) * time.Second / time.Duration(tc.hz)
				assert.InDelta(t, want.Seconds(), r.SimulatedSeconds(), 1.5, "seed %d", seed)
				t.Logf("seed %d: %.1f s, hitches %d, stalls %d, %d bytes", seed, r.SimulatedSeconds(), r.Hitches, r.StallFrames, r.BytesSent)
				if seed == 1 {
					again := match.Run(match.Config{Players: tc.players, Frames: tc.frames, Seed: seed, Profile: wifi,
						Lockstep: true, TickRate: tc.hz, Extrapolate: true})
					assert.Equal(t, r.Checksums, again.Checksums, "same seed, same match")
					assert.Equal(t, [3]int64{r.Hitches, r.BytesSent, int64(r.Ticks)}, [3]int64{again.Hitches, again.BytesSent, int64(again.Ticks)})
				}
			}
		})
	}
}

// TestLockstepDisconnect drops one of three lockstep machines (a crash and a
// clean Close): the two others agree on its disconnect frame, undo any
// frame they simulated past it (the only rollback lockstep does, from the
// snapshots it keeps for three or more machines) and end in the offline
// re-simulation's state.
func TestLockstepDisconnect(t *testing.T) {
	t.Parallel()
	var undone int64
	for _, profile := range []string{"wifi", "hell"} {
		p, err := netsim.ParseProfile(profile)
		require.NoError(t, err)
		for _, clean := range []bool{false, true} {
			for seed := uint64(1); seed <= 4; seed++ {
				r := match.Run(match.Config{Players: 3, Frames: 900, Seed: seed, Profile: p, Lockstep: true,
					DropAt: 400, DropMachine: 1, DropClean: clean})
				require.NoError(t, r.Err, "%s clean=%v seed %d", profile, clean, seed)
				require.True(t, r.Completed, "%s clean=%v seed %d", profile, clean, seed)
				require.True(t, r.Verified, "%s clean=%v seed %d: %s", profile, clean, seed, r.Desync)
				assert.GreaterOrEqual(t, r.DisconnectFrame, rollback.Frame(400))
				assert.LessOrEqual(t, r.Rollbacks, int64(2), "at most one cut undone per remaining machine")
				undone += r.Rollbacks
				t.Logf("%s clean=%v seed %d: disconnect frame %d, rollbacks %d, hitches %d", profile, clean, seed, r.DisconnectFrame, r.Rollbacks, r.Hitches)
			}
		}
	}
	assert.Positive(t, undone, "some cut fell before frames already simulated, and was undone")
}

// TestLockstepTable measures the article's comparison (docs/lockstep.md has
// the full table from make lockstep-table): lockstep over the TCP model
// hitches at 100 ms and 1% loss and far more at 250 ms and 5%, while the
// redundant inputs over plain datagrams do not; at 2 s one way with 25%
// loss a 250 ms playout delay plays without a hitch once started.
func TestLockstepTable(t *testing.T) {
	t.Parallel()
	seeds := uint64(2)
	if match.RaceEnabled {
		seeds = 1 // a sample (fewer hitches to clear the same bars): make test runs the two without the race detector
	}
	play := func(profile string, reliable bool, playout time.Duration) (hitches int64) {
		p, err := netsim.ParseProfile(profile)
		require.NoError(t, err)
		for seed := uint64(1); seed <= seeds; seed++ {
			r := match.Run(match.Config{Players: 2, Frames: 3600, Seed: seed, Profile: p, Lockstep: true,
				Reliable: reliable, Playout: playout, HandshakeTimeout: time.Minute})
			require.NoError(t, r.Err, "%s reliable=%v seed %d", profile, reliable, seed)
			require.True(t, r.Verified, "%s reliable=%v seed %d: %s", profile, reliable, seed, r.Desync)
			require.Zero(t, r.Rollbacks)
			hitches += r.Hitches
		}
		t.Logf("%s reliable=%v playout=%v: %d hitches", profile, reliable, playout, hitches)
		return hitches
	}
	tcp100 := play("latency=100ms,loss=1%", true, 0)
	assert.Greater(t, tcp100, int64(100), "TCP hitches at 100 ms, 1%")
	assert.Zero(t, play("latency=100ms,loss=1%", false, 0), "UDP redundancy does not")
	assert.Greater(t, play("latency=250ms,loss=5%", true, 0), 2*tcp100, "TCP hitches far more at 250 ms, 5%")
	assert.Zero(t, play("latency=250ms,loss=5%", false, 0))
	assert.Zero(t, play("latency=2s,loss=25%", false, 250*time.Millisecond), "2 s, 25%, 250 ms playout: no hitch")
}
