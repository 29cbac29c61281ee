//go:build rewind_adversary

package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// The tests here drive a session of three or more machines with fake peers,
// which do not sign statements: they need the session without them
// (TestHooks.Unsigned: fourPlayers asks for it), a hook compiled only with
// the build tag rewind_adversary.

// TestInputPacketIsCheckedWhole: an input packet is validated whole before
// anything of it is applied. Peer 1 never sends, so the input ring cannot
// move past frame 0; peer 0 sends frames 0 to 9, then a packet with its
// frames 10 up to a few frames past what the ring can hold. That packet is
// dropped — and none of its frames, nor its acknowledgement, may have
// been taken. (Before, the frames up to the ring's end were stored, and
// the acknowledgement too, and the drop came after.)
func TestInputPacketIsCheckedWhole(t *testing.T) {
	s, tr := fourPlayers(t, func(c *Config) { c.NoStartDelay = true })
	layout := s.roster.layout
	tick := func() {
		t.Helper()
		_, err := s.AddLocalInput(0, 5)
		require.NoError(t, err)
		_, err = s.Advance()
		require.NoError(t, err)
		tr.Advance(time.Second / 60)
	}
	pkt := func(ack, first Frame, count int) []byte {
		b, err := tr.Input(0, wire.InputPacket{Ack: int32(ack), First: int32(first), Count: count, Players: 1,
			Inputs: make([]uint64, count), Base: []uint64{0}, Gossip: []wire.Gossip{{Frame: 0}}}, layout)
		require.NoError(t, err)
		return b
	}
	tick()
	tick() // both peers verified
	tr.Deliver(0, pkt(0, 0, 10))
	for range 20 {
		tick()
	}
	require.Equal(t, Frame(10), s.inputs.next[1])
	require.Zero(t, s.ringLow(), "peer 1's silence holds the ring at frame 0")
	ack := s.inputs.next[0]
	// A packet reaches 255 frames past its first: two, the first within
	// the ring, take the second past it (512 frames since protocol version
	// 7; one packet reached past 256).
	first := ack - 1 + wire.MaxFrames // as far as the header's offset from the ack reaches
	tr.Deliver(0, pkt(ack-1, 10, int(first-10)))
	tick()
	require.Equal(t, first, s.inputs.next[1], "the first packet taken")
	end := first + wire.MaxFrames
	require.Greater(t, end, Frame(ringSize), "past what the ring can hold")
	tr.Deliver(0, pkt(ack, first, wire.MaxFrames))
	invalid, acked := s.stats.PacketsInvalid, s.peers[0].progress.ack
	tick()
	assert.Equal(t, invalid+1, s.stats.PacketsInvalid, "dropped")
	assert.Equal(t, first, s.inputs.next[1], "none of its frames taken")
	assert.Equal(t, acked, s.peers[0].progress.ack, "nor its acknowledgement")
}
