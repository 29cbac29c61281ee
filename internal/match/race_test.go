//go:build race

package match

// raceEnabled: the race detector slows whole matches tenfold; the longest
// match tests run a sample under it, and in full without it (make test
// runs both).
const raceEnabled = true
