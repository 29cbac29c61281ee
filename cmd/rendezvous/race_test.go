//go:build race

package main

// raceEnabled: the race detector inflates goroutine stacks and the heap
// (a held long poll measured 11 to 16 KB under it, 4.6 to 9.4 KB without):
// TestLongPollMemory reports its figures under it but bounds them only
// without it.
const raceEnabled = true
