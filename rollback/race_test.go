//go:build race

package rollback_test

// raceEnabled: the race detector slows whole matches more than tenfold, and
// match.Run plays a match on one goroutine, so it has nothing to find there.
// TestMatches plays shorter matches under it, and full ones without it:
// make test runs both.
const raceEnabled = true
