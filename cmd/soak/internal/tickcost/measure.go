package tickcost

import (
	"slices"
	"time"

	"github.com/rewindgg/rewind/internal/memcopy"
)

// MeasureCopy measures, on this machine, what copying a snapshot of size
// bytes costs per byte, the way savestate's Save and Restore copy it
// (internal/memcopy): rounds timings, each of enough copies of a size-byte
// buffer to take about a millisecond, and their median in nanoseconds per
// byte. It reads the clock: its result varies from run to run, and a run
// that must be reproduced gives the figure it printed instead.
func MeasureCopy(size, rounds int) float64 {
	size, rounds = max(size, 64), max(rounds, 1)
	src, dst := make([]byte, size), make([]byte, size)
	for i := range src {
		src[i] = byte(i * 7) // data, not zeros: some machines store zero lines faster
	}
	copies := max(1, (4<<20)/size) // about 4 MiB a timing: 1 ms at 4 GB/s
	memcopy.Copy(dst, src)         // warm: the pages exist and are in the cache
	perByte := make([]float64, rounds)
	for r := range perByte {
		start := time.Now()
		for range copies {
			memcopy.Copy(dst, src)
		}
		perByte[r] = float64(time.Since(start).Nanoseconds()) / float64(copies*size)
	}
	slices.Sort(perByte)
	return perByte[rounds/2]
}
