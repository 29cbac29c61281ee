package rollback

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/fakepeer"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// Every test of this package checks that ringLow never goes below
// s.inputs.lowFloor, the bound the ring checks answer from.
func init() { lowFloorCheck = checkLowFloor }

func checkLowFloor(floor, low Frame) {
	if low < floor {
		panic(fmt.Sprintf("ringLow went down from %d to %d", floor, low))
	}
}

// NoLowFloorCheck turns that check off for benchmark b: the benchmarks
// measure the session as games run it. (Benchmarks run one at a time,
// after the tests.)
func NoLowFloorCheck(b *testing.B) {
	lowFloorCheck = nil
	b.Cleanup(func() { lowFloorCheck = checkLowFloor })
}

// checkInvariants asserts the snapshot invariants of docs/architecture.md.
func (s *Session) checkInvariants(t *testing.T) {
	t.Helper()
	c := s.ConfirmedFrame()
	anchor := Frame(-1)
	require.LessOrEqual(t, s.snaps.slots, s.snaps.base+int(s.snaps.reach), "the ring: at most MaxRollback + 2 slots (+1 with statements)")
	for _, b := range s.snaps.backups {
		require.LessOrEqual(t, b.frame, s.frame, "a snapshot is never ahead of the live state")
		if b.valid && b.frame <= c {
			anchor = max(anchor, b.frame)
		}
	}
	if s.ls != nil {
		require.LessOrEqual(t, s.frame, c, "lockstep never simulates a frame without every input")
		for _, p := range s.roster.local {
			require.Less(t, s.inputs.next[p]-s.ringLow(), Frame(ringSize), "the input ring never wraps onto needed frames")
		}
		if !s.snaps.on {
			return
		}
	}
	require.GreaterOrEqual(t, anchor, Frame(0), "some snapshot is at or before the confirmed frame %d: %+v", c, s.snaps.backups)
	if s.ls == nil { // lockstep rolls back only to a disconnect cut, as far as it falls
		require.Less(t, s.frame-c, s.snaps.reach+1, "the live state is never more than MaxRollback past the confirmed frame")
		require.Less(t, s.stats.MaxRollbackFrames, int(s.snaps.reach)+1)
	}
	require.Less(t, s.frame+Frame(s.pace.lag.delay)-s.ringLow(), Frame(ringSize), "the input ring never wraps onto needed frames")
}

// walkGame is a random walk per player kept in the arena.
type walkGame struct {
	a *savestate.Arena
	h savestate.Handle[[MaxPlayers]int64]
}

func (g *walkGame) Step(f Frame, in []PlayerInput) {
	st := g.h.Get(g.a)
	for i, p := range in {
		st[i] = st[i]*31 + int64(p.Input) + int64(f)
	}
}

// policies are the snapshot policies the session tests run under: every
// named one, and the adaptive policy measuring on virtual time (two
// backups), told a dear Step (a ring saved every frame), and with its
// interval fixed at 3.
var policies = []struct {
	name string
	edit func(c *Config)
}{
	{"two-backups", func(c *Config) { c.Snapshots = TwoBackups }},
	{"constant-cost", func(c *Config) { c.Snapshots = ConstantCost }},
	{"adaptive-measured", func(c *Config) {}},
	{"adaptive-told", func(c *Config) { c.StepCost, c.SaveCost = 2*time.Millisecond, 20*time.Microsecond }},
	{"every-3", func(c *Config) { c.SnapshotInterval = 3 }},
}

// playWalk plays n machines of walkGame, one player each, over profile
// for ticks ticks, each Config edited by edit, calling each after every
// Advance; it returns the sessions.
func playWalk(t *testing.T, n int, profile string, ticks int, edit func(c *Config), each func(s *Session)) []*Session {
	t.Helper()
	p, err := netsim.ParseProfile(profile)
	require.NoError(t, err)
	nw, err := netsim.New(n, 11, p)
	require.NoError(t, err)
	ss := make([]*Session, n)
	for i := range ss {
		a, err := savestate.New(1024)
		require.NoError(t, err)
		h, err := savestate.Alloc[[MaxPlayers]int64](a)
		require.NoError(t, err)
		var peers []Peer
		for j := range n {
			if j != i {
				peers = append(peers, Peer{Players: []PlayerID{PlayerID(j)}})
			}
		}
		c := Config{Players: n, Local: []PlayerID{PlayerID(i)}, Peers: peers,
			Layout: Layout{2}, State: a, Game: &walkGame{a: a, h: h}, Transport: nw.Endpoint(i),
			MaxRollback: 12, InputLag: 1, FixedInputLag: true, Clock: nw.Now}
		edit(&c)
		ss[i], err = NewSession(c)
		require.NoError(t, err)
	}
	for range ticks {
		for i, s := range ss {
			// A function of the frame, not of the tick: every frame's
			// inputs are the same whatever the stalls.
			_, err := s.AddLocalInput(PlayerID(i), Input(int(s.Frame())/(7+i)%4))
			require.NoError(t, err)
			_, err = s.Advance()
			require.NoError(t, err)
			each(s)
		}
		nw.Advance(time.Second / 60)
	}
	return ss
}

func TestSnapshotInvariants(t *testing.T) {
	for _, policy := range policies {
		for _, profile := range []string{"lan", "hell"} {
			t.Run(policy.name+"-"+profile, func(t *testing.T) {
				ss := playWalk(t, 3, profile, 2000, policy.edit, func(s *Session) { s.checkInvariants(t) })
				require.Greater(t, ss[0].Frame(), Frame(600), "the match ran")
				if profile == "hell" { // on a LAN the input delay hides the latency: nothing to correct
					require.Positive(t, ss[0].stats.Rollbacks)
					st := ss[0].Stats()
					require.Positive(t, st.StallFrames+st.AdvantageStalls+st.LagStalls, "hell makes a session stall for one reason or another")
				}
			})
		}
	}
}

// script returns datagrams cut from fuzz data for fake peers 0 and 1: each
// starts with a byte choosing the peer (index 2 does not exist: every
// datagram "from" it is dropped) and, with its top bit, asking for the
// datagram to be sealed with that peer's real keys (its first byte is then
// the kind, the rest the body), and a byte giving its length.
func script(fp *fakepeer.Peers, data *[]byte) func() ([]byte, int, bool) {
	buf := make([]byte, 0, 512)
	return func() ([]byte, int, bool) {
		d := *data
		if len(d) < 2 {
			return nil, 0, false
		}
		peer, n := int(d[0]&0x7f%3), int(d[1])
		seal := d[0]&0x80 != 0
		d = d[2:]
		n = min(n, len(d))
		b := append(buf[:0], d[:n]...)
		*data = d[n:]
		if seal && n >= 1 && peer < 2 && fp.Keyed(peer) {
			b = fp.SealTo(buf, peer, wire.Kind(b[0]&0x0f), d[1:n])
		}
		return b, peer, true
	}
}

// fourPlayers returns a session of 4 players — local player 0, fake peer 0
// with player 1, fake peer 1 with players 3 and 2; Layout {3, 8, 8} —
// after edit changes its Config.
func fourPlayers(t *testing.T, edit func(c *Config)) (*Session, *fakepeer.Peers) {
	a, err := savestate.New(1024)
	require.NoError(t, err)
	h, err := savestate.Alloc[[MaxPlayers]int64](a)
	require.NoError(t, err)
	tr := fakepeer.New(100, 101)
	c := Config{Players: 4, Local: []PlayerID{0},
		Peers:  []Peer{{Players: []PlayerID{1}}, {Players: []PlayerID{3, 2}}},
		Layout: Layout{3, 8, 8}, State: a, Game: &walkGame{a: a, h: h}, Transport: tr, MaxRollback: 8,
		SessionID: 5, Rand: rand.NewChaCha8([32]byte{1}), Clock: tr.Now}
	withoutStatements(&c)
	edit(&c)
	s, err := NewSession(c)
	require.NoError(t, err)
	return s, tr
}

// playScript runs a session of 4 players (one local, two peers) on the
// scripted datagrams in data, Advancing after every step*9 bytes (step from
// every's low bits; its top bit chooses lockstep mode), checking the
// invariants throughout, and returns it.
func playScript(t *testing.T, data []byte, every uint8) *Session {
	var chunk []byte
	s, tr := fourPlayers(t, func(c *Config) {
		if every&0x80 != 0 {
			c.Lockstep, c.MaxRollback, c.PlayoutDelay = true, 0, -1
		}
	})
	tr.Next = script(tr, &chunk)
	// The handshake tick: the session says hello, both fake peers answer
	// (their answers are received first on the next tick, before the data).
	_, err := s.AddLocalInput(0, 5)
	require.NoError(t, err)
	_, err = s.Advance()
	require.NoError(t, err)
	step := 1 + int(every&0x7f)%16
	for len(data) > 0 {
		n := min(len(data), step*9)
		chunk = append(chunk[:0], data[:n]...)
		data = data[n:]
		tr.Advance(time.Second / 60)
		_, err := s.AddLocalInput(0, 5)
		require.NoError(t, err)
		_, err = s.Advance()
		require.NoError(t, err)
		s.checkInvariants(t)
	}
	return s
}

// FuzzSessionPackets feeds arbitrary datagrams from two peers (one with two
// players) into a session between frames. Nothing may panic, Advance may
// not fail, and the snapshot invariants must hold throughout.
func FuzzSessionPackets(f *testing.F) {
	f.Add([]byte{0x80, 7, 1, 0, 0, 0x03, 0xbf, 0xc0, 0x40}, uint8(4))
	f.Add([]byte{0x81, 7, 1, 0, 0, 0x02, 0xff, 0xff, 0xc0, 0}, uint8(1))
	f.Add([]byte{0x80, 7, 1, 0, 0, 0x03, 0xbf, 0xc0, 0x40}, uint8(0x84)) // lockstep
	f.Fuzz(func(t *testing.T, data []byte, every uint8) {
		playScript(t, data, every)
	})
}

func TestScriptReachesTheSession(t *testing.T) {
	pkt, err := wire.AppendInput(nil, &wire.InputPacket{Ack: 0, First: 0, Count: 3, Players: 1,
		Inputs: []uint64{1, 2, 3}, Gossip: []wire.Gossip{{Frame: 0}}}, wire.Layout{3, 8, 8})
	require.NoError(t, err)
	data := append([]byte{0x80, byte(1 + len(pkt)), byte(wire.KindInput)}, pkt...)
	for _, every := range []uint8{15, 0x80 | 15} {
		s := playScript(t, data, every)
		assert.Equal(t, Frame(3), s.inputs.next[1], "the peer's three inputs were accepted")
		assert.Zero(t, s.stats.PacketsInvalid)
		assert.Equal(t, every&0x80 != 0, s.ls != nil)
	}
}

// TestScriptCarriedInputs: an input packet riding behind a ping, its reply
// or a checksum reaches the session as one sent alone does, and so does
// the message: the ping is answered.
func TestScriptCarriedInputs(t *testing.T) {
	pkt, err := wire.AppendInput(nil, &wire.InputPacket{Ack: 0, First: 0, Count: 3, Players: 1,
		Inputs: []uint64{1, 2, 3}, Gossip: []wire.Gossip{{Frame: 0}}}, wire.Layout{3, 8, 8})
	require.NoError(t, err)
	q, err := wire.AppendControl(nil, &wire.Quality{Sent: 1, Frame: 0})
	require.NoError(t, err)
	data := append(append([]byte{0x80, byte(1 + len(q) + len(pkt)), byte(wire.KindQuality)}, q...), pkt...)
	for _, every := range []uint8{15, 0x80 | 15} {
		s := playScript(t, data, every)
		assert.Equal(t, Frame(3), s.inputs.next[1], "the peer's three inputs were accepted")
		assert.Zero(t, s.stats.PacketsInvalid)
		assert.Equal(t, int64(1), s.peers[0].link.replyEcho, "the ping was taken")
	}
}
