package rollback

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// offerSource is a stateSource whose join state is frame f.
type offerSource struct{ f Frame }

func (s offerSource) joinState(dst []byte) (Frame, []byte, bool) {
	return s.f, append(dst, 1, 2, 3), true
}
func (offerSource) emitGuest(EventKind, int) {}

// TestOfferedKeepsTheOfferBefore: a guest that received the whole of an
// offer may acknowledge it after the audience made a fresher one for the
// next joiner; the size it was served is still known. (Before, only the
// current offer counted: a machine coming back that had its state was
// reported served 0 bytes — the soak's seeds 697 and 800 with -rejoin 1
// -spectators 4 failed on it.)
func TestOfferedKeepsTheOfferBefore(t *testing.T) {
	f := newFeed(2)
	a := &audience{feed: &f}
	f.reset(0)
	f.high = 100
	a.offer = offer{frame: 30, on: true, done: true, data: make([]byte, 300)}
	size, ok := a.offered(30)
	require.True(t, ok)
	assert.Equal(t, 300, size)
	_, ok = a.offered(31)
	assert.False(t, ok, "a frame never offered")

	assert.False(t, a.offerFor(0, offerSource{95}), "a fresher offer, not compressed yet")
	assert.Equal(t, Frame(95), a.offer.frame)
	size, ok = a.offered(30)
	assert.True(t, ok, "the offer before is still known")
	assert.Equal(t, 300, size)
	_, ok = a.offered(95)
	assert.False(t, ok, "the new offer is not served whole yet")
}
