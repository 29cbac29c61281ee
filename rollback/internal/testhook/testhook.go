// Package testhook is what the rollback package's own test support may
// ask of a session that no game can: it is internal, so no Transport
// outside this module can implement its interfaces.
package testhook

// Unsigned is returned by a Transport's Unsigned method: a session over
// such a transport runs without statements (rollback/statements.go). The
// scripted fake peers (rollback/internal/fakepeer) implement it: they do
// not sign their inputs, and the tests that use them are about other
// parts of the protocol.
type Unsigned struct{}
