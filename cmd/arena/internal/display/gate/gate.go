// Package gate, imported by cmd/arena for its side effect, stops the
// program with one line and exit status 1 when there is no X display to
// open, before Ebitengine's initialization panics with a goroutine trace.
//
// Ebitengine opens the display in an init function of its own package
// (internal/ui), so the check cannot wait for main: it is this package's
// init. Go initializes the packages of a program one at a time, each time
// the first, by import path, of those whose imports are initialized
// (https://go.dev/ref/spec#Program_initialization). This package and
// package display import only syscall (and display); os imports syscall
// too and sorts after github.com/rewindgg, so both are initialized before
// os, and so before every package that imports os, Ebitengine's
// included. Keep it that way: another import can break the order (the
// play test runs the binary without DISPLAY and would catch it).
package gate

import (
	"syscall"

	"github.com/rewindgg/rewind/cmd/arena/internal/display"
)

func init() {
	if msg := display.Missing(); msg != "" {
		_, _ = syscall.Write(2, []byte(msg+"\n"))
		syscall.Exit(1)
	}
}
