package rollback

import "time"

// Clock reads a monotonic clock as the time elapsed since some fixed
// instant. The session reads it once per Advance; it never sleeps.
type Clock interface {
	Now() time.Duration
}

// ClockFunc adapts a function to the [Clock] interface.
type ClockFunc func() time.Duration

// Now returns f().
func (f ClockFunc) Now() time.Duration { return f() }

// RealClock returns a Clock that reads the machine's monotonic clock,
// counting from the call.
func RealClock() Clock {
	start := time.Now() // the one read of wall time, outside the session core's loop
	return ClockFunc(func() time.Duration { return time.Since(start) })
}
