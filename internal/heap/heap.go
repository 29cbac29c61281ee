// Package heap measures what code allocates, for tests that bound the
// memory a reader of hostile files may use (replay, netlog).
package heap

import "runtime"

// Allocated returns the bytes the heap handed out while f ran (every
// goroutine's: run it where nothing else allocates).
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
