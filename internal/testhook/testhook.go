// Package testhook is what this module's own test support may ask of a
// rollback session that no game can: it is internal, so no Transport
// outside the module can implement its interfaces.
package testhook

// Signed is returned by a Transport's Signed method: a session of three
// or more machines over such a transport signs its inputs and cross-checks
// every machine's statements (rollback/statements.go), which names and
// cuts an equivocator. It is on trial, not yet on by default: on the
// lossiest profiles the wait for every machine's statements holds frames
// back long enough to triple the re-simulation (docs/security.md).
type Signed struct{}
