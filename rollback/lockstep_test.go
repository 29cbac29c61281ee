package rollback_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/internal/testgame"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// lockstepPair is two lockstep sessions, one player each, over netsim with
// profile p, with the handshake done.
type lockstepPair struct {
	nw    *netsim.Network
	ss    [2]*rollback.Session
	gs    [2]*testgame.Counter
	given [2]map[rollback.Frame]rollback.Input // the inputs each machine's session took
	rng   [2]uint64                            // xorshift: inputs that never repeat in a short period
}

func newLockstepPair(t *testing.T, p netsim.Profile, edit func(c *rollback.Config)) *lockstepPair {
	t.Helper()
	nw, err := netsim.New(2, 1, p)
	require.NoError(t, err)
	lp := &lockstepPair{nw: nw}
	for i := range 2 {
		g, err := testgame.NewCounter(4096)
		require.NoError(t, err)
		g.Record = true
		lp.gs[i] = g
		lp.given[i] = map[rollback.Frame]rollback.Input{}
		c := rollback.Config{Lockstep: true, Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
			Layout: rollback.Layout{8}, State: g.Arena, Game: g, Transport: nw.Endpoint(i),
			Clock: nw.Now, Rand: match.SeededRand(1, i), SessionID: 78}
		if edit != nil {
			edit(&c)
		}
		lp.ss[i], err = rollback.NewSession(c)
		require.NoError(t, err)
	}
	return lp
}

// tick runs one 60 Hz render frame of machine i: every input that is due,
// then Advance.
func (lp *lockstepPair) tick(t *testing.T, i int) rollback.Result {
	t.Helper()
	s, p := lp.ss[i], rollback.PlayerID(i)
	for {
		f := s.InputFrame(p)
		if lp.rng[i] == 0 {
			lp.rng[i] = uint64(i) + 0x9e3779b97f4a7c15
		}
		in := rollback.Input(lp.rng[i] & 0xff)
		queued, err := s.AddLocalInput(p, in)
		require.NoError(t, err)
		if !queued {
			break
		}
		lp.given[i][f] = in
		lp.rng[i] ^= lp.rng[i] << 13
		lp.rng[i] ^= lp.rng[i] >> 7
		lp.rng[i] ^= lp.rng[i] << 17
	}
	r, err := s.Advance()
	require.NoError(t, err)
	return r
}

// check verifies that both machines simulated frames 0, 1, 2, … in order,
// once each, with the inputs the players' own sessions took.
func (lp *lockstepPair) check(t *testing.T) {
	t.Helper()
	for i, g := range lp.gs {
		for k, f := range g.Frames {
			require.Equal(t, rollback.Frame(k), f, "machine %d simulates every frame once, in order", i)
			for p := range 2 {
				want, ok := lp.given[p][f]
				if !ok {
					want = 0 // frames before the input delay
				}
				require.Equal(t, want, g.Inputs[k][p], "machine %d, frame %d, player %d", i, f, p)
			}
		}
	}
}

// TestLockstepSchedule: at 10 Hz with a 200 ms playout delay on a clean
// link, frame 0 runs 200 ms after the peer's first inputs, then one frame
// every 100 ms exactly, with every input right, no hitch, no rollback and
// no snapshot.
func TestLockstepSchedule(t *testing.T) {
	lp := newLockstepPair(t, netsim.Profile{Latency: 30 * time.Millisecond}, func(c *rollback.Config) {
		c.TickRate, c.PlayoutDelay = 10, 200*time.Millisecond
	})
	var firstAt [2]time.Duration
	var perTick [2][]int
	for range 60 * 20 {
		for i := range 2 {
			before := lp.ss[i].Frame()
			r := lp.tick(t, i)
			assert.False(t, r.Hitch)
			if before == 0 && lp.ss[i].Frame() > 0 {
				firstAt[i] = lp.nw.Now()
			}
			perTick[i] = append(perTick[i], int(lp.ss[i].Frame()-before))
		}
		lp.nw.Advance(match.Tick)
	}
	lp.check(t)
	for i, s := range lp.ss {
		st := s.Stats()
		assert.Zero(t, st.Rollbacks)
		assert.Zero(t, st.Saves, "no snapshots with one peer")
		assert.Zero(t, st.Hitches)
		assert.Equal(t, lp.gs[0].Arena.Bytes(), lp.gs[1].Arena.Bytes())
		// 20 s at 10 Hz, less the start (handshake, one way, playout).
		assert.InDelta(t, 200-10*(firstAt[i].Seconds()), float64(st.Frame), 1, "machine %d", i)
		// After the first frame, exactly one frame every 6 render frames.
		start := int(firstAt[i] / match.Tick)
		for k := start; k+6 < len(perTick[i]); k += 6 {
			sum := 0
			for _, n := range perTick[i][k : k+6] {
				sum += n
				assert.LessOrEqual(t, n, 1)
			}
			require.Equal(t, 1, sum, "machine %d, render frames %d to %d", i, k, k+6)
		}
	}
	assert.InDelta(t, firstAt[0].Seconds(), firstAt[1].Seconds(), 0.05)

	// Without a playout delay, frame 0 runs 200 ms earlier: as soon as the
	// peer's first inputs are here.
	now := newLockstepPair(t, netsim.Profile{Latency: 30 * time.Millisecond}, func(c *rollback.Config) {
		c.TickRate, c.PlayoutDelay = 10, -1
	})
	for now.ss[0].Frame() == 0 {
		now.tick(t, 0)
		now.tick(t, 1)
		now.nw.Advance(match.Tick)
	}
	assert.InDelta(t, 0.2, (firstAt[0] - now.nw.Now() + match.Tick).Seconds(), 0.02)
}

// TestLockstepHitchAndCatchUp: a peer that freezes for half a second makes
// the other wait (a hitch a render frame, EventStarved naming it); when it
// thaws, its inputs for every tick it missed arrive at once and the waiting
// machine catches up at most 4 frames per Advance, then runs on schedule.
func TestLockstepHitchAndCatchUp(t *testing.T) {
	lp := newLockstepPair(t, netsim.Profile{Latency: 10 * time.Millisecond}, nil)
	run := func(ticks int, frozen bool) (hitches int, events []rollback.Event, steps []int) {
		for range ticks {
			before := lp.ss[0].Frame()
			r := lp.tick(t, 0)
			if r.Hitch {
				hitches++
			}
			events = append(events, r.Events...)
			steps = append(steps, int(lp.ss[0].Frame()-before))
			if !frozen {
				lp.tick(t, 1)
			}
			lp.nw.Advance(match.Tick)
		}
		return hitches, events, steps
	}
	h, _, _ := run(120, false)
	require.Zero(t, h, "no hitch on a clean link")
	h, ev, _ := run(30, true) // machine 1 freezes for 500 ms
	total := h
	assert.InDelta(t, 30-6, h, 2, "a hitch every render frame once the 100 ms buffer ran dry")
	require.NotEmpty(t, ev)
	assert.Equal(t, rollback.EventStarved, ev[0].Kind)
	assert.Equal(t, 0, ev[0].Peer, "blames the silent peer")
	h, ev, steps := run(60, false)
	assert.Equal(t, rollback.LockstepCatchUp, steps[1], "catches up 4 frames per Advance")
	for _, n := range steps {
		assert.LessOrEqual(t, n, rollback.LockstepCatchUp)
	}
	assert.Equal(t, 1, steps[len(steps)-1], "back on schedule")
	assert.Contains(t, ev, rollback.Event{Kind: rollback.EventResumed, Frame: ev[len(ev)-1].Frame, Peer: -1})
	assert.LessOrEqual(t, h, 2)
	total += h
	lp.check(t)
	assert.Equal(t, int64(total), lp.ss[0].Stats().Hitches, "Stats counts every Result.Hitch")
}

// TestLockstepRing: a playout delay longer than the input ring (6 s at
// 60 Hz is 360 frames) must not let the local inputs, which run ahead on
// their own clock, overwrite frames not yet simulated: the session refuses
// them instead, and every frame is simulated with the inputs given.
func TestLockstepRing(t *testing.T) {
	lp := newLockstepPair(t, netsim.Profile{Latency: 5 * time.Millisecond}, func(c *rollback.Config) {
		c.PlayoutDelay = 6 * time.Second
	})
	for range 60 * 15 {
		for i := range 2 {
			lp.tick(t, i)
		}
		lp.nw.Advance(match.Tick)
	}
	require.Greater(t, lp.ss[0].Frame(), rollback.Frame(256))
	assert.Less(t, len(lp.given[0]), 60*15, "inputs were refused while the ring was full")
	lp.check(t)
}
