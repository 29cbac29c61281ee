package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/fakepeer"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is issue 16's attacks by an authenticated peer that lies in the
// fields it controls, each against one session (the victim) of the
// fourPlayers match: fake peer 0 (player 1) and fake peer 1 (players 2 and
// 3) play honestly — every tick each sends its inputs up to the victim's
// frame, acknowledges everything and counts the other's frames — except
// where a test's lie rewrites a packet.

// liarMesh drives the victim and its two fake peers.
type liarMesh struct {
	t    *testing.T
	s    *Session
	tr   *fakepeer.Peers
	sent [2]Frame // frames each fake peer has sent
	// lie, if set, may rewrite fake peer i's packet (or return false to
	// send nothing this tick).
	lie    func(i int, p *wire.InputPacket) bool
	events []Event
	errs   []error
}

func newLiarMesh(t *testing.T, edit func(c *Config)) *liarMesh {
	s, tr := fourPlayers(t, func(c *Config) {
		c.NoStartDelay = true
		if edit != nil {
			edit(c)
		}
	})
	m := &liarMesh{t: t, s: s, tr: tr}
	m.tick()
	m.tick() // both peers verified, the match started
	require.True(t, s.proto.started)
	return m
}

// tick adds the local input, advances the victim, then has each fake peer
// send its packet, and moves the clock a frame on.
func (m *liarMesh) tick() {
	m.t.Helper()
	if _, err := m.s.AddLocalInput(0, 5); err != nil {
		m.errs = append(m.errs, err)
	}
	r, err := m.s.Advance()
	if err != nil {
		m.errs = append(m.errs, err)
	}
	m.events = append(m.events, r.Events...)
	if m.s.proto.started {
		for i := range 2 {
			m.send(i)
		}
	}
	m.tr.Advance(time.Second / 60)
}

// send has fake peer i send its inputs up to the victim's next frame.
func (m *liarMesh) send(i int) {
	players := []int{1, 2}[i]
	end := max(m.sent[i], m.s.frame+1)
	other := 1 - i
	p := wire.InputPacket{Ack: int32(m.s.inputs.next[0]), First: int32(m.sent[i]), Count: int(end - m.sent[i]),
		Players: players, Inputs: make([]uint64, int(end-m.sent[i])*players),
		Gossip: []wire.Gossip{{Frame: int32(m.sent[other])}}}
	if p.First > 0 {
		p.Base = make([]uint64, players)
	}
	if m.lie != nil && !m.lie(i, &p) {
		return
	}
	b, err := m.tr.Input(i, p, m.s.roster.layout)
	require.NoError(m.t, err)
	m.tr.Deliver(i, b)
	m.sent[i] = end
}

// suspected returns the EventSuspect of kind k naming peer, if raised.
func (m *liarMesh) suspected(peer int, k Suspicion) (Event, bool) {
	for _, e := range m.events {
		if e.Kind == EventSuspect && e.Peer == peer && e.Suspicion == k {
			return e, true
		}
	}
	return Event{}, false
}

// TestForgedDisconnectGossip: fake peer 0 says, once, that fake peer 1
// left at frame 0, while fake peer 1 goes on playing. A report alone
// disconnects no one: the victim keeps peer 1, keeps playing, and names
// peer 0 (SuspectGossip). Before, the victim agreed at once, played peer
// 1's players on the default input from frame 0 and failed with
// ErrSnapshot.
func TestForgedDisconnectGossip(t *testing.T) {
	m := newLiarMesh(t, nil)
	for range 60 {
		m.tick()
	}
	forged := false
	m.lie = func(i int, p *wire.InputPacket) bool {
		if i == 0 && !forged {
			p.Gossip[0] = wire.Gossip{Disconnected: true, Frame: 0}
			forged = true
		}
		return true
	}
	for range 120 {
		m.tick()
	}
	require.True(t, forged)
	assert.Empty(t, m.errs)
	st, _ := m.s.PeerStats(1)
	assert.False(t, st.Disconnected, "peer 1 was disconnected on peer 0's word")
	assert.Greater(t, m.s.frame, Frame(170), "the victim stalled")
	_, ok := m.suspected(0, SuspectGossip)
	assert.True(t, ok, "peer 0 not named")
	st0, _ := m.s.PeerStats(0)
	assert.Equal(t, int64(1), st0.Suspected[SuspectGossip])
}

// TestWithheldGossipCounts: fake peer 0 never says how many of peer 1's
// frames it has (a legal encoding, -1, in every packet). The victim's
// anchor is bounded by what peer 0's own progress proves it has, so the
// victim plays on at full speed, and names peer 0 (SuspectWithheld).
// Before, the anchor stayed at 0 and the victim stalled for ever at frame
// 255, EventStarved naming an honest peer.
func TestWithheldGossipCounts(t *testing.T) {
	m := newLiarMesh(t, nil)
	m.lie = func(i int, p *wire.InputPacket) bool {
		if i == 0 {
			p.Gossip[0].Frame = -1
		}
		return true
	}
	for range 600 {
		m.tick()
	}
	assert.Empty(t, m.errs)
	assert.Greater(t, m.s.frame, Frame(590), "the victim stalled")
	assert.Zero(t, m.s.stats.StallFrames)
	e, ok := m.suspected(0, SuspectWithheld)
	require.True(t, ok, "peer 0 not named")
	assert.Less(t, e.Frame, Frame(200))
	_, blamed := m.suspected(1, SuspectWithheld)
	assert.False(t, blamed, "the honest peer was named")
}
