package rollback

import "time"

// This file is the statements' repair: what a peer lacks of the
// statements we hold (its echo says which), and the proofs of
// equivocation it has not acted on, sent again.

// sendProofs sends peer i the proofs of equivocation it has not acted
// on: a proof goes to every peer until its report of the equivocator's
// departure shows it acted on it.
func (s *Session) sendProofs(i int) {
	st, p, rtt := s.stmts, &s.stmts.peers[i], s.peers[i].link.rtt
	self := s.peers[i].machine
	for x := range st.machines {
		pr := &st.proof[x]
		if !pr.ok || x == self || s.now-p.repairAt < rtt+lostMargin {
			continue
		}
		if l := &s.peers[st.peerOf[x]].leave; l.reported[i] && l.report[i] <= pr.from {
			continue
		}
		if n, in, sig := st.holds(x, pr.k); n > 0 {
			s.sendStatement(i, x, pr.k, in, sig[:], true)
		}
		s.sendStatement(i, x, pr.k, pr.inputs, pr.sig[:], true)
		p.repairAt = s.now
	}
}

// repairWanted sends peer i the statements it says it lacks of the
// intervals it wants, once per echo, and only of an interval that echo
// came a round trip after we signed (an older one lacks what is still on
// its way; acting on it every round trip until the next echo made a
// 4-machine wifi match send 4 times the bytes it sends without
// statements); no more than it verifies in one call. It reports whether
// it sent any.
func (s *Session) repairWanted(i int) bool {
	st, p, rtt := s.stmts, &s.stmts.peers[i], s.peers[i].link.rtt
	if p.haveAt == 0 {
		return false
	}
	self := s.peers[i].machine
	sent, aged := 0, false
	for j, k := 0, p.wantFrom; j < p.haveN && sent < maxVerifiesPerCall; j, k = j+1, k+1 {
		if k < st.settled || k > st.signed || p.haveAt-st.ownAt[stmtSlot(k)] < rtt+lostMargin {
			continue
		}
		aged = true
		for x := range st.machines {
			if n, in, sig := st.holds(x, k); n > 0 && x != self && p.have[j]&(1<<x) == 0 && sent < maxVerifiesPerCall {
				s.sendStatement(i, x, k, in, sig[:], true)
				sent++
			}
		}
	}
	if aged {
		p.haveAt = 0
	}
	if sent > 0 {
		p.repairAt = s.now
	}
	return sent > 0
}

// repairUnmatched sends peer i every statement we hold (ours too) of the
// first intervals it has not echoed as we hold them, wait after we signed
// ours: it may hold a shorter one, or another.
func (s *Session) repairUnmatched(i int, wait time.Duration) {
	st, p := s.stmts, &s.stmts.peers[i]
	self := s.peers[i].machine
	from := st.firstUnmatched(i)
	for k := from; k < from+stmtRepair && k <= st.signed; k++ {
		if s.now-st.ownAt[stmtSlot(k)] < wait {
			break
		}
		for x := range st.machines {
			if n, in, sig := st.holds(x, k); n > 0 && x != self {
				s.sendStatement(i, x, k, in, sig[:], true)
				p.repairAt = s.now
			}
		}
	}
}

// stmtRepair is how many intervals one repair round covers.
const stmtRepair = 2
