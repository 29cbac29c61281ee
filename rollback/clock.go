package rollback

import "time"

// Clock reads a monotonic clock as the time elapsed since some fixed
// instant. The session reads it once per Advance; it never sleeps.
type Clock interface {
	Now() time.Duration
}

// clockFunc adapts a function to the [Clock] interface.
type clockFunc func() time.Duration

// Now returns f().
func (f clockFunc) Now() time.Duration { return f() }

// realClock returns a Clock that reads the machine's monotonic clock,
// counting from the call. It is the default Config.Clock; the session itself
// reads time only through its Clock.
func realClock() Clock {
	start := time.Now() // safe: the default Config.Clock, which callers replace; the session core reads time only through it
	return clockFunc(func() time.Duration { return time.Since(start) })
}
