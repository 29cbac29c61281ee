package rollback

import (
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the side of the machines that play on when a disconnected
// machine comes back (docs/protocol.md, "Reconnect"): within the
// RejoinWindow a new handshake from its address re-keys its link (it
// restarted: a new nonce); it watches the match through one of us as a
// spectator would (audience.go), then proposes a take-over frame T. We
// accept T only while no frame from T on is final here, play its players
// from T on with its inputs again (none of which has come: nothing from T
// on becomes final without them), and once every input before T is final
// send it our checksum of the state at T: it takes over only when that
// matches its own state there. Its first input packet ends the join.

// DefaultRejoinWindow is Config.RejoinWindow's default.
const DefaultRejoinWindow = 60 * time.Second

// joinResend is how often the messages of a join are repeated while
// unanswered.
const joinResend = 100 * time.Millisecond

// rejoin is a disconnected peer's way back, as the machines that play on
// see it.
type rejoin struct {
	since   time.Duration // when its departure was agreed: the window runs from here
	keyed   bool          // a new handshake re-keyed the link: it is joining
	take    Frame         // the take-over frame we accepted; 0: none
	sum     uint64        // our checksum of the state at the start of take
	summed  bool          // sum is of the state at take (every input before it final once anchor reaches it)
	readyAt time.Duration // when our Ready last went
	readied bool          // a Ready for take went: it may take over now (never preempted)
	key     [wire.SigningKeySize]byte
}

// reserve sets up the reserved slots (Peer.Late) of a match we start:
// each such machine is absent, as agreed, from frame 0, its players on the
// stand-in, until it joins like a machine that comes back.
func (s *Session) reserve() {
	for i := range s.peers {
		ps := &s.peers[i]
		if !ps.late {
			continue
		}
		ps.leave = leave{disc: true, agreed: true}
		for _, p := range ps.players {
			s.inputs.disconnect(p, 0)
		}
		s.sums.forget(i)
		if s.stmts != nil {
			s.stmts.reserve(i, ps.machine)
		}
	}
}

// rejoinable reports whether peer i may come (back) now: the match runs,
// its departure is agreed, and it was not caught equivocating; it has a
// reserved slot, or its departure is within the window.
func (s *Session) rejoinable(i int) bool {
	ps := &s.peers[i]
	return s.ls == nil && s.proto.started && ps.leave.agreed && !ps.leave.proven &&
		(ps.join.keyed || ps.late || s.proto.rejoinWindow > 0 && s.now-ps.join.since <= s.proto.rejoinWindow)
}

// watching reports whether datagram b from peer i is for the audience:
// a machine coming back watches the match as a spectator first, under a
// spectator's handshake (no players) and Watch messages.
func (s *Session) watching(i int, b []byte) bool {
	if i < 0 || i >= len(s.peers) || !s.rejoinable(i) {
		return false
	}
	if wire.Kind(b[0]) == wire.KindHandshake {
		h := &s.io.rx.hs
		return wire.ParseHandshake(b, h, s.proto.keys.auth) == nil && len(h.Local) == 0
	}
	return wire.SealedKind(b) == wire.KindWatch
}

// rekey takes a handshake from a rejoinable peer i with a new nonce (h
// echoes ours): the machine restarted. The link gets new keys; what it
// sends next is judged as a joiner's.
func (s *Session) rekey(i int, h *wire.Handshake) verdict {
	ps := &s.peers[i]
	if ps.join.take != 0 {
		return dropped // one join at a time: the last one times out first
	}
	if ps.auth.keyedAt != 0 && s.now-ps.auth.keyedAt < handshakeRetry {
		return dropped // re-keyed a moment ago: one derivation per retry period
	}
	if s.compareTerms(i, h) != nil {
		return dropped
	}
	seal, open, err := s.proto.keys.relink(s.proto.sessionID, ps.auth.ours, h.Nonce, h.Key)
	if err != nil {
		return dropped
	}
	ps.auth = peerAuth{ours: ps.auth.ours, nonce: h.Nonce, seal: seal, open: open, replyHS: true, heard: true, keyedAt: max(s.now, 1)}
	ps.join.keyed = true
	return taken // its silence counts from here (link.heard)
}

// handleJoin takes a joining peer's Join message. It returns the first
// frame to re-simulate.
func (s *Session) handleJoin(i int, b []byte) (Frame, bool) {
	m, ps := &s.io.rx.join, &s.peers[i]
	if wire.ParseControl(b, m) != nil || m.Op != wire.JoinPropose {
		return s.frame, false
	}
	t := Frame(m.Take)
	if !s.peers.joining(i) {
		if !ps.leave.disc && t == ps.join.take {
			s.sendJoin(i, wire.JoinAccept) // it took over: our answer was lost
			return s.frame, true
		}
		return s.frame, false
	}
	if s.stmts != nil && (t%stmtFrames != 0 || len(m.Keys) != wire.SigningKeySize) {
		return s.frame, false // its statements must start with an interval, under a new key
	}
	final, busy := s.finalFrontier(), false
	mis := s.frame
	if k := s.peers.pendingJoin(i); k >= 0 {
		// One join at a time: two machines taking over at once could each
		// count on the other's absence. The lower machine goes first; it
		// preempts a join we have not yet told it may take over.
		o := &s.peers[k].join
		if busy = s.peers[k].machine < ps.machine || o.readied; busy {
			final = max(final, o.take) // after that one
		} else {
			mis = min(mis, s.unaccept(k))
		}
	}
	if busy || t < final || t-s.frame > ringSize/2 {
		s.io.join = wire.Join{Op: wire.JoinRefuse, Take: m.Take, Frame: int32(final)}
		s.sendControl(i, &s.io.join)
		return mis, true
	}
	if t != ps.join.take {
		if ps.join.take != 0 {
			mis = min(mis, ps.join.take)
		}
		for _, p := range ps.players {
			if !s.inputs.rejoin(p, t) {
				return s.frame, false
			}
		}
		ps.join.take, ps.join.summed, ps.join.readied = t, false, false
		mis = min(mis, t)
		if s.stmts != nil {
			copy(ps.join.key[:], m.Keys)
			s.stmts.rejoin(ps.machine, i, ps.join.key, int32(t/stmtFrames))
		}
	}
	s.sendJoin(i, wire.JoinAccept)
	ps.join.readyAt = 0
	return mis, true
}

// finalFrontier returns the first frame that may not be final here: a
// take-over frame must not be before it.
func (s *Session) finalFrontier() Frame {
	f := max(s.horizon().anchor(s.frame), s.out.recorded)
	if s.stmts != nil {
		f = max(f, s.stmts.end()) // settled statements that do not include it
	}
	return f
}

// sendJoin sends joining peer i a Join: op Accept (with the signing keys)
// or Ready (with our checksum of the state at the take-over frame).
func (s *Session) sendJoin(i int, op uint8) {
	ps := &s.peers[i]
	m := &s.io.join
	*m = wire.Join{Op: op, Take: int32(ps.join.take), Keys: m.Keys[:0]}
	switch op {
	case wire.JoinAccept:
		if s.stmts != nil {
			m.Keys = s.stmts.keyList(m.Keys)
		}
	case wire.JoinReady:
		m.Sum = ps.join.sum
		for p := range s.roster.players {
			if !s.inputs.absent(PlayerID(p), ps.join.take) {
				m.Playing |= 1 << p
			}
		}
		ps.join.readied = true
	}
	s.sendControl(i, m)
}

// unaccept withdraws our acceptance of peer k's take-over frame: its
// players are absent for good again until it proposes anew (refused while
// another join is on). It returns the first frame to re-simulate.
func (s *Session) unaccept(k int) Frame {
	j := &s.peers[k].join
	for _, p := range s.peers[k].players {
		s.inputs.unjoin(p)
	}
	mis := j.take
	j.take, j.summed, j.readied = 0, false, false
	if s.stmts != nil {
		s.stmts.dirty = true
	}
	return mis
}

// checkJoins gives up on each joining peer silent for the disconnect
// timeout, and counts the others. It returns the first frame to
// re-simulate.
func (s *Session) checkJoins() Frame {
	mis := s.frame
	s.proto.joins = 0
	for i := range s.peers {
		switch {
		case !s.peers.joining(i):
		case s.now-s.peers[i].link.lastRecv > s.proto.disconnectAfter:
			mis = min(mis, s.abandonJoin(i))
		default:
			s.proto.joins++
		}
	}
	return mis
}

// sendJoins sends each joining peer our handshake when due, and our Ready
// once the state at its take-over frame is final, every joinResend until
// it takes over.
func (s *Session) sendJoins() {
	for i := range s.peers {
		ps := &s.peers[i]
		if !s.peers.joining(i) {
			continue
		}
		if ps.auth.handshakeDue(s.now) {
			s.sendHandshake(i, ps.auth.nonce)
			ps.auth.replyHS = false
		}
		j := &ps.join
		if j.take == 0 || s.now-j.readyAt < joinResend {
			continue
		}
		if f, ok := newDepartures(s.peers, &s.inputs, s.ls != nil).leftAfter(i, j.take, &s.io.floor); ok && !j.readied {
			// A machine that plays at take left: it would wait for that
			// machine's confirmation for ever. A frame after it left.
			j.readyAt = s.now
			s.io.join = wire.Join{Op: wire.JoinRefuse, Take: int32(j.take), Frame: int32(max(f, s.finalFrontier()))}
			s.sendControl(i, &s.io.join)
			continue
		}
		if !j.summed || s.horizon().anchor(s.frame) < j.take || s.frame <= j.take {
			continue
		}
		j.readyAt = s.now
		s.sendJoin(i, wire.JoinReady)
	}
}

// abandonJoin gives up on joining peer i (it went silent, or said it
// leaves): its players are absent for good again. It returns the first
// frame to re-simulate.
func (s *Session) abandonJoin(i int) Frame {
	ps := &s.peers[i]
	mis := s.frame
	if ps.join.take != 0 {
		mis = s.unaccept(i)
	}
	ps.join = rejoin{since: ps.join.since}
	if s.aud != nil {
		s.aud.forget(i, s)
	}
	return mis
}

// tookOver ends peer i's join: its first input packet since it was
// accepted came. It plays again, as from the start of the match.
func (s *Session) tookOver(i int) {
	ps := &s.peers[i]
	t := ps.join.take
	ps.leave, ps.late = leave{}, false
	ps.link = link{lastRecv: s.now, winStart: s.now, lastQuality: s.now - s.proto.qualityEvery}
	ps.progress = progress{ack: t}
	ps.timing = timing{ackAgeMin: -1}
	ps.suspect = suspicions{}
	ps.join = rejoin{take: t}
	for m := range s.peers {
		// Every machine has every frame before t of every other.
		s.peers[m].gossip.sees[i] = max(s.peers[m].gossip.sees[i], t)
		ps.gossip.sees[m] = max(ps.gossip.sees[m], t)
	}
	if s.aud != nil {
		if size, took, ok := s.aud.transfer(i); ok {
			ps.st.StateBytes, ps.st.StateTime = size, took
		}
		s.aud.forget(i, s)
	}
	if s.stmts != nil {
		s.stmts.dirty = true
	}
	s.sums.resume(i)
	s.events.emit(EventTookOver, t, i)
}
