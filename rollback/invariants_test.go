package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// checkInvariants asserts the snapshot invariants of docs/architecture.md.
func (s *Session) checkInvariants(t *testing.T) {
	t.Helper()
	c := s.ConfirmedFrame()
	anchor := Frame(-1)
	for _, b := range s.backups {
		require.LessOrEqual(t, b.frame, s.frame, "a snapshot is never ahead of the live state")
		if b.valid && b.frame <= c {
			anchor = max(anchor, b.frame)
		}
	}
	require.GreaterOrEqual(t, anchor, Frame(0), "some snapshot is at or before the confirmed frame %d: %+v", c, s.backups)
	require.Less(t, s.frame-c, Frame(s.maxRB)+1, "the live state is never more than MaxRollback past the confirmed frame")
	require.Less(t, s.stats.MaxRollbackFrames, s.maxRB+1)
	require.Less(t, s.frame+Frame(s.delay)-s.ringLow(), Frame(ringSize), "the input ring never wraps onto needed frames")
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

func TestSnapshotInvariants(t *testing.T) {
	for _, policy := range []SnapshotPolicy{TwoBackups, ConstantCost} {
		for _, profile := range []string{"lan", "hell"} {
			t.Run(policy.String()+"-"+profile, func(t *testing.T) {
				p, err := netsim.ParseProfile(profile)
				require.NoError(t, err)
				const n = 3
				nw, err := netsim.New(n, 11, p)
				require.NoError(t, err)
				var ss [n]*Session
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
					ss[i], err = NewSession(Config{Players: n, Local: []PlayerID{PlayerID(i)}, Peers: peers,
						Layout: Layout{2}, State: a, Game: &walkGame{a: a, h: h}, Transport: nw.Endpoint(i),
						MaxRollback: 12, InputDelay: 1, Snapshots: policy})
					require.NoError(t, err)
				}
				var stalled [n]bool
				for tick := range 2000 {
					for i, s := range ss {
						if !stalled[i] {
							require.NoError(t, s.AddLocalInput(PlayerID(i), Input(tick/(7+i)%4)))
						}
						r, err := s.Advance()
						require.NoError(t, err)
						stalled[i] = r.Stalled
						s.checkInvariants(t)
					}
					nw.Advance(time.Second / 60)
				}
				if profile == "hell" { // on a LAN the input delay hides the latency: nothing to correct
					require.Positive(t, ss[0].stats.Rollbacks)
					require.Positive(t, ss[0].stats.StallFrames)
				}
			})
		}
	}
}

// scriptTransport delivers datagrams cut from fuzz data: each starts with a
// byte choosing the peer and a byte giving its length.
type scriptTransport struct{ data []byte }

func (s *scriptTransport) Send(int, []byte) error { return nil }

func (s *scriptTransport) Receive(buf []byte) (int, int, bool) {
	if len(s.data) < 2 {
		return 0, 0, false
	}
	peer, n := int(s.data[0]%3), int(s.data[1])
	s.data = s.data[2:]
	n = min(n, len(s.data))
	copy(buf, s.data[:n])
	s.data = s.data[n:]
	return n, peer, true
}

// FuzzSessionPackets feeds arbitrary datagrams from two peers (one with two
// players) into a session between frames. Nothing may panic, Advance may
// not fail, and the snapshot invariants must hold throughout.
func FuzzSessionPackets(f *testing.F) {
	f.Add([]byte{0, 7, 1, 0, 0, 0, 0, 0, 1, 0x80}, uint8(4))
	f.Add([]byte{1, 8, 1, 0, 0, 0, 0, 0, 2, 0xa5, 2, 3, 1, 0, 0}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, every uint8) {
		a, err := savestate.New(1024)
		require.NoError(t, err)
		h, err := savestate.Alloc[[MaxPlayers]int64](a)
		require.NoError(t, err)
		tr := &scriptTransport{}
		s, err := NewSession(Config{Players: 4, Local: []PlayerID{0},
			Peers:  []Peer{{Players: []PlayerID{1}}, {Players: []PlayerID{3, 2}}},
			Layout: Layout{3, 8, 8}, State: a, Game: &walkGame{a: a, h: h}, Transport: tr, MaxRollback: 8})
		require.NoError(t, err)
		step := 1 + int(every)%16
		stalled := false
		for len(data) > 0 {
			n := min(len(data), step*9)
			tr.data = append(tr.data[:0], data[:n]...)
			data = data[n:]
			if !stalled {
				require.NoError(t, s.AddLocalInput(0, 5))
			}
			r, err := s.Advance()
			require.NoError(t, err)
			stalled = r.Stalled
			s.checkInvariants(t)
		}
	})
}
