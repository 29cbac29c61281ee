package rollback

import (
	"bytes"
	"slices"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/desync/bundle"
	"github.com/rewindgg/rewind/savestate"
)

// This file is the desync bundle (Config.Bundle; package desync/bundle):
// while the match plays, the checksums' bundler keeps the state at the
// latest checksum frame agreed (a peer's checksum matched ours there, and
// no outvoted peer disputes it: the agreed state) and
// every final input since; on a detected desync it re-simulates that span
// from the agreed state, with the game's marks traced, and hands the
// bundle to the game (Config.Bundle), and its checksums and marks to the
// time machine (timemachine.go), which sends them to the peer in the
// state exchange and names the first divergent frame and system in the
// report. Two machines' bundles are compared offline too (cmd/desync).

// maxBundles is the most bundles one session makes: a desync recovered
// from and the one that ends the match, and the outvoted peers'.
const maxBundles = 4

// bundler is the checksums' keeper of desync bundles and the time
// machine's re-simulation (nil without Config.Bundle and Config.Marks, or
// without peers). The steady path costs a copy of each frame's final
// inputs, and of the state at each agreed checksum frame.
type bundler struct {
	hook  func(*bundle.Bundle) // Config.Bundle; nil: none handed out
	from  Frame                // the latest re-simulation's start (keep)
	sums  []uint64             // its checksums, of frames from on
	steps [][]bundle.Mark      // its marks, of each step
	trace []byte               // its trace section (wire.AppendTrace)
	// disputed is the earliest frame at which a peer was outvoted since
	// the last resolve (noFrame: none): no checkpoint from it on is
	// agreed, whatever the detector settled, as the outvoted peer's state
	// differs there (until it loads ours, or leaves).
	disputed Frame
	marks    *desync.Marks
	info     bundle.Bundle // the match's fields of every bundle
	agreed   []byte        // the state at the start of start
	start    Frame         // the agreed frame (noFrame: none yet)
	inputs   []uint64      // final inputs of frames base to logged-1, players to a frame
	status   []uint8
	base     Frame
	logged   Frame // noFrame: nothing logged yet
	in       [MaxPlayers]PlayerInput
	written  int
	// cands are the states of the two newest final checkpoints not yet
	// agreed, copied as they became final: on a lossy link the peers'
	// checksums of a frame can take longer than the checkpoint keeps its
	// state (heldFinal), and a machine of three on hell then had no agreed
	// state when the desync came (soak seed 196).
	cands [2]candidate
}

// candidate is a final checkpoint's state, kept until it is agreed or
// two newer ones are final.
type candidate struct {
	frame Frame // noFrame: none
	data  []byte
}

func newBundler(cfg *Config, local PlayerID) *bundler {
	b := &bundler{hook: cfg.Bundle, marks: cfg.Marks, start: noFrame, logged: noFrame, disputed: noFrame,
		cands: [2]candidate{{frame: noFrame}, {frame: noFrame}}}
	b.info = bundle.Bundle{Players: cfg.Players, Local: int(local), SessionID: cfg.SessionID,
		Every: cfg.ChecksumEvery, ArenaSize: cfg.State.Size(), WholeArena: cfg.ChecksumData == nil}
	if b.info.Every == 0 {
		b.info.Every = desync.DefaultEvery
	}
	return b
}

// logEvery is how many frames the session simulates between two calls of
// log: the inputs wait in the input ring (512 frames) meanwhile, and a
// tick without the call costs a comparison.
const logEvery = 32

// due reports whether log is due when frame is the next frame to simulate.
func (b *bundler) due(frame Frame) bool {
	return b != nil && (b.logged == noFrame || frame-b.logged >= logEvery)
}

// log keeps the inputs of the frames that became final (before h.final()),
// and drops the oldest past bundle.MaxFrames (the agreed state too, if
// they are its).
func (b *bundler) log(h *horizon) {
	if b == nil {
		return
	}
	end := min(h.final(), h.frame)
	if b.logged == noFrame {
		b.base, b.logged = end, end // a joiner has no inputs before it
	}
	p := b.info.Players
	for ; b.logged < end; b.logged++ {
		h.inputs.finalInputs(b.logged, b.in[:p])
		for _, in := range b.in[:p] {
			b.inputs = append(b.inputs, uint64(in.Input))
			b.status = append(b.status, uint8(in.Status))
		}
	}
	if over := b.logged - b.base - bundle.MaxFrames; over > 0 {
		b.trim(b.base + over)
	}
}

// trim drops the inputs of frames before f.
func (b *bundler) trim(f Frame) {
	if f <= b.base {
		return
	}
	if b.start != noFrame && b.start < f {
		b.start = noFrame // its inputs go: a desync now has no state to start from
	}
	n := int(min(f, b.logged)-b.base) * b.info.Players
	b.inputs = b.inputs[:copy(b.inputs, b.inputs[n:])]
	b.status = b.status[:copy(b.status, b.status[n:])]
	b.base = min(f, b.logged)
}

// final keeps a copy of the state of checkpoint frame f, final now, in
// place of the older candidate.
func (b *bundler) final(f Frame, state []byte) {
	if b == nil || state == nil {
		return
	}
	c := &b.cands[0] // an empty slot, else the older
	if c0, c1 := b.cands[0].frame, b.cands[1].frame; c0 != noFrame && (c1 == noFrame || c1 < c0) {
		c = &b.cands[1]
	}
	c.frame, c.data = f, append(c.data[:0], state...)
}

// agree takes the newest final checkpoint at or before settled (no desync
// can be reported there any more, and a peer's checksum matched ours
// there: desync.Detector.Agreed) and before a disputed frame whose state
// is still held, by the checkpoint or as a candidate, as the agreed state,
// if it is newer than the one kept.
func (b *bundler) agree(points []checkpoint, settled Frame) {
	if b == nil {
		return
	}
	newer := func(f Frame) bool {
		return f != noFrame && f <= settled && f < b.disputed && f >= b.base && (b.start == noFrame || f > b.start)
	}
	f, state := noFrame, []byte(nil)
	for i := range points {
		if p := &points[i]; !p.pending && p.data != nil && newer(p.frame) && (f == noFrame || p.frame > f) {
			f, state = p.frame, p.data
		}
	}
	for i := range b.cands {
		if c := &b.cands[i]; newer(c.frame) && (f == noFrame || c.frame > f) {
			f, state = c.frame, c.data
		}
	}
	if f != noFrame {
		b.adopted(f, state)
	}
	for i := range b.cands {
		if c := &b.cands[i]; c.frame != noFrame && c.frame <= settled && c.frame < b.disputed {
			c.frame = noFrame // agreed or passed over: its buffer is reused
		}
	}
}

// adopted takes state as the agreed state at frame f: an agreed
// checkpoint (agree), or the kept state a recovery loaded.
func (b *bundler) adopted(f Frame, state []byte) {
	if b == nil || f < b.base {
		return
	}
	b.agreed = append(b.agreed[:0], state...)
	b.start = f
	b.trim(f)
}

// write makes the bundle of desync e — re-simulating from the agreed state
// in a, the live state put back afterwards, with the game of ap — and
// hands it to the game.
func (b *bundler) write(e *desync.Error, h *horizon, a *savestate.Arena, ap *app) {
	if b == nil || b.written >= maxBundles {
		return
	}
	b.written++
	b.log(h) // the inputs up to the desync's frame: final, maybe not yet kept
	out := b.info
	out.Report, out.Start = *e, int32(b.start)
	f := Frame(e.Frame)
	switch {
	case b.start == noFrame:
		out.Note = "no agreed state is held: the desync came before the first checksum frame a peer's checksum matched ours at, or more than bundle.MaxFrames frames after it"
	case f <= b.start || f > b.logged:
		out.Note = "the desync's frame is not within the final inputs kept"
	default:
		n, p := int(f-b.start), b.info.Players
		i := int(b.start-b.base) * p
		out.State = bytes.Clone(b.agreed)
		out.Inputs, out.Status = slices.Clone(b.inputs[i:i+n*p]), bytes.Clone(b.status[i:i+n*p])
		ap.extrapolating(true) // the re-simulation is not news: no sound, no Simulating
		err := out.Resimulate(a, func(f int32, in []uint64, st []uint8) {
			for j := range in {
				b.in[j] = PlayerInput{Input: Input(in[j]), Status: InputStatus(st[j])}
			}
			ap.game.Step(Frame(f), b.in[:len(in)])
		}, b.marks)
		ap.extrapolating(false)
		if err != nil {
			out.Note = err.Error()
		} else {
			b.keep(&out)
		}
	}
	if b.hook != nil {
		b.hook(&out)
	}
}
