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

// defaultRejoinWindow is Config.RejoinWindow's default.
const defaultRejoinWindow = 60 * time.Second

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

// rejoins is the session as the machines that play on see a machine
// coming back: the owners a join reads and changes, made for the call
// (Session.rejoins). It holds no state of its own: a join's is each
// peer's rejoin.
type rejoins struct {
	peers    peerSet
	inputs   *inputRing
	stmts    *statements // nil: fewer than three machines
	sums     *checksums  // nil: no checksums
	aud      *audience   // nil: nobody watches (and no join is on)
	proto    *protocol
	tx       *outbox
	io       *codec
	events   *eventLog
	players  int
	lockstep bool
	now      time.Duration
	frame    Frame // the next frame to simulate
	recorded Frame // the first frame not yet recorded as final
}

// rejoins returns the view of the session a join works on.
func (s *Session) rejoins() rejoins {
	return rejoins{peers: s.peers, inputs: &s.inputs, stmts: s.stmts, sums: s.sums, aud: s.aud, proto: &s.proto,
		tx: &s.tx, io: &s.io, events: &s.events, players: s.roster.players, lockstep: s.ls != nil,
		now: s.now, frame: s.frame, recorded: s.out.recorded}
}

// reserve sets up the reserved slots (Peer.Late) of a match we start:
// each such machine is absent, as agreed, from frame 0, its players on the
// stand-in, until it joins like a machine that comes back.
func (r *rejoins) reserve() {
	for i := range r.peers {
		ps := &r.peers[i]
		if !ps.late {
			continue
		}
		ps.leave, r.proto.agreed = leave{disc: true, agreed: true}, true
		for _, p := range ps.players {
			r.inputs.disconnect(p, 0)
		}
		r.sums.forget(i)
		if r.stmts != nil {
			r.stmts.reserve(i, ps.machine)
		}
	}
}

// rejoinable reports whether peer i may come (back) now: the match runs,
// its departure is agreed, and it was not caught equivocating; it has a
// reserved slot, or its departure is within the window.
func (r *rejoins) rejoinable(i int) bool {
	ps := &r.peers[i]
	return !r.lockstep && r.proto.started && ps.leave.agreed && !ps.leave.proven &&
		(ps.join.keyed || ps.late || r.proto.rejoinWindow > 0 && r.now-ps.join.since <= r.proto.rejoinWindow)
}

// watching reports whether datagram b from peer i is for the audience:
// a machine coming back watches the match as a spectator first, under a
// spectator's handshake (no players) and Watch messages.
func (r *rejoins) watching(i int, b []byte) bool {
	if i < 0 || i >= len(r.peers) || !r.rejoinable(i) {
		return false
	}
	if wire.Kind(b[0]) == wire.KindHandshake {
		h := &r.io.rx.hs
		return wire.ParseHandshake(b, h, r.proto.keys.auth) == nil && len(h.Local) == 0
	}
	return wire.SealedKind(b) == wire.KindWatch
}

// rekey takes a handshake from a rejoinable peer i with a new nonce (h
// echoes ours): the machine restarted. The link gets new keys; what it
// sends next is judged as a joiner'r.
func (r *rejoins) rekey(i int, h *wire.Handshake) verdict {
	ps := &r.peers[i]
	if ps.join.take != 0 {
		return dropped // one join at a time: the last one times out first
	}
	if ps.auth.keyedAt != 0 && r.now-ps.auth.keyedAt < handshakeRetry {
		return dropped // re-keyed a moment ago: one derivation per retry period
	}
	if compareTerms(i, &r.proto.keys.terms, r.io.wantLocal(ps.players), h) != nil {
		return dropped
	}
	seal, open, err := r.proto.keys.relink(r.proto.sessionID, ps.auth.ours, h.Nonce, h.Key)
	if err != nil {
		return dropped
	}
	ps.auth = peerAuth{ours: ps.auth.ours, nonce: h.Nonce, seal: seal, open: open, replyHS: true, heard: true, keyedAt: max(r.now, 1)}
	ps.join.keyed = true
	return taken // its silence counts from here (link.heard)
}

// handleJoin takes a joining peer's Join message; anchor is the
// session's (Session.anchor). It returns the first frame to re-simulate.
func (r *rejoins) handleJoin(i int, b []byte, anchor Frame) (Frame, bool) {
	m, ps := &r.io.rx.join, &r.peers[i]
	if wire.ParseControl(b, m) != nil || m.Op != wire.JoinPropose {
		return r.frame, false
	}
	t := Frame(m.Take)
	if !r.peers.joining(i) {
		if !ps.leave.disc && t == ps.join.take {
			r.sendJoin(i, wire.JoinAccept) // it took over: our answer was lost
			return r.frame, true
		}
		return r.frame, false
	}
	if r.stmts != nil && (t%r.stmts.every != 0 || len(m.Keys) != wire.SigningKeySize) {
		return r.frame, false // its statements must start with an interval, under a new key
	}
	final, busy := r.finalFrontier(anchor), false
	mis := r.frame
	if k := r.peers.pendingJoin(i); k >= 0 {
		// One join at a time: two machines taking over at once could each
		// count on the other's absence. The lower machine goes first; it
		// preempts a join we have not yet told it may take over.
		o := &r.peers[k].join
		if busy = r.peers[k].machine < ps.machine || o.readied; busy {
			final = max(final, o.take) // after that one
		} else {
			mis = min(mis, r.unaccept(k))
		}
	}
	if busy || t < final || t-r.frame > ringSize/2 {
		r.io.join = wire.Join{Op: wire.JoinRefuse, Take: m.Take, Frame: int32(final)}
		r.tx.control(i, &r.io.join)
		return mis, true
	}
	if t != ps.join.take {
		if ps.join.take != 0 {
			mis = min(mis, ps.join.take)
		}
		for _, p := range ps.players {
			if !r.inputs.rejoin(p, t) {
				return r.frame, false
			}
		}
		ps.join.take, ps.join.summed, ps.join.readied = t, false, false
		mis = min(mis, t)
		if r.stmts != nil {
			copy(ps.join.key[:], m.Keys)
			r.stmts.rejoin(ps.machine, i, ps.join.key, int32(t/r.stmts.every))
		}
	}
	r.sendJoin(i, wire.JoinAccept)
	ps.join.readyAt = 0
	return mis, true
}

// finalFrontier returns the first frame that may not be final here, the
// anchor being anchor: a take-over frame must not be before it.
func (r *rejoins) finalFrontier(anchor Frame) Frame {
	f := max(anchor, r.recorded)
	if r.stmts != nil {
		f = max(f, r.stmts.end()) // settled statements that do not include it
	}
	return f
}

// sendJoin sends joining peer i a Join: op Accept (with the signing keys)
// or Ready (with our checksum of the state at the take-over frame).
func (r *rejoins) sendJoin(i int, op uint8) {
	ps := &r.peers[i]
	m := &r.io.join
	*m = wire.Join{Op: op, Take: int32(ps.join.take), Keys: m.Keys[:0]}
	switch op {
	case wire.JoinAccept:
		if r.stmts != nil {
			m.Keys = r.stmts.keyList(m.Keys)
		}
	case wire.JoinReady:
		m.Sum = ps.join.sum
		for p := range r.players {
			if !r.inputs.absent(PlayerID(p), ps.join.take) {
				m.Playing |= 1 << p
			}
		}
		ps.join.readied = true
	}
	r.tx.control(i, m)
}

// unaccept withdraws our acceptance of peer k's take-over frame: its
// players are absent for good again until it proposes anew (refused while
// another join is on). It returns the first frame to re-simulate.
func (r *rejoins) unaccept(k int) Frame {
	j := &r.peers[k].join
	for _, p := range r.peers[k].players {
		r.inputs.unjoin(p)
	}
	mis := j.take
	j.take, j.summed, j.readied = 0, false, false
	if r.stmts != nil {
		r.stmts.dirty = true
	}
	return mis
}

// checkJoins gives up on each joining peer that holds a take-over frame
// and was silent for the disconnect timeout, and counts the others. It
// returns the first frame to re-simulate.
//
// One without a take-over frame holds nothing up, and is not given up
// on: it watches the match through another machine, and says nothing to
// us until it proposes (given up on, its proposal was ignored for good:
// 3 joins in 300 matches of 4 machines failed so).
func (r *rejoins) checkJoins() Frame {
	mis := r.frame
	r.proto.joins = 0
	for i := range r.peers {
		switch {
		case !r.peers.joining(i):
		case r.peers[i].join.take != 0 && r.now-r.peers[i].link.lastRecv > r.proto.disconnectAfter:
			mis = min(mis, r.abandonJoin(i))
		default:
			r.proto.joins++
		}
	}
	return mis
}

// sendJoins sends each joining peer our handshake when due, and our Ready
// once the state at its take-over frame is final (anchor, the session's,
// reached it), every joinResend until it takes over.
func (r *rejoins) sendJoins(anchor Frame) {
	for i := range r.peers {
		ps := &r.peers[i]
		if !r.peers.joining(i) {
			continue
		}
		if ps.auth.handshakeDue(r.now) {
			r.proto.sendHandshake(r.tx, &r.io.hs, i, ps.auth.nonce)
			ps.auth.replyHS = false
		}
		j := &ps.join
		if j.take == 0 || r.now-j.readyAt < joinResend {
			continue
		}
		if f, ok := newDepartures(r.peers, r.inputs, r.lockstep, r.stmts).leftAfter(i, j.take, &r.io.floor); ok {
			// A machine that plays at take left: it would wait for that
			// machine's confirmation for ever. A frame after it left. Our
			// Ready may have gone already (a machine that left after take
			// had every input before it): the joiner, still waiting for
			// that machine's, has not taken over (one that did ignores
			// this), and proposes again.
			j.readyAt = r.now
			r.io.join = wire.Join{Op: wire.JoinRefuse, Take: int32(j.take), Frame: int32(max(f, r.finalFrontier(anchor)))}
			r.tx.control(i, &r.io.join)
			continue
		}
		if !j.summed || anchor < j.take || r.frame <= j.take {
			continue
		}
		j.readyAt = r.now
		r.sendJoin(i, wire.JoinReady)
	}
}

// abandonJoin gives up on joining peer i (it went silent, or said it
// leaves): its players are absent for good again. It returns the first
// frame to re-simulate.
func (r *rejoins) abandonJoin(i int) Frame {
	ps := &r.peers[i]
	mis := r.frame
	if ps.join.take != 0 {
		mis = r.unaccept(i)
	}
	ps.join = rejoin{since: ps.join.since}
	if r.aud != nil {
		r.aud.forget(i, &guestEvents{r.events, r.frame})
	}
	return mis
}

// tookOver ends peer i's join: its first input packet since it was
// accepted came. It plays again, as from the start of the match.
func (r *rejoins) tookOver(i int) {
	ps := &r.peers[i]
	t := ps.join.take
	ps.leave, ps.late = leave{}, false
	ps.link = link{lastRecv: r.now, winStart: r.now, lastQuality: r.now - r.proto.qualityEvery}
	r.proto.resetTimers() // it is pinged at once
	ps.progress = progress{ack: t}
	ps.timing = timing{ackAgeMin: -1}
	ps.suspect = suspicions{}
	ps.join = rejoin{take: t}
	for m := range r.peers {
		// Every machine has every frame before t of every other.
		r.peers[m].gossip.sees[i] = max(r.peers[m].gossip.sees[i], t)
		ps.gossip.sees[m] = max(ps.gossip.sees[m], t)
	}
	if r.aud != nil {
		if size, took, ok := r.aud.transfer(i); ok {
			ps.st.StateBytes, ps.st.StateTime = size, took
		}
		r.aud.forget(i, &guestEvents{r.events, r.frame})
	}
	if r.stmts != nil {
		r.stmts.dirty = true
	}
	r.sums.resume(i)
	r.events.emit(EventTookOver, t, i)
}

// guestEvents reports a guest's departure at frame (a guestSink: the
// audience forgets a machine's watching once it took over or gave up). It
// is made only then: the view, handed over as an interface, would escape
// to the heap in every call that makes one.
type guestEvents struct {
	events *eventLog
	frame  Frame
}

// emitGuest reports a spectator's arrival or departure.
func (g *guestEvents) emitGuest(k EventKind, idx int) { g.events.emit(k, g.frame, idx) }
