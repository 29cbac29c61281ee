package rollback

import (
	"bytes"
	"compress/flate"
	"io"
	"time"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/savestate"
)

// This file is the state exchange after a desync: each machine sends the
// peer it disagrees with its state at the frame, deflated, in pieces, and
// names the first differing field once it has the peer's
// (docs/protocol.md, "Desync checksums and the state exchange").

// exchange is the state exchange after a desync.
type exchange struct {
	frame    Frame
	peer     int    // the peer whose state we compare with ours
	local    []byte // our state at frame, uncompressed (nil: not held, or only serving)
	mine     []byte // our state, compressed
	theirs   []byte // the peer's compressed state, as it arrives
	got      []bool // which chunks of it arrived
	missing  int
	complete bool
	serving  bool            // only sending ours to peer (it was outvoted), not comparing
	next     []int           // per peer: the next chunk to send
	done     []bool          // per peer: it has all of ours
	status   []time.Duration // per peer: when we last sent a bare Done
	heard    []bool          // per peer: it sent a State of frame: it knows of the desync
	at       time.Duration   // when it began
	msg      wire.State      // scratch for outgoing states (here, not in checksums: no byte of it before a desync)
}

// over reports whether the exchange has nothing more to do: it has the
// peer's state (or needs none) and the peer has ours.
func (x *exchange) over() bool { return x.complete && x.done[x.peer] }

func newExchange(f Frame, peer, peers int) *exchange {
	return &exchange{frame: f, peer: peer, next: make([]int, peers), done: make([]bool, peers), status: make([]time.Duration, peers), heard: make([]bool, peers)}
}

func deflate(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed) // the level is valid
	_, _ = w.Write(b)                              // a bytes.Buffer never fails
	_ = w.Close()
	return buf.Bytes()
}

// outgoing gives out each State message due to peer i now: the next
// pieces of our state, or once it has them all (or when we no longer hold
// ours) a bare status now and then, which tells it whether we have its.
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
		*msg = wire.State{Frame: int32(x.frame), Total: uint32(len(x.mine)), Done: x.complete}
		out.control(i, msg)
		return
	}
	chunks := (len(x.mine) + wire.MaxStateData - 1) / wire.MaxStateData
	for range min(stateChunksPerTick, chunks) {
		n := x.next[i] % chunks
		x.next[i]++
		off := n * wire.MaxStateData
		*msg = wire.State{Frame: int32(x.frame), Total: uint32(len(x.mine)), Offset: uint32(off), Done: x.complete,
			Data: x.mine[off:min(off+wire.MaxStateData, len(x.mine))]}
		out.control(i, msg)
	}
}

// incoming takes a piece of peer i's state. It reports whether the message
// was acceptable, and whether it completed the exchange: the report then
// names the differing field (Compare reads the fields through arena).
func (c *checksums) incoming(i int, m *wire.State, arena *savestate.Arena) (ok, completed bool) {
	if c == nil || c.ex == nil || Frame(m.Frame) != c.ex.frame {
		return true, false // not (yet) desynced here, or an old frame: nothing to do
	}
	x := c.ex
	x.done[i] = x.done[i] || m.Done
	x.heard[i] = true
	if c.rec.adopting() && i != x.peer && x.theirs == nil && len(m.Data) > 0 {
		// The first machine that serves us its state there: any of the
		// majority may (the one we compare with may no longer hold it),
		// and the state must still hash to the majority's checksum.
		x.peer = i
	}
	if i != x.peer || x.complete || x.serving || len(m.Data) == 0 {
		return true, false
	}
	total := int(m.Total)
	if total > maxCompressed(arena.Size()) || len(m.Data) > wire.MaxStateData || int(m.Offset)%wire.MaxStateData != 0 ||
		int(m.Offset)+len(m.Data) > total || (x.theirs != nil && len(x.theirs) != total) {
		return false, false
	}
	if want := min(wire.MaxStateData, total-int(m.Offset)); len(m.Data) != want {
		return false, false // checked before the first piece fixes the total
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
	if x.missing > 0 {
		return true, false
	}
	x.complete = true
	if x.local == nil {
		c.report("our state at that frame is no longer held")
	} else {
		c.report(compareStates(arena, x.local, x.theirs))
	}
	return true, true
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
