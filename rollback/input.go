package rollback

import (
	"slices"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is a peer's input packet: judged whole (judgeInput, which
// changes nothing but the packet it parses into) and then, if acceptable,
// applied (applyInput). "Checked whole before applied" is the shape of the
// code: nothing in the judgement can change the session.

// inputVerdict is the judgement of one input packet from a peer.
type inputVerdict struct {
	header  bool      // its header parsed: first and ack are its own
	ok      bool      // acceptable: apply it; otherwise it is dropped and changes nothing
	suspect Suspicion // with !ok, the lie it shows (0: none)
	ack     Frame     // the next of our frames it wants
	first   Frame     // its first frame
	want    Frame     // the first frame of its players' that we lack
	gap     bool      // its frames do not follow ours: only its acknowledgement counts
	take    int       // frames to store, from want on
}

// ring is what judging a packet asks of the session's input ring.
type ringView interface {
	// ringRoom reports whether frames up to end fit the ring now.
	ringRoom(end Frame) bool
	// ringLow is the oldest frame the ring must keep.
	ringLow() Frame
}

// inputView is what judging peer ps's packet reads of the session.
type inputView struct {
	format    *wire.Format
	inputs    *inputRing // what we hold of every player
	ring      ringView
	localNext Frame // our next local frame: the most it may acknowledge
	strict    bool  // neither lockstep nor statements: an honest peer is never beyond the ring
	cast      bool  // input packets come in the cast body (outbox.cast)
	self      uint8 // with cast: our machine's index
	// clock: the relay clock (nil: none), whose decided frames a peer may
	// have sent another input for (before it learned of the decision); and
	// then every packet's first frame is coded against nothing.
	clock *relayClock
}

// judgeInput judges input packet b from peer ps against v: parsed into pkt
// (the frame before its first, from what we hold, into base), its
// acknowledgement, frames and inputs checked, the verdict into vd, zero
// (written in place: a verdict returned was copied out, ~40 instructions
// of every steady tick). It changes nothing else.
func judgeInput(b []byte, ps *peer, v *inputView, pkt *wire.InputPacket, base []uint64, vd *inputVerdict) {
	var h wire.InputHeader
	var hend int
	var err error
	if v.cast {
		err = v.parseCast(b, ps, pkt, base, &h) // whole: its acknowledgement comes last
	} else {
		h, hend, err = v.format.PeekInput(b, int32(v.localNext))
	}
	if err != nil {
		return
	}
	vd.header, vd.ack, vd.first, vd.want = true, Frame(h.Ack), Frame(h.First), v.inputs.next[ps.players[0]]
	// It cannot want a frame of ours that we have not yet added.
	if !canAck(vd.ack, v.localNext) {
		return
	}
	// The first frame is delta-coded against our copy of the frame before
	// it; without it (a gap, or a frame the ring no longer holds) only the
	// acknowledgement is usable.
	first, want := vd.first, vd.want
	vd.gap = first > want || (first > 0 && first-1 < want-ringSize)
	if vd.gap {
		vd.ok = true
		return
	}
	if !v.cast {
		v.setBase(ps, first, pkt, base)
		if err := v.format.ParseInputAfter(b, h, hend, len(ps.players), len(ps.gossip.order), pkt); err != nil {
			return
		}
	}
	var ok bool
	if vd.take, ok = v.checkInputs(pkt, first, want); !ok {
		return
	}
	if v.rewritten(pkt, ps, first, want) {
		// An input for a frame it had already sent, now different: an
		// honest machine never changes one. The packet is a lie.
		vd.suspect = SuspectRewrite
		return
	}
	vd.ok = true
}

// setBase points pkt.Base at what we hold of ps's players for the frame
// before first (base is its storage; nil for frame 0).
func (v *inputView) setBase(ps *peer, first Frame, pkt *wire.InputPacket, base []uint64) {
	pkt.Base = nil
	if first > 0 && v.clock == nil {
		for j, p := range ps.players {
			base[j] = uint64(v.inputs.at(first-1, p))
		}
		pkt.Base = base[:len(ps.players)]
	}
}

// parseCast parses cast body b from ps into pkt, its header into h with
// the acknowledgement it carries for us: against what we hold of the
// frame before its first, or, when that is a gap (judgeInput), against
// nothing (only the acknowledgement and gossip are used then).
func (v *inputView) parseCast(b []byte, ps *peer, pkt *wire.InputPacket, base []uint64, h *wire.InputHeader) error {
	hh, end, err := v.format.PeekCast(b, int32(v.localNext))
	if err != nil {
		return err
	}
	first, want := Frame(hh.First), v.inputs.next[ps.players[0]]
	if first > want || (first > 0 && first-1 < want-ringSize) {
		pkt.Base = nil
	} else {
		v.setBase(ps, first, pkt, base)
	}
	if err := v.format.ParseCastAfter(b, hh, end, len(ps.players), len(ps.gossip.order)+1, castAt(int(v.self), uint8(ps.machine)), pkt); err != nil {
		return err
	}
	*h, h.Ack = hh, pkt.Ack
	return nil
}

// checkInputs checks the frames of the parsed packet (from frame first)
// that extend what we have of the sender's players (from want), and
// returns how many of them to take. It reports false for frames no honest
// peer sends: beyond the ring (a lockstep peer's inputs run on its clock:
// the frames that do not fit yet are left for a later packet). The
// decoder reads only the layout's bits, so every input is within the
// layout.
func (v *inputView) checkInputs(pkt *wire.InputPacket, first, want Frame) (int, bool) {
	end := first + Frame(pkt.Count)
	if v.ring.ringRoom(end) {
		return int(max(end-want, 0)), true
	}
	if limit := v.ring.ringLow() + ringSize; end > limit {
		if v.strict {
			return 0, false // further ahead than any honest peer can be
		}
		// In lockstep, or with statements (its settled frontier can be
		// ahead of ours: our echo reached it, its echo has not reached
		// us), an honest peer can be further ahead: what the ring cannot
		// hold yet comes again.
		end = limit
	}
	return int(max(end-want, 0)), true
}

// rewritten reports whether the parsed packet, from frame first, carries
// for a frame before want (one we have of ps) an input other than the one
// it sent before.
func (v *inputView) rewritten(pkt *wire.InputPacket, ps *peer, first, want Frame) bool {
	n := len(ps.players)
	for f := max(first, want-ringSize+1); f < min(want, first+Frame(pkt.Count)); f++ {
		k := int(f - first)
		for j, p := range ps.players {
			if v.clock.provisional(v.inputs, f, p) {
				continue // not final: its machine may have learned of a decision we have not yet
			}
			if Input(pkt.Inputs[k*n+j]) != v.inputs.at(f, p) {
				return true
			}
		}
	}
	return false
}

// handleInput takes an input packet from peer i. It returns the first
// mispredicted frame it revealed (s.frame for none) and whether the
// packet was acceptable. The packet is judged whole (judgeInput) before
// anything of it is applied: a dropped packet changes nothing.
func (s *Session) handleInput(i int, b []byte) (mis Frame, ok bool) {
	ps := &s.peers[i]
	view := &s.io.view
	view.localNext, view.strict = s.inputs.next[s.roster.local[0]], s.ls == nil && s.stmts == nil
	var v inputVerdict
	judgeInput(b, ps, view, &s.io.pkt, s.io.base[:], &v)
	if !v.header {
		return s.frame, false
	}
	if ps.join.take != 0 && s.peers.joining(i) && v.first <= ps.join.take { // the cheap test first: every packet asks
		r := s.rejoins()
		r.tookOver(i) // its first inputs since we accepted its take-over frame
	}
	if ps.leave.disc {
		return s.frame, true // it left; what it still sends no longer counts
	}
	if !v.ok {
		if v.suspect != 0 {
			s.suspect(i, v.suspect)
		}
		return s.frame, false
	}
	return s.applyInput(i, &v, view.localNext), true
}

// applyInput applies peer i's packet, judged acceptable (v), parsed in
// s.io.pkt: its acknowledgement, its inputs, its timing and gossip. It
// returns the first mispredicted frame (s.frame for none).
func (s *Session) applyInput(i int, v *inputVerdict, localNext Frame) Frame {
	mis, ps, pkt := s.frame, &s.peers[i], &s.io.pkt
	ps.start.goSeen = true // inputs prove it has started
	if s.stmts != nil {
		s.stmts.keysOK[i] = true // and that every machine's keys agreed with its own, ours too
	}
	ps.progress.acked(v.ack, localNext)
	if !v.gap {
		// The take frames of the checked packet from want on: each one's
		// inputs (a misprediction is the first frame whose input differs
		// from the one used), then its timing.
		n := len(ps.players)
		for f := v.want; f < v.want+Frame(v.take); f++ {
			k := int(f - v.first)
			for j, p := range ps.players {
				in := Input(pkt.Inputs[k*n+j])
				if d, ok := s.pace.clock.decided(f, p); ok {
					in = d // the relay decided it: final, whatever its machine sent before it learned
				} else if s.stmts != nil {
					if signed, ok := s.stmts.expect(ps.machine, f, j); ok && signed != in {
						// Its own signed statement, which the others hold
						// too, says otherwise: the statement wins; a lie
						// but with the relay clock (relayclock.go).
						in = signed
						if s.pace.clock == nil {
							s.suspect(s.stmts.peerOf[ps.machine], SuspectEquivocation)
						}
					}
				}
				if s.inputs.receive(p, f, in, s.frame) {
					mis = min(mis, f)
				}
			}
			if ps.timing.input(s.now, f, &s.times.simmed, ps.timing.judged(ps.link.rtt)) {
				if adv, ok := s.pace.gov.Peer(i); !ok || adv <= 0 || ps.timing.acksStale() {
					ps.timing.late() // the governor does not wait for it
				}
			}
		}
	}
	have := s.inputs.next[ps.players[0]]
	if ps.progress.proves < 0 {
		ps.progress.proves = have
	}
	if f := have - countSlack; s.ls == nil && !s.pace.clock.decidesStalled() && ps.progress.ack < f && f > ps.progress.proves {
		// Its own inputs prove it has more of ours than it says (it cannot
		// simulate that far without them): the ring need not wait for it.
		s.suspect(i, SuspectAck)
		ps.progress.acked(min(f, localNext), localNext)
	}
	ps.timing.acked(s.now, ps.progress.ack, localNext, &s.times.sent)
	// remoteFrameLag, in input frames, from what we observe: how many of
	// its frames we have beyond the frames of ours it acknowledged. The
	// input lag it claims and the End of a packet without inputs are not
	// used (docs/security.md); with equal input lags this is the INVERSUS
	// measure.
	lag := have - ps.progress.ack
	ps.st.RemoteFrameLag = lag
	ps.timing.heard(s.now, have)
	if ps.timing.ackSampled(ackFresh(s.now, ps.progress.ack, localNext, &s.times.sent, ps.link.rtt)) {
		s.pace.gov.Remote(i, int(lag))
	} else {
		s.pace.gov.StaleRemote(i, int(lag)) // the input lag still counts it
	}
	ps.st.FramesBehind = localNext - have
	if v.gap {
		return mis
	}
	if ps.start.first < 0 && s.inputs.next[ps.players[0]] > 0 {
		ps.start.first = s.now
	}
	if len(ps.gossip.order) > 0 { // third machines: three or more
		s.handleGossip(i, pkt.Gossip)
	}
	if s.out.log != nil && v.take > 0 {
		skip := int(v.want-v.first) * len(ps.players)
		s.out.log.Recv(s.now, i, int(v.want), v.take, int(v.ack), slices.Clone(pkt.Inputs[skip:skip+v.take*len(ps.players)]))
	}
	return mis
}
