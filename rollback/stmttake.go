package rollback

import (
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the statements' receive side: an Attest taken (its echo,
// its statement), a statement checked against the inputs we hold, the
// inputs it gives or corrects, the statements that wait for their
// inputs, and the proof of equivocation acted on. What it reads of the
// session is a stmtView; what it asks of it, a stmtHost.

// stmtHost is what taking statements asks of the session.
type stmtHost interface {
	// suspect names peer i for k (EventSuspect).
	suspect(i int, k Suspicion)
	// disconnect disconnects peer i from its next frame.
	disconnect(i int)
	// ringLow is the oldest frame whose inputs the session may still read.
	ringLow() Frame
}

// stmtView is what the statements read of the session in one call.
type stmtView struct {
	peers   peerSet
	inputs  *inputRing
	frame   Frame // the next frame to simulate
	now     time.Duration
	started bool
}

// ready reports whether the match may start as far as the signing keys
// go: every peer's view of them equals ours (or there are no statements).
func (st *statements) ready() bool { return st == nil || st.keysAgreed() }

// update recomputes the digests and the settled frontier (nothing without
// statements).
func (st *statements) update(r stmtRoster) {
	if st != nil {
		st.refresh(r)
		st.settle(r)
	}
}

// signOwn signs every interval of our inputs (of our players local) that
// is complete, and a prefix of the current one once our inputs have
// stopped for stmtIdleTicks ticks (the end of the match, a long stall).
// It signs only frames before next, our next local frame, and before
// final: with the relay clock the first the relay has not settled
// (relayclock.go; noFrame without). Our inputs stop when next does: the
// relay's receipts move final in steps, and counted as idle ticks they
// had a prefix signed in the ordinary wait for a receipt, whose full
// interval followed, machines holding the two echoing different digests
// until a repair (on hell the settled frontier then fell so far behind
// that the input ring filled).
func (st *statements) signOwn(inputs *inputRing, local []PlayerID, next, final Frame, now time.Duration) {
	if next == st.lastOwn {
		st.idle++
	} else {
		st.idle, st.lastOwn = 0, next
	}
	next = min(next, final)
	for {
		k := st.signed
		from := Frame(k) * st.every
		n := int(min(next-from, st.every))
		if n <= 0 || k >= st.settled+st.kept {
			// Nothing to sign, or an interval whose slot still holds an
			// unsettled one (a prefix signed there once replaced our own
			// statement of the settled frontier's interval, for ever).
			return
		}
		if Frame(n) < st.every {
			if had, _, _ := st.holds(st.me, k); st.idle < stmtIdleTicks || had >= n {
				return
			}
		}
		in, _ := st.inputsOf(inputs, local, from, n)
		st.sign(k, in, now)
		if Frame(n) < st.every {
			return
		}
		st.signed++
	}
}

// poll takes the statements that waited for their inputs and now have
// them, and settles. It returns the first frame to re-simulate.
func (st *statements) poll(h stmtHost, r stmtRoster, v *stmtView) Frame {
	mis := st.takeWaiting(h, v)
	st.update(r)
	return mis
}

// fillEcho puts into m our digests of the intervals peer i wants (all,
// or only those after our last echo to it), and the first of ours it has
// not matched.
func (st *statements) fillEcho(i int, m *wire.Attest, all bool) {
	p := &st.peers[i]
	from := st.echoStart(i)
	if !all {
		from = max(from, p.echoEnd)
	}
	want := st.firstUnmatched(i)
	m.Want, m.Have, m.From, m.Echo = uint32(want), st.holding(m.Have[:0], want), uint32(from), m.Echo[:0]
	end := min(st.done, from+wire.MaxEchoes)
	for k := from; k < end; k++ {
		m.Echo = append(m.Echo, st.digest[st.digestSlot(k)][:]...)
	}
	p.echoEnd = max(p.echoEnd, end)
}

// takeAttest takes peer i's Attest m, parsed: its echo and the statement
// it carries. It returns the first frame the statement corrected or
// revealed (v.frame for none), and false for an invalid one.
func (st *statements) takeAttest(h stmtHost, v *stmtView, i int, m *wire.Attest) (Frame, bool) {
	if !v.started || v.peers[i].leave.disc {
		return v.frame, true // nothing to check yet, or it left: what it sends no longer counts
	}
	st.echoed(i, m.Want, m.Have, m.From, m.Echo, v.now)
	if !m.HasStatement || int(m.Machine) == st.me {
		return v.frame, true
	}
	x, k := int(m.Machine), int32(m.Interval)
	in := m.Inputs
	if len(in) == 0 {
		// Its own statement, without the inputs we have from its packets.
		if x != v.peers[i].machine {
			return v.frame, false // a relay carries the inputs
		}
		var ok bool
		if in, ok = st.stmtInputs(h, v, x, k, int(m.Frames)); !ok {
			st.wait(x, k, int(m.Frames), m.Sig) // its packets have not all come yet
			return v.frame, true
		}
	}
	return st.takeStatement(h, v, i, x, k, in, m.Sig)
}

// takeStatement takes machine x's statement of interval k, from peer i,
// and returns the first frame it makes us re-simulate.
func (st *statements) takeStatement(h stmtHost, v *stmtView, i, x int, k int32, in []uint64, sig []byte) (Frame, bool) {
	switch st.take(i, x, k, in, sig, v.inputs.mask) {
	case stmtInvalid:
		return v.frame, false
	case stmtNew:
		return st.apply(h, v, x, k), true
	case stmtConflict:
		return st.proven(h, v, x, k), true
	}
	return v.frame, true
}

// stmtInputs returns our inputs of machine x for the first n frames of
// interval k (in the statements' scratch), if we have them all, final.
// With the relay clock an input here may not be final yet: one x's
// packets carried before x learned the relay had decided the frame, the
// decision still on its way to us. x signs only its final inputs, so its
// statement is checked once the relay's receipt has made the interval's
// inputs final here, every decision about them taken; checked before, it
// failed (and was dropped) whenever a decision came after it, and the
// settled frontier waited seconds for a repair, filling the input ring
// on hell.
func (st *statements) stmtInputs(h stmtHost, v *stmtView, x int, k int32, n int) ([]uint64, bool) {
	i := st.peerOf[x]
	from := Frame(k) * st.every
	if i < 0 || n <= 0 || Frame(n) > st.every || from < h.ringLow() {
		return nil, false
	}
	for _, p := range v.peers[i].players {
		if from+Frame(n) > v.inputs.final[p] {
			return nil, false // noFrame without the relay clock
		}
	}
	return st.inputsOf(v.inputs, v.peers[i].players, from, n)
}

// inputsOf returns the inputs of players for the n frames from frame
// from, frame-major as a statement signs them, in the statements'
// scratch; false if one has not arrived.
func (st *statements) inputsOf(inputs *inputRing, players []PlayerID, from Frame, n int) ([]uint64, bool) {
	st.buf = st.buf[:0]
	for f := from; f < from+Frame(n); f++ {
		for _, p := range players {
			if f >= inputs.next[p] {
				return nil, false
			}
			st.buf = append(st.buf, uint64(inputs.at(f, p)))
		}
	}
	return st.buf, true
}

// takeWaiting takes the statements that waited for their inputs and now
// have them. It returns the first frame to re-simulate.
func (st *statements) takeWaiting(h stmtHost, v *stmtView) Frame {
	mis := v.frame
	for x := range st.machines {
		for j := range st.waiting[x] {
			w := &st.waiting[x][j]
			if !w.ok {
				continue
			}
			if w.k < st.settled || v.peers[st.peerOf[x]].leave.disc {
				w.ok = false
				continue
			}
			in, ok := st.stmtInputs(h, v, x, w.k, w.n)
			if !ok {
				continue
			}
			w.ok = false
			f, _ := st.takeStatement(h, v, st.peerOf[x], x, w.k, in, w.sig[:])
			mis = min(mis, f)
		}
	}
	return mis
}

// apply makes our inputs of machine x agree with its statement of
// interval k: a missing input is taken from it (it is as good as a
// packet), one that differs is replaced (x sent us inputs its own
// signature contradicts: it is named). It returns the first frame
// simulated with another input.
func (st *statements) apply(h stmtHost, v *stmtView, x int, k int32) Frame {
	mis := v.frame
	i := st.peerOf[x]
	ps := &v.peers[i]
	n, in, _ := st.holds(x, k)
	np := len(ps.players)
	// Not below the ring's low frame: the interval's settled prefix can
	// reach past it (a 64-frame interval settled 53 frames in), its frames
	// agree with this statement (take compared them), and their ring slots
	// may hold frames a ring later (correcting one there rewrote frame 1472
	// for frame 960: 4 players on hell, relayed, seed 1001).
	low := h.ringLow()
	hi := low + ringSize
	for f := max(Frame(k)*st.every, low); f < Frame(k)*st.every+Frame(n); f++ {
		for j, p := range ps.players {
			val := Input(in[int(f-Frame(k)*st.every)*np+j])
			switch next := v.inputs.next[p]; {
			case f < next:
				// With the relay clock an input not final yet may be one
				// its machine sent before it learned of a decision: no lie.
				if v.inputs.correct(p, f, val) {
					if f < v.inputs.final[p] {
						h.suspect(i, SuspectEquivocation)
					}
					if f < v.frame && v.inputs.usedAt(f, p) != val {
						mis = min(mis, f)
					}
				}
			case f == next && f < hi && !ps.leave.disc:
				if v.inputs.receive(p, f, val, v.frame) {
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
func (st *statements) proven(h stmtHost, v *stmtView, x int, k int32) Frame {
	i := st.peerOf[x]
	ps := &v.peers[i]
	f := st.proof[x].from
	h.suspect(i, SuspectEquivocation)
	for j := range st.peers {
		st.peers[j].repairAt = 0 // relay it at once
	}
	if !ps.leave.prove(f) {
		return v.frame
	}
	h.disconnect(i)
	if !ps.leave.agreed || f >= ps.leave.frame {
		return v.frame
	}
	// Agreed on reports before the proof arrived: the proof moves the cut
	// back (no frame after it can be final: its interval never settled).
	ps.leave.frame = f
	for _, p := range ps.players {
		v.inputs.disconnect(p, f)
	}
	return min(v.frame, f)
}
