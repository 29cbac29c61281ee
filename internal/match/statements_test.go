package match

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/netsim"
)

// TestStatementsWindow: a machine whose settled frontier lags a whole
// window of intervals (4 machines on hell; the input ring full) must not
// sign the next interval into the slot of the one it has not settled: it
// replaced its own statement there, could never settle again, and every
// machine stalled until one disconnected another (6,102 ticks for 600
// frames).
func TestStatementsWindow(t *testing.T) {
	t.Parallel()
	p, err := netsim.ParseProfile("hell")
	require.NoError(t, err)
	r := Run(Config{Players: 4, Frames: 600, Seed: 174, Profile: p, ChecksumEvery: 10})
	require.NoError(t, r.Err)
	assert.True(t, r.Completed)
	assert.True(t, r.Verified, r.Desync)
	assert.Less(t, r.Ticks, 1200, "ticks for 600 frames")
}
