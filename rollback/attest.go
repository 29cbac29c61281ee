package rollback

import (
	"github.com/rewindgg/rewind/internal/liar"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file connects the statements (statements.go) to the session: the
// keys before the start, signing our inputs, sending and taking Attest
// messages, applying a statement's inputs, and the proof of equivocation.

// stmtNeed implements stmtRoster: we and every playing machine are needed
// whole; a machine whose departure is agreed, for its frames before the
// cut; one whose departure is not agreed yet makes the digest wait.
func (s *Session) stmtNeed(x int, k int32) (stmtNeed, int) {
	i := s.stmts.peerOf[x]
	if i < 0 {
		return needLive, stmtFrames
	}
	l := &s.peers[i].leave
	switch {
	case !l.disc:
		return needLive, stmtFrames
	case !l.agreed:
		return needWait, 0
	}
	n := int(min(max(l.frame-Frame(k)*stmtFrames, 0), stmtFrames))
	if n == 0 {
		return needNone, 0
	}
	return needGone, n
}

// stmtLive implements stmtRoster.
func (s *Session) stmtLive(i int) bool { return !s.peers[i].leave.disc }

// keysReady reports whether the match may start as far as the signing
// keys go: every peer's view of them equals ours (or there are none).
func (s *Session) keysReady() bool { return s.stmts == nil || s.stmts.keysAgreed() }

// sendKeys sends peer i our view of every machine's signing key, on every
// tick until the match starts.
func (s *Session) sendKeys(i int) {
	if s.stmts == nil || s.proto.started {
		return
	}
	s.io.keys.Keys = s.stmts.keyList(s.io.keys.Keys)
	s.sendControl(i, &s.io.keys)
}

// handleKeys takes peer i's view of the signing keys.
func (s *Session) handleKeys(i int, b []byte) bool {
	m := &s.io.rx.keys
	if s.stmts == nil || wire.ParseControl(b, m) != nil {
		return false
	}
	if s.proto.started {
		return true // a late copy
	}
	return s.stmts.takeKeys(i, s.peers[i].machine, m.Keys)
}

// signOwn signs every interval of our inputs that is complete, and a
// prefix of the current one once our inputs have stopped for
// stmtIdleTicks ticks (the end of the match, a long stall).
func (s *Session) signOwn() {
	st := s.stmts
	next := s.inputs.next[s.roster.local[0]]
	if next == st.lastOwn {
		st.idle++
	} else {
		st.idle, st.lastOwn = 0, next
	}
	for {
		k := st.signed
		from := Frame(k) * stmtFrames
		n := int(min(next-from, stmtFrames))
		if n <= 0 {
			return
		}
		if n < stmtFrames {
			if had, _, _ := st.holds(st.me, k); st.idle < stmtIdleTicks || had >= n {
				return
			}
		}
		st.buf = st.buf[:0]
		for f := from; f < from+Frame(n); f++ {
			for _, p := range s.roster.local {
				st.buf = append(st.buf, uint64(s.inputs.at(f, p)))
			}
		}
		st.sign(k, st.buf, s.now)
		if n < stmtFrames {
			return
		}
		st.signed++
	}
}

// settleStatements recomputes the digests and the settled frontier.
func (s *Session) settleStatements() {
	if s.stmts != nil {
		s.stmts.refresh(s.now, s)
		s.stmts.settle(s)
	}
}

// sendAttest sends peer i what the statements owe it: our newest
// statement, our echo when our digests changed, proofs of equivocation
// it has not acted on, and — when its echo of an interval is late or
// differs from ours — every statement we hold for that interval.
func (s *Session) sendAttest(i int) {
	st, p := s.stmts, &s.stmts.peers[i]
	p.verifies = 0
	if p.ownK < st.settled {
		p.ownK, p.ownN = st.settled, 0
	}
	sent := false
	for p.ownK <= st.signed {
		n, in, sig := st.holds(st.me, p.ownK)
		if n <= p.ownN {
			break
		}
		s.sendStatement(i, st.me, p.ownK, in, sig[:])
		sent = true
		if p.ownN = n; n == stmtFrames {
			p.ownK, p.ownN = p.ownK+1, 0
		}
	}
	if !sent && st.echoDue(i) {
		s.sendEcho(i)
	}
	wait := s.peers[i].link.rtt + s.peers[i].link.rtt/4 + lostMargin
	self := s.peers[i].machine
	for x := range st.machines {
		// A proof goes to every peer until its report of x's departure
		// shows it acted on it.
		pr := &st.proof[x]
		if !pr.ok || x == self || s.now-p.repairAt < wait {
			continue
		}
		if l := &s.peers[st.peerOf[x]].leave; l.reported[i] && l.report[i] <= Frame(pr.k)*stmtFrames {
			continue
		}
		if n, in, sig := st.holds(x, pr.k); n > 0 {
			s.sendStatement(i, x, pr.k, in, sig[:])
		}
		s.sendStatement(i, x, pr.k, pr.inputs, pr.sig[:])
		p.repairAt = s.now
	}
	if s.now-p.repairAt < wait {
		return
	}
	// Repair: every statement we hold of the first intervals it has not
	// echoed as we hold them, once they are a round trip old.
	from := st.firstUnmatched(i)
	for k := from; k < from+stmtRepair && k < st.settled+stmtKept; k++ {
		if s.now-st.firstAt[int(uint32(k)%stmtKept)] < wait {
			break
		}
		for x := range st.machines {
			if n, in, sig := st.holds(x, k); n > 0 && x != self {
				s.sendStatement(i, x, k, in, sig[:])
				p.repairAt = s.now
			}
		}
	}
}

// stmtRepair is how many intervals one repair round covers.
const stmtRepair = 4

// sendEcho sends peer i our echo alone.
func (s *Session) sendEcho(i int) {
	m := &s.io.att
	s.fillEcho(i, m)
	m.HasStatement, m.Machine, m.Interval, m.Inputs, m.Sig = false, 0, 0, m.Inputs[:0], m.Sig[:0]
	s.sendControl(i, m)
}

// fillEcho puts our digests of the intervals peer i has not matched into
// m, and notes that it has our digests' current version.
func (s *Session) fillEcho(i int, m *wire.Attest) {
	st := s.stmts
	from := st.echoStart(i)
	m.Want, m.From, m.Echo = uint32(st.firstUnmatched(i)), uint32(from), m.Echo[:0]
	for k := from; k < min(st.done, from+wire.MaxEchoes); k++ {
		m.Echo = append(m.Echo, st.digest[int(uint32(k)%stmtKept)][:]...)
	}
	st.peers[i].echoVer, st.peers[i].echoFrom = st.ver, from
}

// sendStatement sends peer i machine x's statement of interval k, with
// our echo.
func (s *Session) sendStatement(i, x int, k int32, in []uint64, sig []byte) {
	m := &s.io.att
	s.fillEcho(i, m)
	m.HasStatement, m.Machine, m.Interval = true, uint8(x), uint32(k)
	m.Inputs, m.Sig = append(m.Inputs[:0], in...), append(m.Sig[:0], sig...)
	if x == s.stmts.me && s.proto.lie != nil {
		s.lieStatement(i, k, m)
	}
	s.sendControl(i, m)
}

// handleAttest takes peer i's Attest: its echo, and the statement it
// carries. It returns the first frame the statement corrected or
// revealed (s.frame for none).
func (s *Session) handleAttest(i int, b []byte) (Frame, bool) {
	m, st := &s.io.rx.att, s.stmts
	if st == nil || wire.ParseControl(b, m) != nil {
		return s.frame, false
	}
	if !s.proto.started || s.peers[i].leave.disc {
		return s.frame, true // nothing to check yet, or it left: what it sends no longer counts
	}
	st.echoed(i, m.Want, m.From, m.Echo)
	if !m.HasStatement || int(m.Machine) == st.me {
		return s.frame, true
	}
	x, k := int(m.Machine), int32(m.Interval)
	switch st.take(i, x, k, m.Inputs, m.Sig, s.inputs.mask, s.now) {
	case stmtInvalid:
		return s.frame, false
	case stmtNew:
		return s.applyStatement(x, k), true
	case stmtConflict:
		return s.proven(x, k), true
	}
	return s.frame, true
}

// applyStatement makes our inputs of machine x agree with its statement
// of interval k: a missing input is taken from it (it is as good as a
// packet), one that differs is replaced (x sent us inputs its own
// signature contradicts: it is named). It returns the first frame
// simulated with another input.
func (s *Session) applyStatement(x int, k int32) Frame {
	mis := s.frame
	i := s.stmts.peerOf[x]
	ps := &s.peers[i]
	n, in, _ := s.stmts.holds(x, k)
	np := len(ps.players)
	hi := s.ringLow() + ringSize
	for f := Frame(k) * stmtFrames; f < Frame(k)*stmtFrames+Frame(n); f++ {
		for j, p := range ps.players {
			v := Input(in[int(f-Frame(k)*stmtFrames)*np+j])
			switch next := s.inputs.next[p]; {
			case f < next:
				if s.inputs.correct(p, f, v) {
					s.suspect(i, SuspectEquivocation)
					if f < s.frame && s.inputs.usedAt(f, p) != v {
						mis = min(mis, f)
					}
				}
			case f == next && f < hi && !ps.leave.disc:
				if s.inputs.receive(p, f, v, s.frame) {
					mis = min(mis, f)
				}
			}
		}
	}
	return mis
}

// proven acts on proof that machine x equivocated in interval k: it is
// named and disconnected from the interval's first frame, and the proof
// goes to every peer. It returns the frame to re-simulate from.
func (s *Session) proven(x int, k int32) Frame {
	i := s.stmts.peerOf[x]
	ps := &s.peers[i]
	f := Frame(k) * stmtFrames
	s.suspect(i, SuspectEquivocation)
	for j := range s.stmts.peers {
		s.stmts.peers[j].repairAt = 0 // relay it at once
	}
	if !ps.leave.prove(f) {
		return s.frame
	}
	s.disconnect(i)
	if !ps.leave.agreed || f >= ps.leave.frame {
		return s.frame
	}
	// Agreed on reports before the proof arrived: the proof moves the cut
	// back (no frame after it can be final: its interval never settled).
	ps.leave.frame = f
	for _, p := range ps.players {
		s.inputs.disconnect(p, f)
	}
	return min(s.frame, f)
}

// lieStatement makes the soak's equivocating adversary's statement to
// peer 0 match the inputs it sent that peer (liePacket): its own
// signature on them, so that the two versions are proof.
func (s *Session) lieStatement(i int, k int32, m *wire.Attest) {
	if !s.proto.lie.is(liar.Equivocate) || len(s.peers) < 2 || i != 0 {
		return
	}
	nLocal, lied := len(s.roster.local), false
	for f := Frame(k) * stmtFrames; f < Frame(k)*stmtFrames+Frame(len(m.Inputs)/nLocal); f++ {
		if f%lieEvery == lieEvery/2 {
			m.Inputs[int(f-Frame(k)*stmtFrames)*nLocal] ^= 1
			lied = true
		}
	}
	if lied {
		s.stmts.signFor(k, m.Inputs, m.Sig)
	}
}
