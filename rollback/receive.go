package rollback

import (
	"math/bits"
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the receiving half of the protocol (docs/protocol.md):
// every datagram a peer sends is a claim, checked before it changes
// anything, and dropped and counted when it cannot be true.

// peerBudget is how many datagrams of one peer a session judges per call:
// one peer's flood costs each Advance a bounded amount. It matches the UDP
// transport's queue per peer (udp.PeerQueue), which keeps the newest.
const peerBudget = 64

// receive processes every waiting packet and returns the first frame whose
// newly confirmed input differs from the one it was simulated with, or
// s.frame when there is none.
func (s *Session) receive() Frame {
	mis := s.frame
	if s.tx.tr == nil {
		return mis
	}
	buf := s.io.recvBuf
	var judged [MaxPlayers]int
	s.proto.keys.newCall()
	if s.stmts != nil {
		s.stmts.newCall()
	}
	// Made only with an audience: a machine coming back watches through
	// it. A pointer: the view zeroed in every call cost a steady tick ~5
	// instructions.
	var rj *rejoins
	if s.aud != nil {
		s.aud.newCall()
		r := s.rejoins()
		rj = &r
	}
	for {
		n, peer, ok := s.tx.tr.Receive(buf)
		if s.pace.clock != nil {
			// The relay's items come ahead of the datagrams of their
			// envelope: a decided frame is final before any input of it.
			mis = min(mis, s.takeDecisions())
		}
		if !ok {
			return mis
		}
		s.stats.PacketsReceived++
		s.stats.BytesReceived += int64(n)
		if s.aud != nil && (peer >= len(s.peers) || (n > 0 && n <= maxDatagram && rj.watching(peer, buf[:n]))) {
			if n <= 0 || n > maxDatagram || !s.aud.receive(peer, buf[:n], s.now, s) {
				s.stats.PacketsInvalid++
			} else if peer < len(s.peers) && wire.Kind(buf[0]) != wire.KindHandshake {
				// A machine coming back that watches us (sealed, so it holds
				// the keys): alive, though it has nothing to propose yet.
				s.peers[peer].link.lastRecv = s.now
			}
			continue
		}
		if peer < 0 || peer >= len(s.peers) {
			s.stats.PacketsInvalid++
			continue
		}
		if judged[peer] == peerBudget {
			// A flood, or a transport that queues without bound: the rest
			// of this peer's datagrams this call are dropped unjudged.
			s.peers[peer].st.PacketsDropped++
			s.stats.PacketsOverBudget++
			continue
		}
		judged[peer]++
		ps := &s.peers[peer]
		ps.auth.heard = true
		var v verdict
		var f Frame
		switch {
		case n <= 0 || n > maxDatagram:
		case wire.Kind(buf[0]) == wire.KindHandshake:
			v = s.handleHandshake(peer, buf[:n])
		default:
			f, v = s.handleSealed(peer, buf[:n])
			mis = min(mis, f)
		}
		switch v {
		case dropped:
			s.stats.PacketsInvalid++
			ps.st.PacketsDropped++
		case taken:
			ps.st.PacketsReceived++
			if ps.link.heard(s.now, n) {
				s.events.emit(EventNetworkResumed, s.frame, peer)
			}
		}
	}
}

// handleSealed opens a sealed datagram from peer i and takes what it
// carries. It returns the first mispredicted frame it revealed (s.frame
// for none) and its verdict.
func (s *Session) handleSealed(i int, b []byte) (Frame, verdict) {
	a := &s.peers[i].auth
	if a.open == nil {
		// No keys yet: the peer's first sealed datagrams can overtake the
		// handshake that lets us open them (or a stranger sent it). It is
		// ignored; the peer repeats what matters.
		return s.frame, answered
	}
	body, err := a.open.Open(b)
	switch {
	case err == wire.ErrReplay:
		// Genuine but taken before: a duplicate the network made, or a
		// replay. Either way it changes nothing.
		s.stats.PacketsDuplicate++
		return s.frame, answered
	case err == wire.ErrMAC:
		s.stats.PacketsForged++
		s.peers[i].st.PacketsForged++
		if s.peers[i].link.forged() {
			s.events.emit(EventForgery, s.frame, i)
		}
		return s.frame, dropped
	case err != nil:
		return s.frame, dropped
	}
	s.peers.verify(i, s.now, &s.events, s.frame) // it holds the keys
	s.peers[i].link.missing(s.now, a.open.Lost(), s.proto.started)
	if h := s.proto.handlers.of(wire.SealedKind(b)); h != nil {
		f, ok := h(s, i, body)
		return f, verdictOf(ok)
	}
	return s.frame, dropped // a kind no feature of ours takes
}

// handleRiding parses into m the message at the start of the body b of a
// datagram from peer i, and takes the input packet riding behind it, if
// any (send). It returns the first mispredicted frame the inputs revealed
// (s.frame for none) and whether both parts were acceptable. Each part is
// checked whole before it is applied; the caller takes the message after
// the inputs, and a bad one drops the datagram after them.
func (s *Session) handleRiding(i int, b []byte, m wire.Control) (Frame, bool) {
	rest, err := wire.ParseControlPrefix(b, m)
	if err != nil {
		return s.frame, false
	}
	if len(rest) == 0 {
		return s.frame, true
	}
	return s.handleInput(i, rest)
}

func verdictOf(ok bool) verdict {
	if ok {
		return taken
	}
	return dropped
}

// disconnect disconnects peer i here: its frames received so far are
// frozen, and the agreement on its disconnect frame starts.
func (s *Session) disconnect(i int) {
	ps := &s.peers[i]
	ps.leave.disconnect(s.inputs.next[ps.players[0]])
	s.proto.departing = true // checkLiveness settles the agreement
	s.sums.forget(i)
	if s.stmts != nil {
		s.stmts.dirty = true // the digests need less of it, or wait for the agreement
	}
}

// handleGossip records what peer from says of the other machines. A
// report that a machine left is recorded but, alone, disconnects no one:
// one liar could forge it (docs/security.md). Two reporters — with four or
// more machines — can only both be honest, so x is disconnected here too.
func (s *Session) handleGossip(from int, gossip []wire.Gossip) {
	order := s.peers[from].gossip.order
	for k, g := range gossip {
		if k >= len(order) {
			continue
		}
		x := order[k]
		px := &s.peers[x]
		if !g.Disconnected {
			s.peers[from].gossip.count(x, Frame(g.Frame))
			continue
		}
		if Frame(g.Frame) < s.inputs.back(px.players[0]) {
			// Its absence before it came back, reported by a machine that
			// has not yet seen it take over: old news.
			continue
		}
		// Reports are kept after the agreement too: a proof of
		// equivocation is relayed until the reporter's cut shows it.
		if first := px.leave.reportBy(from, Frame(g.Frame)); px.leave.agreed || !first {
			continue
		}
		if !px.leave.disc && s.now-px.link.lastRecv < s.proto.interruptAfter {
			// It says x left, and x spoke to us just now: unless a proof
			// that x equivocated follows (statements.go), it lies.
			px.leave.doubt[from] = s.now
			s.proto.timerAt(s.now + doubtFor)
		}
		if px.leave.reporters() >= 2 {
			s.disconnect(x)
		}
	}
	if newDepartures(s.peers, &s.inputs, s.ls != nil, s.stmts).withholds(from) {
		s.suspect(from, SuspectWithheld)
	}
}

// countSlack is how far behind its own inputs an honest machine's count of
// a third machine's frames can be (see Session.floor): the deepest
// rollback, the largest input lag, and a few packets' staleness (a count
// goes in every input packet, but packets are lost, and quiet ticks send
// none).
const countSlack = maxRollbackLimit + maxInputLag + 8

// doubtFor is how long a report that a machine we hear from left waits
// for the proof that would justify it before its reporter is named.
const doubtFor = 500 * time.Millisecond

// checkLiveness raises interrupted and disconnected states from silence,
// and finalises disconnect agreements. It returns the earliest frame that
// must be re-simulated because a disconnect frame was agreed. The silence
// and the doubted reports are timers: judged only when timers are due
// (protocol.timersDue, timers.go).
func (s *Session) checkLiveness(timers bool) Frame {
	mis := s.frame
	if timers { // silence
		for i := range s.peers {
			ps := &s.peers[i]
			if ps.leave.disc || !s.proto.started {
				continue
			}
			silent := s.now - ps.link.lastRecv
			if silent > s.proto.interruptAfter && !ps.link.interrupted {
				ps.link.interrupted = true
				s.events.emit(EventNetworkInterrupted, s.frame, i)
			}
			if silent > s.proto.disconnectAfter {
				s.disconnect(i)
			}
		}
	}
	s.proto.joins = 0
	if s.proto.agreed && s.peers.anyJoining() { // the view only then: this runs every call
		r := s.rejoins()
		mis = min(mis, r.checkJoins())
	}
	if !timers && !s.proto.departing {
		return mis // no doubt can be judged, no departure settled
	}
	s.proto.departing = false // until one is found still waiting
	for x := range s.peers {
		px := &s.peers[x]
		if timers {
			for named := px.leave.judge(len(s.peers), s.now); named != 0; named &= named - 1 {
				s.suspect(bits.TrailingZeros8(named), SuspectGossip)
			}
		}
		if !px.leave.disc || px.leave.agreed {
			continue
		}
		d := newDepartures(s.peers, &s.inputs, s.ls != nil, s.stmts)
		if !px.leave.settle(x, s.peers, d.floors(x, &s.io.floor)) {
			s.proto.departing = true
			continue
		}
		s.proto.agreed = true
		for _, p := range px.players {
			s.inputs.disconnect(p, px.leave.frame)
		}
		if s.stmts != nil {
			s.stmts.dirty = true
		}
		mis = min(mis, px.leave.frame)
		px.join.since = s.now
		if s.aud == nil && s.proto.rejoinWindow > 0 && s.ls == nil {
			s.serve(0) // it may come back: it will watch us first
		}
		s.events.emit(EventDisconnected, px.leave.frame, x)
	}
	return mis
}
