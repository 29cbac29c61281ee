// Package testhook is what this module's own test support may ask of a
// rollback session that no game can: it is internal, so no Transport
// outside the module can implement its interfaces.
package testhook

// Unsigned is returned by a Transport's Unsigned method: a session of
// three or more machines over such a transport does without statements
// (rollback/statements.go) — it neither signs its inputs nor cross-checks
// the others', so an equivocator goes unnamed. Only the measurements of
// what statements cost (the same match with and without them) use it.
type Unsigned struct{}

// CorruptJoinState is returned by a Transport's CorruptJoinState method:
// a session over such a transport flips a bit of every state it hands a
// machine that comes back (rollback/rejoin.go), which must catch it
// before it plays. Only the test that proves it does uses it.
type CorruptJoinState struct{}
