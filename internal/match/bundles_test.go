package match

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/netsim"
)

// TestBundlesNameSystem injects a desync inside one named system of the
// arena game (the last machine flips a bit of ship 0's score inside
// "ships" or "shots" of frame 1000) with recovery on, on 2 and 4
// machines: every match plays to its end and verifies, and the first
// bundles of two machines, set side by side, name the first divergent
// frame (1001), the system and the field.
func TestBundlesNameSystem(t *testing.T) {
	t.Parallel()
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	for _, players := range []int{2, 4} {
		for _, system := range []string{"ships", "shots"} {
			t.Run(fmt.Sprintf("%dp-%s", players, system), func(t *testing.T) {
				t.Parallel()
				r := Run(Config{Players: players, Frames: 1800, Seed: 7, Profile: p, InjectDesync: 1000, InjectSystem: system, Recover: true, Bundle: true})
				require.NoError(t, r.Err)
				assert.True(t, r.Completed)
				assert.True(t, r.Verified, r.Desync)
				require.NotEmpty(t, r.Recoveries)
				require.NotNil(t, r.Divergence, "two machines made bundles")
				d := r.Divergence
				assert.Equal(t, int32(1001), d.Frame, "%+v", d)
				assert.Equal(t, system, d.System, "%+v", d)
				require.NotEmpty(t, d.Fields, "%+v", d)
				assert.Equal(t, "arena.World.Ships[0].Score", d.Fields[0].Path)
				for i, bs := range r.Bundles {
					for _, b := range bs {
						assert.Equal(t, int32(1500), b.Report.Frame, "machine %d", i)
						assert.Equal(t, int32(1000), b.Start, "machine %d", i)
						assert.True(t, b.Reproduced(), "machine %d", i)
						// About 60 KB with 2 players, 100 KB with 4: mostly the
						// trail, 500 frames' states as compressed differences.
						assert.Less(t, len(b.Encode()), 160<<10, "machine %d: bounded", i)
					}
				}
			})
		}
	}
}
