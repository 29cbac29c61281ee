// Package display tells, in one line, why there is no X display to open
// (for the arena's package gate, which stops the program before
// Ebitengine's initialization panics with a goroutine trace). It imports
// only syscall; see package gate for why.
package display
