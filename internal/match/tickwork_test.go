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

// TestTickWork: recording each tick's work changes nothing in the match,
// and the ticks add up to what the sessions report: every frame simulated
// once as new, every restore a rollback, at least the frames the rollbacks
// re-simulated stepped on top (moving a snapshot forward outside a
// rollback steps more), and every copy the same number of bytes.
func TestTickWork(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		profile   string
		players   int
		snapshots rollback.SnapshotPolicy
	}{
		{"wifi", 2, rollback.TwoBackups},
		{"hell", 3, rollback.TwoBackups},
		{"far", 2, rollback.ConstantCost},
	} {
		t.Run(fmt.Sprintf("%s-%d-%v", tc.profile, tc.players, tc.snapshots), func(t *testing.T) {
			t.Parallel()
			p, err := netsim.ParseProfile(tc.profile)
			require.NoError(t, err)
			c := match.Config{Players: tc.players, Frames: 600, Seed: 3, Profile: p, Snapshots: tc.snapshots}
			plain := match.Run(c)
			c.TickWork = true
			r := match.Run(c)
			require.NoError(t, r.Err)
			require.True(t, r.Verified, r.Desync)
			assert.Nil(t, plain.TickWork)
			assert.Equal(t, plain.Checksums, r.Checksums)
			assert.Equal(t, [4]int64{plain.Rollbacks, plain.ResimulatedFrames, plain.BytesSent, int64(plain.Ticks)},
				[4]int64{r.Rollbacks, r.ResimulatedFrames, r.BytesSent, int64(r.Ticks)})

			var steps, simulated, saves, restores int64
			perCopy := int64(0)
			for _, w := range r.TickWork {
				steps += int64(w.Steps)
				simulated += int64(w.Simulated)
				saves += int64(w.Saves)
				restores += int64(w.Restores)
				for _, cp := range [][2]int64{{int64(w.Saves), w.SavedBytes}, {int64(w.Restores), w.RestoredBytes}} {
					if cp[0] == 0 {
						assert.Zero(t, cp[1])
						continue
					}
					if perCopy == 0 {
						perCopy = cp[1] / cp[0]
					}
					assert.Equal(t, perCopy*cp[0], cp[1])
				}
			}
			t.Logf("%d ticks: %d steps, %d new frames, %d re-simulated, %d saves, %d restores of %d bytes",
				len(r.TickWork), steps, simulated, r.ResimulatedFrames, saves, restores, perCopy)
			assert.GreaterOrEqual(t, len(r.TickWork), tc.players*c.Frames)
			assert.GreaterOrEqual(t, simulated, int64(tc.players*c.Frames))
			assert.LessOrEqual(t, simulated, int64(tc.players*(c.Frames+30)), "30: the most input lag a Config may ask for")
			assert.Equal(t, r.Rollbacks, restores)
			assert.Positive(t, saves+restores) // constant-cost moves its one snapshot in place: restores only
			assert.Positive(t, perCopy)
			assert.GreaterOrEqual(t, steps, simulated+r.ResimulatedFrames)
		})
	}
}
