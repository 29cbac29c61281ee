package rollback

// The package's unexported bounds and defaults, for its external tests.
const (
	DefaultMaxRollback = defaultMaxRollback
	ForgeryAlarm       = forgeryAlarm
	LockstepCatchUp    = lockstepCatchUp
	MaxRollbackLimit   = maxRollbackLimit
	MaxTickRate        = maxTickRate
)

// RealClock is the default Config.Clock, for tests that share one.
var RealClock = realClock
