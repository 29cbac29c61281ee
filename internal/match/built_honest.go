//go:build !rewind_adversary

package match

// AdversaryBuilt reports whether this build has the soak's adversary and
// test hooks (rollback/liar.go, the build tag rewind_adversary): without
// them Config.Adversary, NoStatements and CorruptJoinState are refused.
const AdversaryBuilt = false
