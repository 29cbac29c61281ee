package match_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// TestSpectatorsNeverAffectThePlayers: eight spectators of a 2-player
// match on wifi — joining at the start, mid-match and in the last second,
// through the players and through relays, two leaving early (one
// crashing) — each end with the offline re-simulation's state at the
// last frame they reached, and the players' match is the very match
// played without them: the same rollbacks, stalls and final state (the
// network keeps every player link's random stream when nodes are added).
func TestSpectatorsNeverAffectThePlayers(t *testing.T) {
	t.Parallel()
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	c := match.Config{Players: 2, Frames: 1200, Seed: 3, Profile: p}
	without := match.Run(c)
	require.NoError(t, without.Err)
	require.True(t, without.Verified, without.Desync)
	c.Spectators = 8
	with := match.Run(c)
	require.NoError(t, with.Err)
	require.True(t, with.Completed)
	assert.True(t, with.Verified, with.Desync)
	sp := with.Spectators
	assert.Equal(t, 8, sp.Joined)
	assert.Equal(t, 8, sp.Verified, "%v", sp.Failures)
	assert.Equal(t, 1, sp.Left)
	assert.Equal(t, 1, sp.Crashed)
	assert.GreaterOrEqual(t, sp.Relayed, 4, "two players serve two each: the rest join through spectators")
	assert.Equal(t, without.Rollbacks, with.Rollbacks)
	assert.Equal(t, without.ResimulatedFrames, with.ResimulatedFrames)
	assert.Equal(t, without.StallFrames, with.StallFrames)
	assert.Equal(t, without.Checksums, with.Checksums)
	t.Logf("join %.0f ms mean, %.0f max; catch-up %.2f frames a tick; state %d bytes mean; players sent %d bytes (%d without spectators)",
		sp.JoinMS/float64(sp.Timed), sp.MaxJoinMS, float64(sp.CatchUpFrames)/float64(sp.CatchUpTicks), sp.StateBytes/int64(sp.Timed),
		with.BytesSent, without.BytesSent)
}
