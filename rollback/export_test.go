package rollback

import "testing"

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

// NoTimerDeadline makes every call of the sessions run every protocol
// timer's check, as before the deadline (timers.go), until the test ends.
func NoTimerDeadline(t testing.TB) {
	noTimerDeadline = true
	t.Cleanup(func() { noTimerDeadline = false })
}
