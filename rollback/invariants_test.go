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
