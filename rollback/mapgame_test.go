package rollback_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// mapGame has the classic Go non-determinism: from frame 50 on it folds a
// map's values into its state in iteration order, which Go randomises.
type mapGame struct {
	a     *savestate.Arena
	h     savestate.Handle[[4]uint64]
	m     map[int]uint64
	marks *desync.Marks // its systems' marks: "input", "ai" (the map), "score"
}

func newMapGame(t testing.TB) *mapGame {
	a, err := savestate.New(4096)
	require.NoError(t, err)
	h, err := savestate.Alloc[[4]uint64](a)
	require.NoError(t, err)
	m := map[int]uint64{}
	for i := range 16 {
		m[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
	}
	return &mapGame{a: a, h: h, m: m}
}

func (g *mapGame) Step(f rollback.Frame, in []rollback.PlayerInput) {
	st := g.h.Get(g.a)
	for i, p := range in {
		st[i] += uint64(p.Input)
	}
	g.marks.Mark("input")
	if f >= 50 {
		for _, v := range g.m { // the bug: order-dependent
			st[3] = st[3]*31 + v
		}
	}
	g.marks.Mark("ai")
	st[2] += st[3] & 1
	g.marks.Mark("score")
}

// TestMapOrderCaughtBySyncTest: the sync test names a frame that ranges
// over the map, the first one almost always.
func TestMapOrderCaughtBySyncTest(t *testing.T) {
	g := newMapGame(t)
	s, err := rollback.NewSession(rollback.Config{Players: 1, Local: []rollback.PlayerID{0}, Layout: rollback.Layout{4},
		State: g.a, Game: g, SyncTest: 4})
	require.NoError(t, err)
	var ste *desync.Error
	for f := range 200 {
		require.NoError(t, queued(s.AddLocalInput(0, rollback.Input(f%16))))
		if _, err = s.Advance(); err != nil {
			break
		}
	}
	require.ErrorAs(t, err, &ste)
	// Frame 50 unless the re-simulation happened to iterate in the same
	// order (a few percent per frame): then a frame or two later.
	// The state at the start of the frame after it differs.
	assert.Equal(t, -1, ste.Peer, "a sync test's")
	assert.GreaterOrEqual(t, ste.Frame, int32(51))
	assert.Less(t, ste.Frame, int32(61))
}

// TestMapOrderCaughtInAMatch: two machines running it over a network detect
// the desync at the first checksum frame after 50 and name the field.
func TestMapOrderCaughtInAMatch(t *testing.T) {
	nw, err := netsim.New(2, 1, netsim.Profile{})
	require.NoError(t, err)
	var ss [2]*rollback.Session
	for i := range ss {
		g := newMapGame(t)
		ss[i], err = rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
			Layout: rollback.Layout{4}, State: g.a, Game: g, Transport: nw.Endpoint(i),
			Clock: nw.Now, Rand: match.SeededRand(1, i), SessionID: 5, ChecksumEvery: 10})
		require.NoError(t, err)
	}
	var de *desync.Error
	reported := false
	for tick := 0; tick < 600 && !reported; tick++ {
		for i, s := range ss {
			offer(t, s, rollback.PlayerID(i), rollback.Input(tick%16))
			r, err := s.Advance()
			if err != nil {
				require.True(t, errors.As(err, &de), "unexpected error %v", err)
			}
			for _, e := range r.Events {
				reported = reported || e.Kind == rollback.EventDesyncReport
			}
		}
		nw.Advance(match.Tick)
	}
	require.NotNil(t, de, "the desync was detected")
	require.True(t, reported, "and the states were exchanged")
	assert.Equal(t, int32(60), de.Frame, "the first checksum frame after the map was first ranged over")
	assert.Regexp(t, `^\[4\]uint64\[3\]: \d+ vs \d+$`, de.Field)
}

// TestMapOrderNamedByMarks: with the game's systems marked
// (Config.Marks), the sync test names the system that ranges over the
// map, "ai", not only the frame. Without marks System is empty.
func TestMapOrderNamedByMarks(t *testing.T) {
	for _, marked := range []bool{true, false} {
		g := newMapGame(t)
		c := rollback.Config{Players: 1, Local: []rollback.PlayerID{0}, Layout: rollback.Layout{4}, State: g.a, Game: g, SyncTest: 4}
		if marked {
			g.marks = &desync.Marks{}
			c.Marks = g.marks
		}
		s, err := rollback.NewSession(c)
		require.NoError(t, err)
		for f := range 200 {
			require.NoError(t, queued(s.AddLocalInput(0, rollback.Input(f%16))))
			if _, err = s.Advance(); err != nil {
				break
			}
		}
		var ste *desync.Error
		require.ErrorAs(t, err, &ste)
		if marked {
			assert.Equal(t, "ai", ste.System, "%v", ste)
			assert.Contains(t, ste.Error(), "the first system whose output differs")
		} else {
			assert.Empty(t, ste.System)
		}
	}
}
