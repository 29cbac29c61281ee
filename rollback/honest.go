//go:build !rewind_adversary

package rollback

// This file is the honest build, every game's: the soak's adversary and
// the test hooks (liar.go, compiled only with the build tag
// rewind_adversary) are absent, and so is WithTestHooks, the only way to
// ask for them. adversaryBuilt is false, so the compiler removes the
// outbox's one seam (outbox.post); a session's adversary is always nil.

// adversaryBuilt reports whether this build has the adversary: not a
// game's.
const adversaryBuilt = false

// testHooks is Config's field of the test hooks: empty in this build.
//
//lint:ignore U1000 Config embeds it, and only the tagged build reads it.
type testHooks struct{}

// adversary is the soak's lying session: never one in this build.
type adversary struct{}

// adversaryOf returns the session's adversary: none in this build.
func adversaryOf(*Config, *Session) *adversary { return nil }

// rewrite is never called: adversaryBuilt is false.
func (*adversary) rewrite(o *outbox, i int, p post) bool { return o.deliver(i, p) }

// falsifiesFeed and falsify are never called: adversaryBuilt is false.
func (*adversary) falsifiesFeed() bool          { return false }
func (*adversary) falsify(Frame, []uint64, int) {}

// lied is never called: adversaryBuilt is false.
func (*adversary) lied() {}

// corruptsStates is never called: adversaryBuilt is false.
func (*adversary) corruptsStates() bool { return false }

// unsigned reports whether cfg asks for a match without statements: never
// in this build.
func unsigned(*Config) bool { return false }

// noTimerDeadline reports whether cfg asks for every timer's check in
// every call: never in this build.
func noTimerDeadline(*Config) bool { return false }
