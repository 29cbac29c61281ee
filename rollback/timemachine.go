package rollback

import (
	"slices"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/desync/bundle"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/savestate"
)

// This file is the time machine's networked half (docs/protocol.md, "The
// trace section"). On a detected desync the bundler re-simulates the span
// from the last agreed state with a checksum per frame and the marks of
// each step (bundle.go); its trace section rides behind our state in the
// state exchange (exchange.go), and the peer's, once the whole payload is
// in, is compared with ours: the report (desync.Error) then names the
// first divergent frame (FirstFrame) and the first system whose output
// differs in the step before it (System). It is diagnostic only: what the
// peer's section claims never decides which state a recovery keeps, and
// the field and the recovery never wait for it.
//
// The bundler, and so the time machine, is on when Config.Bundle or
// Config.Marks is set (with peers): its steady cost is the bundler's.

// trace makes the bundle of desync e (the re-simulation; handed to
// Config.Bundle when set) and attaches its trace section to the exchange,
// if none of ours went out yet: the exchange starts in the same call as
// the detection, before anything is sent.
func (c *checksums) trace(e *desync.Error, h *horizon, a *savestate.Arena, ap *app) {
	if c == nil || c.bun == nil {
		return
	}
	c.bun.write(e, h, a, ap)
	if x := c.ex; x != nil && x.z != nil && !x.sent {
		c.offer(x, x.z)
	}
}

// offer sets x's payload: our compressed state z, and behind it the trace
// section of the bundler's latest re-simulation, if it spans x's frame.
func (c *checksums) offer(x *exchange, z []byte) {
	x.z = z
	tr := c.bun.section(x.frame)
	x.mine = payload(z, tr)
	x.own = len(x.mine) - len(tr)
}

// keep keeps the re-simulation of out (Resimulate's): the time machine's
// own side, and the trace section the peer gets.
func (b *bundler) keep(out *bundle.Bundle) {
	// Copies: out goes to the game (Config.Bundle), which may change it.
	b.from, b.sums, b.steps = Frame(out.Start), slices.Clone(out.Sums), make([][]bundle.Mark, len(out.Traces))
	t := wire.Trace{Start: out.Start, Sums: b.sums, Steps: make([][]wire.TraceMark, len(out.Traces))}
	for i, st := range out.Traces {
		b.steps[i] = slices.Clone(st)
		for _, m := range st {
			t.Steps[i] = append(t.Steps[i], wire.TraceMark{System: m.System, Sum: m.Sum})
		}
	}
	b.trace = wire.AppendTrace(nil, &t)
}

// section returns the trace section of the latest re-simulation if it
// spans frame f (nil: none).
func (b *bundler) section(f Frame) []byte {
	if b == nil || b.trace == nil || f <= b.from || int(f-b.from) >= len(b.sums) {
		return nil
	}
	return b.trace
}

// traced takes the peer's trace section of the exchange at frame f, its
// whole payload in: compared with our re-simulation's, it names the first
// divergent frame and system in the report. Nothing is named when our
// latest re-simulation does not span f (none, or of another desync: a
// session makes maxBundles), or the section cannot be read, or shares no
// frame with ours.
func (c *checksums) traced(section []byte, f Frame) {
	b := c.bun
	if b.section(f) == nil || len(section) == 0 {
		return
	}
	t, err := wire.ParseTrace(section)
	if err != nil {
		return
	}
	theirs := bundle.Bundle{Start: t.Start, Sums: t.Sums, Traces: make([][]bundle.Mark, len(t.Steps))}
	for i, st := range t.Steps {
		for _, m := range st {
			theirs.Traces[i] = append(theirs.Traces[i], bundle.Mark{System: m.System, Sum: m.Sum})
		}
	}
	ours := bundle.Bundle{Start: int32(b.from), Sums: b.sums, Traces: b.steps}
	// A difference at the first frame both hold came at or before it: not
	// named (the first divergent frame is unknown).
	if d := bundle.Compare(&ours, &theirs, nil, 0); d.Frame > max(ours.Start, theirs.Start) {
		c.named(d.Frame, d.System)
	}
}

// named replaces the report with a copy that names the first divergent
// frame f and system (as report does the field).
func (c *checksums) named(f int32, system string) {
	p := &c.err
	if c.err == nil {
		if c.rec == nil || c.rec.report == nil {
			return
		}
		p = &c.rec.report
	}
	e := **p // the one handed out before is never changed
	e.FirstFrame, e.System = f, system
	*p = &e
}

// dispute takes a peer outvoted at frame f: no checkpoint from f on is
// agreed until resolve. Without it the detector settles f (the majority
// agreed there), the agreed state moves to f, and when the outvoted peer
// finds the desync later (its peers' checksums of f lost, it finds it at
// the next checksum frame) our re-simulation starts where its state
// already differs: the two name no first divergent frame.
func (b *bundler) dispute(f Frame) {
	if b != nil {
		b.disputed = min(b.disputed, f)
	}
}

// resolve ends a dispute: the outvoted peer has our state (it loads it,
// or its match is over), or it left.
func (b *bundler) resolve() {
	if b != nil {
		b.disputed = noFrame
	}
}
