package match_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// TestFrameGap: the frame gap is measured from outside the sessions, so it
// sees what the governor does: with one clock 3% slow, the machines stay
// within a frame of each other on average while the governor works, and
// drift apart (the faster one runs ahead until it starves) without it.
func TestFrameGap(t *testing.T) {
	t.Parallel()
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	gap := func(c match.Config) (mean, most float64) {
		c.Players, c.Frames, c.Profile = 2, 1800, p
		r := match.Run(c)
		require.NoError(t, r.Err)
		require.True(t, r.Verified, r.Desync)
		require.Positive(t, r.FrameGapWindows)
		return r.FrameGapSum / float64(r.FrameGapWindows), r.MaxFrameGap
	}
	with, _ := gap(match.Config{Seed: 3, Skew: 0.03})
	without, most := gap(match.Config{Seed: 3, Skew: 0.03, NoFrameAdvantage: true})
	t.Logf("mean frames apart with one clock 3%% slow: %.2f with the governor, %.2f (max %.2f) without", with, without, most)
	assert.Less(t, with, 1.0)
	assert.Greater(t, without, 4*with+2)
	assert.GreaterOrEqual(t, most, without)
}
