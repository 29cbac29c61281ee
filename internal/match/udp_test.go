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
