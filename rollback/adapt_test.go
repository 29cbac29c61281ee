package rollback

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// TestChooseInterval: the adaptive policy's choice of k from the costs and
// the mispredictions (docs/architecture.md, "Snapshots").
func TestChooseInterval(t *testing.T) {
	t.Parallel()
	const us = 1e3 // ns
	for _, tc := range []struct {
		name               string
		step, save         float64
		rate, depth        float64
		deepest            int
		reach, want        Frame
		wantLess, wantMore Frame // when want is 0: a bound instead
	}{
		{name: "a free Step: two backups", save: 20 * us, rate: 0.1, depth: 3, deepest: 8, reach: 20, want: 20},
		{name: "no rollback: two backups", step: 500 * us, save: 20 * us, reach: 20, want: 20},
		// BenchmarkAdvance/rollback20-1MiB: a 19-frame rollback every frame,
		// each leaving its snapshot one frame behind the next one's.
		{name: "a cheap Step, a rollback every frame", step: 0.1 * us, save: 20 * us, rate: 1, depth: 19, deepest: 19, reach: 20, want: 20},
		{name: "a Step dearer than a copy: every frame", step: 500 * us, save: 20 * us, rate: 0.1, depth: 3, deepest: 8, reach: 20, want: 1},
		{name: "a free copy: every frame", step: 50 * us, rate: 0.05, depth: 3, deepest: 8, reach: 20, want: 1},
		{name: "a copy 4 Steps dear: in between", step: 50 * us, save: 200 * us, rate: 0.05, depth: 3, deepest: 8, reach: 20, want: 4},
		{name: "MaxRollback 1", step: 500 * us, save: 20 * us, rate: 0.1, depth: 1, deepest: 1, reach: 1, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, chooseInterval(tc.step, tc.save, tc.rate, tc.depth, tc.deepest, tc.reach))
		})
	}
}

// TestChooseIntervalMonotone: a dearer Step never saves less often, a
// dearer copy never more often, and k stays within 1 to MaxRollback.
func TestChooseIntervalMonotone(t *testing.T) {
	t.Parallel()
	costs := []float64{100, 1e3, 5e3, 2e4, 5e4, 1e5, 5e5, 2e6}
	for _, rate := range []float64{0.01, 0.05, 0.2, 1} {
		for _, depth := range []float64{1, 3, 8} {
			for _, other := range costs {
				lastStep, lastSave := Frame(21), Frame(0)
				for _, c := range costs {
					k := chooseInterval(c, other, rate, depth, int(2*depth), 20)
					require.True(t, k >= 1 && k <= 20, "k %d", k)
					assert.LessOrEqual(t, k, lastStep, "step %v save %v rate %v depth %v", c, other, rate, depth)
					lastStep = k
					k = chooseInterval(other, c, rate, depth, int(2*depth), 20)
					assert.GreaterOrEqual(t, k, lastSave, "step %v save %v rate %v depth %v", other, c, rate, depth)
					lastSave = k
				}
			}
		}
	}
}

// TestSetInterval: the ring's size follows k and is bounded by
// MaxRollback; slots once in the loops stay there.
func TestSetInterval(t *testing.T) {
	t.Parallel()
	sn := snapshots{backups: make([]backup, savestate.Slots), slots: 2, base: 2, reach: 20, interval: 20}
	sn.setInterval(20)
	assert.Equal(t, [3]int{20, 2, 2}, [3]int{int(sn.interval), sn.room, sn.slots}, "MaxRollback: two backups")
	sn.setInterval(1)
	assert.Equal(t, [3]int{1, 22, 22}, [3]int{int(sn.interval), sn.room, sn.slots}, "every frame: MaxRollback + 2")
	sn.setInterval(6)
	assert.Equal(t, [3]int{6, 6, 22}, [3]int{int(sn.interval), sn.room, sn.slots}, "20/6 rounded up, + 2; the loops keep 22")
	sn = snapshots{backups: make([]backup, savestate.Slots), slots: settledSlots, base: settledSlots, reach: maxRollbackLimit}
	sn.setInterval(1)
	assert.Equal(t, savestate.Slots, sn.room, "the longest rollback, saved every frame, with statements: every slot")
}

// TestCadenceWindow: a window's mispredictions are folded into the
// smoothed figures the choice uses, and the deepest is remembered one
// window more.
func TestCadenceWindow(t *testing.T) {
	t.Parallel()
	c := cadence{on: true, rate: priorRate, depth: priorDepth, lastDeepest: 10}
	for f := range adaptWindow {
		if f%10 == 0 {
			c.noteRollback(3 + f%20/10*2) // depths 3 and 5 in turn
		}
		require.Equal(t, f == adaptWindow-1, c.played(), "frame %d", f)
	}
	assert.Equal(t, 10, c.worst(), "the prior's deepest, still")
	c.roll()
	assert.InDelta(t, (priorRate+12.0/adaptWindow)/2, c.rate, 1e-12)
	assert.InDelta(t, (priorDepth+4.0)/2, c.depth, 1e-12)
	assert.Equal(t, 5, c.worst())
	for range adaptWindow {
		c.played()
	}
	assert.Equal(t, 5, c.worst(), "the window before")
	c.roll()
	assert.Equal(t, 0, c.worst())
	assert.InDelta(t, (priorRate+0.1)/4, c.rate, 1e-12, "no rollback: the rate halves each window")
	assert.InDelta(t, (priorDepth+4.0)/2, c.depth, 1e-12, "nor does the depth move")
	c.roll()
	assert.InDelta(t, (priorRate+0.1)/4, c.rate, 1e-12, "an empty window (never in a session) changes nothing")
}

// TestRingRestoresAtMis: saved every frame, a rollback restores the
// mispredicted frame's own snapshot and moves nothing; two backups move
// the older snapshot up in its region.
func TestRingRestoresAtMis(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		interval Frame
		at, from Frame
		runs     []Frame
	}{
		{interval: 1, at: 7, from: 7},
		{interval: 3, at: 6, from: 6},
		{interval: 8, at: 4, from: 0, runs: []Frame{0, 1, 2, 3}},
	} {
		t.Run(fmt.Sprint(tc.interval), func(t *testing.T) {
			t.Parallel()
			a, h := newSnapArena(t)
			sn := &snapshots{arena: a, backups: make([]backup, savestate.Slots), slots: 2, base: 2, reach: 8, interval: 8, on: true}
			sn.setInterval(tc.interval)
			for f := Frame(0); f < 10; f++ {
				*h.Get(a) = stateAt(f)
				anchor := max(0, f-5)
				if f == 0 {
					require.NoError(t, sn.save(0, 0))
				} else if slot := sn.saveSlot(f, anchor, anchor); slot >= 0 {
					require.NoError(t, sn.save(slot, f))
				}
			}
			*h.Get(a) = snapState{Next: 99, Acc: -1}
			run := &finalLog{arena: a, h: h}
			r, err := sn.restore(7, 4, 4, run)
			require.NoError(t, err)
			assert.Equal(t, tc.at, r.at)
			assert.Equal(t, tc.from, r.from)
			assert.Equal(t, tc.runs, run.frames)
			assert.False(t, run.bad)
			assert.Equal(t, stateAt(r.at), *h.Get(a), "the live state is the snapshot's")
		})
	}
}

// TestAdaptiveMeasures: without StepCost and SaveCost the policy measures
// with the Clock: here a clock that a Step moves by 300 µs and a save not
// at all, so it finds a dear Step and a free copy and saves every frame;
// with the costs given, it takes them and measures nothing.
func TestAdaptiveMeasures(t *testing.T) {
	t.Parallel()
	for _, given := range []bool{false, true} {
		t.Run(fmt.Sprint("given=", given), func(t *testing.T) {
			t.Parallel()
			p, err := netsim.ParseProfile("wifi")
			require.NoError(t, err)
			nw, err := netsim.New(2, 3, p)
			require.NoError(t, err)
			var ss [2]*Session
			var cpu [2]time.Duration
			for i := range ss {
				a, err := savestate.New(1024)
				require.NoError(t, err)
				h, err := savestate.Alloc[[MaxPlayers]int64](a)
				require.NoError(t, err)
				g := &walkGame{a: a, h: h}
				c := Config{Players: 2, Local: []PlayerID{PlayerID(i)}, Peers: []Peer{{Players: []PlayerID{PlayerID(1 - i)}}},
					Layout: Layout{2}, State: a, Transport: nw.Endpoint(i),
					Game:  GameFunc(func(f Frame, in []PlayerInput) { cpu[i] += 300 * time.Microsecond; g.Step(f, in) }),
					Clock: func() time.Duration { return nw.Now() + cpu[i] }}
				if given {
					c.StepCost, c.SaveCost = time.Millisecond, 2*time.Millisecond
				}
				ss[i], err = NewSession(c)
				require.NoError(t, err)
			}
			for tick := range 900 {
				for i, s := range ss {
					_, err := s.AddLocalInput(PlayerID(i), Input(tick/(5+i)%4))
					require.NoError(t, err)
					_, err = s.Advance()
					require.NoError(t, err)
				}
				nw.Advance(time.Second / 60)
			}
			sn := &ss[0].snaps
			require.Positive(t, ss[0].stats.Rollbacks)
			if given {
				assert.Nil(t, sn.cad.clock, "nothing measured")
				assert.Equal(t, float64(time.Millisecond), sn.cad.step)
				assert.Equal(t, float64(2*time.Millisecond), sn.cad.save)
				return
			}
			assert.Equal(t, float64(300*time.Microsecond), sn.cad.step, "every timed Step took 300 µs")
			assert.Zero(t, sn.cad.save, "no save moved the clock")
			assert.Equal(t, Frame(1), sn.interval, "a free copy: every frame")
			assert.Equal(t, 2+int(sn.reach), sn.room)
		})
	}
}

// sumRecorder keeps the desync checksums of the final frames.
type sumRecorder struct{ sums map[Frame]uint64 }

func (r *sumRecorder) Begin(MatchInfo)                {}
func (r *sumRecorder) Confirmed(Frame, []PlayerInput) {}
func (r *sumRecorder) Checksum(f Frame, sum uint64)   { r.sums[f] = sum }

// TestPoliciesSimulateTheSame: which frames are saved changes the CPU,
// never the game: every policy gives every final frame the same state as
// two backups (the checksum of the state every 5 frames), on wifi with 2
// machines and on hell with 3 (statements: the kept settled slot; every
// 25 frames, as the 8 checkpoints must reach past the settled frame, some
// 100 frames behind with 64-frame statements).
func TestPoliciesSimulateTheSame(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		profile           string
		n                 int
		every, sums, same int
	}{{"wifi", 2, 5, 40, 40}, {"hell", 3, 25, 25, 20}} {
		t.Run(tc.profile, func(t *testing.T) {
			t.Parallel()
			var want map[Frame]uint64
			for _, policy := range policies {
				rec := &sumRecorder{sums: map[Frame]uint64{}}
				ss := playWalk(t, tc.n, tc.profile, 1500, func(c *Config) {
					policy.edit(c)
					c.ChecksumEvery = tc.every
					if c.Local[0] == 0 {
						c.Recorder = rec
					}
				}, func(*Session) {})
				require.Positive(t, ss[0].stats.Rollbacks, policy.name)
				switch policy.name {
				case "adaptive-told":
					require.Equal(t, Frame(1), ss[0].snaps.interval, "a dear Step: the ring saves every frame")
				case "every-3":
					require.Equal(t, Frame(3), ss[0].snaps.interval)
				}
				require.Greater(t, len(rec.sums), tc.sums, "%s: %d frames", policy.name, ss[0].Frame())
				if want == nil {
					want = rec.sums
					continue
				}
				same := 0
				for f, sum := range rec.sums {
					if w, ok := want[f]; ok {
						require.Equal(t, w, sum, "%s against %s: the state at the start of frame %d", policy.name, policies[0].name, f)
						same++
					}
				}
				require.Greater(t, same, tc.same, "%s: frames compared", policy.name)
			}
		})
	}
}
