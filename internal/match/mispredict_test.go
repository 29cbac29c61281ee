package match_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// TestMispredictionDepths: the probe counts every rollback of a match once,
// by its misprediction depth, and its deepest is the session's own
// Stats.MaxRollbackFrames (frames between the first mispredicted frame and
// the present); re-simulated frames are another histogram, at least as
// deep (a rollback starts from a snapshot at or before that frame). A
// ConstantCost session rolls back on every frame: the rollbacks that
// corrected nothing are counted apart, and the depths stay within its
// forced depth.
func TestMispredictionDepths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		profile   string
		players   int
		snapshots rollback.SnapshotPolicy
		delay     int
		seed      uint64
	}{
		{"wifi", 2, rollback.TwoBackups, 0, 1},
		{"hell", 3, rollback.TwoBackups, 0, 2},
		{"intercontinental", 4, rollback.TwoBackups, 2, 3},
		{"far", 2, rollback.ConstantCost, 0, 4},
	} {
		t.Run(fmt.Sprintf("%s-%d-%v", tc.profile, tc.players, tc.snapshots), func(t *testing.T) {
			t.Parallel()
			p, err := netsim.ParseProfile(tc.profile)
			require.NoError(t, err)
			r := match.Run(match.Config{Players: tc.players, Frames: 900, Seed: tc.seed, Profile: p, Snapshots: tc.snapshots, InputLag: tc.delay})
			require.NoError(t, r.Err)
			require.True(t, r.Verified, r.Desync)
			require.Positive(t, r.Rollbacks)
			var counted, resimulated int64
			deepest, deepestResim := 0, 0
			for d, n := range r.MispredictionDepths {
				counted += n
				if n > 0 {
					deepest = d
					assert.Positive(t, d, "a misprediction is at least one frame back")
				}
			}
			for d, n := range r.RollbackDepths {
				resimulated += n
				if n > 0 {
					deepestResim = d
				}
			}
			t.Logf("rollbacks %d: deepest misprediction %d (stats %d), most re-simulated %d (stats %d), %d without a misprediction",
				r.Rollbacks, deepest, r.MaxRollbackFrames, deepestResim, r.MaxResimulated, r.RollbacksWithoutMisprediction)
			assert.Equal(t, r.Rollbacks, resimulated)
			assert.Equal(t, r.Rollbacks, counted+r.RollbacksWithoutMisprediction)
			assert.LessOrEqual(t, deepest, deepestResim)
			if tc.snapshots == rollback.TwoBackups {
				assert.Zero(t, r.RollbacksWithoutMisprediction)
				assert.Equal(t, r.MaxRollbackFrames, deepest, "the session's deepest rollback")
			} else {
				assert.Positive(t, r.RollbacksWithoutMisprediction)
				assert.Positive(t, counted)
				assert.LessOrEqual(t, deepest, r.MaxRollbackFrames)
			}
		})
	}
}
