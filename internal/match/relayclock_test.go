package match

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/netsim"
)

// TestRelayClockSlowMachine: one machine of three, on wifi, is slow (its
// clock starved in bursts). With the relay clock the others play at full
// speed and stall no more than in a match without the slow machine; the
// relay decides the slow machine's late frames, and every machine ends
// with the offline truth of the final inputs, decisions included.
// Without the relay clock the slow machine holds the others back.
func TestRelayClockSlowMachine(t *testing.T) {
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	base := Config{Players: 3, Frames: 1800, Seed: 3, Profile: p, Relay: true, SlowMachine: 1}
	stallsPer := func(r Result, machines int) float64 {
		return float64(r.StallFrames+r.AdvantageStalls+r.LagStalls) / float64(machines)
	}

	clock := base
	clock.Slow, clock.RelayClock, clock.RelayAllowance = true, true, 60*time.Millisecond
	r := Run(clock)
	require.NoError(t, r.Err)
	require.True(t, r.Verified, r.Desync)
	require.Positive(t, r.Decisions, "the slow machine's late frames were decided")
	require.Zero(t, r.DecisionConflicts)
	require.GreaterOrEqual(t, r.OthersSpeedMin, 0.98)

	without := Run(base) // no slow machine, no relay clock
	require.True(t, without.Verified, without.Desync)
	require.LessOrEqual(t, float64(r.OthersStalls)/2, stallsPer(without, 3)+1)

	slow := base
	slow.Slow = true
	held := Run(slow) // the slow machine, no relay clock
	require.True(t, held.Verified, held.Desync)
	require.Zero(t, held.Decisions)
	require.Greater(t, held.OthersStalls, r.OthersStalls, "without the relay clock the others wait for it")
	t.Logf("others' stalls: %d with the relay clock, %d without; %.1f a machine with no slow machine; %d decisions",
		r.OthersStalls, held.OthersStalls, stallsPer(without, 3), r.Decisions)
}
