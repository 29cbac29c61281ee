package rollback

import (
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the receive dispatch: a sealed datagram from a peer,
// opened, goes to the handler of its kind, which the features present
// registered when the session was made (raft's r.step, chosen once). A
// kind no feature of this session takes is dropped.

// handler takes the body of a sealed datagram of its kind from peer i. It
// returns the first mispredicted frame it revealed (s.frame for none) and
// whether the datagram was acceptable.
type handler func(s *Session, i int, body []byte) (Frame, bool)

// handlers is the session's table, a handler per sealed kind.
type handlers [wire.KindJoin + 1]handler

// of returns kind k's handler, or nil.
func (h *handlers) of(k wire.Kind) handler {
	if int(k) < len(h) {
		return h[k]
	}
	return nil
}

// register fills the table for the features s has: inputs, pings, the
// start, departures and joins for every session; checksums and desync
// reports with checksums; keys and statements with statements.
func (h *handlers) register(s *Session) {
	h.registerPlay()
	if s.sums != nil {
		h.registerChecksums()
	}
	if s.stmts != nil {
		h.registerStatements()
	}
}

// registerPlay registers what every session takes: inputs, pings and
// their replies, the start, departures and joins.
func (h *handlers) registerPlay() {
	h[wire.KindInput] = (*Session).handleInput
	// A ping: send answers it.
	h[wire.KindQuality] = func(s *Session, i int, b []byte) (Frame, bool) {
		f, ok := s.handleRiding(i, b, &s.io.rx.q)
		if ok {
			l := &s.peers[i].link
			l.replyQuality, l.replyEcho = true, s.io.rx.q.Sent
		}
		return f, ok
	}
	// A reply to a ping: a round-trip sample.
	h[wire.KindQualityReply] = func(s *Session, i int, b []byte) (Frame, bool) {
		f, ok := s.handleRiding(i, b, &s.io.rx.qr)
		if !ok {
			return f, false
		}
		l := &s.peers[i].link
		switch l.takeReply(time.Duration(s.io.rx.qr.Echo), s.now) {
		case forged:
			s.suspect(i, SuspectTiming) // a reply to a ping we never sent
			return f, false
		case dropped:
			return f, false
		}
		s.pace.gov.Bound(i, linkLagBound(l.floor()))
		return f, true
	}
	for _, k := range []wire.Kind{wire.KindReady, wire.KindStart, wire.KindGo} {
		h[k] = func(s *Session, i int, b []byte) (Frame, bool) {
			ok, lied := s.start.take(s.peers, i, k, b, &s.io.rx.start, s.proto.started)
			if lied {
				s.suspect(i, SuspectTiming)
			}
			return s.frame, ok
		}
	}
	// A departure: a machine coming back that gives up, or a peer leaving.
	h[wire.KindDisconnect] = func(s *Session, i int, b []byte) (Frame, bool) {
		if wire.ParseControl(b, &s.io.rx.d) != nil {
			return s.frame, false
		}
		if s.peers.joining(i) { // it gives up coming back
			r := s.rejoins()
			return r.abandonJoin(i), true
		}
		s.disconnect(i)
		return s.frame, true
	}
	h[wire.KindJoin] = func(s *Session, i int, b []byte) (Frame, bool) {
		r := s.rejoins()
		return r.handleJoin(i, b, s.horizon().anchor(s.frame))
	}
}

// registerChecksums registers the checksums and the pieces of a peer's
// state after a desync.
func (h *handlers) registerChecksums() {
	// A checksum may carry an input packet, as a ping does: its
	// inputs are taken first.
	h[wire.KindChecksum] = func(s *Session, i int, b []byte) (Frame, bool) {
		c := &s.io.rx.sum
		f, ok := s.handleRiding(i, b, c)
		if !ok {
			return f, false
		}
		switch s.sums.take(i, c, s.inputs.next[s.roster.local[0]]) {
		case forged:
			s.suspect(i, SuspectChecksum)
			return f, false
		case dropped:
			return f, false
		}
		if s.out.log != nil {
			s.out.log.Checksum(s.now, int(c.Frame), c.Sum, i)
		}
		return f, true
	}
	// A piece of a peer's state after a desync.
	h[wire.KindState] = func(s *Session, i int, b []byte) (Frame, bool) {
		if wire.ParseControl(b, &s.io.rx.state) != nil {
			return s.frame, false
		}
		ok, completed := s.sums.incoming(i, &s.io.rx.state, s.snaps.arena)
		if completed {
			s.events.emit(EventDesyncReport, s.sums.ex.frame, s.sums.ex.peer)
			return s.sums.recovered(&s.snaps, s.frame, s.now), ok // Config.Recover: simulated again from the kept state
		}
		return s.frame, ok
	}
}

// registerStatements registers the signing keys and the Attest messages.
func (h *handlers) registerStatements() {
	h[wire.KindKeys] = func(s *Session, i int, b []byte) (Frame, bool) { return s.frame, s.stmts.port.handleKeys(i, b) }
	// The inputs riding behind an Attest go first, as its statement
	// covers them.
	h[wire.KindAttest] = func(s *Session, i int, b []byte) (Frame, bool) {
		m := &s.io.rx.att
		mis, ok := s.handleRiding(i, b, m)
		if !ok {
			return mis, false
		}
		f, ok := s.stmts.port.takeAttest(s, i, m, s.frame)
		return min(mis, f), ok
	}
}
