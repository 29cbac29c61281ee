package rollback

import (
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
	if p := s.peers[i].players[0]; s.inputs.back(p) > 0 {
		// It left and came back (or is coming back) at the take-over frame
		// back: live from that interval on; before it, gone from its cut.
		if Frame(k)*stmtFrames >= s.inputs.back(p) {
			return needLive, stmtFrames
		}
		g := s.inputs.gaps[p][s.inputs.ngaps[p]-1]
		if n := int(min(max(g.from-Frame(k)*stmtFrames, 0), stmtFrames)); n > 0 {
			return needGone, n
		}
		return needNone, 0
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

// stmtLive implements stmtRoster: a machine that came back plays from its
// take-over frame's interval on.
func (s *Session) stmtLive(i int, k int32) bool {
	return !s.peers[i].leave.disc && Frame(k)*stmtFrames >= s.inputs.back(s.peers[i].players[0])
}

// keysReady reports whether the match may start as far as the signing
// keys go: every peer's view of them equals ours (or there are none).
func (s *Session) keysReady() bool { return s.stmts == nil || s.stmts.keysAgreed() }

// sendKeys sends peer i our view of every machine's signing key until the
// match starts: when we learned a key since the last, else every
// handshakeRetry, for a lost one. Not every tick until its view agrees
// with ours: the agreement takes a round trip to come back, and on far
// that cost 4 machines about 58 KB a match (TestKeysBeforeStart).
func (s *Session) sendKeys(i int) {
	if s.stmts == nil || s.proto.started {
		return
	}
	p, n := &s.stmts.peers[i], s.stmts.knownKeys()
	if n == p.keysSent && p.keysAt != 0 && s.now-p.keysAt < handshakeRetry {
		return
	}
	p.keysSent, p.keysAt = n, max(s.now, 1)
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
		if n <= 0 || k >= st.settled+stmtKept {
			// Nothing to sign, or an interval whose slot still holds an
			// unsettled one (a prefix signed there once replaced our own
			// statement of the settled frontier's interval, for ever).
			return
		}
		if n < stmtFrames {
			if had, _, _ := st.holds(st.me, k); st.idle < stmtIdleTicks || had >= n {
				return
			}
		}
		in, _ := s.inputsOf(s.roster.local, from, n)
		st.sign(k, in, s.now)
		if n < stmtFrames {
			return
		}
		st.signed++
	}
}

// settleStatements recomputes the digests and the settled frontier.
func (s *Session) settleStatements() {
	if s.stmts != nil {
		s.stmts.refresh(s)
		s.stmts.settle(s)
	}
}

// pollStatements takes the statements whose inputs have come, and
// settles. It returns the first frame to re-simulate.
func (s *Session) pollStatements() Frame {
	if s.stmts == nil {
		return s.frame // inlined: no call without statements
	}
	return s.pollHeld()
}

// pollHeld is pollStatements with statements.
func (s *Session) pollHeld() Frame {
	mis := s.takeWaiting()
	s.settleStatements()
	return mis
}

// sendAttest sends peer i what the statements owe it, after its input
// packet (our own statement carries no inputs: it has them from the
// packets): our newest statement with our echo; our echo alone when we
// have new digests, and again when it still wants a digest we echoed a
// while ago; proofs of equivocation it has not acted on; the statements
// its echo says it lacks; and — when its echo of an interval we hold whole
// is late or differs from ours — every statement we hold for that
// interval, with its inputs.
func (s *Session) sendAttest(i int) {
	s.stmts.attest(s, stmtDest{i: i, self: s.peers[i].machine, now: s.now, rtt: s.peers[i].link.rtt, peers: s.peers})
}

// sendEcho sends peer i our echo alone: every digest it wants, or (not
// all) those after our last echo to it.
func (s *Session) sendEcho(i int, all bool) {
	m := &s.io.att
	s.fillEcho(i, m, all)
	m.HasStatement, m.Machine, m.Interval, m.Frames, m.Inputs, m.Sig = false, 0, 0, 0, m.Inputs[:0], m.Sig[:0]
	s.sendRiding(i, m, true) // sendAttest runs only when an input packet goes
}

// fillEcho puts into m our digests of the intervals peer i wants (all,
// or only those after our last echo to it), and the first of ours it has
// not matched.
func (s *Session) fillEcho(i int, m *wire.Attest, all bool) {
	st, p := s.stmts, &s.stmts.peers[i]
	from := st.echoStart(i)
	if !all {
		from = max(from, p.echoEnd)
	}
	want := st.firstUnmatched(i)
	m.Want, m.Have, m.From, m.Echo = uint32(want), st.holding(m.Have[:0], want), uint32(from), m.Echo[:0]
	end := min(st.done, from+wire.MaxEchoes)
	for k := from; k < end; k++ {
		m.Echo = append(m.Echo, st.digest[digestSlot(k)][:]...)
	}
	p.echoEnd = max(p.echoEnd, end)
}

// sendStatement sends peer i machine x's statement of interval k (its
// inputs too when full: a relay, a repair, a proof), with our echo.
func (s *Session) sendStatement(i, x int, k int32, in []uint64, sig []byte, full bool) {
	m := &s.io.att
	s.fillEcho(i, m, full)
	m.HasStatement, m.Machine, m.Interval = true, uint8(x), uint32(k)
	m.Frames = uint8(len(in) / s.stmts.np[x])
	m.Inputs, m.Sig = append(m.Inputs[:0], in...), append(m.Sig[:0], sig...)
	if x == s.stmts.me && s.proto.lie != nil {
		s.proto.lie.lieStatement(s, i, k, m)
	}
	if !full {
		m.Inputs = m.Inputs[:0]
	}
	s.sendRiding(i, m, true) // sendAttest runs only when an input packet goes
}

// handleAttest takes peer i's Attest datagram: the input packet riding
// behind the Attest, if any, then its echo and the statement it carries.
// It returns the first frame the inputs or the statement corrected or
// revealed (s.frame for none).
func (s *Session) handleAttest(i int, b []byte) (Frame, bool) {
	m := &s.io.rx.att
	if s.stmts == nil {
		return s.frame, false
	}
	// The inputs riding behind it go first, as the statement covers them.
	mis, ok := s.handleRiding(i, b, m)
	if !ok {
		return mis, false
	}
	f, ok := s.takeAttest(i, m)
	return min(mis, f), ok
}

// takeAttest takes peer i's Attest m, parsed.
func (s *Session) takeAttest(i int, m *wire.Attest) (Frame, bool) {
	st := s.stmts
	if !s.proto.started || s.peers[i].leave.disc {
		return s.frame, true // nothing to check yet, or it left: what it sends no longer counts
	}
	st.echoed(i, m.Want, m.Have, m.From, m.Echo, s.now)
	if !m.HasStatement || int(m.Machine) == st.me {
		return s.frame, true
	}
	x, k := int(m.Machine), int32(m.Interval)
	in := m.Inputs
	if len(in) == 0 {
		// Its own statement, without the inputs we have from its packets.
		if x != s.peers[i].machine {
			return s.frame, false // a relay carries the inputs
		}
		var ok bool
		if in, ok = s.stmtInputs(x, k, int(m.Frames)); !ok {
			st.wait(x, k, int(m.Frames), m.Sig) // its packets have not all come yet
			return s.frame, true
		}
	}
	return s.takeStatement(i, x, k, in, m.Sig)
}

// takeStatement takes machine x's statement of interval k, from peer i,
// and returns the first frame it makes us re-simulate.
func (s *Session) takeStatement(i, x int, k int32, in []uint64, sig []byte) (Frame, bool) {
	switch s.stmts.take(i, x, k, in, sig, s.inputs.mask) {
	case stmtInvalid:
		return s.frame, false
	case stmtNew:
		return s.applyStatement(x, k), true
	case stmtConflict:
		return s.proven(x, k), true
	}
	return s.frame, true
}

// stmtInputs returns our inputs of machine x for the first n frames of
// interval k (in the statements' scratch), if we have them all.
func (s *Session) stmtInputs(x int, k int32, n int) ([]uint64, bool) {
	i := s.stmts.peerOf[x]
	from := Frame(k) * stmtFrames
	if i < 0 || n <= 0 || n > stmtFrames || from < s.ringLow() {
		return nil, false
	}
	return s.inputsOf(s.peers[i].players, from, n)
}

// inputsOf returns the inputs of players for the n frames from frame
// from, frame-major as a statement signs them, in the statements'
// scratch; false if one has not arrived.
func (s *Session) inputsOf(players []PlayerID, from Frame, n int) ([]uint64, bool) {
	st := s.stmts
	st.buf = st.buf[:0]
	for f := from; f < from+Frame(n); f++ {
		for _, p := range players {
			if f >= s.inputs.next[p] {
				return nil, false
			}
			st.buf = append(st.buf, uint64(s.inputs.at(f, p)))
		}
	}
	return st.buf, true
}

// takeWaiting takes the statements that waited for their inputs and now
// have them. It returns the first frame to re-simulate.
func (s *Session) takeWaiting() Frame {
	mis, st := s.frame, s.stmts
	for x := range st.machines {
		for j := range st.waiting[x] {
			w := &st.waiting[x][j]
			if !w.ok {
				continue
			}
			if w.k < st.settled || s.peers[st.peerOf[x]].leave.disc {
				w.ok = false
				continue
			}
			in, ok := s.stmtInputs(x, w.k, w.n)
			if !ok {
				continue
			}
			w.ok = false
			f, _ := s.takeStatement(st.peerOf[x], x, w.k, in, w.sig[:])
			mis = min(mis, f)
		}
	}
	return mis
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
// named and disconnected from the first frame its two statements disagree
// on (every frame before it may be settled already: the statements agree
// there), and the proof goes to every peer. It returns the frame to
// re-simulate from.
func (s *Session) proven(x int, k int32) Frame {
	i := s.stmts.peerOf[x]
	ps := &s.peers[i]
	f := s.stmts.proof[x].from
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
