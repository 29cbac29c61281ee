package rollback

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/savestate"
)

// TestFrameLimit: a match ends with ErrFrameLimit at its last frame
// rather than running on with frame numbers the protocol cannot carry
// (before, past 2^24 frames the 24-bit header could not say the frame and
// the session stalled silently). The limit depends only on the frame, so
// every machine of a match stops at the same one; the test lowers it.
func TestFrameLimit(t *testing.T) {
	assert.Less(t, int64(maxFrame), int64(1)<<31)
	assert.Greater(t, int64(maxFrame)/60/3600/24, int64(400), "over 400 days at 60 Hz")
	a, err := savestate.New(1024)
	require.NoError(t, err)
	h, err := savestate.Alloc[[MaxPlayers]int64](a)
	require.NoError(t, err)
	s, err := NewSession(Config{Players: 1, Local: []PlayerID{0}, Layout: Layout{3, 8, 8}, State: a,
		Game: &walkGame{a: a, h: h}, Rand: rand.NewChaCha8([32]byte{2})})
	require.NoError(t, err)
	s.proto.frameLimit = 30
	for range 30 {
		_, err := s.AddLocalInput(0, 1)
		require.NoError(t, err)
		_, err = s.Advance()
		require.NoError(t, err)
	}
	_, err = s.AddLocalInput(0, 1)
	require.NoError(t, err)
	_, err = s.Advance()
	require.ErrorIs(t, err, ErrFrameLimit)
	assert.Equal(t, Frame(30), s.Frame())
	_, err = s.Idle()
	assert.ErrorIs(t, err, ErrFrameLimit)
}
