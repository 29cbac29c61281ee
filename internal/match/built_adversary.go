//go:build rewind_adversary

package match

import "github.com/rewindgg/rewind/rollback"

// AdversaryBuilt reports whether this build has the soak's adversary and
// test hooks (rollback/liar.go, the build tag rewind_adversary): without
// them Config.Adversary, NoStatements and CorruptJoinState are refused.
const AdversaryBuilt = true

// withTestHooks returns cfg with the test hooks h (none: cfg as it is).
func withTestHooks(cfg rollback.Config, h testHooks) rollback.Config {
	if h == (testHooks{}) {
		return cfg
	}
	return rollback.WithTestHooks(cfg, rollback.TestHooks{Liar: h.script, Unsigned: h.unsigned, CorruptJoinState: h.corrupt})
}
