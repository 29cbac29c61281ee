package rollback_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/inputlag"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/predict"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/internal/fakepeer"
	"github.com/rewindgg/rewind/rollback/internal/testgame"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/udp"
	"github.com/rewindgg/rewind/savestate"
)

// TestMatches plays whole matches over netsim and checks that every peer
// ends with exactly the state an offline replay of the real inputs gives,
// that predictions were really wrong and corrected, and that no rollback
// reached back further than MaxRollback.
func TestMatches(t *testing.T) {
	frames := 1800
	if testing.Short() || raceEnabled {
		frames = 600 // make test also plays the 1800 without the race detector
	}
	for _, players := range []int{2, 4, 8} {
		for _, profile := range []string{"lan", "wifi", "intercontinental", "hell"} {
			t.Run(fmt.Sprintf("%dp-%s", players, profile), func(t *testing.T) {
				p, err := netsim.ParseProfile(profile)
				require.NoError(t, err)
				r := match.Run(match.Config{Players: players, Frames: frames, Seed: uint64(players), Profile: p})
				require.NoError(t, r.Err)
				require.True(t, r.Completed, "match did not finish in %d ticks", r.Ticks)
				assert.True(t, r.Verified, r.Desync)
				assert.Positive(t, r.Rollbacks, "a match that never rolled back proves nothing")
				assert.Positive(t, r.ResimulatedFrames)
				assert.LessOrEqual(t, r.MaxRollbackFrames, rollback.DefaultMaxRollback)
				// Two backups bound one re-simulation by 2×MaxRollback-1 frames, plus
				// the gossip trip the anchor waits for with three or more machines
				// (docs/architecture.md, "Snapshots").
				limit := 2 * rollback.DefaultMaxRollback
				if players > 2 {
					limit = 256 // the input ring: the session stalls rather than re-simulate further
				}
				assert.Less(t, r.MaxResimulated, limit)
				assert.Zero(t, r.PacketsInvalid)
				assert.Zero(t, r.Suspects, "an honest peer was suspected: %v", r.Suspected)
				t.Logf("rollbacks=%d resim=%d deepest=%d max-resim=%d stalls=%d packets=%d bytes=%d ticks=%d",
					r.Rollbacks, r.ResimulatedFrames, r.MaxRollbackFrames, r.MaxResimulated, r.StallFrames, r.PacketsSent, r.BytesSent, r.Ticks)
			})
		}
	}
}

// TestSharedMachines puts several players on one machine: packets then carry
// several players per frame, and one machine can be the whole match.
func TestSharedMachines(t *testing.T) {
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	for _, c := range []struct{ players, machines int }{{4, 2}, {8, 3}, {3, 1}, {1, 1}} {
		t.Run(fmt.Sprintf("%dp-on-%d", c.players, c.machines), func(t *testing.T) {
			r := match.Run(match.Config{Players: c.players, Machines: c.machines, Frames: 900, Seed: 3, Profile: p})
			require.NoError(t, r.Err)
			require.True(t, r.Completed)
			assert.True(t, r.Verified, r.Desync)
			assert.Len(t, r.Checksums, c.machines)
			if c.machines > 1 {
				assert.Positive(t, r.Rollbacks)
			} else {
				assert.Zero(t, r.Rollbacks, "a machine alone has nothing to predict")
				assert.Zero(t, r.PacketsSent)
			}
		})
	}
}

// offer adds a local input the way a game loop does: every tick, dropping
// the sample when the session had no room for it this tick.
func offer(t testing.TB, s *rollback.Session, p rollback.PlayerID, in rollback.Input) {
	t.Helper()
	_, err := s.AddLocalInput(p, in)
	require.NoError(t, err)
}

// playTo plays one tick of each session in ss (player i on session i)
// until it reaches frame end, giving input(i) as its input, then idles
// it.
func playTo(t testing.TB, ss [2]*rollback.Session, end rollback.Frame, input func(i int) rollback.Input) {
	t.Helper()
	for i, s := range ss {
		var err error
		if s.Frame() < end {
			offer(t, s, rollback.PlayerID(i), input(i))
			_, err = s.Advance()
		} else {
			_, err = s.Idle()
		}
		require.NoError(t, err)
	}
}

// connectedPair returns two sessions, one player each, over a perfect
// netsim network, with the handshake done.
func connectedPair(t testing.TB, edit func(i int, c *rollback.Config)) ([2]*rollback.Session, [2]*counterGame, *netsim.Network) {
	t.Helper()
	return connectedPairOver(t, netsim.Profile{}, edit)
}

// connectedPairOver is connectedPair over a network with profile p.
func connectedPairOver(t testing.TB, p netsim.Profile, edit func(i int, c *rollback.Config)) ([2]*rollback.Session, [2]*counterGame, *netsim.Network) {
	t.Helper()
	nw, err := netsim.New(2, 1, p)
	require.NoError(t, err)
	var ss [2]*rollback.Session
	var gs [2]*counterGame
	for i := range ss {
		gs[i] = newCounterGame(t, 4096, false)
		c := rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
			Layout: rollback.Layout{4}, State: gs[i].Arena, Game: gs[i], Transport: nw.Endpoint(i),
			Clock: nw.Now, Rand: match.SeededRand(1, i), SessionID: 77}
		if edit != nil {
			edit(i, &c)
		}
		ss[i], err = rollback.NewSession(c)
		require.NoError(t, err)
	}
	for range 60 {
		for _, s := range ss {
			_, err := s.Idle()
			require.NoError(t, err)
		}
		nw.Advance(match.Tick)
	}
	for i, s := range ss {
		st, ok := s.PeerStats(0)
		require.True(t, ok)
		require.True(t, st.Verified, "session %d completed the handshake", i)
	}
	return ss, gs, nw
}

// TestDisconnectAgreement drops one of three machines mid-match, by a crash
// (silence) or a clean Close: the two others must agree on the frame from
// which its player plays the default input, roll back to it if needed, and
// end with identical states equal to the offline replay of that history.
func TestDisconnectAgreement(t *testing.T) {
	for _, profile := range []string{"lan", "wifi", "hell"} {
		for _, clean := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-clean=%v", profile, clean), func(t *testing.T) {
				p, err := netsim.ParseProfile(profile)
				require.NoError(t, err)
				r := match.Run(match.Config{Players: 3, Frames: 1500, Seed: 9, Profile: p,
					DropAt: 600, DropMachine: 1, DropClean: clean})
				require.NoError(t, r.Err)
				require.True(t, r.Completed, "ticks %d", r.Ticks)
				assert.True(t, r.Verified, r.Desync)
				require.Len(t, r.Checksums, 2)
				assert.Equal(t, r.Checksums[0], r.Checksums[1])
				// A survivor can lag up to a window behind the one that dropped, and
				// that one up to a window behind the others.
				assert.Greater(t, r.DisconnectFrame, rollback.Frame(600-2*rollback.DefaultMaxRollback-5))
				assert.LessOrEqual(t, r.DisconnectFrame, rollback.Frame(601+inputlag.Max), "its inputs run ahead by its input lag")
				if !clean {
					// The silence lasts DisconnectTimeout (5 s) before anyone gives up.
					assert.Greater(t, r.Ticks, 1500+280)
				} else if profile != "hell" { // in hell both copies of the notice can fall in one loss burst
					assert.Less(t, r.Ticks, 1500+120, "a clean close is noticed at once")
				}
			})
		}
	}
}

func TestMatchPolicies(t *testing.T) {
	p, err := netsim.ParseProfile("intercontinental")
	require.NoError(t, err)
	for _, c := range []match.Config{
		{Snapshots: rollback.ConstantCost, FixedInputLag: true},
		{Snapshots: rollback.ConstantCost},
		{InputLag: 3},
		{MaxRollback: 8, InputLag: 2},
		// A 1-frame window once deadlocked here: the periodic snapshot kept
		// replacing the one the anchor was about to reach, pinning the ring.
		{MaxRollback: 1},
		{MaxRollback: 1, FixedInputLag: true},
	} {
		t.Run(fmt.Sprintf("%v-delay%d-max%d-fixed%v", c.Snapshots, c.InputLag, c.MaxRollback, c.FixedInputLag), func(t *testing.T) {
			c.Players, c.Frames, c.Seed, c.Profile = 3, 900, 5, p
			r := match.Run(c)
			require.NoError(t, r.Err)
			require.True(t, r.Completed)
			assert.True(t, r.Verified, r.Desync)
			assert.Positive(t, r.Rollbacks)
			maxRB := c.MaxRollback
			if maxRB == 0 {
				maxRB = rollback.DefaultMaxRollback
			}
			assert.LessOrEqual(t, r.MaxRollbackFrames, maxRB)
			if c.Snapshots == rollback.ConstantCost {
				assert.GreaterOrEqual(t, r.MaxResimulated, maxRB, "constant cost re-simulates at least MaxRollback frames")
			}
			if c.MaxRollback == 1 {
				assert.Positive(t, r.StallFrames, "a 1-frame window over 90 ms stalls")
			}
		})
	}
}

// TestConstantCostIsConstant: with two machines and a fixed input lag,
// every frame re-simulates exactly MaxRollback frames. (With a third machine
// the snapshot also waits for the counts the others report, and a lowered
// input lag simulates extra frames at once, so it can be more.)
func TestConstantCostIsConstant(t *testing.T) {
	p, err := netsim.ParseProfile("intercontinental")
	require.NoError(t, err)
	r := match.Run(match.Config{Players: 2, Frames: 900, Seed: 5, Profile: p,
		Snapshots: rollback.ConstantCost, FixedInputLag: true})
	require.NoError(t, r.Err)
	require.True(t, r.Verified, r.Desync)
	assert.Equal(t, rollback.DefaultMaxRollback, r.MaxResimulated)
	assert.Greater(t, r.Rollbacks, int64(2*850), "a rollback on (nearly) every frame of both machines")
}

func TestSameSeedSameMatch(t *testing.T) {
	p, err := netsim.ParseProfile("hell")
	require.NoError(t, err)
	c := match.Config{Players: 3, Frames: 900, Seed: 42, Profile: p}
	a, b := match.Run(c), match.Run(c)
	require.True(t, a.Verified)
	assert.Equal(t, a, b, "a match is a pure function of its seed")
	c.Seed = 43
	assert.NotEqual(t, a.Want, match.Run(c).Want, "another seed plays another match")
}

// counterGame is the shared test game (testgame.Counter).
type counterGame = testgame.Counter

func newCounterGame(t testing.TB, size int, leak bool) *counterGame {
	g, err := testgame.NewCounter(size)
	require.NoError(t, err)
	g.Leak = leak
	return g
}

func syncTestSession(t *testing.T, g *counterGame, policy rollback.SnapshotPolicy) *rollback.Session {
	s, err := rollback.NewSession(rollback.Config{
		Players: 2, Local: []rollback.PlayerID{0, 1}, Layout: rollback.Layout{8},
		State: g.Arena, Game: g, SyncTest: 7, Snapshots: policy,
	})
	require.NoError(t, err)
	return s
}

func TestSyncTest(t *testing.T) {
	for _, policy := range []rollback.SnapshotPolicy{rollback.TwoBackups, rollback.ConstantCost} {
		t.Run(policy.String(), func(t *testing.T) {
			s := syncTestSession(t, newCounterGame(t, 4096, false), policy)
			for f := range 300 {
				require.NoError(t, queued(s.AddLocalInput(0, rollback.Input(f%7))))
				require.NoError(t, queued(s.AddLocalInput(1, rollback.Input(f%3))))
				_, err := s.Advance()
				require.NoError(t, err, "frame %d", f)
			}
			st := s.Stats()
			assert.Equal(t, int64(299), st.Rollbacks, "a forced rollback on every frame after the first")
			assert.Equal(t, 7, st.MaxResimulated)
		})
	}
}

func TestSyncTestCatchesNonDeterminism(t *testing.T) {
	s := syncTestSession(t, newCounterGame(t, 4096, true), rollback.TwoBackups)
	var err error
	for f := 0; f < 100 && err == nil; f++ {
		require.NoError(t, queued(s.AddLocalInput(0, 1)))
		require.NoError(t, queued(s.AddLocalInput(1, 2)))
		_, err = s.Advance()
	}
	var se *desync.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, int32(31), se.Frame, "the state after the first frame whose step reads the leaked counter")
	assert.Equal(t, -1, se.Peer, "a sync test's")
	assert.NotEqual(t, se.Local, se.Remote)
	assert.Contains(t, se.Error(), "not deterministic")
}

func TestConfigErrors(t *testing.T) {
	a, err := savestate.New(1024)
	require.NoError(t, err)
	g := rollback.GameFunc(func(rollback.Frame, []rollback.PlayerInput) {})
	nw, err := netsim.New(2, 1, netsim.Profile{})
	require.NoError(t, err)
	good := func() rollback.Config {
		return rollback.Config{Players: 2, Local: []rollback.PlayerID{0},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{1}}},
			Layout: rollback.Layout{3, 8, 8}, State: a, Game: g, Transport: nw.Endpoint(0)}
	}
	_, err = rollback.NewSession(good())
	require.NoError(t, err)

	cases := []struct {
		field string
		edit  func(c *rollback.Config)
	}{
		{"Players", func(c *rollback.Config) { c.Players = 0 }},
		{"Players", func(c *rollback.Config) { c.Players = 9 }},
		{"Players", func(c *rollback.Config) { c.Players = 3 }},
		{"Local", func(c *rollback.Config) { c.Local = nil }},
		{"Local[0]", func(c *rollback.Config) { c.Local = []rollback.PlayerID{5} }},
		{"Peers[0].Players[0]", func(c *rollback.Config) { c.Peers[0].Players = []rollback.PlayerID{0} }},
		{"Peers[0].Players[1]", func(c *rollback.Config) { c.Peers[0].Players = []rollback.PlayerID{1, 1} }},
		{"Peers[1].Players", func(c *rollback.Config) { c.Peers = append(c.Peers, rollback.Peer{}) }},
		{"Layout", func(c *rollback.Config) { c.Layout = rollback.Layout{32, 32, 1} }},
		{"Layout", func(c *rollback.Config) { c.Layout = nil }},
		{"State", func(c *rollback.Config) { c.State = nil }},
		{"Game", func(c *rollback.Config) { c.Game = nil }},
		{"Transport", func(c *rollback.Config) { c.Transport = nil }},
		{"MaxRollback", func(c *rollback.Config) { c.MaxRollback = -1 }},
		{"MaxRollback", func(c *rollback.Config) { c.MaxRollback = rollback.MaxRollbackLimit + 1 }},
		{"InputLag", func(c *rollback.Config) { c.InputLag = -1 }},
		{"Timeouts.Handshake", func(c *rollback.Config) { c.Timeouts.Handshake = -time.Second }},
		{"Timeouts.Disconnect", func(c *rollback.Config) { c.Timeouts.Disconnect = -time.Second }},
		{"Timeouts.Interrupt", func(c *rollback.Config) {
			c.Timeouts = rollback.Timeouts{Interrupt: 2 * time.Second, Disconnect: time.Second}
		}},
		{"QualityInterval", func(c *rollback.Config) { c.QualityInterval = -time.Second }},
		{"Snapshots", func(c *rollback.Config) { c.Snapshots = 7 }},
		{"SnapshotInterval", func(c *rollback.Config) { c.SnapshotInterval = -1 }},
		{"SnapshotInterval", func(c *rollback.Config) { c.SnapshotInterval = 21 }},
		{"SnapshotInterval", func(c *rollback.Config) { c.MaxRollback, c.SnapshotInterval = 8, 9 }},
		{"SnapshotInterval", func(c *rollback.Config) { c.Snapshots, c.SnapshotInterval = rollback.TwoBackups, 1 }},
		{"SnapshotInterval", func(c *rollback.Config) { c.Lockstep, c.SnapshotInterval = true, 1 }},
		{"StepCost", func(c *rollback.Config) { c.StepCost = -time.Microsecond }},
		{"SaveCost", func(c *rollback.Config) { c.SaveCost = -time.Microsecond }},
		{"SyncTest", func(c *rollback.Config) { c.SyncTest = 3 }},
		{"SyncTest", func(c *rollback.Config) { c.SyncTest = 21 }},
		{"TickRate", func(c *rollback.Config) { c.TickRate = 30 }},
		{"PlayoutDelay", func(c *rollback.Config) { c.PlayoutDelay = time.Second }},
		{"TickRate", func(c *rollback.Config) { c.Lockstep, c.TickRate = true, rollback.MaxTickRate+1 }},
		{"TickRate", func(c *rollback.Config) { c.Lockstep, c.TickRate = true, -1 }},
		{"MaxRollback", func(c *rollback.Config) { c.Lockstep, c.MaxRollback = true, 8 }},
		{"Snapshots", func(c *rollback.Config) { c.Lockstep, c.Snapshots = true, rollback.ConstantCost }},
		{"InProgress", func(c *rollback.Config) { c.Lockstep, c.InProgress = true, true }},
		{"InProgress", func(c *rollback.Config) { c.InProgress, c.Recorder = true, nopRecorder{} }},
		{"Peers[0].Late", func(c *rollback.Config) { c.Lockstep, c.Peers[0].Late = true, true }},
		// A typed nil (a nil *udp.Transport in the interface) passed and
		// panicked at the first Advance.
		{"Transport", func(c *rollback.Config) { c.Transport = (*udp.Transport)(nil) }},
		// Rollback-only options that lockstep took silently.
		{"Predictor", func(c *rollback.Config) { c.Lockstep, c.Predictor = true, predict.RepeatLast{} }},
		{"NoFrameAdvantage", func(c *rollback.Config) { c.Lockstep, c.NoFrameAdvantage = true, true }},
		{"FixedInputLag", func(c *rollback.Config) { c.Lockstep, c.FixedInputLag = true, true }},
		{"SendEveryTick", func(c *rollback.Config) { c.Lockstep, c.SendEveryTick = true, true }},
		{"RejoinWindow", func(c *rollback.Config) { c.Lockstep, c.RejoinWindow = true, time.Minute }},
		{"Recover", func(c *rollback.Config) { c.Lockstep, c.Recover = true, true }},
		{"Recover", func(c *rollback.Config) { c.Recover, c.ChecksumEvery = true, -1 }},
		{"Recover", func(c *rollback.Config) {
			c.Recover, c.ChecksumData = true, func(b []byte) []byte { return b }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			c := good()
			tc.edit(&c)
			before := fmt.Sprintf("%+v", c)
			_, err := rollback.NewSession(c)
			var ce *rollback.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.field, ce.Field)
			assert.Contains(t, err.Error(), "Config."+tc.field)
			assert.Equal(t, before, fmt.Sprintf("%+v", c), "validation does not modify the config")
		})
	}
}

func TestLocalInputErrors(t *testing.T) {
	ss, _, _ := connectedPair(t, func(_ int, c *rollback.Config) { c.InputLag = 2 })
	s := ss[0]
	for _, c := range []struct {
		p    rollback.PlayerID
		in   rollback.Input
		want string
	}{{1, 0, "player 1 is not local"}, {-1, 0, "player -1 is not local"}, {2, 0, "player 2 is not local"}, {0, 16, "0x10 has bits outside the layout"}} {
		ok, err := s.AddLocalInput(c.p, c.in)
		assert.ErrorIs(t, err, rollback.ErrInput)
		assert.ErrorContains(t, err, c.want)
		assert.False(t, ok)
	}
	require.NoError(t, queued(s.AddLocalInput(0, 3)))
	ok, err := s.AddLocalInput(0, 3)
	require.NoError(t, err, "no room for another input this tick is ordinary flow, not an error")
	assert.False(t, ok, "the frame already has its input")

	for range 3 { // frames 0 and 1 run on the zero input of the delay, frame 2 on the 3
		_, err := s.Advance()
		require.NoError(t, err)
	}
	_, err = s.Advance()
	assert.ErrorIs(t, err, rollback.ErrInput, "frame 3's input was never added")
	assert.ErrorContains(t, err, "a local input for frame 3 is missing")
	assert.Equal(t, rollback.Frame(3), s.Frame())

	require.NoError(t, s.Close())
	_, err = s.Advance()
	assert.ErrorIs(t, err, rollback.ErrClosed)
	assert.ErrorIs(t, s.Close(), rollback.ErrClosed)
}

// TestStarvation cuts one peer off: the other simulates MaxRollback frames
// ahead, then stalls and says so, and resumes when input flows again.
func TestStarvation(t *testing.T) {
	const maxRB = 5
	sessions, _, _ := connectedPair(t, func(_ int, c *rollback.Config) { c.MaxRollback = maxRB })
	s := sessions[0]
	var events []rollback.Event
	for range 10 { // peer 1 never runs
		offer(t, s, 0, 1)
		r, err := s.Advance()
		require.NoError(t, err)
		events = append(events, r.Events...)
	}
	assert.Equal(t, rollback.Frame(maxRB), s.Frame())
	assert.Equal(t, []rollback.Event{{Kind: rollback.EventStarved, Frame: maxRB, Peer: 0}}, events)
	assert.Equal(t, int64(5), s.Stats().StallFrames)

	// Peer 1 catches up; its inputs arrive, peer 0 rolls back and resumes.
	for range 6 {
		require.NoError(t, queued(sessions[1].AddLocalInput(1, 2)))
		_, err := sessions[1].Advance()
		require.NoError(t, err)
	}
	r, err := s.Advance()
	require.NoError(t, err)
	assert.False(t, r.Stalled)
	assert.Equal(t, maxRB, r.Resimulated, "every predicted frame was wrong")
	require.Len(t, r.Events, 1)
	assert.Equal(t, rollback.EventResumed, r.Events[0].Kind)
}

// TestHostilePackets sends every class of bad datagram a stranger can make
// into a live match, "from" peer 0's address: each is dropped and counted,
// and both machines still end in sync.
func TestHostilePackets(t *testing.T) {
	var inj *fakepeer.Peers
	tap := &fakepeer.Tap{Keep: fakepeer.Sealed(wire.KindInput)}
	ss, gs, nw := connectedPair(t, func(i int, c *rollback.Config) {
		if i == 0 {
			inj = fakepeer.Wrap(c.Transport, 1) // scripted datagrams "from" peer 0, before the real ones
			c.Transport = inj
		} else {
			tap.Transport = c.Transport
			c.Transport = tap
		}
	})
	for range 10 { // some real input datagrams go by
		for i, s := range ss {
			require.NoError(t, queued(s.AddLocalInput(rollback.PlayerID(i), 1)))
			_, err := s.Advance()
			require.NoError(t, err)
		}
		nw.Advance(match.Tick)
	}
	require.NotEmpty(t, tap.Last)
	real := bytes.Clone(tap.Last)
	other := fakepeer.New(5) // another match's machine: its own keys
	share, err := wire.NewKeyShare(match.SeededRand(3, 0))
	require.NoError(t, err)
	handshake := func(session, nonce uint64) []byte {
		b, err := wire.AppendHandshake(nil, &wire.Handshake{Version: wire.Version, SessionID: session, Nonce: nonce, Echo: 6,
			Key: share.Public(), Local: []uint8{1}, Terms: wire.Terms{Players: 2, Owners: []uint8{0, 1}, Layout: []uint8{4}, Mode: 1, TickRate: 60, ChecksumEvery: 500, StartDelay: true}}, nil)
		require.NoError(t, err)
		return b
	}
	require.NoError(t, other.Send(0, handshake(76, 9)))
	require.True(t, other.Keyed(0))
	flipped, changed := bytes.Clone(real), bytes.Clone(real)
	flipped[len(flipped)/2] ^= 0x10
	changed[2] = ^changed[2]
	hostile := [][]byte{
		nil, {1}, {9, 9, 9}, // empty, truncated, a kind nothing has
		other.Seal(0, wire.KindInput, real[2:len(real)-4]), // sealed for another match
		handshake(76, 5),     // a handshake from an earlier match
		handshake(77, 12345), // this session id, but not the nonce the peer chose
		real[:len(real)-1],   // truncated
		flipped, changed,     // one bit flipped; one byte changed
		real,                    // replayed
		make([]byte, 2000),      // oversized
		{2, 0x81, 0xa1, 'x', 1}, // a handshake whose body is a map
	}
	inj.Deliver(0, hostile...)
	for f := 10; f < 600; f++ {
		for i, s := range ss {
			require.NoError(t, queued(s.AddLocalInput(rollback.PlayerID(i), rollback.Input(f/(7+i)%16))))
			_, err := s.Advance()
			require.NoError(t, err)
		}
		nw.Advance(match.Tick)
	}
	for range 30 {
		for _, s := range ss {
			_, err := s.Idle()
			require.NoError(t, err)
		}
		nw.Advance(match.Tick)
	}
	st := ss[0].Stats()
	assert.Equal(t, int64(len(hostile)-1), st.PacketsInvalid, "all but the replay, which is ignored")
	assert.Equal(t, int64(4), st.PacketsForged, "the other match's, the truncated, flipped and changed")
	assert.Equal(t, int64(1), st.PacketsDuplicate, "the replay")
	ps, _ := ss[0].PeerStats(0)
	assert.Equal(t, int64(len(hostile)-1), ps.PacketsDropped)
	assert.Equal(t, rollback.Frame(600), st.ConfirmedFrame)
	assert.Equal(t, *gs[0].State.Get(gs[0].Arena), *gs[1].State.Get(gs[1].Arena), "the match still ends in sync")
}

func TestAdvanceDoesNotAllocate(t *testing.T) {
	t.Run("rollback", func(t *testing.T) { advanceAllocs(t, nil) })
	t.Run("lockstep-10Hz", func(t *testing.T) {
		advanceAllocs(t, func(c *rollback.Config) { c.Lockstep, c.TickRate = true, 10 })
	})
	// The adaptive policy's ring: its regions are allocated on first use,
	// within the warm-up, and the watch allocates nothing.
	t.Run("rollback-every-frame", func(t *testing.T) {
		advanceAllocs(t, func(c *rollback.Config) { c.SnapshotInterval = 1 })
	})
	t.Run("rollback-adaptive-told", func(t *testing.T) {
		advanceAllocs(t, func(c *rollback.Config) { c.StepCost, c.SaveCost = time.Millisecond, 20*time.Microsecond })
	})
}

func advanceAllocs(t *testing.T, edit func(c *rollback.Config)) {
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	nw, err := netsim.New(2, 3, p)
	require.NoError(t, err)
	var ss [2]*rollback.Session
	var bots [2]*arena.Bot
	for i := range ss {
		a, err := savestate.New(64 << 10)
		require.NoError(t, err)
		g, err := arena.New(a, 2, 1)
		require.NoError(t, err)
		c := rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
			Layout: arena.Layout, State: a, Game: g, Transport: nw.Endpoint(i),
			Clock: nw.Now, Rand: match.SeededRand(3, i)}
		if edit != nil {
			edit(&c)
		}
		ss[i], err = rollback.NewSession(c)
		require.NoError(t, err)
		bots[i] = arena.NewBot(uint64(i))
	}
	frame := func() {
		for i, s := range ss {
			if _, err := s.AddLocalInput(rollback.PlayerID(i), bots[i].Next()); err != nil {
				panic(err)
			}
			_, err := s.Advance()
			if err != nil {
				panic(err)
			}
		}
		nw.Advance(match.Tick)
	}
	for range 300 {
		frame()
	}
	rollbacks := func() int64 { return ss[0].Stats().Rollbacks + ss[1].Stats().Rollbacks }
	before, from := rollbacks(), ss[0].Frame()
	assert.Zero(t, testing.AllocsPerRun(600, frame))
	if edit == nil {
		assert.Greater(t, rollbacks(), before+20, "the measured frames included rollbacks")
	} else {
		assert.Greater(t, ss[0].Frame(), from+50, "the measured frames were simulated")
	}
	ps, _ := ss[0].PeerStats(0)
	assert.Positive(t, ps.RTT, "the measured frames included pings")
}

func TestEnumStrings(t *testing.T) {
	assert.Equal(t, "predicted", rollback.Predicted.String())
	assert.Equal(t, "InputStatus(0)", rollback.InputStatus(0).String())
	assert.Equal(t, "starved frame=3 peer=1", rollback.Event{Kind: rollback.EventStarved, Frame: 3, Peer: 1}.String())
	assert.Equal(t, "constant-cost", rollback.ConstantCost.String())
}

// queued turns AddLocalInput's results into one error: a real error, or
// the input not being queued when the test expects it to be.
func queued(ok bool, err error) error {
	if err == nil && !ok {
		return errors.New("the input was not queued")
	}
	return err
}

// TestClosedSession: after Close every method that changes the session
// returns ErrClosed and changes nothing; the getters still answer.
func TestClosedSession(t *testing.T) {
	ss, _, _ := connectedPair(t, nil)
	s := ss[0]
	offer(t, s, 0, 1)
	_, err := s.Advance()
	require.NoError(t, err)
	frame, next := s.Frame(), s.InputFrame(0)
	require.NoError(t, s.Close())
	queuedOK, err := s.AddLocalInput(0, 2)
	assert.ErrorIs(t, err, rollback.ErrClosed, "AddLocalInput")
	assert.False(t, queuedOK)
	_, err = s.Advance()
	assert.ErrorIs(t, err, rollback.ErrClosed, "Advance")
	_, err = s.Idle()
	assert.ErrorIs(t, err, rollback.ErrClosed, "Idle")
	assert.ErrorIs(t, s.Extrapolate(0.5, func() { t.Error("render called on a closed session") }), rollback.ErrClosed, "Extrapolate")
	assert.ErrorIs(t, s.Close(), rollback.ErrClosed, "a second Close")
	assert.Equal(t, frame, s.Frame())
	assert.Equal(t, next, s.InputFrame(0), "no input was queued")
	_, ok := s.PeerStats(0)
	assert.True(t, ok)
}

// nopRecorder is a Recorder that keeps nothing.
type nopRecorder struct{}

func (nopRecorder) Begin(rollback.MatchInfo)                         {}
func (nopRecorder) Confirmed(rollback.Frame, []rollback.PlayerInput) {}
func (nopRecorder) Checksum(rollback.Frame, uint64)                  {}

// countRecorder is a Recorder that counts the frames it is given, which
// must come in order, and the checksums.
type countRecorder struct {
	t         testing.TB
	frames    int
	checksums int
}

func (r *countRecorder) Begin(rollback.MatchInfo) {}
func (r *countRecorder) Confirmed(f rollback.Frame, _ []rollback.PlayerInput) {
	require.Equal(r.t, rollback.Frame(r.frames), f, "frames in order")
	r.frames++
}
func (r *countRecorder) Checksum(rollback.Frame, uint64) { r.checksums++ }

// TestRecorderGetsEveryFrame: with either snapshot policy, the Recorder
// gets every frame of a match once its inputs are confirmed and the
// session idles after the last. With ConstantCost it never got the last
// MaxRollback (580 of 600): the anchor stayed behind the next forced
// rollback's frame, though a forced rollback re-simulates confirmed
// frames with the same inputs.
func TestRecorderGetsEveryFrame(t *testing.T) {
	const frames = 600
	for _, policy := range []rollback.SnapshotPolicy{rollback.TwoBackups, rollback.ConstantCost} {
		t.Run(policy.String(), func(t *testing.T) {
			rec := &countRecorder{t: t}
			ss, _, nw := connectedPairOver(t, netsim.Profile{Latency: 30 * time.Millisecond}, func(i int, c *rollback.Config) {
				c.Snapshots = policy
				if i == 0 {
					c.Recorder = rec
				}
			})
			for tick := 0; rec.frames < frames; tick++ {
				require.Less(t, tick, frames+600, "the Recorder has %d frames", rec.frames)
				playTo(t, ss, frames, func(int) rollback.Input { return rollback.Input(tick % 16) })
				nw.Advance(match.Tick)
			}
			assert.Equal(t, frames, rec.frames)
		})
	}
}
