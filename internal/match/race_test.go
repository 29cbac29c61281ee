//go:build race

package match

// raceEnabled: the race detector slows whole matches more than tenfold, and
// Run plays a match on one goroutine, so it has nothing to find there. The
// longest match tests (TestNoFalseDesync, TestSoundAgainstTheTruth,
// TestReplays' eight machines, TestForgery's 10^6 forged datagrams) run a
// sample under it, and in full without it: make race runs the sample, make test the whole.
const raceEnabled = true
