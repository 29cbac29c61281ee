package match

// RaceEnabled is raceEnabled for the external tests (package match_test).
const RaceEnabled = raceEnabled
