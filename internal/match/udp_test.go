package match_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback/netsim"
)

func TestRunUDPQuick(t *testing.T) {
	t.Parallel()
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	r := match.RunUDP(match.Config{Players: 2, Frames: 180, Seed: 5, Profile: p}, match.UDPOptions{})
	require.NoError(t, r.Err)
	assert.True(t, r.Completed)
	assert.True(t, r.Verified, r.Desync)
	t.Logf("%+v", r)
}

// TestRunUDPSpectators: four spectators of a 2-player match over real
// sockets on wifi — at the start, mid-match and in the last second, one
// through a relay, one leaving early — each end with the offline
// re-simulation's state at the last frame they reached.
func TestRunUDPSpectators(t *testing.T) {
	t.Parallel()
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	r := match.RunUDP(match.Config{Players: 2, Frames: 300, Seed: 7, Profile: p, Spectators: 6}, match.UDPOptions{})
	require.NoError(t, r.Err)
	require.True(t, r.Completed)
	assert.True(t, r.Verified, r.Desync)
	sp := r.Spectators
	assert.Equal(t, 6, sp.Joined)
	assert.Equal(t, 6, sp.Verified, "%v", sp.Failures)
	assert.GreaterOrEqual(t, sp.Relayed, 1)
	assert.Equal(t, 1, sp.Left+sp.Crashed)
	t.Logf("join %.0f ms mean, %.0f max; state %d bytes mean", sp.JoinMS/float64(sp.Timed), sp.MaxJoinMS, sp.StateBytes/int64(max(1, sp.Timed)))
}
