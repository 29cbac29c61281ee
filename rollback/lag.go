package rollback

import "github.com/rewindgg/rewind/advantage"

// pace is how the session keeps time with its peers: the fairness
// governor (frame advantage), the input lag, and the wait for a peer's
// input.
type pace struct {
	gov      *advantage.Governor
	lag      inputLag
	starving starving // since EventStarved: who we wait for, since when
}

// inputLag is the local input lag and the frames still to stall or to
// catch up while it changes: raising it stalls while taking input, lowering
// it simulates the queued inputs at once (the INVERSUS article).
type inputLag struct {
	delay   int  // frames between adding an input and simulating it
	fixed   bool // never re-evaluated (Config.FixedInputLag, no peers, lockstep)
	stalls  int  // frames still to stall for a raised lag
	catchUp int  // frames still to simulate at once for a lowered lag
}

// retarget moves the lag to next and reports whether it changed.
func (l *inputLag) retarget(next int) (int, bool) {
	switch {
	case next > l.delay:
		l.stalls += next - l.delay
	case next < l.delay:
		l.catchUp += l.delay - next
	default:
		return next, false
	}
	l.delay = next
	return next, true
}

// raise raises the lag to at least next (the start of the match), and
// reports whether it did.
func (l *inputLag) raise(next int) bool {
	if l.fixed || next <= l.delay {
		return false
	}
	_, changed := l.retarget(next)
	return changed
}
