// Package display, imported for its side effect, stops the arena with one
// line and exit status 1 when there is no X display to open, before
// Ebitengine's initialization panics with a goroutine trace.
//
// Ebitengine opens the display in an init function of its own package
// (internal/ui), so the check cannot wait for main: it is this package's
// init. Go initializes the packages of a program one at a time, each time
// the first, by import path, of those whose imports are initialized
// (https://go.dev/ref/spec#Program_initialization). This package imports
// only syscall; os imports syscall too and sorts after
// github.com/rewindgg, so this package is initialized before os, and so
// before every package that imports os, Ebitengine's included. Keep it
// that way: any other import can break the order (the play test runs the
// binary without DISPLAY and would catch it).
package display
