package replay

import (
	"encoding/binary"
	"math"
	"sort"

	"github.com/rewindgg/rewind/rollback"
)

// track is one player's recorded inputs, kept about as compactly as the
// file keeps them: runs of equal inputs, each closed run encoded as two
// uvarints (its length in frames, its input), in frame order, then one open
// run, which lasts to the end of the replay (a later block may extend it).
// Two runs in a row never hold the same input: a held button costs nothing
// however long it is held, and a run costs about the two bytes or more it
// took in the file.
type track struct {
	enc   []byte // the closed runs
	marks []mark // where closed runs 0, markEvery, 2×markEvery… start
	runs  int    // closed runs
	from  rollback.Frame
	in    rollback.Input // the open run, from frame from on
	open  bool           // there is an open run (the replay has frames)
}

// mark is where a closed run starts: its first frame and offset in enc.
type mark struct {
	from rollback.Frame
	off  int32
}

// markEvery closed runs get a mark: a lookup decodes at most this many.
const markEvery = 32

// add records input in from frame from on. Frames come in order.
func (t *track) add(from rollback.Frame, in rollback.Input) {
	if t.open && t.in == in {
		return // the open run goes on
	}
	if t.open {
		if t.runs%markEvery == 0 {
			t.marks = grow(t.marks, 1)
			t.marks = append(t.marks, mark{from: t.from, off: int32(len(t.enc))})
		}
		t.enc = grow(t.enc, 2*binary.MaxVarintLen64)
		t.enc = binary.AppendUvarint(t.enc, uint64(from-t.from))
		t.enc = binary.AppendUvarint(t.enc, uint64(t.in))
		t.runs++
	}
	t.from, t.in, t.open = from, in, true
}

// at returns the input of frame f, which must be recorded.
func (t *track) at(f rollback.Frame) rollback.Input {
	if f >= t.from {
		return t.in
	}
	i := sort.Search(len(t.marks), func(i int) bool { return t.marks[i].from > f }) - 1
	c := cursor{t: t, off: int(t.marks[i].off), end: t.marks[i].from}
	for c.next(); f >= c.end; c.next() {
	}
	return c.in
}

// cursor reads a track's runs in order.
type cursor struct {
	t   *track
	off int            // the next closed run in t.enc
	end rollback.Frame // the frame after the run read
	in  rollback.Input // the run read
}

// next reads the run that starts at c.end.
func (c *cursor) next() {
	if c.off >= len(c.t.enc) {
		c.in, c.end = c.t.in, rollback.Frame(1<<31-1)
		return
	}
	n, k := binary.Uvarint(c.t.enc[c.off:])
	in, j := binary.Uvarint(c.t.enc[c.off+k:])
	c.off += k + j
	c.end += rollback.Frame(n)
	c.in = rollback.Input(in)
}

// input returns the input of frame f, f no less than the last frame asked
// (starting from frame 0).
func (c *cursor) input(f rollback.Frame) rollback.Input {
	for f >= c.end {
		c.next()
	}
	return c.in
}

// grow makes room for n more elements of s, doubling its capacity when it
// must grow: what Read allocates for a list stays within twice its final
// capacity (append grows a large slice by a quarter at a time, allocating
// five times its final capacity on the way).
func grow[S ~[]E, E any](s S, n int) S { return growUpTo(s, n, math.MaxInt-len(s)) }

// growUpTo is grow for a list that will never need room for more than most
// elements beyond its length (most >= n): its capacity stays within that.
func growUpTo[S ~[]E, E any](s S, n, most int) S {
	if cap(s)-len(s) >= n {
		return s
	}
	g := make(S, len(s), min(max(2*cap(s), len(s)+n, 16), len(s)+most))
	copy(g, s)
	return g
}
