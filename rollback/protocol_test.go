package rollback_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
)

func TestHandshakeTimeout(t *testing.T) {
	nw, err := netsim.New(3, 1, netsim.Profile{})
	require.NoError(t, err)
	g := newCounterGame(t, 4096, false)
	s, err := rollback.NewSession(rollback.Config{Players: 3, Local: []rollback.PlayerID{0},
		Peers:  []rollback.Peer{{Players: []rollback.PlayerID{1}}, {Players: []rollback.PlayerID{2}}},
		Layout: rollback.Layout{4}, State: g.Arena, Game: g, Transport: nw.Endpoint(0),
		Clock: nw.Now, Rand: match.SeededRand(1, 0), Timeouts: rollback.Timeouts{Handshake: 2 * time.Second}})
	require.NoError(t, err)
	// Peer 1 (node 1) answers, peer 2 (node 2) is not there.
	g1 := newCounterGame(t, 4096, false)
	s1, err := rollback.NewSession(rollback.Config{Players: 3, Local: []rollback.PlayerID{1},
		Peers:  []rollback.Peer{{Players: []rollback.PlayerID{0}}, {Players: []rollback.PlayerID{2}}},
		Layout: rollback.Layout{4}, State: g1.Arena, Game: g1, Transport: nw.Endpoint(1),
		Clock: nw.Now, Rand: match.SeededRand(1, 1), Timeouts: rollback.Timeouts{Handshake: time.Hour}})
	require.NoError(t, err)
	require.NoError(t, queued(s.AddLocalInput(0, 1)))
	var herr *rollback.HandshakeError
	for tick := 0; tick < 200 && herr == nil; tick++ {
		r, err := s.Advance()
		assert.True(t, r.Stalled, "no frame runs before the handshake")
		if err != nil {
			require.ErrorAs(t, err, &herr)
		}
		_, _ = s1.Idle()
		nw.Advance(match.Tick)
	}
	require.NotNil(t, herr, "the handshake timed out")
	assert.Equal(t, []int{1}, herr.Peers, "only the absent peer is named")
	assert.Contains(t, herr.Error(), "2s")
	assert.Equal(t, rollback.Frame(0), s.Frame())
}

// TestLiveness: a peer that goes silent is reported interrupted after
// 750 ms and sent to only four times a second after 1 s; when it speaks
// again it is reported as resumed (EventNetworkResumed) and sent to every frame.
func TestLiveness(t *testing.T) {
	ss, _, nw := connectedPair(t, nil)
	var events []rollback.Event
	frame := func(both bool) {
		for i, s := range ss {
			if i == 1 && !both {
				continue
			}
			r, err := s.Idle()
			require.NoError(t, err)
			if i == 0 {
				events = append(events, r.Events...)
			}
		}
		nw.Advance(match.Tick)
	}
	for range 30 {
		frame(true)
	}
	require.Empty(t, events)
	// Peer 1 goes silent for 3 s.
	before, _ := ss[0].PeerStats(0)
	for range 180 {
		frame(false)
	}
	mid, _ := ss[0].PeerStats(0)
	require.Len(t, events, 1)
	assert.Equal(t, rollback.EventNetworkInterrupted, events[0].Kind)
	assert.True(t, mid.Interrupted)
	assert.False(t, mid.Disconnected, "3 s is less than the 5 s disconnect timeout")
	sent := mid.PacketsSent - before.PacketsSent
	// 1 s at 60 packets a second (plus a ping or two), then 2 s at 4 a second.
	assert.InDelta(t, 60+8, sent, 6, "sent %d packets in 3 s of silence", sent)
	// 250 ms apart: every 16th tick (3.75 a second), the pings riding in them.
	assert.InDelta(t, 3.75, mid.SendPacketsPerSec, 1)

	for range 10 {
		frame(true)
	}
	back, _ := ss[0].PeerStats(0)
	require.Len(t, events, 2)
	assert.Equal(t, rollback.EventNetworkResumed, events[1].Kind)
	assert.False(t, back.Interrupted)
	assert.InDelta(t, 10, back.PacketsSent-mid.PacketsSent, 1, "back to a packet a frame at once")
	for range 130 {
		frame(true)
	}
	after, _ := ss[0].PeerStats(0)
	assert.InDelta(t, 60, after.SendPacketsPerSec, 3)
}

// TestPeerStats checks the round-trip time against the network's latency
// and the other per-peer figures, and that reading them allocates nothing.
func TestPeerStats(t *testing.T) {
	p := netsim.Profile{Latency: 40 * time.Millisecond}
	nw2, err := netsim.New(2, 3, p)
	require.NoError(t, err)
	var pair [2]*rollback.Session
	for i := range pair {
		g := newCounterGame(t, 4096, false)
		pair[i], err = rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
			Layout: rollback.Layout{4}, State: g.Arena, Game: g, Transport: nw2.Endpoint(i),
			Clock: nw2.Now, Rand: match.SeededRand(2, i)})
		require.NoError(t, err)
	}
	for range 300 {
		for i, s := range pair {
			offer(t, s, rollback.PlayerID(i), 1)
			_, err := s.Advance()
			require.NoError(t, err)
		}
		nw2.Advance(match.Tick)
	}
	st, ok := pair[0].PeerStats(0)
	require.True(t, ok)
	// 80 ms of network round trip, plus up to a frame of waiting on each side.
	assert.GreaterOrEqual(t, st.RTT, 80*time.Millisecond)
	assert.LessOrEqual(t, st.RTT, 80*time.Millisecond+2*match.Tick)
	assert.True(t, st.Verified)
	assert.InDelta(t, 61, st.SendPacketsPerSec, 2, "an input packet a frame and a ping a second")
	assert.InDelta(t, 61, st.RecvPacketsPerSec, 2)
	assert.Positive(t, st.SendBytesPerSec)
	assert.Equal(t, int64(0), st.PacketsDropped)
	assert.InDelta(t, 3, int(st.LocalFrameLag), 1, "40 ms one way: about three frames of its input are predicted here")
	assert.InDelta(t, 3, int(st.RemoteFrameLag), 1)
	assert.Less(t, st.SinceLastHeard, 2*match.Tick)
	_, ok = pair[0].PeerStats(1)
	assert.False(t, ok)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = pair[0].PeerStats(0) }))
}
