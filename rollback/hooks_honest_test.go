//go:build !rewind_adversary

package rollback

// withoutStatements leaves c as it is: a game's build has no test hooks
// (TestHooks), and the tests that need fake peers without statements are
// built with the tag rewind_adversary.
func withoutStatements(*Config) {}
