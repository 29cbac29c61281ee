//go:build rewind_adversary

package rollback

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// TestAdvantageBurst (issue 49): fake peer 0 plays in step with the victim
// but loses every packet for 10 ticks of every 100 (a loss burst; the next
// packet repeats the frames lost). Neither machine is ahead: the victim
// may wait for the burst's inputs at its end (its reach), as before, but
// must not stall for a lead. Before, every input packet the victim sent
// during a burst counted a localFrameLag a frame larger than the last (the
// peer's frames it lacked, though the peer had not moved ahead), and it
// stalled 26 frames for the lead they made.
func TestAdvantageBurst(t *testing.T) {
	m := newLiarMesh(t, nil)
	tick := 0
	m.lie = func(i int, _ *wire.InputPacket) bool {
		return i != 0 || tick%100 < 90
	}
	for ; tick < 1200; tick++ {
		m.tick()
	}
	assert.Empty(t, m.errs)
	assert.Greater(t, m.s.frame, Frame(1100))
	assert.LessOrEqual(t, m.s.stats.AdvantageStalls, int64(2), "stalls for loss bursts")
	assert.Less(t, m.s.pace.gov.Advantage(), 1.5, "the last window's estimate")
}
