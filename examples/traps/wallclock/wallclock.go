// Package wallclock is wrong on purpose, for rewindvet's tests: the traps
// game calls it from Step, and the analyzer must see, through a fact,
// that it reads the clock.
package wallclock

import "time"

// Seconds returns the wall-clock time in seconds.
func Seconds() int64 { return time.Now().Unix() }
