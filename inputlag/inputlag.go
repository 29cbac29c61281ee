// Package inputlag chooses the local input lag of a rollback session: the
// frames by which local inputs are delayed before the simulation uses them
// (they are still sent at once), trading a little responsiveness for fewer
// visible corrections of the remote players on long links.
//
// [Next] is the INVERSUS article's CalcInputLagFrames state machine, with
// its thresholds and hysteresis exactly as written; [Initial] is its
// starting value from the worst round trip.
package inputlag

import "time"

// Max is the largest input lag the state machine chooses.
const Max = 4

// Next returns the new input lag, given the current one and the worst
// averaged remote frame lag of the peers. Every condition is tested against
// the current setting, in order, and a later one wins, as in the article:
// raise to 1, 2, 3, 4 at lags of 2, 3, 6, 8; lower to 3, 2, 1, 0 at 7, 5,
// 2, 1. A current setting outside 0…Max is clamped first.
func Next(current int, worstPeerLag float64) int {
	cur := min(max(current, 0), Max)
	next := cur
	// increase lag
	if cur <= 0 && worstPeerLag >= 2.0 {
		next = 1
	}
	if cur <= 1 && worstPeerLag >= 3.0 {
		next = 2
	}
	if cur <= 2 && worstPeerLag >= 6.0 {
		next = 3
	}
	if cur <= 3 && worstPeerLag >= 8.0 {
		next = 4
	}
	// reduce lag
	if cur >= 4 && worstPeerLag <= 7.0 {
		next = 3
	}
	if cur >= 3 && worstPeerLag <= 5.0 {
		next = 2
	}
	if cur >= 2 && worstPeerLag <= 2.0 {
		next = 1
	}
	if cur >= 1 && worstPeerLag <= 1.0 {
		next = 0
	}
	return next
}

// Initial returns the input lag to start a match with: Next(0, half the
// worst round trip in frames), the one-way trip. frame is the duration of
// a simulation frame (time.Second/60); a non-positive frame gives 0.
func Initial(worstRTT, frame time.Duration) int {
	if frame <= 0 || worstRTT <= 0 {
		return 0
	}
	roundTripLagFrames := float64(worstRTT) / float64(frame)
	return Next(0, 0.5*roundTripLagFrames)
}
