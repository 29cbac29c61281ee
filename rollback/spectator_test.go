package rollback_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// watchPair plays a 2-player match of frames frames over p, with the
// spectators joining at the given ticks (each on a node added then, with
// source src[k]: a player's node, or an earlier spectator's), until every
// spectator has simulated the last frame. It returns the players' games,
// the spectators' games and the spectators.
func watchPair(t *testing.T, p netsim.Profile, frames int, join []int, src []int, edit func(c *rollback.SpectatorConfig)) ([2]*counterGame, []*counterGame, []*rollback.Spectator) {
	gs, sgs, sps, _ := watchPairStats(t, p, frames, join, src, edit)
	return gs, sgs, sps
}

// watchPairStats is watchPair, with the players' statistics at the end.
func watchPairStats(t *testing.T, p netsim.Profile, frames int, join []int, src []int, edit func(c *rollback.SpectatorConfig)) ([2]*counterGame, []*counterGame, []*rollback.Spectator, [2]rollback.Stats) {
	t.Helper()
	ss, gs, nw := connectedPairOver(t, p, func(i int, c *rollback.Config) { c.MaxSpectators = 2 })
	var sgs []*counterGame
	var sps []*rollback.Spectator
	spectate := func() {
		k := len(sps)
		g := newCounterGame(t, 4096, false)
		node := nw.AddNode()
		// The source's transport index seen from the new node: nodes below
		// it keep their number.
		c := rollback.SpectatorConfig{Players: 2, Layout: rollback.Layout{4}, State: g.Arena, Game: g,
			Transport: nw.Endpoint(node), Source: src[k], SessionID: 77, Clock: nw.Now, Rand: match.SeededRand(9, node),
			MaxSpectators: 2}
		if edit != nil {
			edit(&c)
		}
		sp, err := rollback.NewSpectator(c)
		require.NoError(t, err)
		sgs, sps = append(sgs, g), append(sps, sp)
	}
	for tick := 0; ; tick++ {
		for len(sps) < len(join) && join[len(sps)] == tick {
			spectate()
		}
		done := len(sps) == len(join)
		for _, s := range ss {
			done = done && s.Frame() == rollback.Frame(frames) && s.ConfirmedFrame() >= rollback.Frame(frames)
		}
		for _, sp := range sps {
			_, err := sp.Advance()
			require.NoError(t, err)
			done = done && sp.Frame() == rollback.Frame(frames)
		}
		if done {
			break
		}
		require.Less(t, tick, frames+1200, "the spectators did not reach the end")
		playTo(t, ss, rollback.Frame(frames), func(i int) rollback.Input { return rollback.Input((tick*7 + i*3) / 5 % 16) })
		nw.Advance(match.Tick)
	}
	var st [2]rollback.Stats
	for i := range gs {
		assert.Equal(t, gs[0].Arena.Bytes(), gs[i].Arena.Bytes(), "the players agree")
		st[i] = ss[i].Stats()
	}
	return gs, sgs, sps, st
}

// TestSpectators: spectators that join at the start, mid-match and in the
// last second, directly and through another spectator, all end with the
// players' state.
func TestSpectators(t *testing.T) {
	wifi, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	// Nodes 0 and 1 are the players; spectator k is node 2+k, whose
	// transport index of node n < 2+k is n.
	gs, sgs, sps := watchPair(t, wifi, 600, []int{0, 200, 250, 560}, []int{0, 1, 3, 4}, nil)
	for k, sp := range sps {
		st := sp.Stats()
		assert.Equal(t, gs[0].Arena.Bytes(), sgs[k].Arena.Bytes(), "spectator %d", k)
		assert.True(t, st.CaughtUp, "spectator %d", k)
		assert.Positive(t, st.StateBytes, "spectator %d", k)
		t.Logf("spectator %d: state at %d, %d bytes in %v, first frame at %v, catch-up %d frames in %d ticks",
			k, st.StateFrame, st.StateBytes, st.StateTime, st.JoinTime, st.CatchUpFrames, st.CatchUpTicks)
	}
	assert.Equal(t, 1, sps[1].Stats().Relayed, "spectator 1 relays to spectator 2")
	assert.Equal(t, 1, sps[2].Stats().Relayed, "spectator 2 relays to spectator 3: a tree of three levels under player 1")
}

// TestSpectatorThroughAJoiningRelay: a spectator that joins through a
// spectator joining at the same moment is answered only once the relay
// has the match's terms from its own source. A relay that answered
// before (with the terms it had) derived the link's keys again from the
// terms it adopted next, and the spectator below it never got in.
func TestSpectatorThroughAJoiningRelay(t *testing.T) {
	for _, name := range []string{"lan", "wifi"} {
		t.Run(name, func(t *testing.T) {
			p, err := netsim.ParseProfile(name)
			require.NoError(t, err)
			gs, sgs, sps := watchPair(t, p, 300, []int{0, 0}, []int{0, 2}, nil)
			for k := range sps {
				assert.Equal(t, gs[0].Arena.Bytes(), sgs[k].Arena.Bytes(), "spectator %d", k)
			}
			assert.Equal(t, 1, sps[0].Stats().Relayed)
		})
	}
}

// flooding sends every datagram of the transport under it copies times,
// and as much junk: a spectator that floods its source.
type flooding struct {
	rollback.Transport
	copies int
}

func (f flooding) Send(peer int, b []byte) error {
	for range f.copies {
		_ = f.Transport.Send(peer, b)
		_ = f.Transport.Send(peer, []byte{0x13, 0xff, 0xff, 0, 0, 0, 0})
	}
	return f.Transport.Send(peer, b)
}

// TestSpectatorFloodNeverAffectsThePlayers: a spectator that sends each
// of its datagrams 50 times with as much junk is served like any other
// (its repeats are dropped as replays, its junk as forged), and the
// players play exactly the match they play without it.
func TestSpectatorFloodNeverAffectsThePlayers(t *testing.T) {
	wifi, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	gs0, _, _, quiet := watchPairStats(t, wifi, 600, nil, nil, nil)
	gs, sgs, sps, loud := watchPairStats(t, wifi, 600, []int{100}, []int{0}, func(c *rollback.SpectatorConfig) {
		c.Transport = flooding{c.Transport, 50}
	})
	assert.Equal(t, gs0[0].Arena.Bytes(), gs[0].Arena.Bytes())
	assert.Equal(t, gs[0].Arena.Bytes(), sgs[0].Arena.Bytes(), "the flooder is still served")
	for i := range quiet {
		assert.Equal(t, quiet[i].Rollbacks, loud[i].Rollbacks, "machine %d", i)
		assert.Equal(t, quiet[i].ResimulatedFrames, loud[i].ResimulatedFrames, "machine %d", i)
		assert.Equal(t, quiet[i].StallFrames, loud[i].StallFrames, "machine %d", i)
	}
	assert.Greater(t, loud[0].PacketsInvalid, int64(10000), "the flood was dropped")
	assert.Positive(t, sps[0].Stats().CatchUpTicks)
}

// TestSpectatorDelay: a spectator with a 2-second stream delay stays 120
// frames behind the newest frame it has, and still ends on the players'
// state.
func TestSpectatorDelay(t *testing.T) {
	gs, sgs, sps := watchPair(t, netsim.Profile{}, 600, []int{0}, []int{1}, func(c *rollback.SpectatorConfig) {
		c.Delay = 2 * time.Second
	})
	assert.Equal(t, gs[0].Arena.Bytes(), sgs[0].Arena.Bytes())
	st := sps[0].Stats()
	assert.True(t, st.CaughtUp)
	assert.Equal(t, rollback.Frame(600), st.Received)
	assert.GreaterOrEqual(t, st.JoinTime, 2*time.Second, "its first frame waited for the delay")
}

// TestSpectatorStateRefused: a spectator whose arena cannot hold the
// source's state (smaller than it, or allocated with other types: another
// game, or another version of it) fails with a HandshakeError naming the field naming the
// State, within a few seconds. It asked for the state again for ever.
func TestSpectatorStateRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		arena func(t *testing.T) *savestate.Arena
	}{
		{"smaller", func(t *testing.T) *savestate.Arena {
			a, err := savestate.New(512)
			require.NoError(t, err)
			_, err = savestate.Alloc[[32]uint64](a)
			require.NoError(t, err)
			return a
		}},
		{"other types", func(t *testing.T) *savestate.Arena {
			a, err := savestate.New(4096)
			require.NoError(t, err)
			_, err = savestate.Alloc[[128]uint32](a)
			require.NoError(t, err)
			return a
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss, _, nw := connectedPairOver(t, netsim.Profile{}, func(i int, c *rollback.Config) { c.MaxSpectators = 1 })
			g := newCounterGame(t, 4096, false)
			node := nw.AddNode()
			sp, err := rollback.NewSpectator(rollback.SpectatorConfig{Players: 2, Layout: rollback.Layout{4}, State: tc.arena(t), Game: g,
				Transport: nw.Endpoint(node), Source: 0, SessionID: 77, Clock: nw.Now, Rand: match.SeededRand(9, node)})
			require.NoError(t, err)
			for tick := 0; ; tick++ {
				require.Less(t, tick, 10*60, "no error within 10 s")
				for i, s := range ss {
					offer(t, s, rollback.PlayerID(i), rollback.Input(tick%16))
					_, err := s.Advance()
					require.NoError(t, err)
				}
				if _, err = sp.Advance(); err != nil {
					break
				}
				nw.Advance(match.Tick)
			}
			var te *rollback.HandshakeError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, "State", te.Field)
			t.Log(err)
		})
	}
}

// TestSpectatorWitnessConfig: witnesses are at most 3 distinct peer
// indices other than the source's.
func TestSpectatorWitnessConfig(t *testing.T) {
	g := newCounterGame(t, 4096, false)
	nw, err := netsim.New(4, 1, netsim.Profile{})
	require.NoError(t, err)
	for _, ws := range [][]int{{1, 2, 3, 4}, {-1}, {0}, {1, 1}} {
		_, err := rollback.NewSpectator(rollback.SpectatorConfig{Players: 2, Layout: rollback.Layout{4}, State: g.Arena, Game: g,
			Transport: nw.Endpoint(3), Source: 0, Witnesses: ws})
		var ce *rollback.ConfigError
		require.ErrorAs(t, err, &ce, "%v", ws)
		assert.Equal(t, "Witnesses", ce.Field)
	}
	_, err = rollback.NewSpectator(rollback.SpectatorConfig{Players: 2, Layout: rollback.Layout{4}, State: g.Arena, Game: g,
		Transport: nw.Endpoint(3), Source: 0, Witnesses: []int{1, 2}})
	require.NoError(t, err)
}

// TestSpectatorCarriesOnThroughAWitness: a spectator's source leaves
// mid-match (Close); the witness that confirmed its state and every input
// it played becomes its source, and it watches to the last frame with the
// remaining player's state. Without a witness it stops with
// ErrSourceLeft.
func TestSpectatorCarriesOnThroughAWitness(t *testing.T) {
	wifi, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	for _, witnessed := range []bool{true, false} {
		t.Run(fmt.Sprint("witness=", witnessed), func(t *testing.T) {
			const frames = 600
			ss, gs, nw := connectedPairOver(t, wifi, func(i int, c *rollback.Config) { c.MaxSpectators = 2 })
			g := newCounterGame(t, 4096, false)
			node := nw.AddNode()
			c := rollback.SpectatorConfig{Players: 2, Layout: rollback.Layout{4}, State: g.Arena, Game: g,
				Transport: nw.Endpoint(node), Source: 0, SessionID: 77, Clock: nw.Now, Rand: match.SeededRand(9, node)}
			if witnessed {
				c.Witnesses = []int{1}
			}
			sp, err := rollback.NewSpectator(c)
			require.NoError(t, err)
			var left error
			leaver, stays := -1, -1
			for tick := 0; sp.Frame() < frames || stays < 0 || ss[stays].Frame() < frames; tick++ {
				require.Less(t, tick, frames+1200, "the spectator did not reach the end")
				if tick == 300 {
					// Its source at this moment leaves (the first state it
					// loaded may have been the witness's: witness.go).
					leaver = sp.Stats().Source
					stays = 1 - leaver
					require.NoError(t, ss[leaver].Close())
				}
				switch {
				case tick < 300:
					playTo(t, ss, frames, func(i int) rollback.Input { return rollback.Input((tick*7 + i*3) / 5 % 16) })
				case ss[stays].Frame() < frames:
					offer(t, ss[stays], rollback.PlayerID(stays), rollback.Input(tick%16))
					_, err := ss[stays].Advance()
					require.NoError(t, err)
				default:
					_, err := ss[stays].Idle()
					require.NoError(t, err)
				}
				if _, err := sp.Advance(); err != nil {
					left = err
					break
				}
				nw.Advance(match.Tick)
			}
			if !witnessed {
				require.ErrorIs(t, left, rollback.ErrSourceLeft)
				return
			}
			require.NoError(t, left)
			st := sp.Stats()
			assert.Equal(t, stays, st.Source, "the witness is its source")
			assert.Equal(t, gs[stays].Arena.Bytes(), g.Arena.Bytes(), "the spectator ends with the remaining player's state")
			assert.Positive(t, st.Corroborated)
		})
	}
}
