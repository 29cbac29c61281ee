package match

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/netsim"
)

// TestDesyncDetected corrupts one bit of one machine's state at frame 1200
// and checks that a session detects it at the first checksum frame after
// it, plus the network delay, and names the field.
// Reference: issue 6, "Done when".
func TestDesyncDetected(t *testing.T) {
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	for _, players := range []int{2, 4} {
		t.Run(fmt.Sprintf("%dp", players), func(t *testing.T) {
			r := Run(Config{Players: players, Frames: 3600, Seed: 3, Profile: p, ChecksumEvery: 100, InjectDesync: 1200})
			require.NoError(t, r.Err)
			require.NotNil(t, r.Detected, "the corruption was detected")
			assert.Equal(t, int32(1300), r.Detected.Frame, "the first checksum frame after the corruption")
			assert.LessOrEqual(t, int(r.DetectedAt), 1400)
			assert.NotEqual(t, r.Detected.Local, r.Detected.Remote)
			// The peers exchanged their states over the network: the report
			// names the corrupted field and both values.
			assert.Regexp(t, `^arena\.World\.Ships\[0\]\.Score: \d+ vs \d+$`, r.Detected.Field)
			assert.False(t, r.Completed)
		})
	}
}

// TestNoFalseDesync plays heavy-rollback matches checksumming every 10
// frames: no desync may be reported.
func TestNoFalseDesync(t *testing.T) {
	p, err := netsim.ParseProfile("hell")
	require.NoError(t, err)
	for seed := range uint64(8) {
		r := Run(Config{Players: 2 + int(seed%3)*3, Frames: 900, Seed: seed + 1, Profile: p, ChecksumEvery: 10})
		require.NoError(t, r.Err)
		assert.Nil(t, r.Detected)
		assert.True(t, r.Verified, r.Desync)
		assert.Positive(t, r.Rollbacks)
	}
}
