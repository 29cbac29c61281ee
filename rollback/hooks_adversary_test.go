//go:build rewind_adversary

package rollback

// withoutStatements makes the session of c do without statements
// (TestHooks.Unsigned): fake peers never sign their inputs
// (statements.go), so a session of three or more machines with statements
// would wait for their keys for ever. The statements have their own
// tests, between real sessions.
func withoutStatements(c *Config) { *c = WithTestHooks(*c, TestHooks{Unsigned: true}) }
