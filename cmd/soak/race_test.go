//go:build race

package main

// raceEnabled: the race detector slows whole matches more than tenfold. The
// longest soaks (TestLockstepSoak, TestSoakSoundOnIntercontinental) play a
// sample under it, still several matches at once, and in full without it:
// make race runs the sample, make tools-test the whole.
const raceEnabled = true
