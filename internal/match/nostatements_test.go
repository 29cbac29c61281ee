//go:build rewind_adversary

package match

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/netsim"
)

// The test here measures statements against the same match without them
// (Config.NoStatements, a test hook compiled only with the build tag
// rewind_adversary; make test passes it).

// TestStatements plays honest matches with statements (rollback/
// statements.go): every machine signs its inputs and no frame is final
// before every machine's statements are cross-checked.
// Honest machines verify, suspect no one, drop no datagram, and finish.
func TestStatements(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		players int
		profile string
	}{{3, "wifi"}, {4, "wifi"}, {3, "hell"}, {4, "far"}} {
		t.Run(fmt.Sprintf("%dp-%s", tc.players, tc.profile), func(t *testing.T) {
			t.Parallel()
			p, err := netsim.ParseProfile(tc.profile)
			require.NoError(t, err)
			r := Run(Config{Players: tc.players, Frames: 900, Seed: 3, Profile: p})
			require.NoError(t, r.Err)
			assert.True(t, r.Completed)
			assert.True(t, r.Verified, r.Desync)
			assert.Zero(t, r.Suspects, "%v", r.Suspected)
			assert.Zero(t, r.PacketsInvalid)
			t.Logf("rollbacks=%d resim=%d max-resim=%d stalls=%d packets=%d bytes=%d ticks=%d",
				r.Rollbacks, r.ResimulatedFrames, r.MaxResimulated, r.StallFrames, r.PacketsSent, r.BytesSent, r.Ticks)
			// The bytes, against the same match without statements: a
			// statement repaired each round trip on an echo that predates
			// it made a 4-machine wifi match send 4 times as many.
			plain := Run(Config{Players: tc.players, Frames: 900, Seed: 3, Profile: p, NoStatements: true})
			require.NoError(t, plain.Err)
			t.Logf("bytes without statements: %d (%.2fx)", plain.BytesSent, float64(r.BytesSent)/float64(plain.BytesSent))
			assert.LessOrEqual(t, float64(r.BytesSent), 2.5*float64(plain.BytesSent), "statements cost too many bytes")
			// And the re-simulation and the stalls: ordinary rollbacks
			// restored at the settled frontier, an interval and an echo
			// behind the confirmed frame, re-simulated 1.4 (wifi) to 4
			// (hell) times the frames; a prefix signed in every stall of a
			// lossy link held settlement back, and the input ring with it.
			t.Logf("without: resim=%d stalls=%d (%.2fx, %.2fx)", plain.ResimulatedFrames, plain.StallFrames,
				float64(r.ResimulatedFrames)/float64(plain.ResimulatedFrames), float64(r.StallFrames)/float64(max(plain.StallFrames, 1)))
			assert.LessOrEqual(t, float64(r.ResimulatedFrames), 1.15*float64(plain.ResimulatedFrames), "re-simulation")
			assert.LessOrEqual(t, float64(r.StallFrames), 1.25*float64(plain.StallFrames)+10, "stalls")
		})
	}
}
