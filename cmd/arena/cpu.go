//go:build !js

package main

import (
	"syscall"
	"time"
)

// processCPU is the process's CPU time so far, user and system, all its
// threads (Mesa's rasterizer threads included); -1 if unknown.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
