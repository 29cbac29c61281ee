package rollback

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is a spectator's link to its source: what arrives from it
// (the handshake, the Feed of final inputs, the Snap pieces of the state
// it joins at) and what goes back (the handshake, a Watch a tick).

// receive takes every waiting datagram: the source's, and those of the
// spectators we relay to.
func (s *Spectator) receive() {
	s.keys.newCall()
	for n := range s.wits {
		s.wits[n].judged = 0
	}
	if s.aud != nil {
		s.aud.newCall()
	}
	judged := 0
	for {
		n, idx, ok := s.tr.Receive(s.io.recvBuf)
		if !ok {
			return
		}
		s.stats.PacketsReceived++
		s.stats.BytesReceived += int64(n)
		taken := false
		switch {
		case n <= 0 || n > maxDatagram:
		case idx != s.src && s.witnessAt(idx) != nil:
			taken = s.fromWitness(s.witnessAt(idx), s.io.recvBuf[:n])
		case idx != s.src:
			// Not before we have the match's terms from the source: the
			// keys of a link bind them.
			taken = s.aud != nil && s.termsSet && s.aud.receive(idx, s.io.recvBuf[:n], s.now, s)
		case judged < peerBudget:
			judged++
			s.up.heard = true
			taken = s.fromSource(s.io.recvBuf[:n])
		}
		if !taken {
			s.stats.PacketsInvalid++
		}
	}
}

// fromSource takes a datagram from the source.
func (s *Spectator) fromSource(b []byte) bool {
	if wire.Kind(b[0]) == wire.KindHandshake {
		return s.handshake(b)
	}
	if s.up.open == nil {
		return false
	}
	body, err := s.up.open.Open(b)
	if err != nil {
		return false
	}
	return s.sealed(b, body)
}

// sealed takes a sealed datagram b from the source, opened: body.
func (s *Spectator) sealed(b, body []byte) bool {
	if !s.up.verified {
		s.up.verified = true
		s.events.emit(EventConnected, s.frame, s.src)
	}
	s.upRecv = s.now
	switch wire.SealedKind(b) {
	case wire.KindSnap:
		return s.takeSnap(body)
	case wire.KindInput:
		return s.takeFeed(body)
	case wire.KindDisconnect:
		if wire.ParseControl(body, &s.io.d) != nil {
			return false
		}
		if !s.stats.SourceLeft {
			s.sourceLeft()
		}
		return true
	}
	return false
}

// handshake takes the source's handshake.
func (s *Spectator) handshake(b []byte) bool { return s.pin(s.src, &s.up, b) }

// pin takes a handshake on link a, to the source or a witness at
// transport index idx: its echo of our nonce pins it. The first machine
// whose terms agree with our Players and Layout gives the match's terms,
// which the link's keys bind; every other one must have the same.
func (s *Spectator) pin(idx int, a *peerAuth, b []byte) bool {
	h := &s.io.rxhs
	switch s.keys.judge(b, h, s.session, a) {
	case hsAnswer:
		s.handshakeTo(idx, a, h.Nonce)
		return false
	case hsPin:
	default:
		return false
	}
	var e *HandshakeError
	switch {
	case h.Version != wire.Version:
		e = termsError(idx, "protocol version", fmt.Sprint(wire.Version), fmt.Sprint(h.Version))
	case h.Terms.Players != s.players:
		e = termsError(idx, "Players", fmt.Sprint(s.players), fmt.Sprint(h.Terms.Players))
	case !slices.Equal(h.Terms.Layout, s.layout):
		e = termsError(idx, "Layout", fmt.Sprint(Layout(s.layout)), fmt.Sprint(Layout(h.Terms.Layout)))
	case s.termsSet && h.Terms.Digest() != s.keys.digest:
		e = termsError(idx, "terms", "another machine's", "others (a machine of another match, or a liar)")
	}
	if e != nil {
		s.fail(e)
		return false
	}
	if !s.termsSet {
		s.keys.terms = wire.Terms{Players: h.Terms.Players, Owners: slices.Clone(h.Terms.Owners), Layout: slices.Clone(h.Terms.Layout),
			Mode: h.Terms.Mode, TickRate: h.Terms.TickRate, ChecksumEvery: h.Terms.ChecksumEvery, StartDelay: h.Terms.StartDelay}
		s.keys.digest, s.termsSet = s.keys.terms.Digest(), true
	}
	seal, open, err := s.keys.link(s.session, a.ours, h.Nonce, h.Key)
	if err != nil {
		return false
	}
	a.nonce, a.seal, a.open, a.replyHS, a.keyedAt = h.Nonce, seal, open, true, s.now
	return true
}

func (s *Spectator) sendHandshake(echo uint64) { s.handshakeTo(s.src, &s.up, echo) }

// handshakeTo sends our handshake on link a, to transport index idx.
func (s *Spectator) handshakeTo(idx int, a *peerAuth, echo uint64) {
	b, err := s.keys.appendHandshake(s.io.sendBuf[:0], &s.io.hs, s.session, a.ours, echo)
	if err == nil {
		a.sentHS, a.lastHS = true, s.now
		s.transmitTo(idx, b)
	}
}

func (s *Spectator) transmit(b []byte) { s.transmitTo(s.src, b) }

func (s *Spectator) transmitTo(idx int, b []byte) {
	if s.tr.Send(idx, b) != nil {
		return
	}
	s.stats.PacketsSent++
	s.stats.BytesSent += int64(len(b))
}

// send sends the source our handshake until it is verified, then a Watch
// every tick; and serves the spectators we relay to.
func (s *Spectator) send() {
	if s.err == nil && !s.stats.SourceLeft {
		if s.up.handshakeDue(s.now) {
			s.sendHandshake(s.up.nonce)
			s.up.replyHS = false
		}
		if s.up.keyed() { // a sealed datagram proves to the source that we hold the keys
			w := &s.io.watch
			*w = wire.Watch{State: -1, Next: -1}
			if s.joined {
				w.State, w.Next = int32(s.feedFrom), int32(s.feed.high)
			} else if s.snap.on {
				w.State, w.Have, w.Mask = int32(s.snap.frame), uint32(s.snap.have), s.snap.mask()
			}
			b, err := wire.AppendControl(s.up.seal.Begin(s.io.sendBuf[:0], wire.KindWatch), w)
			if err == nil {
				s.transmit(s.up.seal.Seal(b))
			}
		}
	}
	if s.err == nil {
		s.sendWitnesses()
	}
	if s.aud != nil {
		s.aud.upTo = s.confirmed() // what the witnesses confirmed (none: everything)
		s.aud.send(s.now, s)
	}
}

// takeFeed takes a packet of final inputs from the source: the frames
// that extend those we have, up to feedFrames past the one we simulate
// next.
func (s *Spectator) takeFeed(body []byte) bool {
	if !s.joined {
		return true // it is ahead of our state; it repeats
	}
	return s.takeFeedInto(body, &s.feed, s.feedFrom, s.frame)
}

// takeFeedInto takes a packet of final inputs into l, which starts at
// frame from: the frames that extend those l has, up to feedFrames past
// keep, the oldest frame it must still hold.
func (s *Spectator) takeFeedInto(body []byte, l *feed, from, keep Frame) bool {
	h, err := wire.PeekInput(body, int32(l.high))
	if err != nil {
		return false
	}
	first := Frame(h.First)
	if first > l.high || Frame(h.End) <= l.high || first < from {
		return true // a gap, or nothing new
	}
	pkt := &s.io.pkt
	pkt.Base = nil
	if first > from {
		if !l.has(first - 1) {
			return true
		}
		for p := range s.players {
			s.io.base[p] = uint64(l.input(first-1, p))
		}
		pkt.Base = s.io.base[:s.players]
	}
	if s.format.ParseInput(body, int32(l.high), s.players, s.players, pkt) != nil {
		return false
	}
	var mask uint8
	for p, g := range pkt.Gossip {
		if g.Disconnected {
			mask |= 1 << p
		}
	}
	for f := l.high; f < Frame(pkt.End()) && f < keep+feedFrames; f++ {
		l.addRaw(pkt.Inputs[int(f-first)*s.players:], mask, s.now)
	}
	return true
}

// snapReceiver gathers the pieces of the state we join at.
type snapReceiver struct {
	on        bool
	frame     Frame
	size, sum uint64
	data      []byte
	got       []bool
	have      int // pieces held from the first on
	missing   int
	state     []byte        // the whole state, checked, until it is loaded (adopt)
	readyAt   time.Duration // when it was whole
}

// takeSnap takes a piece of the state; the last one loads it.
func (s *Spectator) takeSnap(body []byte) bool {
	m := &s.io.snap
	if wire.ParseControl(body, m) != nil {
		return false
	}
	if s.joined {
		return true
	}
	if int(m.Size) > s.arena.Size() {
		// The source's state does not fit our arena: another game, or
		// another version of it. Asking again would get the same.
		s.refuse(fmt.Sprintf("an arena of %d bytes", s.arena.Size()), fmt.Sprintf("a state of %d bytes", m.Size))
		return false
	}
	total := int(m.Total)
	pieces := snapPieces(total)
	if total > maxCompressed(s.arena.Size()) || int(m.Piece) >= pieces ||
		len(m.Data) != min(wire.MaxSnapData, total-int(m.Piece)*wire.MaxSnapData) {
		return false
	}
	r := &s.snap
	if !r.on || r.frame != Frame(m.Frame) || len(r.data) != total || r.size != uint64(m.Size) || r.sum != m.Sum {
		// The first piece, or a newer offer: start again.
		*r = snapReceiver{on: true, frame: Frame(m.Frame), size: uint64(m.Size), sum: m.Sum,
			data: slices.Grow(r.data[:0], total)[:total], got: make([]bool, pieces), missing: pieces}
	}
	s.stats.StatePieces++
	if r.got[m.Piece] {
		return true
	}
	r.got[m.Piece] = true
	r.missing--
	copy(r.data[int(m.Piece)*wire.MaxSnapData:], m.Data)
	for r.have < pieces && r.got[r.have] {
		r.have++
	}
	if r.missing > 0 {
		return true
	}
	state, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(r.data)), int64(r.size)+1))
	if err != nil || uint64(len(state)) != r.size || xxhash.Sum64(state) != r.sum {
		// Corrupt: ask for one again.
		r.on = false
		return false
	}
	r.state, r.readyAt = state, s.now
	s.adopt()
	return true
}

// adopt loads the source's state, whole and checked against its own sum,
// once every witness has offered one at or after its frame (each has
// Timeouts.Interrupt after the state arrived to offer one); when a
// witness's state is older, it is the one we load (witness.go, swap).
func (s *Spectator) adopt() {
	r := &s.snap
	if s.joined || r.state == nil || s.swapOlder() {
		return
	}
	if err := s.arena.Load(r.state); err != nil {
		// The state the source announced, whole, but not one of our
		// arena's: another game, or another version of it.
		s.refuse(fmt.Sprintf("an arena of %d bytes", s.arena.Size()), fmt.Sprintf("a state of %d bytes it cannot load (%v)", len(r.state), err))
		r.on, r.state = false, nil
		return
	}
	s.joined, s.frame, s.swapped = true, r.frame, false
	if s.feedFrom < 0 || s.feedFrom > r.frame || s.feed.low > r.frame {
		// A feed kept from the link's time as a witness goes on (the State
		// we tell it stays), when it holds the state's frame.
		s.feedFrom = r.frame
		s.feed.reset(r.frame)
	}
	for n := range s.wits {
		w := &s.wits[n]
		w.since, w.snap.data, w.snap.got, w.snap.state = s.now, nil, nil, nil // each has Timeouts.Handshake from now to offer a state we can check
	}
	s.stats.StateFrame, s.stats.StateBytes, s.stats.StateTime = r.frame, len(r.data), max(1, s.now-s.born)
	r.data, r.got, r.state = nil, nil, nil
	s.events.emit(EventJoined, s.frame, s.src)
}

// refuse ends the watch: the source's state is not one our arena can
// hold (ours and theirs say what each is).
func (s *Spectator) refuse(ours, theirs string) { s.fail(termsError(s.src, "State", ours, theirs)) }

// mask returns which of the 64 pieces after the first missing one we hold.
func (r *snapReceiver) mask() uint64 {
	var m uint64
	for d := range 64 {
		if n := r.have + d; n < len(r.got) && r.got[n] {
			m |= 1 << d
		}
	}
	return m
}
