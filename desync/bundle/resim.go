package bundle

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/savestate"
)

// Step advances the game in the arena by frame f with each player's input
// and its status (rollback.InputStatus): the game's Step, as a session
// calls it.
type Step func(f int32, in []uint64, status []uint8)

// ErrSpan is returned by [Bundle.Resimulate] for a bundle without a state
// to start from, or whose inputs do not fit its players.
var ErrSpan = errors.New("bundle: nothing to re-simulate")

// Resimulate re-simulates the bundle's frames in a from State with its
// inputs, step by step, tracing each with m (nil: no marks), and sets
// Sums, Traces, End and the trail from what it saw. a's live state is put
// back as it was afterwards. A session calls it when it detects a desync;
// cmd/desync's replay calls it on a bundle read back and compares the two
// ([Compare]): the same game reproduces the same checksums.
func (b *Bundle) Resimulate(a *savestate.Arena, step Step, m *desync.Marks) error {
	n := b.Frames()
	if b.State == nil || b.Players <= 0 || len(b.Inputs) != n*b.Players || len(b.Status) != len(b.Inputs) {
		return ErrSpan
	}
	live := bytes.Clone(a.Bytes())
	if err := a.Load(b.State); err != nil {
		return fmt.Errorf("bundle: the agreed state: %w", err)
	}
	defer func() { _ = a.Load(live) }() // the live state loaded before: it loads again
	hash := func() uint64 { return xxhash.Sum64(a.Bytes()) }
	b.Sums, b.Traces = make([]uint64, 0, n+1), make([][]Mark, 0, n)
	var t trailWriter
	t.start(b.State)
	for i := range n {
		if i > 0 {
			t.add(a.Bytes())
		}
		b.Sums = append(b.Sums, hash())
		in, st := b.Input(b.Start + int32(i))
		m.Trace(hash)
		step(b.Start+int32(i), in, st)
		b.Traces = append(b.Traces, marksOf(m.Stop()))
	}
	b.Sums = append(b.Sums, hash())
	b.End = bytes.Clone(a.Bytes())
	if n > 0 {
		t.add(b.End)
	}
	b.trail, b.trailN = t.close()
	return nil
}

// marksOf returns a trace's marks (nil for none).
func marksOf(tr desync.Trace) []Mark {
	if tr.Len() == 0 {
		return nil
	}
	ms := make([]Mark, tr.Len())
	for i := range ms {
		ms[i].System, ms[i].Sum = tr.At(i)
	}
	return ms
}

// trailWriter compresses the states after each step as differences from
// the one before, up to MaxTrail bytes of states.
type trailWriter struct {
	buf  bytes.Buffer
	zw   *flate.Writer
	prev []byte
	d    []byte
	raw  int
	n    int
	full bool
}

func (t *trailWriter) start(state []byte) {
	t.zw, _ = flate.NewWriter(&t.buf, flate.BestSpeed) // a valid level: no error
	t.prev = bytes.Clone(state)
}

func (t *trailWriter) add(state []byte) {
	if t.full || t.raw+len(state) > MaxTrail {
		t.full = true
		return
	}
	t.d = diff(t.d[:0], t.prev, state)
	_, _ = t.zw.Write(t.d) // into a bytes.Buffer: no error
	t.prev = append(t.prev[:0], state...)
	t.raw += len(state)
	t.n++
}

func (t *trailWriter) close() ([]byte, int) {
	_ = t.zw.Close()
	return t.buf.Bytes(), t.n
}

// Divergence is what two machines' bundles of one desync say about it.
type Divergence struct {
	// Frame is the first frame at whose start the two re-simulations'
	// states differ, -1 when they agree at every frame both hold.
	Frame int32
	// System is the first system whose output differs in the step before
	// Frame (frame Frame-1's), from the two traces; empty when unknown
	// (no marks, the traces agree at every mark, or Frame is the first
	// frame both hold).
	System string
	// Fields are the fields that differ at the start of Frame, this
	// machine's value first, when both bundles hold that state and
	// Compare was given the game's arena.
	Fields []desync.FieldDiff
	// Note says why something is unknown.
	Note string
}

// Compare sets two machines' bundles of one desync side by side: a is
// this machine's, b the other's. arena, if not nil, is an arena holding
// the game's allocations (its types), to name the differing fields
// (desync.Diff), at most maxFields of them (≤ 0: all).
func Compare(a, b *Bundle, arena *savestate.Arena, maxFields int) Divergence {
	d := Divergence{Frame: -1}
	lo := max(a.Start, b.Start)
	hi := min(a.Start+int32(len(a.Sums)), b.Start+int32(len(b.Sums))) // exclusive
	for f := lo; f < hi; f++ {
		x, _ := a.Sum(f)
		y, _ := b.Sum(f)
		if x != y {
			d.Frame = f
			break
		}
	}
	switch {
	case lo >= hi:
		d.Note = "the bundles share no frame"
		return d
	case d.Frame < 0:
		d.Note = "the re-simulations agree at every frame both bundles hold: the desync did not reproduce from the agreed state (state kept outside the arena, or a non-determinism that did not recur)"
		return d
	case d.Frame == lo:
		d.Note = fmt.Sprintf("the states differ at the first frame both bundles hold (%d): the divergence came before it", lo)
	default:
		ta, tb := a.Traces[d.Frame-1-a.Start], b.Traces[d.Frame-1-b.Start]
		d.System = firstDiff(ta, tb)
		if d.System == "" {
			d.Note = fmt.Sprintf("the marks of frame %d's step do not name a system (%d and %d marks): the difference comes after the last mark, or the marks differ", d.Frame-1, len(ta), len(tb))
		}
	}
	if arena != nil {
		sa, errA := a.StateAt(d.Frame)
		sb, errB := b.StateAt(d.Frame)
		if err := errors.Join(errA, errB); err != nil {
			d.Note = join(d.Note, err.Error())
		} else {
			d.Fields = desync.Diff(arena, sa, sb, maxFields)
		}
	}
	return d
}

// firstDiff names the first system after which two steps' marks differ.
func firstDiff(a, b []Mark) string {
	for i := range min(len(a), len(b)) {
		if a[i].System != b[i].System {
			return ""
		}
		if a[i].Sum != b[i].Sum {
			return a[i].System
		}
	}
	return ""
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
