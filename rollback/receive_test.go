package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// TestDatagramBudgetPerPeer: however many datagrams one peer has waiting,
// a session judges at most peerBudget of them per call and drops the rest
// unjudged, so a flood costs each Advance a bounded amount. (Before, all
// 1,000 valid packets below were parsed in one Advance.)
func TestDatagramBudgetPerPeer(t *testing.T) {
	s, tr := fourPlayers(t, func(c *Config) { c.NoStartDelay = true })
	for range 2 {
		_, err := s.AddLocalInput(0, 5)
		require.NoError(t, err)
		_, err = s.Advance()
		require.NoError(t, err)
		tr.Advance(time.Second / 60)
	}
	for range 1000 { // each sealed anew: none is a replay
		ack, err := tr.Input(0, wire.InputPacket{Players: 1, Gossip: []wire.Gossip{{Frame: 0}}}, s.roster.layout)
		require.NoError(t, err)
		tr.Deliver(0, ack)
	}
	before, _ := s.PeerStats(0)
	_, err := s.AddLocalInput(0, 5)
	require.NoError(t, err)
	_, err = s.Advance()
	require.NoError(t, err)
	after, _ := s.PeerStats(0)
	assert.Equal(t, int64(peerBudget), after.PacketsReceived-before.PacketsReceived, "judged")
	assert.Equal(t, int64(1000), after.PacketsReceived-before.PacketsReceived+after.PacketsDropped-before.PacketsDropped, "the rest counted as dropped")
}
