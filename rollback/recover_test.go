package rollback

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rewindgg/rewind/desync"
)

// TestRecoveryTake: who loads the kept state (the odd one out by the
// majority; on a tie or with two machines, the higher machine), one
// recovery at a time, and none within recoverWindow frames of the last:
// that desync ends the match.
func TestRecoveryTake(t *testing.T) {
	r := newRecovery([]bool{true, true, true})
	assert.True(t, r.take(&desync.Error{Frame: 1300, Peer: 1, Majority: true}, 0), "outvoted: it loads the kept state")
	assert.True(t, r.adopt)
	assert.True(t, r.adopting())
	assert.False(t, r.take(&desync.Error{Frame: 1400, Peer: 2}, 0), "one at a time")
	r.finish(100)
	assert.Equal(t, 1, r.done)
	assert.False(t, r.take(&desync.Error{Frame: 1300 + recoverWindow - 1, Peer: 1}, 0), "a second desync within the window ends the match")
	assert.True(t, r.take(&desync.Error{Frame: 1300 + recoverWindow, Peer: 1}, 0), "after it, another recovery")
	assert.False(t, r.adopt, "a tie: the lower machine keeps its state")
	assert.True(t, r.ignored(1, 1300+recoverWindow+recoverGrace), "the peer that loads ours: what it sent before does not count")
	assert.False(t, r.ignored(1, 1300+recoverWindow+recoverGrace+1))
	assert.False(t, r.ignored(2, 1300+recoverWindow))
	r.finish(200)

	r = newRecovery([]bool{false})
	assert.True(t, r.take(&desync.Error{Frame: 500, Peer: 0}, 0))
	assert.True(t, r.adopt, "two machines: the higher loads the lower's state")

	var none *recovery
	assert.False(t, none.take(&desync.Error{Frame: 500}, 0), "without Config.Recover a desync ends the match")
	assert.False(t, none.adopting())
	assert.False(t, none.ignored(0, 1))
}
