//go:build rewind_adversary

package rollback

import (
	"cmp"
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
	by     Frame // playsOnAndNames: the liar is named before this frame (0: 200)
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
	tr.Answer = func(int) int32 { return int32(s.frame) } // they play in step with the victim
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
	m.sent[i] = Frame(p.First) + Frame(p.Count)
}

// playsOnAndNames plays 600 ticks and checks that the victim kept up
// without an error, and named the liar (and only it) for k before frame
// m.by (200 unless set).
func (m *liarMesh) playsOnAndNames(liar int, k Suspicion) {
	t := m.t
	t.Helper()
	for range 600 {
		m.tick()
	}
	assert.Empty(t, m.errs)
	assert.Greater(t, m.s.frame, Frame(590), "the victim stalled")
	e, ok := m.suspected(liar, k)
	require.True(t, ok, "peer %d not named", liar)
	assert.Less(t, e.Frame, cmp.Or(m.by, 200))
	_, blamed := m.suspected(1-liar, k)
	assert.False(t, blamed, "the honest peer was named")
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
	m.playsOnAndNames(0, SuspectWithheld)
	assert.Zero(t, m.s.stats.StallFrames)
}

// TestForgedChecksumFrame: a checksum for a frame whose inputs from us the
// peer cannot have (past the frames we sent, here 2^31-1024) is dropped
// and names it (SuspectChecksum), and the peer's real checksums are still
// compared: its wrong checksum of frame 50 is a desync (once a third
// opinion has had time to come: peer 1 sends none). Before, the far frame
// was kept as the peer's newest and every real checksum after it was
// ignored: detection was off against that peer.
func TestForgedChecksumFrame(t *testing.T) {
	m := newLiarMesh(t, func(c *Config) { c.ChecksumEvery = 50 })
	m.tr.Deliver(0, m.tr.Control(0, &wire.Checksum{Frame: wire.MaxFrame, Sum: 1}))
	for range 120 {
		m.tick()
	}
	_, ok := m.suspected(0, SuspectChecksum)
	assert.True(t, ok, "peer 0 not named")
	assert.Empty(t, m.errs, "no desync yet")
	m.tr.Deliver(0, m.tr.Control(0, &wire.Checksum{Frame: 50, Sum: 1}))
	for range 120 {
		if m.tick(); len(m.errs) > 0 {
			break
		}
	}
	require.NotEmpty(t, m.errs, "peer 0's wrong checksum of frame 50 was ignored")
	assert.ErrorContains(t, m.errs[0], "frame 50")
	assert.ErrorContains(t, m.errs[0], "peer 0 claims", "the report is the peer's claim")
}

// TestOutvotedChecksum: with three machines, a peer whose checksum
// disagrees with ours while the third machine's agrees is the odd one out:
// it is named (SuspectDesync) and the match goes on. Before, one forged
// checksum from one peer ended a three-machine match as a desync.
func TestOutvotedChecksum(t *testing.T) {
	m := newLiarMesh(t, func(c *Config) { c.ChecksumEvery = 50 })
	for range 80 {
		m.tick()
	}
	f, sum, ok := m.s.sums.latest()
	require.True(t, ok)
	require.Equal(t, Frame(50), f)
	m.tr.Deliver(0, m.tr.Control(0, &wire.Checksum{Frame: 50, Sum: sum ^ 1}))
	m.tick()
	assert.Empty(t, m.errs, "waits for peer 1's opinion")
	m.tr.Deliver(1, m.tr.Control(1, &wire.Checksum{Frame: 50, Sum: sum}))
	m.playsOnAndNames(0, SuspectDesync)
}

// TestLookahead: from frame 10 on, fake peer 0 sends each input 7 frames
// (117 ms) after the victim simulated its frame, over a 5 ms round trip,
// and acknowledges 20 frames fewer than it has, so that the fairness
// governor does not slow the victim down to it (which alone would leave
// it no lookahead beyond our input lag): it could choose each input after
// seeing the victim's. Within five seconds the victim names it
// (SuspectLookahead), and only it. Before, nothing named a late peer.
func TestLookahead(t *testing.T) {
	m := newLiarMesh(t, nil)
	m.lie = func(i int, p *wire.InputPacket) bool {
		for j := range m.s.peers {
			m.s.peers[j].link.rtt = 5 * time.Millisecond // the fake peers answer no pings
		}
		if limit := m.s.frame - 7; i == 0 && m.s.frame > 10 && Frame(p.First)+Frame(p.Count) > limit {
			p.Count = max(0, int(limit)-int(p.First))
			p.Inputs = p.Inputs[:p.Count]
			p.Ack = max(0, p.Ack-20)
		}
		return true
	}
	m.by = 300 // a window or two can pass before the lie shows
	m.playsOnAndNames(0, SuspectLookahead)
}

// TestWithheldInputs: fake peer 1 goes on talking (acknowledgements, counts)
// but sends no more inputs. The victim stalls, EventStarved names peer 1,
// and within the disconnect timeout it disconnects peer 1 (SuspectWithheld:
// it still talks); once peer 0 agrees, play resumes. Before, the victim
// waited for ever: a peer that talks was never disconnected.
func TestWithheldInputs(t *testing.T) {
	m := newLiarMesh(t, func(c *Config) { c.Timeouts.Disconnect = time.Second })
	for range 30 {
		m.tick()
	}
	var frozen Frame = -1
	m.lie = func(i int, p *wire.InputPacket) bool {
		if i == 1 { // header only: the next frame it would send
			p.Count, p.Inputs = 0, p.Inputs[:0]
		}
		if st, _ := m.s.PeerStats(1); i == 0 && st.Disconnected {
			if frozen < 0 {
				frozen = m.sent[1]
			}
			p.Gossip[0] = wire.Gossip{Disconnected: true, Frame: int32(frozen)} // peer 0 starved too
		}
		return true
	}
	for range 150 {
		m.tick()
	}
	var starved bool
	for _, e := range m.events {
		if e.Kind == EventStarved {
			starved = true
			assert.Equal(t, 1, e.Peer, "the stall blames the peer that withholds")
		}
	}
	assert.True(t, starved)
	st, _ := m.s.PeerStats(1)
	require.True(t, st.Disconnected, "never disconnected")
	assert.True(t, st.DisconnectAgreed)
	_, ok := m.suspected(1, SuspectWithheld)
	assert.True(t, ok, "peer 1 not named")
	assert.Empty(t, m.errs)
	assert.Greater(t, m.s.frame, Frame(100), "play did not resume")
}

// TestStartDelayGrief: round trips of 2^32-1 µs (71 minutes) in the start
// protocol are capped at twice our slowest round trip (plus
// startRTTSlack; before, at a second) and name the machine that sent them
// (SuspectTiming), so every honest machine starts within seconds. A
// non-host reporting them in its Ready is caught by the host (which
// before simply passed them on); a host sending them in its Start is
// caught by the others (before, the victim computed a 35-minute wait and
// failed with "waiting for peers []").
func TestStartDelayGrief(t *testing.T) {
	const huge = 1<<32 - 1
	cases := []struct {
		name  string
		local PlayerID
		peers []Peer
		liar  int
		send  func(tr *fakepeer.Peers) // each tick, once keyed
	}{
		{"a non-host's Ready, at the host", 0, []Peer{{Players: []PlayerID{1}}, {Players: []PlayerID{3, 2}}}, 0,
			func(tr *fakepeer.Peers) {
				tr.Deliver(0, tr.Control(0, &wire.Ready{RTT: []uint32{huge, 0, huge}}))
				tr.Deliver(1, tr.Control(1, &wire.Ready{RTT: []uint32{20000, 20000, 0}}))
				tr.Deliver(0, tr.Control(0, &wire.Go{}))
				tr.Deliver(1, tr.Control(1, &wire.Go{}))
			}},
		{"the host's Start, at a non-host", 1, []Peer{{Players: []PlayerID{0}}, {Players: []PlayerID{3, 2}}}, 0,
			func(tr *fakepeer.Peers) {
				tr.Deliver(0, tr.Control(0, &wire.Start{Mesh: []uint32{0, huge, huge, 20000, 0, 20000, 20000, 20000, 0}}))
				tr.Deliver(1, tr.Control(1, &wire.Go{}))
			}},
		// An honest host relays what the others reported, capped at its own
		// limit, which can be above ours: capped here, nobody named.
		{"a row the host relays, at a non-host", 1, []Peer{{Players: []PlayerID{0}}, {Players: []PlayerID{3, 2}}}, -1,
			func(tr *fakepeer.Peers) {
				tr.Deliver(0, tr.Control(0, &wire.Start{Mesh: []uint32{0, 20000, 20000, 20000, 0, 20000, huge, huge, 0}}))
				tr.Deliver(1, tr.Control(1, &wire.Go{}))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, tr := fourPlayers(t, func(c *Config) { c.Local, c.Peers = []PlayerID{tc.local}, tc.peers })
			for tick := 0; tick < 600 && !s.proto.started; tick++ {
				if tr.Keyed(0) && tr.Keyed(1) && s.peers[0].link.rtt > 0 && s.peers[1].link.rtt > 0 {
					tc.send(tr)
				}
				_, err := s.AddLocalInput(tc.local, 5)
				require.NoError(t, err)
				r, err := s.Advance()
				require.NoError(t, err)
				for _, e := range r.Events {
					if e.Kind == EventSuspect {
						require.GreaterOrEqual(t, tc.liar, 0, "an honest host was named")
						assert.Equal(t, SuspectTiming, e.Suspicion)
						assert.Equal(t, tc.liar, e.Peer)
					}
				}
				for i := range 2 { // answer this tick's pings
					if l := &s.peers[i].link; tr.Keyed(i) && l.nextPing > 0 && l.lastQuality == tr.Now() {
						tr.Deliver(i, tr.Control(i, &wire.QualityReply{Echo: int64(l.lastQuality)}))
					}
				}
				tr.Advance(time.Second / 60)
			}
			require.True(t, s.proto.started, "it never started")
			t.Logf("started %v after the handshake began", s.proto.startedAt-s.proto.hsStart)
			assert.LessOrEqual(t, s.proto.startedAt-s.proto.hsStart, 2*time.Second)
			// No round trip in the mesh exceeds what two of ours allow: each
			// other machine reaches the others through us.
			most := 2*max(s.peers[0].link.rtt, s.peers[1].link.rtt) + startRTTSlack
			for a, row := range s.start.mesh {
				for c, d := range row {
					assert.LessOrEqual(t, d, most, "round trip %d-%d in the mesh", a, c)
				}
			}
			if tc.liar >= 0 {
				st, _ := s.PeerStats(tc.liar)
				assert.Positive(t, st.Suspected[SuspectTiming])
			}
		})
	}
}

// TestStuckAck: fake peer 0 plays on but acknowledges as few of our frames
// as the header can say (200 behind its own). Its own inputs prove it has
// more (it cannot simulate that far without them): the victim names peer
// 0 (SuspectAck), plays on, and resends from what peer 0 must have. Before,
// nothing named it. (The header's reach, 255 frames, already kept such an
// acknowledgement from filling the input ring.)
func TestStuckAck(t *testing.T) {
	m := newLiarMesh(t, nil)
	m.lie = func(i int, p *wire.InputPacket) bool {
		if i == 0 {
			p.Ack = max(0, p.First-200)
		}
		return true
	}
	m.playsOnAndNames(0, SuspectAck)
}

// TestAdvantageLies: frame advantage comes from what the victim observes —
// the frames it has of the peer and the acknowledgements the peer's
// progress bears out — not from the input lag a peer claims, nor from the
// End of packets that carry no inputs. Fake peers that keep pace with the
// victim but lie cost it (almost) no stalls. Before: claiming an input lag
// of 7 (really 0), and 8 header-only packets a tick with End 255 frames
// before the acknowledgement, each made the victim stall for a slower
// peer that did not exist.
func TestAdvantageLies(t *testing.T) {
	cases := []struct {
		name string
		lie  func(m *liarMesh) func(i int, p *wire.InputPacket) bool
	}{
		{"an input lag of 7", func(m *liarMesh) func(i int, p *wire.InputPacket) bool {
			return func(i int, p *wire.InputPacket) bool {
				p.Lag = 7
				return true
			}
		}},
		{"header-only packets far behind", func(m *liarMesh) func(i int, p *wire.InputPacket) bool {
			return func(i int, p *wire.InputPacket) bool {
				if i != 0 || p.Ack < 255 {
					return true
				}
				for range 8 {
					b, err := m.tr.Input(0, wire.InputPacket{Ack: p.Ack, First: p.Ack - 255, Players: 1, Base: []uint64{0},
						Gossip: p.Gossip}, m.s.roster.layout)
					require.NoError(m.t, err)
					m.tr.Deliver(0, b)
				}
				return true
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newLiarMesh(t, nil)
			m.lie = tc.lie(m)
			for range 1200 {
				m.tick()
			}
			assert.Empty(t, m.errs)
			assert.LessOrEqual(t, m.s.stats.AdvantageStalls, int64(2), "stalls for a lie")
			assert.Zero(t, m.s.stats.StallFrames)
		})
	}
}

// TestInputLagInflation: a peer acknowledging 20 frames fewer than it has
// cannot raise the victim's input lag beyond what the victim's own round
// trips justify (here none were measured: 0). Before, the victim raised
// its input lag to 4 within 200 frames and kept it.
func TestInputLagInflation(t *testing.T) {
	m := newLiarMesh(t, nil)
	m.lie = func(i int, p *wire.InputPacket) bool {
		p.Ack = max(0, p.Ack-20)
		return true
	}
	for range 1200 {
		m.tick()
	}
	assert.Empty(t, m.errs)
	assert.Zero(t, m.s.pace.lag.delay, "the input lag rose")
	assert.Zero(t, m.s.stats.LagFrames[1]+m.s.stats.LagFrames[2]+m.s.stats.LagFrames[3]+m.s.stats.LagFrames[4])
}

// TestRewrittenInput: fake peer 0 re-sends its input for frame 10, which
// it sent before, with another value. The packet is dropped and peer 0
// named (SuspectRewrite). Before, the different input was silently
// ignored.
func TestRewrittenInput(t *testing.T) {
	m := newLiarMesh(t, nil)
	for range 20 {
		m.tick()
	}
	require.Greater(t, m.s.inputs.next[1], Frame(11))
	b, err := m.tr.Input(0, wire.InputPacket{Ack: int32(m.s.inputs.next[0]), First: 10, Count: 1, Players: 1,
		Base: []uint64{0}, Inputs: []uint64{3}, Gossip: []wire.Gossip{{Frame: int32(m.sent[1])}}}, m.s.roster.layout)
	require.NoError(t, err)
	m.tr.Deliver(0, b)
	dropped := m.s.stats.PacketsInvalid
	m.tick()
	assert.Equal(t, dropped+1, m.s.stats.PacketsInvalid, "dropped")
	_, ok := m.suspected(0, SuspectRewrite)
	assert.True(t, ok, "peer 0 not named")
	assert.Equal(t, Input(0), m.s.inputs.at(10, 1))
}

// TestForgedPingReply: a reply echoing a time we never sent a ping at (a
// peer answering before the ping arrives, to look closer than it is) is
// dropped and names it (SuspectTiming): our round trip stays what it
// measures. Before, the reply was taken and the round trip became 1 ms.
func TestForgedPingReply(t *testing.T) {
	m := newLiarMesh(t, nil)
	m.tr.Answer = nil // no honest reply from here: the round trip stays as it is unless the forged one is taken
	for range 10 {
		m.tick()
	}
	rtt := m.s.peers[0].link.rtt
	m.tr.Deliver(0, m.tr.Control(0, &wire.QualityReply{Echo: int64(m.tr.Now() - time.Millisecond)}))
	m.tick()
	assert.Equal(t, rtt, m.s.peers[0].link.rtt, "the forged reply was taken")
	_, ok := m.suspected(0, SuspectTiming)
	assert.True(t, ok, "peer 0 not named")
}
