package rollback_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// lazyRun plays frames frames between two sessions over profile, both
// holding input in(f) at frame f, lazy or sending every tick, and
// returns their stats, their loss bursts and their quiet ticks while
// they played (not counting the Idle calls after); the two states must
// end equal.
func lazyRun(t *testing.T, lazy bool, frames int, profile netsim.Profile, in func(f int) rollback.Input) (st [2]rollback.Stats, bursts, playing [2]int64) {
	t.Helper()
	ss, gs, nw := connectedPairOver(t, profile, func(_ int, c *rollback.Config) {
		c.SendEveryTick = !lazy
		c.FixedInputLag = true
	})
	for range frames {
		for i, s := range ss {
			if s.Frame() >= rollback.Frame(frames) {
				continue
			}
			_, err := s.AddLocalInput(rollback.PlayerID(i), in(int(s.Frame())))
			require.NoError(t, err)
			_, err = s.Advance()
			require.NoError(t, err)
		}
		nw.Advance(16667 * time.Microsecond)
	}
	for i, s := range ss {
		playing[i] = s.Stats().QuietTicks
	}
	// Play out: every machine reaches frames and confirms it.
	for range 200 {
		for _, s := range ss {
			_, err := s.Idle()
			require.NoError(t, err)
		}
		nw.Advance(16667 * time.Microsecond)
	}
	for i, s := range ss {
		st[i] = s.Stats()
		ps, ok := s.PeerStats(0)
		require.True(t, ok)
		bursts[i] = ps.LossBursts
	}
	require.Equal(t, ss[0].Frame(), ss[1].Frame())
	assert.True(t, bytes.Equal(gs[0].Arena.Bytes(), gs[1].Arena.Bytes()), "the states differ")
	return st, bursts, playing
}

// TestLazySend: with inputs held for 31 frames at a time, a lazy session
// leaves out about every other tick's input packet once the match has
// run quietAfterLoss (5 s) on a clean link, never two in a row, and costs
// nothing else: the same rollbacks and re-simulated frames as sending
// every tick, since a changed input goes out on its tick. With an input
// that changes every frame, or on a link that loses datagrams, it leaves
// nothing out.
func TestLazySend(t *testing.T) {
	const frames = 900 // 15 s
	held := func(f int) rollback.Input { return rollback.Input(f / 31 % 16) }
	p := netsim.Profile{Latency: 20 * time.Millisecond}
	eager, _, _ := lazyRun(t, false, frames, p, held)
	lazy, bursts, _ := lazyRun(t, true, frames, p, held)
	for i := range lazy {
		assert.Zero(t, eager[i].QuietTicks)
		// Never two quiet ticks in a row: at most half of the sends.
		sends := lazy[i].PacketsSent + lazy[i].QuietTicks
		assert.LessOrEqual(t, 2*lazy[i].QuietTicks, sends+1, "machine %d", i)
		// Half of the ticks after the first 5 s of play, and of the 200 after.
		assert.Greater(t, lazy[i].QuietTicks, int64(300), "machine %d: few quiet ticks (%+v)", i, lazy[i])
		assert.Less(t, 10*lazy[i].PacketsSent, 8*eager[i].PacketsSent, "machine %d sent %d packets, against %d sending every tick", i, lazy[i].PacketsSent, eager[i].PacketsSent)
		assert.Equal(t, eager[i].Rollbacks, lazy[i].Rollbacks, "machine %d", i)
		assert.Equal(t, eager[i].ResimulatedFrames, lazy[i].ResimulatedFrames, "machine %d", i)
		assert.Equal(t, eager[i].StallFrames, lazy[i].StallFrames, "machine %d", i)
		assert.Zero(t, bursts[i], "machine %d", i)
	}
	_, _, changing := lazyRun(t, true, frames, p, func(f int) rollback.Input { return rollback.Input(f % 16) })
	for i := range changing {
		assert.Zero(t, changing[i], "machine %d: inputs that change every frame", i)
	}
	lossy := netsim.Profile{Latency: 20 * time.Millisecond, Loss: 0.02}
	_, _, quiet := lazyRun(t, true, frames, lossy, held)
	for i := range quiet {
		assert.Zero(t, quiet[i], "machine %d: a link that loses 2%%", i)
	}
}
