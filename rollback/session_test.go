package rollback_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// TestMatches plays whole matches over netsim and checks that every peer
// ends with exactly the state an offline replay of the real inputs gives,
// that predictions were really wrong and corrected, and that no rollback
// reached back further than MaxRollback.
func TestMatches(t *testing.T) {
	frames := 1800
	if testing.Short() {
		frames = 600
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
				// Two backups bound one re-simulation by 2×MaxRollback-1 frames
				// (docs/architecture.md, "Snapshots").
				assert.Less(t, r.MaxResimulated, 2*rollback.DefaultMaxRollback)
				assert.Zero(t, r.PacketsInvalid)
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

func TestMatchPolicies(t *testing.T) {
	p, err := netsim.ParseProfile("intercontinental")
	require.NoError(t, err)
	for _, c := range []match.Config{
		{Snapshots: rollback.ConstantCost},
		{InputDelay: 3},
		{MaxRollback: 8, InputDelay: 2},
		{MaxRollback: 1},
	} {
		t.Run(fmt.Sprintf("%v-delay%d-max%d", c.Snapshots, c.InputDelay, c.MaxRollback), func(t *testing.T) {
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
				assert.Equal(t, maxRB, r.MaxResimulated, "constant cost re-simulates exactly MaxRollback frames")
			}
			if c.MaxRollback == 1 {
				assert.Positive(t, r.StallFrames, "a 1-frame window over 90 ms stalls")
			}
		})
	}
}

func TestSameSeedSameMatch(t *testing.T) {
	p, err := netsim.ParseProfile("hell")
	require.NoError(t, err)
	c := match.Config{Players: 3, Frames: 900, Seed: 42, Profile: p}
	a, b := match.Run(c), match.Run(c)
	require.True(t, a.Verified)
	assert.Equal(t, a, b, "a match is a pure function of its seed")
	c.Seed = 43
	assert.NotEqual(t, a.Rollbacks, match.Run(c).Rollbacks)
}

// counterGame keeps a counter in the arena and adds every input to it. If
// leak is set it also adds a counter kept outside the arena, which a
// re-simulation does not roll back: the game is not deterministic.
type counterGame struct {
	a    *savestate.Arena
	h    savestate.Handle[[128]uint64]
	leak bool
	n    uint64
}

func newCounterGame(t testing.TB, size int, leak bool) *counterGame {
	a, err := savestate.New(size)
	require.NoError(t, err)
	h, err := savestate.Alloc[[128]uint64](a)
	require.NoError(t, err)
	return &counterGame{a: a, h: h, leak: leak}
}

func (g *counterGame) Step(f rollback.Frame, in []rollback.PlayerInput) {
	st := g.h.Get(g.a)
	for i, p := range in {
		st[i] += uint64(p.Input) + uint64(f)
	}
	if g.leak {
		g.n++
		if f >= 30 {
			st[100] += g.n
		}
	}
}

func syncTestSession(t *testing.T, g *counterGame, policy rollback.SnapshotPolicy) *rollback.Session {
	s, err := rollback.NewSession(rollback.Config{
		Players: 2, Local: []rollback.PlayerID{0, 1}, Layout: rollback.Layout{8},
		State: g.a, Game: g, SyncTest: 7, Snapshots: policy,
	})
	require.NoError(t, err)
	return s
}

func TestSyncTest(t *testing.T) {
	for _, policy := range []rollback.SnapshotPolicy{rollback.TwoBackups, rollback.ConstantCost} {
		t.Run(policy.String(), func(t *testing.T) {
			s := syncTestSession(t, newCounterGame(t, 4096, false), policy)
			for f := range 300 {
				require.NoError(t, s.AddLocalInput(0, rollback.Input(f%7)))
				require.NoError(t, s.AddLocalInput(1, rollback.Input(f%3)))
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
	var r rollback.Result
	for f := 0; f < 100 && err == nil; f++ {
		require.NoError(t, s.AddLocalInput(0, 1))
		require.NoError(t, s.AddLocalInput(1, 2))
		r, err = s.Advance()
	}
	var se *rollback.SyncTestError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, rollback.Frame(30), se.Frame, "the first frame whose step reads the leaked counter")
	assert.NotEqual(t, se.Want, se.Got)
	require.NotEmpty(t, r.Events)
	assert.Equal(t, rollback.EventSyncTestFailed, r.Events[len(r.Events)-1].Kind)
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
		{"MaxRollback", func(c *rollback.Config) { c.MaxRollback = rollback.MaxMaxRollback + 1 }},
		{"InputDelay", func(c *rollback.Config) { c.InputDelay = -1 }},
		{"Snapshots", func(c *rollback.Config) { c.Snapshots = 7 }},
		{"SyncTest", func(c *rollback.Config) { c.SyncTest = 3 }},
		{"SyncTest", func(c *rollback.Config) { c.SyncTest = 21 }},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			c := good()
			tc.edit(&c)
			before := fmt.Sprintf("%+v", c)
			_, err := rollback.NewSession(c)
			var ce *rollback.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.ErrorIs(t, err, rollback.ErrConfig)
			assert.Equal(t, tc.field, ce.Field)
			assert.Contains(t, err.Error(), "Config."+tc.field)
			assert.Equal(t, before, fmt.Sprintf("%+v", c), "validation does not modify the config")
		})
	}
}

func TestLocalInputErrors(t *testing.T) {
	g := newCounterGame(t, 4096, false)
	nw, err := netsim.New(2, 1, netsim.Profile{})
	require.NoError(t, err)
	s, err := rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{0},
		Peers:  []rollback.Peer{{Players: []rollback.PlayerID{1}}},
		Layout: rollback.Layout{4}, State: g.a, Game: g, Transport: nw.Endpoint(0), InputDelay: 2})
	require.NoError(t, err)

	assert.ErrorIs(t, s.AddLocalInput(1, 0), rollback.ErrNotLocal)
	assert.ErrorIs(t, s.AddLocalInput(-1, 0), rollback.ErrNotLocal)
	assert.ErrorIs(t, s.AddLocalInput(2, 0), rollback.ErrNotLocal)
	assert.ErrorIs(t, s.AddLocalInput(0, 16), rollback.ErrInputRange)
	require.NoError(t, s.AddLocalInput(0, 3))
	assert.ErrorIs(t, s.AddLocalInput(0, 3), rollback.ErrInputAlreadyAdded)

	for range 3 { // frames 0 and 1 run on the zero input of the delay, frame 2 on the 3
		_, err = s.Advance()
		require.NoError(t, err)
	}
	_, err = s.Advance()
	assert.ErrorIs(t, err, rollback.ErrNoLocalInput, "frame 3's input was never added")
	assert.Equal(t, rollback.Frame(3), s.Frame())
}

// TestStarvation cuts one peer off: the other simulates MaxRollback frames
// ahead, then stalls and says so, and resumes when input flows again.
func TestStarvation(t *testing.T) {
	const maxRB = 5
	var sessions [2]*rollback.Session
	nw, err := netsim.New(2, 1, netsim.Profile{})
	require.NoError(t, err)
	for i := range sessions {
		g := newCounterGame(t, 4096, false)
		sessions[i], err = rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
			Layout: rollback.Layout{4}, State: g.a, Game: g, Transport: nw.Endpoint(i), MaxRollback: maxRB})
		require.NoError(t, err)
	}
	s := sessions[0]
	var events []rollback.Event
	stalled := false
	for range 10 { // peer 1 never runs
		if !stalled {
			require.NoError(t, s.AddLocalInput(0, 1))
		}
		r, err := s.Advance()
		require.NoError(t, err)
		stalled = r.Stalled
		events = append(events, r.Events...)
	}
	assert.Equal(t, rollback.Frame(maxRB), s.Frame())
	assert.Equal(t, []rollback.Event{{Kind: rollback.EventStarved, Frame: maxRB, Peer: 0}}, events)
	assert.Equal(t, int64(5), s.Stats().StallFrames)

	// Peer 1 catches up; its inputs arrive, peer 0 rolls back and resumes.
	for range 6 {
		require.NoError(t, sessions[1].AddLocalInput(1, 2))
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

// hostile is a transport whose peer sends garbage.
type hostile struct{ packets [][]byte }

func (h *hostile) Send(int, []byte) error { return nil }
func (h *hostile) Receive(buf []byte) (int, int, bool) {
	if len(h.packets) == 0 {
		return 0, 0, false
	}
	p := h.packets[0]
	h.packets = h.packets[1:]
	return copy(buf, p), 0, true
}

func TestHostilePackets(t *testing.T) {
	g := newCounterGame(t, 4096, false)
	tr := &hostile{packets: [][]byte{
		{1, 0, 0, 0, 0, 0, 0},                      // a valid packet that only acknowledges
		nil, {1}, {9, 9, 9}, {1, 0, 0, 0, 0, 0, 1}, // empty, short, wrong kind, truncated
		{1, 0, 0, 0, 200, 0, 0},                // wants frame 200 of ours: impossible
		{1, 0x7f, 0, 0, 0, 0, 255, 0xff, 0xff}, // frames far in the future
		make([]byte, 5000),
	}}
	s, err := rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{0},
		Peers:  []rollback.Peer{{Players: []rollback.PlayerID{1}}},
		Layout: arena.Layout, State: g.a, Game: g, Transport: tr})
	require.NoError(t, err)
	require.NoError(t, s.AddLocalInput(0, 1))
	_, err = s.Advance()
	require.NoError(t, err)
	st := s.Stats()
	assert.Equal(t, int64(8), st.PacketsReceived)
	assert.Equal(t, int64(7), st.PacketsInvalid, "only the ack-only packet is valid")
	assert.Equal(t, rollback.Frame(0), st.ConfirmedFrame)
}

func TestAdvanceDoesNotAllocate(t *testing.T) {
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
		ss[i], err = rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
			Layout: arena.Layout, State: a, Game: g, Transport: nw.Endpoint(i)})
		require.NoError(t, err)
		bots[i] = arena.NewBot(uint64(i))
	}
	var stalled [2]bool
	frame := func() {
		for i, s := range ss {
			if !stalled[i] {
				if err := s.AddLocalInput(rollback.PlayerID(i), bots[i].Next()); err != nil {
					panic(err)
				}
			}
			r, err := s.Advance()
			if err != nil {
				panic(err)
			}
			stalled[i] = r.Stalled
		}
		nw.Advance(match.Tick)
	}
	for range 300 {
		frame()
	}
	before := ss[0].Stats().Rollbacks
	assert.Zero(t, testing.AllocsPerRun(600, frame))
	assert.Greater(t, ss[0].Stats().Rollbacks, before+20, "the measured frames included rollbacks")
}

func TestEnumStrings(t *testing.T) {
	assert.Equal(t, "predicted", rollback.Predicted.String())
	assert.Equal(t, "InputStatus(0)", rollback.InputStatus(0).String())
	assert.Equal(t, "starved frame=3 peer=1", rollback.Event{Kind: rollback.EventStarved, Frame: 3, Peer: 1}.String())
	assert.Equal(t, "constant-cost", rollback.ConstantCost.String())
	assert.True(t, errors.Is(&rollback.ConfigError{Field: "x"}, rollback.ErrConfig))
}
