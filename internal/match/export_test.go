package match

// RaceEnabled is raceEnabled for the external tests (package match_test).
const RaceEnabled = raceEnabled

// RunCountingEverything is Run with every datagram a session receives
// counted as forged: the genuine ones are taken, so ForgedAccepted must
// come out positive (the accounting can see a forgery taken).
func RunCountingEverything(c Config) Result {
	c.forgeCountAll = true
	return Run(c)
}
