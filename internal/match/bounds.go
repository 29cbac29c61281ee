package match

import "github.com/rewindgg/rewind/rollback"

// The rollback package's bounds that size a match's records. The package
// keeps them unexported (Config's field comments give them); TestBounds
// checks that NewSession still refuses one past each.
const (
	maxRollbackLimit = 64 // Config.MaxRollback is at most this
	maxInputLag      = 30 // Config.InputLag is at most this
)

// The lengths of the arrays rollback's statistics report.
const (
	numSuspicions = len(rollback.PeerStats{}.Suspected)
	lagHistogram  = len(rollback.Stats{}.LagFrames)
)
