package match

import (
	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
)

// The misprediction depth of a rollback is how many frames back its first
// mispredicted frame was: the present minus that frame, the quantity
// rollback.Stats.MaxRollbackFrames keeps the maximum of. The session does
// not report it per rollback (Result.Resimulated counts the frames
// re-simulated, which start at a snapshot at or before the mispredicted
// frame; the network log's restore records have it, at the cost of a
// record for every step, send and receive), so a machine measures it
// itself: a probe sees every frame the live state simulates, with its
// inputs, and the first frame of a re-simulation whose inputs differ from
// the ones it was last simulated with is the mispredicted frame (the
// session rolls back from the earliest frame whose input it learnt was
// other than the one it used).

// probeFrames is how many frames of inputs the probe remembers: more than
// a rollback re-simulates (at most twice maxRollbackLimit).
const probeFrames = 4 * maxRollbackLimit

// mispredictions measures one machine's rollbacks' misprediction depths.
type mispredictions struct {
	players int
	// armed is set by the Observer's Simulating(next): the next Game.Step
	// of frame next is the live state's.
	armed bool
	next  rollback.Frame
	// present is the frame after the newest simulated; last the last frame
	// stepped.
	present, last rollback.Frame
	// During a re-simulation: its present (the rollback's target) and the
	// first frame whose inputs changed (-1: none yet).
	resim         bool
	target, first rollback.Frame
	frames        [probeFrames]rollback.Frame // the frame each slot of inputs holds (-1: none)
	inputs        [probeFrames][rollback.MaxPlayers]rollback.Input

	depths [DepthBuckets]int64 // rollbacks by misprediction depth (the last bucket: that many or more)
	none   int64               // rollbacks that found no changed input (a forced rollback, ConstantCost)
}

func newMispredictions(players int) *mispredictions {
	p := &mispredictions{players: players, last: -1}
	for i := range p.frames {
		p.frames[i] = -1
	}
	return p
}

// step notes that the live state simulated frame f with in.
func (p *mispredictions) step(f rollback.Frame, in []rollback.PlayerInput) {
	switch {
	case f >= p.present:
		p.flush()
		p.present = f + 1
	case !p.resim || f <= p.last:
		// A re-simulation starts (one right after another: a frame not
		// after the last one stepped).
		p.flush()
		p.resim, p.target, p.first = true, p.present, -1
	}
	slot := int(f) % probeFrames
	if f < 0 {
		slot += probeFrames
	}
	changed := p.frames[slot] != f
	for i := range min(p.players, len(in)) {
		if p.inputs[slot][i] != in[i].Input {
			changed = true
			p.inputs[slot][i] = in[i].Input
		}
	}
	p.frames[slot] = f
	if p.resim && p.first < 0 && changed {
		p.first = f
	}
	p.last = f
}

// restart forgets the frames simulated so far, for a new session of the
// same machine (a restart after a crash); the counts stay.
func (p *mispredictions) restart() {
	p.flush()
	p.armed, p.present, p.last = false, 0, -1
	for i := range p.frames {
		p.frames[i] = -1
	}
}

// flush counts the re-simulation in progress, if any.
func (p *mispredictions) flush() {
	if !p.resim {
		return
	}
	p.resim = false
	if p.first < 0 {
		p.none++
		return
	}
	p.depths[min(int(p.target-p.first), DepthBuckets-1)]++
}

// probedGame is a machine's game with its misprediction probe: every
// Game.Step of the live state (the one the Observer announced) goes to the
// probe too. steps counts every Game.Step call (workMeter).
type probedGame struct {
	*arena.Game // StepPartial and the rest
	step        rollback.Game
	p           *mispredictions
	steps       *int64
}

func (g probedGame) Step(f rollback.Frame, in []rollback.PlayerInput) {
	*g.steps++
	g.step.Step(f, in)
	if g.p.armed && f == g.p.next {
		g.p.armed = false
		g.p.step(f, in)
	}
}

// probedObserver is a machine's Observer (its sound ledger, or none) with
// the probe told which Game.Step is the live state's.
type probedObserver struct {
	next rollback.Observer
	p    *mispredictions
}

func (o probedObserver) Simulating(f rollback.Frame) {
	o.p.armed, o.p.next = true, f
	if o.next != nil {
		o.next.Simulating(f)
	}
}

func (o probedObserver) Extrapolating(on bool) {
	if o.next != nil {
		o.next.Extrapolating(on)
	}
}
