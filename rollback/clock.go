package rollback

import "time"

// realClock returns a clock (Config.Clock) that reads the machine's
// monotonic clock, counting from the call. It is the default; the session
// itself reads time only through its Config.Clock.
func realClock() func() time.Duration {
	start := time.Now() // safe: the default Config.Clock, which callers replace; the session core reads time only through it
	return func() time.Duration { return time.Since(start) }
}
