//go:build !rewind_adversary

package match

import "github.com/rewindgg/rewind/rollback"

// AdversaryBuilt reports whether this build has the soak's adversary and
// test hooks (rollback/liar.go, the build tag rewind_adversary): without
// them Config.Adversary, NoStatements and CorruptJoinState are refused.
const AdversaryBuilt = false

// withTestHooks returns cfg: a game's build of the rollback package has no
// test hooks, and checkAdversary refuses a match that asks for them.
func withTestHooks(cfg rollback.Config, _ testHooks) rollback.Config { return cfg }
