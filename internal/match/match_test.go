package match_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback/netsim"
)

func TestRunVerifies(t *testing.T) {
	t.Parallel()
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	r := match.Run(match.Config{Players: 2, Frames: 600, Seed: 1, Profile: p})
	require.NoError(t, r.Err)
	assert.True(t, r.Completed)
	assert.True(t, r.Verified, r.Desync)
	assert.Positive(t, r.Rollbacks)
	t.Logf("%+v", r)
}
