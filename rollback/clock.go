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
// counting from the call. It is the default Config.Clock; the session itself
// reads time only through its Clock.
func RealClock() Clock {
	// The package's single clock read, in the default Clock that callers
	// replace; the session core reads time only through Config.Clock.
	start := time.Now() // safe: see above
	return ClockFunc(func() time.Duration { return time.Since(start) })
}
