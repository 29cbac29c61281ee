//go:build js

package main

import "time"

// processCPU is unknown in a browser.
func processCPU() time.Duration { return -1 }

// loadAverage is unknown in a browser.
func loadAverage() []float64 { return nil }
