package rollback

import "time"

// timing is what we observe of a peer's acknowledgements against our own
// clock: how long ago we first sent the oldest of our frames it still
// wants. An honest peer acknowledges a frame about a round trip after it
// went out; one that keeps acknowledging fewer frames than it has claims a
// slower link than it has (docs/security.md).
type timing struct {
	ackAgeMin time.Duration // the least ack age this window; -1 for no sample
	ackLate   int           // consecutive windows whose least ack age was too old
}

// ackWindows is how many one-second windows in a row the acknowledgements
// must lag before the peer is named: a loss burst or a round trip that
// just grew can make one window look bad (seen once in 200 hell matches).
const ackWindows = 3

// ackSlack is how much longer than a round trip an honest peer's
// acknowledgement can lag, at best, over a whole second: a few lost
// packets, and a tick's quantization at each end.
const ackSlack = 100 * time.Millisecond

// acked samples the peer's acknowledgement ack at now: the age of the
// oldest of our frames it still wants (0 when it wants none we sent).
func (t *timing) acked(now time.Duration, ack, localNext Frame, sent *sendTimes) {
	age := time.Duration(0)
	if ack < localNext && ack < sent.high && sent.high-ack < ringSize {
		age = now - sent.at[ring(ack)]
	}
	if t.ackAgeMin < 0 || age < t.ackAgeMin {
		t.ackAgeMin = age
	}
}

// roll closes the window: it reports whether, for ackWindows windows in a
// row, even the peer's best acknowledgement lagged more than a round trip
// (rtt, our measurement) plus ackSlack behind our sends.
func (t *timing) roll(rtt time.Duration) (ackLies bool) {
	if t.ackAgeMin > rtt+ackSlack {
		t.ackLate++
	} else {
		t.ackLate = 0
	}
	t.ackAgeMin = -1
	return t.ackLate >= ackWindows
}
