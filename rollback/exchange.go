package rollback

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"io"
	"time"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/savestate"
)

// This file is the state exchange after a desync: each machine sends the
// peer it disagrees with its state at the frame, deflated, in pieces, and
// names the first differing field once it has the peer's
// (docs/protocol.md, "Desync checksums and the state exchange"). Behind
// the state the payload carries the time machine's trace section
// (timemachine.go), which names the first divergent frame and system
// once the whole payload is in: the field never waits for it.

// exchange is the state exchange after a desync.
type exchange struct {
	frame    Frame
	peer     int    // the peer whose state we compare with ours
	local    []byte // our state at frame, uncompressed (nil: not held, or only serving)
	mine     []byte // our payload: uvarint len(z), z, our trace section (timemachine.go)
	z        []byte // our state, compressed
	sent     bool   // a piece of mine went out: it is fixed
	theirs   []byte // the peer's payload, as it arrives
	got      []bool // which chunks of it arrived
	missing  int
	head     int             // where the peer's compressed state starts in theirs (0: chunk 0 not yet in)
	tail     int             // where it ends: its trace section starts
	short    int             // the chunks of theirs before tail still missing, once head is known
	complete bool            // we have the peer's state (or need none): the field is named
	whole    bool            // and its whole payload (or need none): its messages say Done
	serving  bool            // only sending ours to peer (it was outvoted), not comparing
	sum      uint64          // serving: our checksum of frame (reported)
	next     []int           // per peer: the next chunk of the head and state to send
	nextT    []int           // per peer: the next chunk of the trace section to send
	own      int             // where our trace section starts in mine
	done     []bool          // per peer: it has all of ours
	status   []time.Duration // per peer: when we last sent a bare Done
	heard    []bool          // per peer: it sent a State of frame: it knows of the desync
	at       time.Duration   // when it began
	msg      wire.State      // scratch for outgoing states (here, not in checksums: no byte of it before a desync)
}

// over reports whether the exchange has nothing more to do: it has the
// peer's payload (or needs none) and the peer has ours. A peer that
// withholds its trace section keeps it from being over until the
// recovery's limit drops it (recovery.tick); the field and the recovery
// never wait for it.
func (x *exchange) over() bool { return x.whole && x.done[x.peer] }

func newExchange(f Frame, peer, peers int) *exchange {
	return &exchange{frame: f, peer: peer, next: make([]int, peers), nextT: make([]int, peers), done: make([]bool, peers), status: make([]time.Duration, peers), heard: make([]bool, peers)}
}

func deflate(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed) // the level is valid
	_, _ = w.Write(b)                              // a bytes.Buffer never fails
	_ = w.Close()
	return buf.Bytes()
}

// outgoing gives out each State message due to peer i now: the next
// pieces of our payload, or once it has them all (or when we no longer
// hold ours) a bare status now and then, which tells it whether we have
// its. Of the stateChunksPerTick pieces of a call, traceChunksPerTick at
// most are of the trace section, the others of the head and the state,
// each part round and round: a lost piece of the state comes again after
// one round of the state's pieces, however long the trace.
func (c *checksums) outgoing(i int, now time.Duration, out controlSender) {
	if c == nil || c.ex == nil || (c.ex.serving && i != c.ex.peer) {
		return
	}
	x, msg := c.ex, &c.ex.msg
	if x.done[i] || x.mine == nil {
		if now-x.status[i] < stateStatusEvery {
			return
		}
		x.status[i] = now
		*msg = wire.State{Frame: int32(x.frame), Total: uint32(len(x.mine)), Done: x.whole}
		out.control(i, msg)
		return
	}
	chunks := (len(x.mine) + wire.MaxStateData - 1) / wire.MaxStateData
	states := min((x.own+wire.MaxStateData-1)/wire.MaxStateData, chunks) // pieces with a byte of the head or the state
	traces := chunks - states
	ns := min(states, stateChunksPerTick-min(traceChunksPerTick, traces))
	x.sent = true
	for k := range min(stateChunksPerTick, chunks) {
		var n int
		if k < ns {
			n = x.next[i] % states
			x.next[i]++
		} else {
			n = states + x.nextT[i]%traces
			x.nextT[i]++
		}
		off := n * wire.MaxStateData
		*msg = wire.State{Frame: int32(x.frame), Total: uint32(len(x.mine)), Offset: uint32(off), Done: x.whole,
			Data: x.mine[off:min(off+wire.MaxStateData, len(x.mine))]}
		out.control(i, msg)
	}
}

// incoming takes a piece of peer i's payload. It reports whether the
// message was acceptable, and whether it completed the peer's state: the
// report then names the differing field (Compare reads the fields through
// arena). Once the whole payload is in, the trace section behind the
// state names the first divergent frame and system (traced).
func (c *checksums) incoming(i int, m *wire.State, arena *savestate.Arena) (ok, completed bool) {
	if c == nil || c.ex == nil || Frame(m.Frame) != c.ex.frame {
		return true, false // not (yet) desynced here, or an old frame: nothing to do
	}
	x := c.ex
	x.done[i] = x.done[i] || m.Done
	if x.serving && i == x.peer && m.Done {
		c.bun.resolve() // the outvoted peer has our state: it loads it, or its match is over
	}
	x.heard[i] = true
	if c.rec.adopting() && i != x.peer && x.theirs == nil && len(m.Data) > 0 {
		// The first machine that serves us its state there: any of the
		// majority may (the one we compare with may no longer hold it),
		// and the state must still hash to the majority's checksum.
		x.peer = i
	}
	if i != x.peer || x.whole || x.serving || len(m.Data) == 0 {
		return true, false
	}
	total := int(m.Total)
	if total > maxPayload(arena.Size()) || len(m.Data) > wire.MaxStateData || int(m.Offset)%wire.MaxStateData != 0 ||
		int(m.Offset)+len(m.Data) > total || (x.theirs != nil && len(x.theirs) != total) {
		return false, false
	}
	if want := min(wire.MaxStateData, total-int(m.Offset)); len(m.Data) != want {
		return false, false // checked before the first piece fixes the total
	}
	head, tail, ok := payloadHead(m, arena.Size())
	if !ok {
		return false, false
	}
	if x.theirs == nil {
		x.theirs = make([]byte, total)
		x.missing = (total + wire.MaxStateData - 1) / wire.MaxStateData
		x.got = make([]bool, x.missing)
	}
	n := int(m.Offset) / wire.MaxStateData
	if x.got[n] {
		return true, false // a repeat
	}
	x.got[n] = true
	x.missing--
	copy(x.theirs[m.Offset:], m.Data)
	switch {
	case n == 0:
		x.head, x.tail = head, tail
		for j := range (tail + wire.MaxStateData - 1) / wire.MaxStateData {
			if !x.got[j] {
				x.short++
			}
		}
	case x.head > 0 && n*wire.MaxStateData < x.tail:
		x.short--
	}
	if !x.complete && x.head > 0 && x.short == 0 {
		x.complete, completed = true, true
		if x.local == nil {
			c.report("our state at that frame is no longer held")
		} else {
			c.report(compareStates(arena, x.local, x.theirs[x.head:x.tail]))
		}
	}
	if x.missing == 0 {
		x.whole = true
		c.traced(x.theirs[x.tail:], x.frame)
	}
	return true, completed
}

// payloadHead reads the head of a payload from its first piece m: where
// the compressed state starts and ends. ok is false for a head that
// cannot be (no piece 0: true, and 0s).
func payloadHead(m *wire.State, arenaSize int) (head, tail int, ok bool) {
	if m.Offset != 0 {
		return 0, 0, true
	}
	n, k := binary.Uvarint(m.Data)
	if k <= 0 || n > uint64(maxCompressed(arenaSize)) || k+int(n) > int(m.Total) || int(m.Total)-k-int(n) > wire.MaxTraceSize {
		return 0, 0, false
	}
	return k, k + int(n), true
}

// payload returns the exchange's payload of compressed state z and trace
// section tr (nil: none).
func payload(z, tr []byte) []byte {
	b := make([]byte, 0, binary.MaxVarintLen64+len(z)+len(tr))
	return append(append(binary.AppendUvarint(b, uint64(len(z))), z...), tr...)
}

// maxPayload bounds a payload's size: its head, the compressed state and
// the trace section.
func maxPayload(arenaSize int) int {
	return binary.MaxVarintLen64 + maxCompressed(arenaSize) + wire.MaxTraceSize
}

// compareStates names the first field where our state and the peer's
// compressed one differ.
func compareStates(arena *savestate.Arena, local, compressed []byte) string {
	r := flate.NewReader(bytes.NewReader(compressed))
	theirs, err := io.ReadAll(io.LimitReader(r, int64(arena.Size())+1))
	if err != nil || len(theirs) > arena.Size() {
		return "the peer's state did not decompress"
	}
	if field := desync.Compare(arena, local, theirs); field != "" {
		return field
	}
	return "the states are equal: the checksum data (Config.ChecksumData) differs"
}

// maxCompressed bounds the compressed size of a state of n bytes (deflate's
// stored blocks add 5 bytes per 64 KiB).
func maxCompressed(n int) int { return n + n/1024 + 64 }

// serve sends peer, outvoted at frame f, our state there (if we still hold
// it), so that its own report, which outvotes it, can name the field. Only
// the first outvoted peer of the match is served: a liar's checksums could
// otherwise have us send our whole state again and again.
func (c *checksums) serve(f Frame, peer, peers int, now time.Duration) {
	if (c.rec == nil && (c.ex != nil || c.served)) || (c.rec != nil && c.ex != nil && !c.ex.over()) {
		return // with Recover, again once the last exchange is over: a peer recovers no more than once in recoverWindow
	}
	c.served = true
	if p := c.stateAt(f); p != nil {
		c.serveFrom(p, peer, peers, now)
	}
}

// retarget serves peer i our state at frame f instead, when we serve it
// ours at a later frame (Config.Recover): it found the desync at f, an
// earlier checksum than the one we outvoted it at, and repeats its
// checksum of f until it has a State of f. Only earlier frames we still
// hold: a liar can make us deflate at most the few states we keep.
func (c *checksums) retarget(i int, f Frame) {
	x := c.ex
	if c.rec == nil || x == nil || !x.serving || i != x.peer || f >= x.frame {
		return
	}
	if p := c.stateAt(f); p != nil {
		c.serveFrom(p, i, len(x.next), x.at)
	}
}

// stateAt returns the final checkpoint of frame f whose state we still hold,
// or nil.
func (c *checksums) stateAt(f Frame) *checkpoint {
	for i := range c.points {
		if p := &c.points[i]; p.frame == f && p.data != nil && !p.pending {
			return p
		}
	}
	return nil
}

// serveFrom makes the exchange the service of our state p to peer, begun
// at at. It is complete: we need nothing of the peer's, so our messages
// say Done; and our state is not compared, so only its deflated copy is
// kept (the checkpoint's may go once the frame is settled).
func (c *checksums) serveFrom(p *checkpoint, peer, peers int, at time.Duration) {
	c.ex = newExchange(p.frame, peer, peers)
	c.ex.at, c.ex.sum = at, p.sum
	c.ex.serving, c.ex.complete, c.ex.whole = true, true, true
	c.offer(c.ex, deflate(p.data))
}

// reported returns the checksum to repeat to peer i now: our checksum of
// the frame we found desynced, to the peer we compare with until it sends
// a State of that frame (on a lossy link every copy of it can be lost, and
// the peer, never told, would wait for our inputs and cut us as
// withholding them); or, for vouchFor after we began to serve an outvoted
// peer our state (serve), our checksum of that frame to every peer that
// has not sent a State of it. The outvoted peer then learns the majority
// outvotes it while we still serve it (with every copy lost it finds the
// desync seconds later, at a later checksum frame, by then served by
// nobody); the other peers get our vote (with every copy lost, one finds
// a tie with the outvoted peer, one checksum frame later, and reports a
// desync the majority has already recovered from).
func (c *checksums) reported(i int, now time.Duration) (Frame, uint64, bool) {
	if c == nil || c.ex == nil || c.ex.heard[i] {
		return 0, 0, false
	}
	if x := c.ex; x.serving {
		if now-x.at > vouchFor {
			return 0, 0, false
		}
		return x.frame, x.sum, true
	}
	e := c.found()
	if e == nil || i != c.ex.peer {
		return 0, 0, false
	}
	return Frame(e.Frame), e.Local, true
}

// repeats reports whether reported has a checksum for peer i at t.
func (c *checksums) repeats(i int, t time.Duration) bool {
	_, _, ok := c.reported(i, t)
	return ok
}
