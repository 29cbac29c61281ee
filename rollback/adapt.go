package rollback

import (
	"math"
	"time"

	"github.com/rewindgg/rewind/savestate"
)

// SnapshotPolicy chooses when the session saves and restores the arena.
//
// The zero SnapshotPolicy, the default, is the adaptive policy (its
// String is "adaptive"): a ring of snapshots saved every k frames, k
// chosen again every 2 s from what a Game.Step and a snapshot copy cost
// (Config.StepCost and Config.SaveCost, or measured with Config.Clock)
// and how often and how deep the session mispredicts, to keep both the
// CPU per simulated second and the worst tick low. While nothing is
// mispredicted, or with a free Step, k is MaxRollback and the ring is
// TwoBackups' two slots; the cheaper a Step against a copy, the nearer k
// is to MaxRollback; with a Step dearer than a copy k falls to 1, a save
// every frame (GGPO's policy). The ring holds at most ⌈MaxRollback/k⌉ + 2
// snapshots (+1 with three or more machines), each the size of the
// arena's live region, allocated on first use and kept
// (docs/architecture.md, "Snapshots").
type SnapshotPolicy uint8

// Snapshot policies.
const (
	adaptive SnapshotPolicy = iota // adaptive
	// TwoBackups is the INVERSUS policy: two snapshots; a rollback
	// restores the newest one not after the first mispredicted frame.
	// Cheap on average, with a spike on a deep misprediction.
	TwoBackups // two-backups
	// ConstantCost restores a MaxRollback-old snapshot and re-simulates
	// MaxRollback frames on every frame, whether or not anything was
	// mispredicted: the worst case every frame, so the cost never spikes.
	ConstantCost // constant-cost
)

// The adaptive policy's pace.
const (
	// adaptWindow is how many new frames the policy watches between two
	// choices of its cadence: 2 s.
	adaptWindow = 120
	// stepSample: measuring with the Clock, one new frame in stepSample
	// has its Step timed.
	stepSample = 16
	// priorRate and priorDepth are the rollbacks a frame and their mean
	// depth the adaptive policy assumes before it has watched any.
	priorRate, priorDepth = 1.0 / 60, 2
	// settledSlots are the two backups and the snapshot kept at the
	// settled frame (three or more machines: statements).
	settledSlots = 3
)

// validateCadence checks the adaptive policy's fields.
func (c *Config) validateCadence() error {
	switch {
	case c.SnapshotInterval < 0 || c.SnapshotInterval > c.maxRollback():
		return cfgErr("SnapshotInterval", "%d (want 1 to MaxRollback, %d, or 0 to adapt)", c.SnapshotInterval, c.maxRollback())
	case c.SnapshotInterval != 0 && c.Snapshots != adaptive:
		return cfgErr("SnapshotInterval", "%d: the %v policy has its own cadence", c.SnapshotInterval, c.Snapshots)
	case c.StepCost < 0:
		return cfgErr("StepCost", "negative duration %v", c.StepCost)
	case c.SaveCost < 0:
		return cfgErr("SaveCost", "negative duration %v", c.SaveCost)
	}
	return nil
}

// cadence is the adaptive policy's watch: the costs of a Step and of a
// copy, and the mispredictions of the last windows. It decides only which
// frames are saved, never what is simulated; its figures come from the
// Config or from the Config's Clock (which a reproducible run makes
// virtual), never from a clock of its own.
type cadence struct {
	on    bool                 // the interval adapts (the adaptive policy in rollback mode, not forced)
	clock func() time.Duration // measures the costs; nil when they were given
	step  float64              // ns: one Game.Step
	save  float64              // ns: one snapshot copy

	frames, rollbacks int // in the current window
	depths, deepest   int // the rollbacks' depths summed, and the deepest
	lastDeepest       int // the deepest of the window before
	rate, depth       float64
	// rate is the smoothed rollbacks per frame and depth their mean
	// depth (frames from the mispredicted one to the present).
}

// measuring reports whether the costs are measured, not given.
func (c *cadence) measuring() bool { return c.on && c.clock != nil }

// noteStep folds one timed Step into the estimate.
func (c *cadence) noteStep(d time.Duration) { c.step = smooth(c.step, float64(d)) }

// noteSave folds one timed copy into the estimate.
func (c *cadence) noteSave(d time.Duration) { c.save = smooth(c.save, float64(d)) }

// smooth is an exponentially weighted mean, a quarter to the new sample.
func smooth(old, v float64) float64 {
	if old == 0 {
		return v
	}
	return old + (v-old)/4
}

// noteRollback counts a rollback of depth frames.
func (c *cadence) noteRollback(depth int) {
	c.rollbacks++
	c.depths += depth
	c.deepest = max(c.deepest, depth)
}

// played counts a new frame; it reports whether the window is over (then
// roll it and choose again).
func (c *cadence) played() bool {
	c.frames++
	return c.on && c.frames >= adaptWindow
}

// roll folds the window into the smoothed figures and starts the next.
func (c *cadence) roll() {
	if c.frames == 0 {
		return
	}
	c.rate = (c.rate + float64(c.rollbacks)/float64(c.frames)) / 2
	if c.rollbacks > 0 {
		c.depth = (c.depth + float64(c.depths)/float64(c.rollbacks)) / 2
	}
	c.lastDeepest, c.deepest = c.deepest, 0
	c.frames, c.rollbacks, c.depths = 0, 0, 0
}

// worst is the deepest rollback of this window and the last.
func (c *cadence) worst() int { return max(c.deepest, c.lastDeepest) }

// chooseInterval is the adaptive policy's choice of k, the frames between
// two saves, 1 to reach (MaxRollback, which is two backups), from the
// model of docs/architecture.md ("Snapshots"). With step and save the
// costs of a Step and of a copy, rate rollbacks a frame of mean depth
// depth and the deepest of them deepest frames: a rollback restores the
// newest snapshot not after its mispredicted frame, which is either the
// ring's, up to k-1 frames before it ((k-1)/2 on average), or where the
// rollback before it left its snapshot (moved up to its anchor frame),
// about 1/rate frames before it. So a rollback re-simulates depth + x(k)
// frames, x(k) = min((k-1)/2, 1/rate); a ring saved every k frames costs
// a frame
//
//	step + save/k + rate × (save + step × (depth + x(k)))
//
// (the new frame, the saves, each rollback's restore and re-simulation),
// and a tick that rolls back d frames costs about
//
//	step × (d + 1 + x(k)) + save
//
// with d the deepest (the worst tick) or the mean depth (a typical
// rollback's tick, which sets the tick cost's 99th percentile).
//
// The choice is the k whose largest excess over the best of each, is
// least, the cheapest of equals: the CPU against the better of the two
// fixed policies (k = 1, saving every frame, and k = reach, two backups),
// the worst and the typical tick against k = 1, which has the best of
// both. So no figure is much worse than under the better fixed policy for
// it, and a k between them is taken where it is cheaper than both at
// ticks as good, or where the two trade CPU against ticks. With a free
// Step, or no rollback at all, it is reach.
func chooseInterval(step, save, rate, depth float64, deepest int, reach Frame) Frame {
	if reach <= 1 || step <= 0 || rate <= 0 {
		return max(reach, 1)
	}
	extra := func(k float64) float64 { return min((k-1)/2, 1/rate) }
	cost := func(k float64) float64 { return step + save/k + rate*(save+step*(depth+extra(k))) }
	tick := func(d, k float64) float64 { return step*(d+1+extra(k)) + save }
	bestCost := min(cost(1), cost(float64(reach)))
	deep := float64(deepest)
	worst, typical := tick(deep, 1), tick(depth, 1)
	choice, excess, choiceCost := reach, math.Inf(1), math.Inf(1)
	for k := Frame(1); k <= reach; k++ {
		kf := float64(k)
		c := cost(kf)
		e := max(c/bestCost, tick(deep, kf)/worst, tick(depth, kf)/typical)
		if e < excess-1e-9 || (e <= excess+1e-9 && c < choiceCost) {
			choice, excess, choiceCost = k, min(e, excess), c
		}
	}
	return choice
}

// setInterval makes the policy save every k frames into a ring of as many
// slots as that needs: the base two (three with statements) when k is
// MaxRollback, as TwoBackups, and reach/k more otherwise. Slots once used
// stay in the loops until the policy needs fewer (their snapshots are
// superseded like any other); the arena keeps their regions.
func (sn *snapshots) setInterval(k Frame) {
	sn.interval, sn.room = k, sn.base
	if k < sn.reach {
		sn.room = min(savestate.Slots, sn.base+int((sn.reach+k-1)/k))
	}
	sn.slots = max(sn.slots, sn.room)
}

// adapt ends a window of the adaptive policy: it chooses the interval
// again.
func (sn *snapshots) adapt() {
	c := &sn.cad
	c.roll()
	sn.setInterval(chooseInterval(c.step, c.save, c.rate, c.depth, c.worst(), sn.reach))
}

// timeStep reports whether the Step of new frame f is to be timed.
func (sn *snapshots) timeStep(f Frame) bool { return sn.cad.measuring() && f%stepSample == 0 }

// policy sets up the adaptive policy from cfg, once the base slots are
// known: a fixed interval, or the watch that adapts it (rollback mode,
// not forced), with the costs given or measured with cfg.Clock.
func (sn *snapshots) policy(cfg *Config) {
	if cfg.Snapshots != adaptive || sn.forced > 0 || !sn.on || sn.reach == 0 {
		return
	}
	if cfg.SnapshotInterval > 0 {
		sn.setInterval(Frame(cfg.SnapshotInterval))
		return
	}
	// Until the first window's figures, the prior: a rollback a second,
	// 2 frames deep, the deepest half of MaxRollback.
	sn.cad = cadence{on: true, step: float64(cfg.StepCost), save: float64(cfg.SaveCost),
		rate: priorRate, depth: priorDepth, lastDeepest: int(sn.reach) / 2}
	if cfg.StepCost == 0 && cfg.SaveCost == 0 {
		sn.cad.clock = cfg.Clock // nothing known yet: two backups
		return
	}
	c := &sn.cad
	sn.setInterval(chooseInterval(c.step, c.save, c.rate, c.depth, c.worst(), sn.reach))
}
