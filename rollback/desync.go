package rollback

import (
	"bytes"
	"compress/flate"
	"io"
	"log/slog"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/rollback/wire"
)

// After a desync the peers exchange their states at the diverged frame,
// compressed, in State messages: stateChunksPerTick to each peer per call,
// round and round until the peer says it has them all; after that a bare
// Done message every stateStatusEvery, so the peer learns we have its.
const (
	stateChunksPerTick = 8
	stateStatusEvery   = 250 * time.Millisecond
)

// checkpoints is how many checksum frames' states the session keeps: those
// waiting to become final, and the latest final ones for the exchange.
const checkpoints = 8

// checkpoint is the state at the start of a checksum frame.
type checkpoint struct {
	frame   Frame
	data    []byte // a copy of the region
	sum     uint64 // set now for game-supplied checksum data, else when final
	hashed  bool
	pending bool // not yet final: not yet given to the detector
}

// exchange is the state exchange after a desync.
type exchange struct {
	frame    Frame
	peer     int    // the peer whose state we compare with ours
	local    []byte // our state at frame, uncompressed (nil: no longer held)
	mine     []byte // our state, compressed
	theirs   []byte // the peer's compressed state, as it arrives
	got      []bool // which chunks of it arrived
	missing  int
	complete bool
	next     []int           // per peer: the next chunk to send
	done     []bool          // per peer: it has all of ours
	status   []time.Duration // per peer: when we last sent a bare Done
}

// checkpoint keeps the state at the start of frame f (the current region)
// when f is a checksum frame; a re-simulation keeps it again. The whole
// arena is hashed from the copy once the frame is final, so a frame
// re-simulated many times costs a copy each time, not a hash; game-supplied
// checksum data is hashed now, while the state is current.
func (s *Session) checkpoint(f Frame) {
	if s.sumEvery <= 0 || f == 0 || f%s.sumEvery != 0 {
		return
	}
	c := &s.points[int(uint32(f/s.sumEvery)%checkpoints)]
	if c.frame == f && c.data != nil && !c.pending {
		return // final already: a snapshot moving to the anchor steps it again
	}
	c.frame, c.pending, c.hashed = f, true, false
	c.data = append(c.data[:0], s.arena.Bytes()...)
	if s.sumData != nil {
		s.sumBuf = s.sumData(s.sumBuf[:0])
		c.sum, c.hashed = xxhash.Sum64(s.sumBuf), true
	}
}

// checkDesync hands the checksums whose frame can no longer change (no
// rollback reaches before the anchor) to the detector and compares.
func (s *Session) checkDesync() {
	if s.sumEvery <= 0 || s.desyncErr != nil {
		return
	}
	a := Frame(-1) // computed only when a checkpoint waits
	for {
		// The oldest waiting checkpoint first: several can become final at
		// once, and the Recorder and the peers get them in frame order.
		var c *checkpoint
		for i := range s.points {
			if p := &s.points[i]; p.pending && p.frame < s.frame && (c == nil || p.frame < c.frame) {
				c = p
			}
		}
		if c == nil {
			break
		}
		if a < 0 {
			a = s.anchor()
		}
		if c.frame > a {
			break
		}
		if !c.hashed {
			c.sum = xxhash.Sum64(c.data)
		}
		c.pending = false
		if s.rec != nil {
			s.rec.Checksum(c.frame, c.sum)
		}
		if s.log != nil {
			s.logf(logChecksum, slog.Int("frame", int(c.frame)), slog.String("sum", hex64(c.sum)))
		}
		if s.det != nil {
			s.det.Local(int32(c.frame), c.sum)
		}
	}
	if s.det == nil {
		return
	}
	if e := s.det.Check(); e != nil {
		s.desyncErr = e
		if s.log != nil {
			s.logf(logDesync, slog.Int("frame", int(e.Frame)), slog.Int("peer", e.Peer), slog.String("local", hex64(e.Local)), slog.String("remote", hex64(e.Remote)))
		}
		s.events = append(s.events, Event{Kind: EventDesyncDetected, Frame: Frame(e.Frame), Peer: e.Peer})
		s.startExchange(e)
	}
}

// startExchange prepares our side of the state exchange for e.
func (s *Session) startExchange(e *desync.Error) {
	x := &exchange{frame: Frame(e.Frame), peer: e.Peer,
		next: make([]int, len(s.peers)), done: make([]bool, len(s.peers)), status: make([]time.Duration, len(s.peers))}
	s.ex = x
	for _, c := range s.points {
		if c.frame == x.frame && c.data != nil {
			x.local = c.data
		}
	}
	if x.local == nil {
		e.Field = "our state at that frame is no longer held"
		x.complete = true
		return
	}
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed) // the level is valid
	_, _ = w.Write(x.local)                        // a bytes.Buffer never fails
	_ = w.Close()
	x.mine = buf.Bytes()
}

// sendState sends peer i the next pieces of our state.
func (s *Session) sendState(i int) {
	x := s.ex
	if x == nil || x.mine == nil {
		return
	}
	msg := &s.tx.state
	if x.done[i] {
		if s.now-x.status[i] < stateStatusEvery {
			return
		}
		x.status[i] = s.now
		*msg = wire.State{Frame: int32(x.frame), Total: uint32(len(x.mine)), Done: x.complete}
		s.sendControl(i, wire.KindState, s.peers[i].tag, msg)
		return
	}
	chunks := (len(x.mine) + wire.MaxStateData - 1) / wire.MaxStateData
	for range min(stateChunksPerTick, chunks) {
		c := x.next[i] % chunks
		x.next[i]++
		off := c * wire.MaxStateData
		*msg = wire.State{Frame: int32(x.frame), Total: uint32(len(x.mine)), Offset: uint32(off), Done: x.complete,
			Data: x.mine[off:min(off+wire.MaxStateData, len(x.mine))]}
		s.sendControl(i, wire.KindState, s.peers[i].tag, msg)
	}
}

// handleState takes a piece of peer i's state. It reports whether the
// message was acceptable.
func (s *Session) handleState(i int, m *wire.State) bool {
	x := s.ex
	if x == nil || Frame(m.Frame) != x.frame {
		return true // not (yet) desynced here, or an old frame: nothing to do
	}
	x.done[i] = x.done[i] || m.Done
	if i != x.peer || x.complete || len(m.Data) == 0 {
		return true
	}
	total := int(m.Total)
	if total > maxCompressed(s.arena.Size()) || len(m.Data) > wire.MaxStateData || int(m.Offset)%wire.MaxStateData != 0 ||
		int(m.Offset)+len(m.Data) > total || (x.theirs != nil && len(x.theirs) != total) {
		return false
	}
	if x.theirs == nil {
		x.theirs = make([]byte, total)
		x.missing = (total + wire.MaxStateData - 1) / wire.MaxStateData
		x.got = make([]bool, x.missing)
	}
	c := int(m.Offset) / wire.MaxStateData
	if want := min(wire.MaxStateData, total-int(m.Offset)); len(m.Data) != want {
		return false
	}
	if x.got[c] {
		return true // a repeat
	}
	x.got[c] = true
	x.missing--
	copy(x.theirs[m.Offset:], m.Data)
	if x.missing == 0 {
		s.finishExchange()
	}
	return true
}

// finishExchange compares the peer's state with ours and names the field.
func (s *Session) finishExchange() {
	x := s.ex
	x.complete = true
	r := flate.NewReader(bytes.NewReader(x.theirs))
	theirs, err := io.ReadAll(io.LimitReader(r, int64(s.arena.Size())+1))
	switch {
	case err != nil || len(theirs) > s.arena.Size():
		s.desyncErr.Field = "the peer's state did not decompress"
	default:
		s.desyncErr.Field = desync.Compare(s.arena, x.local, theirs)
		if s.desyncErr.Field == "" {
			s.desyncErr.Field = "the states are equal: the checksum data (Config.ChecksumData) differs"
		}
	}
	s.events = append(s.events, Event{Kind: EventDesyncReport, Frame: x.frame, Peer: x.peer})
}

// maxCompressed bounds the compressed size of a state of n bytes (deflate's
// stored blocks add 5 bytes per 64 KiB).
func maxCompressed(n int) int { return n + n/1024 + 64 }
