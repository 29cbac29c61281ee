package rollback

import (
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the session's hooks for the statements (statements.go,
// stmttake.go): the roster they need, the keys before the start, and
// sending and taking Attest messages.

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
	s.tx.control(i, &s.io.keys)
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

// pollStatements takes the statements whose inputs have come, and
// settles. It returns the first frame to re-simulate. Only with
// statements (poll asks: no call without them).
func (s *Session) pollStatements() Frame {
	v := stmtView{peers: s.peers, inputs: &s.inputs, frame: s.frame, now: s.now, started: s.proto.started}
	return s.stmts.poll(s, s, &v)
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
	s.stmts.fillEcho(i, m, all)
	m.HasStatement, m.Machine, m.Interval, m.Frames, m.Inputs, m.Sig = false, 0, 0, 0, m.Inputs[:0], m.Sig[:0]
	s.tx.riding(i, m, true) // sendAttest runs only when an input packet goes
}

// sendStatement sends peer i machine x's statement of interval k (its
// inputs too when full: a relay, a repair, a proof), with our echo.
func (s *Session) sendStatement(i, x int, k int32, in []uint64, sig []byte, full bool) {
	m := &s.io.att
	s.stmts.fillEcho(i, m, full)
	m.HasStatement, m.Machine, m.Interval = true, uint8(x), uint32(k)
	m.Frames = uint8(len(in) / s.stmts.np[x])
	m.Inputs, m.Sig = append(m.Inputs[:0], in...), append(m.Sig[:0], sig...)
	if x == s.stmts.me && s.proto.lie != nil {
		s.proto.lie.lieStatement(s, i, k, m)
	}
	if !full {
		m.Inputs = m.Inputs[:0]
	}
	s.tx.riding(i, m, true) // sendAttest runs only when an input packet goes
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
	v := stmtView{peers: s.peers, inputs: &s.inputs, frame: s.frame, now: s.now, started: s.proto.started}
	f, ok := s.stmts.takeAttest(s, &v, i, m)
	return min(mis, f), ok
}
