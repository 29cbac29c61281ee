package rollback

import (
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/internal/memcopy"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// After a desync the peers exchange their states at the diverged frame,
// compressed, in State messages: stateChunksPerTick to each peer per call,
// round and round until the peer says it has them all; after that a bare
// Done message every stateStatusEvery, so the peer learns we have its.
const (
	stateChunksPerTick = 8
	traceChunksPerTick = 2 // of the 8, at most, of the trace section (timemachine.go)
	stateStatusEvery   = 250 * time.Millisecond
	// vouchFor is how long a machine that serves an outvoted peer repeats
	// its checksum of the frame to every peer (reported).
	vouchFor = 3 * time.Second
)

// checkpoints is how many checksum frames the session keeps track of: those
// waiting to become final, and the latest final ones for the exchange.
const checkpoints = 8

// heldFinal bounds how long a final checkpoint keeps its state for a peer
// whose checksum of it has not come: once the session simulates a frame
// this many frames after it (3 s at 60 Hz), the buffer may go to a newer
// checkpoint. A peer sends its checksum of a frame as soon as the frame is
// final at its end, three times 250 ms apart, so an honest peer's has come
// by then on any link a match survives; a peer that sends none (its
// checksums off, or a liar) would otherwise keep the buffer until 8 newer
// checksum frames of ours were final, and every checkpoint meanwhile be
// hashed each time it is simulated (BenchmarkCheckpoints/rollback20).
const heldFinal = 180

// checkpoint is a checksum frame: its checksum, and while it is held, the
// state at its start.
type checkpoint struct {
	// data is a copy of the region at the start of frame, while the
	// checkpoint holds one (nil: only its checksum is kept). Its capacity
	// counts against the checksums' budget, whether it is in use or not.
	data    []byte
	sum     uint64 // set now for game-supplied checksum data or a state not held, else when final
	frame   Frame
	hashed  bool
	pending bool // not yet final: not yet handed on
}

// checksums owns desync detection: the checksums of the latest checksum
// frames, handing them on once final, the comparison with the peers'
// (desync.Detector), and after a desync the exchange of states that names
// the differing field. The error it reports is never changed after it was
// returned: the report is a new *desync.Error.
//
// The states it holds for the exchange take at most budget bytes in all
// (one arena region: issue 21; before, 8 whole copies). A checkpoint is
// held while it may still be needed: until it is final, so that the state
// is hashed once, not at every re-simulation; and once final, until no
// desync can be reported at its frame any more (desync.Detector.Settled:
// every peer's checksum of it, or of a later frame, came), for the
// exchange. When the budget is taken by an older checkpoint still needed,
// a new one's state is hashed at once and not held; the oldest is kept,
// because the first frame whose checksums differ is the one the exchange
// should show.
type checksums struct {
	every   Frame
	lastAt  Frame               // the checksum frame wants last found at or before its frame
	data    func([]byte) []byte // Config.ChecksumData
	buf     []byte
	points  [checkpoints]checkpoint
	budget  int              // bytes the held states may take in all
	held    int              // bytes they take: the capacities of every points[i].data
	final   Frame            // the newest frame handed on
	due     Frame            // the oldest pending checkpoint's frame, or noFrame (inputs.go)
	settled Frame            // no desync can be reported at or before it any more
	dirty   bool             // a checksum came, or a peer left or came back, since the last comparison
	served  bool             // an outvoted peer was sent our state (serve)
	det     *desync.Detector // nil without peers
	err     *desync.Error    // the desync, once detected
	ex      *exchange
	rec     *recovery // Config.Recover (recover.go); nil: a desync ends the match
	bun     *bundler  // Config.Bundle (bundle.go); nil: no bundles
}

// checksumSink takes each checksum as it becomes final, and each peer
// outvoted (the Session; an interface, not a closure, so that nothing
// allocates per frame).
type checksumSink interface {
	finalChecksum(f Frame, sum uint64)
	outvoted(e *desync.Error)
}

// controlSender sends a control message to a peer: the outbox.
type controlSender interface {
	control(peer int, m wire.Control)
}

// newChecksums returns the checksum owner for a checksum every every
// frames; peers is the number of peers to compare with (0: only record);
// budget bounds the bytes of the states it holds (the arena's size).
func newChecksums(every Frame, data func([]byte) []byte, peers, budget int) *checksums {
	c := &checksums{every: every, data: data, budget: budget, due: noFrame, settled: -1}
	if peers > 0 {
		c.det = desync.NewDetector(peers)
	}
	return c
}

// wants reports whether checkpoint records frame f: not when f is final
// already (its slot may hold a later frame now), is no checksum frame, or
// after a desync. The session asks before it reads the state, on every
// frame it simulates; between two checksum frames the answer takes no
// division.
func (c *checksums) wants(f Frame) bool {
	if c == nil || c.err != nil || f <= c.final || c.rec.adopting() {
		return false
	}
	if f > c.lastAt && f-c.lastAt < c.every {
		return false
	}
	c.lastAt = f - f%c.every
	return f == c.lastAt
}

// record records the state at the start of frame f, which wants: a
// re-simulation records it again. The state is copied when the budget has
// room for it (hashed once the frame is final, so that a frame
// re-simulated many times costs a copy each time, not a hash), and hashed
// now when it has not; game-supplied checksum data is hashed now, while
// the state is current.
func (c *checksums) record(f Frame, state []byte) {
	p := &c.points[int(uint32(f/c.every)%checkpoints)]
	p.frame, p.pending, p.hashed = f, true, false // a frame it held before (checkpoints×every older) is gone
	if c.data != nil {
		c.buf = c.data(c.buf[:0])
		p.sum, p.hashed = xxhash.Sum64(c.buf), true
	}
	if c.hold(p, len(state)) {
		memcopy.Copy(p.data, state) // in pieces, as a restore: 1 MiB in one copy bypasses the cache and was slower
	} else if !p.hashed {
		p.sum, p.hashed = xxhash.Sum64(state), true
	}
	c.due = noFrame
	for i := range c.points {
		if q := &c.points[i]; q.pending {
			c.due = min(c.due, q.frame)
		}
	}
}

// hold gives p a buffer of n bytes for its state, if the budget allows: its
// own, one that no other checkpoint needs any more, or a new one. It
// reports whether it did; if not, p holds nothing.
func (c *checksums) hold(p *checkpoint, n int) bool {
	if cap(p.data) >= n {
		p.data = p.data[:n]
		return true
	}
	c.held -= cap(p.data) // too small (the state grew), or none
	p.data = nil
	var q *checkpoint // a buffer to take: preferably one whose state needs no hash first
	for i := range c.points {
		r := &c.points[i]
		if r != p && cap(r.data) >= n && c.unneeded(r, p.frame) && (q == nil || !q.hashed && r.hashed) {
			q = r
		}
	}
	if q != nil {
		c.seal(q)
		p.data, q.data = q.data[:n], nil
		return true
	}
	if c.held+n > c.budget {
		for i := range c.points { // buffers too small for it that nobody needs go first
			if r := &c.points[i]; r != p && r.data != nil && c.unneeded(r, p.frame) {
				c.seal(r)
				c.held -= cap(r.data)
				r.data = nil
			}
		}
		if c.held+n > c.budget {
			return false
		}
	}
	p.data = make([]byte, n)
	c.held += n
	return true
}

// seal hashes r's state if it is still to be hashed: its buffer is about
// to go.
func (c *checksums) seal(r *checkpoint) {
	if r.pending && !r.hashed {
		r.sum, r.hashed = xxhash.Sum64(r.data), true
	}
}

// unneeded reports whether r's state is no longer needed while the
// session simulates frame f: r is final and no desync can be reported at
// it any more, or it has waited heldFinal frames for the peers' checksums;
// or it is a later frame that this re-simulation will simulate again (its
// state is hashed before it goes: it may not be).
func (c *checksums) unneeded(r *checkpoint, f Frame) bool {
	if r.pending {
		return r.frame > f
	}
	return r.frame <= c.settled || f-r.frame > heldFinal
}

// waiting reports whether a checksum of a frame before simulated waits to
// become final.
func (c *checksums) waiting(simulated Frame) bool {
	return c.due < simulated
}

// finals hands on, oldest first, every pending checksum whose frame is
// before simulated and not after anchor (no rollback reaches it any more):
// to the sink, and to the detector.
func (c *checksums) finals(simulated, anchor Frame, sink checksumSink) {
	if c == nil || c.err != nil || c.due >= simulated || c.due > anchor || c.rec.adopting() {
		return
	}
	for {
		// The oldest waiting checkpoint first: several can become final at
		// once, and the Recorder and the peers get them in frame order.
		var p *checkpoint
		next := noFrame // the oldest pending after p
		for i := range c.points {
			q := &c.points[i]
			switch {
			case !q.pending:
			case p == nil || q.frame < p.frame:
				if p != nil {
					next = min(next, p.frame)
				}
				p = q
			default:
				next = min(next, q.frame)
			}
		}
		if p == nil || p.frame >= simulated || p.frame > anchor {
			return
		}
		if !p.hashed {
			p.sum, p.hashed = xxhash.Sum64(p.data), true
		}
		p.pending, c.final, c.due = false, p.frame, next
		c.bun.final(p.frame, p.data)
		sink.finalChecksum(p.frame, p.sum)
		if c.det != nil {
			c.det.Local(int32(p.frame), p.sum)
			c.dirty = true
		} else {
			c.settled = c.final // nobody to compare with: needed no more
		}
	}
}

// take takes peer i's checksum m of a final frame (taken), localNext our
// next local frame: dropped for frame 0 or before; forged for a frame not
// a checksum frame, or one the peer cannot have finished (the state at
// its start needs every input before it, ours too).
func (c *checksums) take(i int, m *wire.Checksum, localNext Frame) verdict {
	switch {
	case m.Frame <= 0:
		return dropped
	case !c.plausible(Frame(m.Frame), localNext):
		return forged
	}
	c.remote(i, m.Frame, m.Sum)
	c.retarget(i, Frame(m.Frame))
	return taken
}

// plausible reports whether a peer can have a final checksum of frame f
// when localNext is our next local frame: f is a checksum frame, and every
// input before it, ours included, has been sent.
func (c *checksums) plausible(f, localNext Frame) bool {
	return c == nil || (f%c.every == 0 && f <= localNext)
}

// resume compares with peer i again: it came back.
func (c *checksums) resume(i int) {
	if c != nil && c.det != nil {
		c.det.Resume(i)
		c.dirty = true
	}
}

// forget stops comparing with peer i, which left.
func (c *checksums) forget(i int) {
	if c != nil && c.det != nil {
		c.det.Forget(i)
		c.dirty = true
		c.bun.resolve() // an outvoted peer that left disputes nothing any more
	}
}

// remote takes peer i's checksum of frame f.
func (c *checksums) remote(i int, f int32, sum uint64) {
	if c != nil && c.det != nil && !c.rec.ignored(i, Frame(f)) {
		c.det.Remote(i, f, sum)
		c.dirty = true
	}
}

// found returns the desync that ended the match, or the one being
// recovered from (Config.Recover), or nil.
func (c *checksums) found() *desync.Error {
	switch {
	case c == nil:
		return nil
	case c.err != nil:
		return c.err
	case c.rec != nil && c.rec.pending:
		return c.rec.report
	}
	return nil
}

// latest returns our newest final checksum.
func (c *checksums) latest() (Frame, uint64, bool) {
	if c == nil || c.det == nil {
		return 0, 0, false
	}
	f, sum, ok := c.det.Latest()
	return Frame(f), sum, ok
}

// detect compares the checksums and returns a desync found now (nil if
// none, or if one was already found). It does nothing unless a checksum
// came, or a peer left or came back, since it last compared: the
// comparison's outcome depends on nothing else.
func (c *checksums) detect(peers int, sink checksumSink, now time.Duration) *desync.Error {
	if c == nil || c.det == nil || c.err != nil || !c.dirty || (c.rec != nil && c.rec.pending) {
		return nil
	}
	c.dirty = false
	e := c.det.Check()
	for ; e != nil && e.Outvoted; e = c.det.Check() {
		sink.outvoted(e) // the peer disagrees with the majority, not us
		c.bun.dispute(Frame(e.Frame))
		c.serve(Frame(e.Frame), e.Peer, peers, now)
		c.rec.ignore(e.Peer, Frame(e.Frame)) // with Recover, it loads the kept state
	}
	if e == nil {
		c.settled = Frame(c.det.Settled()) // the states held up to it may go
		c.bun.agree(c.points[:], min(c.settled, Frame(c.det.Agreed())))
		return nil
	}
	// The call that finds the desync may be the one that compared the
	// checksum frame before it: its state is the bundle's start.
	c.bun.agree(c.points[:], min(Frame(c.det.Settled()), Frame(c.det.Agreed()), Frame(e.Frame)-1))
	recovered := c.rec.take(e, now)
	if !recovered {
		c.err = e
	}
	c.ex = newExchange(Frame(e.Frame), e.Peer, peers)
	c.ex.at = now
	if p := c.stateAt(c.ex.frame); p != nil {
		c.ex.local = p.data // checkpoint keeps it: nothing is recorded after a desync (while adopting)
	}
	switch {
	case c.ex.local != nil:
		c.offer(c.ex, deflate(c.ex.local)) // the trace section comes with the bundler's re-simulation (attach)
	case recovered && c.rec.adopt:
		// We need only the peer's state: the report cannot name the field.
	default:
		c.report("our state at that frame is no longer held")
		c.ex.complete, c.ex.whole = true, true
		return c.err
	}
	return e
}

// news reports whether checkDesync has anything to do after simulated
// frames were simulated: a checksum waiting to become final, or one to
// compare. Most ticks have neither, and skip the call.
func (c *checksums) news(simulated Frame) bool {
	return c != nil && (c.due < simulated || c.dirty || (c.rec != nil && (c.rec.pending || c.ex != nil)))
}

// failed returns the desync detected, if any.
func (c *checksums) failed() *desync.Error {
	if c == nil {
		return nil
	}
	return c.err
}

// report replaces the error with a copy that names the field: the error
// already returned to the game is never changed.
func (c *checksums) report(field string) {
	if c.err == nil {
		if c.rec != nil && c.rec.report != nil {
			e := *c.rec.report // Stats.Desync may hold the one before
			e.Field = field
			c.rec.report = &e
		}
		return
	}
	e := *c.err
	e.Field = field
	c.err = &e
}

// rewind takes the kept state, whose checksum is want, at frame f
// (recover.go): every checksum of ours after it goes, to be recorded again
// as the frames are simulated again.
func (c *checksums) rewind(f Frame, want uint64) {
	for i := range c.points {
		if p := &c.points[i]; p.frame > f {
			p.pending, p.frame = false, -1
		} else if p.frame == f {
			p.sum, p.hashed, p.pending = want, true, false
		}
	}
	c.final, c.lastAt, c.due = f, f, noFrame
	if c.det != nil {
		c.det.Rewind(int32(f), want)
		c.dirty = true
	}
}
