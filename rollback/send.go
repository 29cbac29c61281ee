package rollback

import (
	"slices"
	"time"

	"github.com/rewindgg/rewind/desync"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the sending half of the protocol: every call ends by
// sending each peer what it is due.

// codec is the session's wire scratch: buffers and messages reused by
// every call, so that steady-state play allocates nothing.
type codec struct {
	recvBuf []byte
	pkt     wire.InputPacket
	base    [MaxPlayers]uint64
	local   []uint8 // scratch for a handshake's Local
	gossip  []wire.Gossip
	stepIn  [MaxPlayers]PlayerInput // the inputs of the frame being simulated
	floor   [MaxPlayers]Frame       // Session.floors
	// view is handleInput's view of the session: its pointers set once
	// (NewSession), the rest for each packet (made whole for each, it
	// cost every steady tick ~25 instructions).
	view inputView

	rx struct { // received control messages
		hs    wire.Handshake
		q     wire.Quality
		qr    wire.QualityReply
		d     wire.Disconnect
		start startMsgs
		sum   wire.Checksum
		state wire.State
		keys  wire.Keys
		att   wire.Attest
		join  wire.Join
	}
	hs   wire.Handshake // sent
	q    wire.Quality
	qr   wire.QualityReply
	sum  wire.Checksum
	keys wire.Keys
	att  wire.Attest
	join wire.Join
}

// newCodec returns the scratch of a session of players players: no input
// packet, sent or received, holds more than wire.MaxFrames frames of them.
func newCodec(players int) codec {
	return codec{
		recvBuf: make([]byte, maxDatagram+1),
		pkt:     wire.InputPacket{Inputs: make([]uint64, 0, wire.MaxFrames*players), Gossip: make([]wire.Gossip, 0, MaxPlayers)},
		gossip:  make([]wire.Gossip, 0, MaxPlayers),
	}
}

// frameTimes records when each frame first did something (went out, was
// simulated): the resend policy compares the send times with the round
// trip (progress.first), the timing of a peer's acknowledgements and
// inputs is checked against them (timing).
type frameTimes struct {
	high Frame // frames below this have a time
	at   [ringSize]time.Duration
}

// frameClock is when, by our clock, our frames went out and were first
// simulated: what the resend policy and a peer's timing are judged
// against.
type frameClock struct {
	sent   frameTimes // when each local frame first went out
	simmed frameTimes // when each frame was first simulated
}

// of returns the time of frame f, if the ring still holds it.
func (t *frameTimes) of(f Frame) (time.Duration, bool) {
	if f < 0 || f >= t.high || t.high-f >= ringSize {
		return 0, false
	}
	return t.at[ring(f)], true
}

// note records now as the time of every frame before end without one.
func (t *frameTimes) note(end Frame, now time.Duration) {
	for ; t.high < end; t.high++ {
		t.at[ring(t.high)] = now
	}
}

// send sends every peer what it is due: handshakes until it is verified,
// the start protocol, pings, checksums, then the local inputs it has not
// acknowledged.
func (s *Session) send() {
	if s.aud != nil {
		s.aud.send(s.now, s)
	}
	if len(s.peers) == 0 {
		return
	}
	localNext := s.inputs.next[s.roster.local[0]]
	quiet := false
	if s.proto.started {
		// A quiet tick sends no inputs: our frames went out when they do.
		if quiet = s.quiet.on && s.quietTick(localNext); !quiet { // off: no call (Config.SendEveryTick)
			s.times.sent.note(localNext, s.now)
		}
		if s.pace.clock != nil && s.frame > 0 {
			s.pace.clock.tell(&s.inputs, s.roster.local) // its schedule is ours from our first frame on
		}
		if s.stmts != nil {
			s.stmts.signOwn(&s.inputs, s.roster.local, localNext, s.pace.clock.signable(), s.now)
			s.stmts.update(&s.stmts.port)
		}
	}
	if s.proto.joins > 0 {
		r := s.rejoins()
		r.sendJoins(s.horizon().anchor(s.frame))
	}
	// The throttling, the checksums' repeats and the pings are timers
	// (timers.go): once they are sent, the deadline is computed again from
	// the stamps as they now stand.
	timers := s.proto.timersDue(s.now)
	for i := range s.peers {
		ps := &s.peers[i]
		if ps.leave.disc || (timers && ps.link.throttled(s.now)) { // a second's silence is a timer
			continue
		}
		// Whether an input packet goes to it in this call: the first
		// message due rides in its datagram, in front of the inputs (the
		// receiver takes them first): one datagram's header and seal less.
		inputs := s.proto.started && ps.auth.verified && !quiet &&
			(s.ls == nil || ps.progress.lockstepDue(s.now, localNext))
		if !ps.protocolIdle(timers, s.proto.started, s.sums != nil && s.sums.ex != nil) {
			s.sendProtocol(i, inputs, quiet, timers)
		}
		if !inputs {
			continue
		}
		if s.stmts != nil {
			s.stmts.port.sendAttest(i) // a statement covers the inputs it rides with
		}
		s.sendInputs(i, localNext)
		s.tx.flush(i, nil) // the input packet did not go
	}
	if timers && s.proto.started {
		s.proto.timersAt = s.peers.nextTimer(&s.proto, s.sums)
	}
}

// sendInputs sends peer i an input packet: the local inputs it has not
// acknowledged (the newest RedundantFrames of them, or all after a loss
// burst), the next frame we want from it, the gossip and our input lag.
func (s *Session) sendInputs(i int, localNext Frame) {
	ps, pkt, nLocal := &s.peers[i], &s.io.pkt, len(s.roster.local)
	want := s.inputs.next[ps.players[0]]
	ack := ps.progress.ack
	first, burst := ps.progress.first(s.now, s.times.sent.at[ring(ack)], ps.link.rtt, ack < s.times.sent.high, localNext, s.proto.redundant)
	if burst {
		ps.st.LossBursts++
	}
	if want-first > 255 {
		first = want - 255 // it is hopelessly behind; keep the header encodable
	}
	end := min(localNext, min(want, first)+255, first+Frame(s.roster.maxFrames))
	pkt.Ack, pkt.First, pkt.Players = int32(want), int32(first), nLocal
	pkt.Count = max(0, int(end-first))
	pkt.Inputs = pkt.Inputs[:0]
	for f := first; f < end; f++ {
		for _, p := range s.roster.local {
			pkt.Inputs = append(pkt.Inputs, uint64(s.inputs.at(f, p)))
		}
	}
	pkt.Base = nil
	if first > 0 && s.pace.clock == nil { // with the relay clock, coded against nothing (inputView.clock)
		for j, p := range s.roster.local {
			s.io.base[j] = uint64(s.inputs.at(first-1, p))
		}
		pkt.Base = s.io.base[:nLocal]
	}
	pkt.Gossip = s.io.gossip[:0]
	if len(ps.gossip.order) > 0 { // third machines: three or more
		pkt.Gossip = s.gossipFor(ps)
	}
	// localFrameLag, in input frames: how far our inputs run ahead of the
	// first of its frames we lack (our next frame plus our input lag,
	// minus that frame).
	ps.st.LocalFrameLag = s.frame + Frame(s.pace.lag.delay) - want
	if ps.timing.fresh(s.now) {
		s.pace.gov.Local(i, int(ps.st.LocalFrameLag))
	} else {
		s.pace.gov.StaleLocal(i, int(ps.st.LocalFrameLag)) // the input lag still counts it
	}
	pkt.Lag = min(s.pace.lag.delay, wire.MaxLag)
	if !s.tx.input(i, pkt) {
		return
	}
	if s.out.log != nil {
		s.out.log.Send(s.now, i, int(first), pkt.Count, int(want), pkt.Lag, slices.Clone(pkt.Inputs))
	}
}

// gossipFor returns what the next packet to ps says of the other
// machines: which left and where they were cut, and how many frames of
// each we have. The counts pace the anchor; they went in one packet of
// four until statements rode in the input packets, and in every one since
// (4 players on lan re-simulated 26% fewer frames for 2.4% more bytes;
// docs/architecture.md, "Lazy sending").
func (s *Session) gossipFor(ps *peer) []wire.Gossip {
	g := s.io.gossip[:0]
	for _, x := range ps.gossip.order {
		px := &s.peers[x]
		// A departure goes with the least count of its frames we know of
		// (ours, and every report not below its reporter's floor),
		// so that a report reaches every machine even if its reporter
		// dies before telling them all.
		e := wire.Gossip{Disconnected: px.leave.disc, Frame: -1}
		switch {
		case px.leave.disc:
			e.Frame = int32(newDepartures(s.peers, &s.inputs, s.ls != nil, s.stmts).cut(x, &s.io.floor))
		default:
			e.Frame = int32(s.inputs.next[px.players[0]])
		}
		g = append(g, e)
	}
	s.io.gossip = g
	return g
}

// protocolIdle reports whether sendProtocol has nothing to send peer ps:
// the match started (started), no timer is due (timers), the handshake is
// done and no handshake or ping waits for our answer, and no state is
// exchanged after a desync (ex). It is every test of sendProtocol at
// once, kept beside it, small enough to inline: a steady tick skips the
// call.
func (ps *peer) protocolIdle(timers, started, ex bool) bool {
	return !timers && started && ps.auth.verified && !ps.auth.replyHS && !ps.link.replyQuality && !ex
}

// sendProtocol sends the handshake, start, quality, checksum and state
// messages due to peer i; a ping, reply or checksum rides with the input
// packet when one goes to it in this call (inputs). A quiet tick holds a
// ping and a checksum back to ride in the next tick's input packet (quiet
// ticks never come two in a row; a ping's round trip is timed from when it
// goes); a reply goes at once, as its delay would count in the round trip.
func (s *Session) sendProtocol(i int, inputs, quiet, timers bool) {
	ps := &s.peers[i]
	l := &ps.link
	if ps.auth.handshakeDue(s.now) && (!ps.late || ps.auth.replyHS) {
		// A reserved slot's machine is answered, not called: it may not exist.
		s.proto.sendHandshake(&s.tx, &s.io.hs, i, ps.auth.nonce) // 0 until we pinned its nonce
		ps.auth.replyHS = false
	}
	if !ps.auth.keyed() || ps.leave.disc {
		return
	}
	if !s.proto.started { // both send only before the start
		s.start.send(s.peers, i, &s.tx, s.now)
		if s.stmts != nil {
			s.stmts.port.sendKeys(i)
		}
	}
	if l.replyQuality {
		s.io.qr = wire.QualityReply{Echo: l.replyEcho, Frame: int32(s.frame)}
		s.tx.riding(i, &s.io.qr, inputs)
		l.replyQuality = false
	}
	if timers { // a checksum's repeats are timers (timers.go)
		if f, sum, ok := s.sums.latest(); ok && !quiet && ps.sums.due(s.now, f) {
			s.io.sum = wire.Checksum{Frame: int32(f), Sum: sum}
			s.tx.riding(i, &s.io.sum, inputs)
		}
		if f, sum, ok := s.sums.reported(i, s.now); ok && ps.sums.resend(s.now) {
			s.io.sum = wire.Checksum{Frame: int32(f), Sum: sum}
			s.tx.riding(i, &s.io.sum, inputs)
		}
	}
	if s.sums != nil && s.sums.ex != nil {
		s.sums.outgoing(i, s.now, &s.tx)
	}
	// Before the match starts, ping every 100 ms: the start delay needs the
	// round trip, and the link-lag bound the least of several samples.
	if timers && ((s.now-l.lastQuality >= s.proto.qualityEvery && !quiet) || (!s.proto.started && s.now-l.lastQuality >= handshakeRetry)) {
		l.pinged(s.now)
		s.io.q = wire.Quality{Sent: int64(s.now), Frame: int32(s.frame)}
		s.tx.riding(i, &s.io.q, inputs)
	}
}

// finalChecksum takes a checksum that has become final (a checksumSink):
// the Recorder and the log get it.
func (s *Session) finalChecksum(f Frame, sum uint64) {
	s.proto.resetTimers() // it is due to every peer at once
	if s.out.rec != nil {
		s.out.rec.Checksum(f, sum)
	}
	if s.out.log != nil {
		s.out.log.Checksum(s.now, int(f), sum, -1)
	}
}

// outvoted takes a peer's checksum that disagrees with ours and with the
// majority of the other peers' (a checksumSink): it is the odd one out —
// desynced, or lying — and is named; the match goes on. Desynced, it finds
// itself outvoted too, and its own Advance reports the desync.
func (s *Session) outvoted(e *desync.Error) {
	if s.out.log != nil {
		s.out.log.Desync(s.now, int(e.Frame), e.Peer, e.Local, e.Remote)
	}
	s.suspect(e.Peer, SuspectDesync)
	s.sums.trace(e, s.horizon(), s.snaps.arena, &s.app)
}

// checkDesync hands on the checksums whose frame can no longer change
// (not on a stalled tick) and compares them with the peers'.
func (s *Session) checkDesync(stalled bool) {
	if s.sums == nil || s.sums.failed() != nil {
		return
	}
	s.sums.rec.tick(s.sums, s.now, s.proto.disconnectAfter)
	if s.sums.failed() != nil {
		return // the kept state never came: the match ends on the desync
	}
	// A stalled tick compares the checksums that came; it hands on none
	// (that waits for the next frame simulated, as it always did).
	if !stalled && s.sums.waiting(s.frame) { // the anchor only when a checksum waits for it
		s.sums.finals(s.frame, s.horizon().anchor(s.frame), s)
	}
	if !s.sums.dirty {
		return // nothing to compare came since the last call: detect's own test, without the call
	}
	e := s.sums.detect(len(s.peers), s, s.now)
	if e == nil {
		return
	}
	s.proto.resetTimers() // our checksum there is repeated until the peer answers
	if s.out.log != nil {
		s.out.log.Desync(s.now, int(e.Frame), e.Peer, e.Local, e.Remote)
	}
	s.events.emit(EventDesyncDetected, Frame(e.Frame), e.Peer)
	if rep := s.sums.found(); rep != nil {
		e = rep // a recovery's: Recovered, Adopted
	}
	s.sums.trace(e, s.horizon(), s.snaps.arena, &s.app)
}
