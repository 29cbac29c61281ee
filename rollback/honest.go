//go:build !rewind_adversary

package rollback

// This file is the honest build, every game's: the soak's adversary
// (liar.go, compiled only with the build tag rewind_adversary) is absent.
// adversaryBuilt is false, so the outbox's one seam (outbox.post) is
// removed by the compiler, and a session's adversary is always nil.

// adversaryBuilt reports whether this build has the adversary: not a
// game's.
const adversaryBuilt = false

// adversary is the soak's lying session: never one in this build.
type adversary struct{}

// adversaryOf returns the session's adversary: none in this build.
func adversaryOf(*Config, *Session) *adversary { return nil }

// rewrite is never called: adversaryBuilt is false.
func (*adversary) rewrite(o *outbox, i int, p post) bool { return o.deliver(i, p) }

func unsigned(Transport) bool         { return false }
func corruptJoinState(Transport) bool { return false }
