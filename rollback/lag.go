package rollback

import (
	"github.com/rewindgg/rewind/advantage"
	"github.com/rewindgg/rewind/inputlag"
)

// pace is how the session keeps time with its peers: the fairness
// governor (frame advantage), the input lag, and the wait for a peer's
// input.
type pace struct {
	gov      *advantage.Governor
	lag      inputLag
	starving starving    // since EventStarved: who we wait for, since when
	clock    *relayClock // nil: the relay is not the match clock
}

// played runs, once a frame is simulated during play (not a
// re-simulation; f is the next frame now), the 100-frame evaluations of
// frame advantage and input lag: it counts the frame in st's histogram of
// input lags, and adds EventInputLagChanged to events when the lag is
// retargeted.
func (p *pace) played(f Frame, st *Stats, events *eventLog) {
	st.LagFrames[min(p.lag.delay, maxInputLagHistogram-1)]++
	// Every frame not simulated gives frames back, whatever the reason.
	stalled := st.AdvantageStalls + st.StallFrames + st.LagStalls
	if !p.gov.Simulated(stalled) || p.lag.fixed {
		return
	}
	if next, changed := p.lag.retarget(inputlag.Next(p.lag.delay, p.gov.LinkLag())); changed {
		*events = append(*events, Event{Kind: EventInputLagChanged, Frame: f, Peer: -1, Lag: next})
	}
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
