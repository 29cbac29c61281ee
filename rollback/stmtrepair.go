package rollback

import "time"

// This file is what the statements owe each peer (sendAttest is the
// session's hook): our own statements and our echo, proofs of
// equivocation it has not acted on, and the repair of what its echo says
// it lacks. The session sends the messages (stmtSender).

// stmtSender is what the statements' sending asks of the session (stmtPort).
type stmtSender interface {
	// sendStatement sends peer i machine x's statement of interval k,
	// with our echo (all it wants when full).
	sendStatement(i, x int, k int32, in []uint64, sig []byte, full bool)
	// sendEcho sends peer i our echo alone.
	sendEcho(i int, all bool)
}

// stmtDest is the peer the statements are sent to, as they see it.
type stmtDest struct {
	i, self  int           // its peer index and its machine
	now, rtt time.Duration // our clock, its round trip
	peers    peerSet       // every peer: what their reports of departures acted on
	back     Frame         // the frame it took its players over at (inputRing.back); 0: never away
}

// attest sends peer d.i what the statements owe it, after its input
// packet (our own statement carries no inputs: it has them from the
// packets): our newest statement with our echo; our echo alone when we
// have new digests, and again when it still wants a digest we echoed a
// while ago; proofs of equivocation it has not acted on; the statements
// its echo says it lacks; and — when its echo of an interval we hold whole
// is late or differs from ours — every statement we hold for that
// interval, with its inputs.
func (st *statements) attest(out stmtSender, d stmtDest) {
	st.sendOwn(out, d)
	st.sendEchoes(out, d)
	st.sendProofs(out, d)
	p := &st.peers[d.i]
	if d.now-p.repairAt < d.rtt+lostMargin || st.repairWanted(out, d) {
		return
	}
	// The peer's echo of an interval goes as soon as it holds every
	// machine's statement of it, a round trip and a margin after we signed
	// ours; the two intervals more are from when it waited for the peer's
	// next statement, and leave the targeted repair below its turn.
	if wait := d.rtt + lostMargin + 2*time.Duration(st.every)*frameDuration; d.now-p.repairAt >= wait {
		st.repairUnmatched(out, d, wait)
	}
}

// sendOwn sends the peer our statements it has not had.
func (st *statements) sendOwn(out stmtSender, d stmtDest) {
	p := &st.peers[d.i]
	if p.ownK < st.settled {
		p.ownK, p.ownN = st.settled, 0
	}
	for p.ownK <= st.signed {
		n, in, sig := st.holds(st.me, p.ownK)
		if n <= p.ownN {
			break
		}
		out.sendStatement(d.i, st.me, p.ownK, in, sig[:], false)
		if p.ownN = n; Frame(n) == st.every {
			p.ownK, p.ownN = p.ownK+1, 0
		}
	}
}

// sendEchoes sends the peer our echo: an echo goes with each of our
// statements, and alone as soon as we have digests it has not had
// (waiting for our next statement cost a settlement up to an interval);
// all it wants go again when it has wanted one we sent for a round trip
// (lost). (Sending them again only once an echo of its that left after
// ours arrived still wanted one saved half these echoes with 64-frame
// intervals, 75 B/s for 4 players on far, but a lost echo then waited up
// to an interval: 8 players on hell, relayed, seed 1022, disconnected a
// machine for silence.)
func (st *statements) sendEchoes(out stmtSender, d stmtDest) {
	p := &st.peers[d.i]
	if p.wantFrom < p.echoEnd && d.now-p.wantAt >= d.rtt+lostMargin {
		p.wantAt = d.now
		out.sendEcho(d.i, true)
	} else if st.done > p.echoEnd {
		out.sendEcho(d.i, false)
	}
}

// sendProofs sends the peer the proofs of equivocation it has not acted
// on: a proof goes to every peer until its report of the equivocator's
// departure shows it acted on it. A peer that took its players over after
// the proof's first frame played none of the frames it is about: it
// started from a state in which the machines had acted on it, and its
// report (the first frame it holds) never shows it. Sent to it for ever,
// the proof held back every repair to it (repairAt).
func (st *statements) sendProofs(out stmtSender, d stmtDest) {
	p := &st.peers[d.i]
	for x := range st.machines {
		pr := &st.proof[x]
		if !pr.ok || x == d.self || d.now-p.repairAt < d.rtt+lostMargin || d.peers.actedOn(d.i, st.peerOf[x], pr.from) ||
			d.back > pr.from {
			continue
		}
		if n, in, sig := st.holds(x, pr.k); n > 0 {
			out.sendStatement(d.i, x, pr.k, in, sig[:], true)
		}
		out.sendStatement(d.i, x, pr.k, pr.inputs, pr.sig[:], true)
		p.repairAt = d.now
	}
}

// repairWanted sends the peer the statements it says it lacks of the
// intervals it wants, once per echo, and only of an interval that echo
// came a round trip after we signed (an older one lacks what is still on
// its way; acting on it every round trip until the next echo made a
// 4-machine wifi match send 4 times the bytes it sends without
// statements); no more than it verifies in one call. It reports whether
// it sent any.
func (st *statements) repairWanted(out stmtSender, d stmtDest) bool {
	p := &st.peers[d.i]
	if p.haveAt == 0 {
		return false
	}
	sent, aged := 0, false
	for j, k := 0, p.wantFrom; j < p.haveN && sent < maxVerifiesPerCall; j, k = j+1, k+1 {
		if k < st.settled || k > st.signed || p.haveAt-st.ownAt[st.slotOf(k)] < d.rtt+lostMargin {
			continue
		}
		aged = true
		for x := range st.machines {
			if n, in, sig := st.holds(x, k); n > 0 && x != d.self && p.have[j]&(1<<x) == 0 && sent < maxVerifiesPerCall {
				out.sendStatement(d.i, x, k, in, sig[:], true)
				sent++
			}
		}
	}
	if aged {
		p.haveAt = 0
	}
	if sent > 0 {
		p.repairAt = d.now
	}
	return sent > 0
}

// repairUnmatched sends the peer every statement we hold (ours too) of
// the first intervals it has not echoed as we hold them, wait after we
// signed ours: it may hold a shorter one, or another.
func (st *statements) repairUnmatched(out stmtSender, d stmtDest, wait time.Duration) {
	p := &st.peers[d.i]
	from := st.firstUnmatched(d.i)
	for k := from; k < from+stmtRepair && k <= st.signed; k++ {
		if d.now-st.ownAt[st.slotOf(k)] < wait {
			break
		}
		for x := range st.machines {
			if n, in, sig := st.holds(x, k); n > 0 && x != d.self {
				out.sendStatement(d.i, x, k, in, sig[:], true)
				p.repairAt = d.now
			}
		}
	}
}

// stmtRepair is how many intervals one repair round covers.
const stmtRepair = 2
