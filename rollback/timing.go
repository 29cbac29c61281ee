package rollback

import "time"

// timing is what we observe of a peer's acknowledgements and inputs
// against our own clock. An honest peer acknowledges a frame about a round
// trip after it went out, and its input for a frame arrives about half a
// round trip after we simulated it at the latest (the fairness governor
// keeps the machines' frames together); one that keeps acknowledging
// fewer frames than it has claims a slower link than it has, and one whose
// inputs keep arriving later than a round trip explains holds them back:
// it could choose each after seeing ours (docs/security.md).
type timing struct {
	ackAgeMin time.Duration // the least ack age this window; -1 for no sample
	ackAge    time.Duration // the last window's least ack age (0: none)
	ackLate   int           // consecutive windows whose least ack age was too old

	inputs, lateInputs int // this window: its frames received, and those past lateAfter
	inputsLate         int // consecutive windows with most of its inputs late

	newest   Frame         // the most of its frames we have had
	newestAt time.Duration // when that last grew
	acks     int           // this window: its acknowledgements sampled, and
	stale    int           // those too old to count (ackFresh)
}

// staleAfter is how old what a lag is made of may be for the fairness
// governor to count it: the peer's newest frame we have (localFrameLag),
// and the oldest of our frames it still wants, beyond a round trip
// (remoteFrameLag). Three frames: a quiet tick and a tick of jitter. A
// loss burst makes one of the two grow a frame a tick while neither
// machine moved: counted, each side took the burst for a lead (the one
// missing the inputs for its own, the other for its peer's) and stalled
// the wrong machine for it (issue 49).
const staleAfter = 3 * frameDuration

// heard notes that we have the peer's frames below have, at now.
func (t *timing) heard(now time.Duration, have Frame) {
	if have > t.newest {
		t.newest, t.newestAt = have, now
	}
}

// ackSampled counts an acknowledgement, stale or not, and passes fresh on.
func (t *timing) ackSampled(fresh bool) bool {
	t.acks++
	if !fresh {
		t.stale++
	}
	return fresh
}

// acksStale reports whether most of the window's acknowledgements so far
// were stale. The governor counts none of those (its estimate may then
// rest on a few fresh ones), so it cannot be said to wait for the peer:
// a peer that acknowledges 20 frames short to hide a lookahead has its
// inputs judged late all the same.
func (t *timing) acksStale() bool { return 2*t.stale > t.acks }

// fresh reports whether a localFrameLag measured at now counts: we had a
// new frame of the peer's within staleAfter.
func (t *timing) fresh(now time.Duration) bool { return now-t.newestAt <= staleAfter }

// ackFresh reports whether a remoteFrameLag measured at now counts: the
// oldest of our frames the peer wants (ack; localNext is our next) went
// out no longer than a round trip (rtt, 0 while unknown: it counts)
// plus staleAfter ago. Older, a burst of our packets was lost on the way.
func ackFresh(now time.Duration, ack, localNext Frame, sent *frameTimes, rtt time.Duration) bool {
	at, ok := sent.of(ack)
	return rtt == 0 || !ok || ack >= localNext || now-at <= rtt+staleAfter
}

// ackWindows is how many one-second windows in a row the acknowledgements
// (or inputs) must lag before the peer is named: a loss burst or a round
// trip that just grew can make one window look bad (seen once in 200 hell
// matches).
const ackWindows = 3

// ackSlack is how much longer than a round trip an honest peer's
// acknowledgement can lag, at best, over a whole second: a few lost
// packets, and a tick's quantization at each end.
const ackSlack = 100 * time.Millisecond

// lateSlack is how much later than a round trip after we simulated a frame
// an honest peer's input for it may arrive, for most of a second, before
// the window counts as late. Single honest windows go far beyond it (on
// the hell profile the median reached a round trip + 480 ms: a start
// being caught up, a loss burst); what the rule needs, ackWindows late
// windows in a row while the governor does not wait for the peer, did not
// occur in TestNoFalseDesync's 200 hell matches.
const lateSlack = 100 * time.Millisecond

// lateMinInputs is the fewest frames of a window that can show the peer's
// inputs late (a second holds 60; a peer that sends fewer is stalling us,
// which EventStarved reports).
const lateMinInputs = 30

// acked samples the peer's acknowledgement ack at now: the age of the
// oldest of our frames it still wants (0 when it wants none we sent).
func (t *timing) acked(now time.Duration, ack, localNext Frame, sent *frameTimes) {
	age := time.Duration(0)
	if at, ok := sent.of(ack); ok && ack < localNext {
		age = now - at
	}
	if t.ackAgeMin < 0 || age < t.ackAgeMin {
		t.ackAgeMin = age
	}
}

// input samples the arrival at now of the peer's first input for frame f,
// against when we simulated f (not yet: it is early) and the round trip.
// It reports whether the input came later than that allows: the caller
// then asks the fairness governor, and calls late unless it measures the
// peer behind us, and so has us wait for it: an honest peer that is late
// for that reason (a slow clock, a start caught up) is not counted late.
// A peer that looks ahead holds its inputs back and must acknowledge fewer
// of our frames than it has for the governor not to wait for it (the lead
// would be gone).
func (t *timing) input(now time.Duration, f Frame, simmed *frameTimes, rtt time.Duration) (late bool) {
	t.inputs++
	at, ok := simmed.of(f)
	return ok && rtt > 0 && now-at > rtt+lateSlack
}

// judged returns the round trip the judgements use: ours, from pings
// (rtt), or while the peer has answered none, the last window's least
// ack age. That is at most a round trip for an honest peer (it still
// wanted a frame we sent that long ago), so a peer that never answers a
// ping is judged all the same from its first second of acknowledgements;
// it can only claim a longer link by acknowledging later, and hide a
// lookahead shorter than that delay (docs/security.md). 0: none yet.
func (t *timing) judged(rtt time.Duration) time.Duration {
	if rtt == 0 {
		return t.ackAge
	}
	return rtt
}

// late counts an input that input found late and the governor did not
// wait for.
func (t *timing) late() { t.lateInputs++ }

// roll closes the window: it reports whether, for ackWindows windows in a
// row, even the peer's best acknowledgement lagged more than a round trip
// (rtt, our measurement) plus ackSlack behind our sends, and whether most
// of its inputs arrived more than a round trip plus lateSlack after we
// simulated their frame.
func (t *timing) roll(rtt time.Duration) (ackLies, lookahead bool) {
	t.ackAge = max(0, t.ackAgeMin)
	if rtt == 0 {
		// No round trip to judge by: nothing counts, and nothing is named.
		t.ackLate, t.inputsLate, t.ackAgeMin, t.inputs, t.lateInputs, t.acks, t.stale = 0, 0, -1, 0, 0, 0, 0
		return false, false
	}
	if t.ackAgeMin > rtt+ackSlack {
		t.ackLate++
	} else {
		t.ackLate = 0
	}
	t.ackAgeMin = -1
	if t.inputs >= lateMinInputs && 2*t.lateInputs > t.inputs {
		t.inputsLate++
	} else {
		t.inputsLate = 0
	}
	t.inputs, t.lateInputs, t.acks, t.stale = 0, 0, 0, 0
	return t.ackLate >= ackWindows, t.inputsLate >= ackWindows
}
