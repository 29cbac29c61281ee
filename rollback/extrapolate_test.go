package rollback_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/internal/testgame"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// partialGame is the test game with a partial step, recording what the
// session gives it.
type partialGame struct {
	*testgame.Counter
	quiet    bool // record nothing
	partials []float64
	inputs   [][]rollback.PlayerInput
}

func (g *partialGame) StepPartial(f rollback.Frame, in []rollback.PlayerInput, fraction float64) {
	st := g.State.Get(g.Arena)
	for i := range st {
		st[i] = ^st[i] // scribble over the whole state
	}
	if g.quiet {
		return
	}
	g.partials = append(g.partials, fraction)
	g.inputs = append(g.inputs, append([]rollback.PlayerInput(nil), in...))
	_, _ = savestate.Alloc[[64]byte](g.Arena) // and allocate in it
}

// observerLog records an Observer's calls as text.
type observerLog struct{ calls []string }

func (o *observerLog) Simulating(f rollback.Frame) { o.calls = append(o.calls, "sim") }
func (o *observerLog) Extrapolating(on bool) {
	if on {
		o.calls = append(o.calls, "extrapolate")
	} else {
		o.calls = append(o.calls, "live")
	}
}

// TestExtrapolateLeavesStateUnchanged renders a partial step between every
// two frames of a networked match with rollbacks, and checks that the live
// state, its allocations and the match outcome are bit-for-bit unaffected,
// that render saw the extrapolated state, and that the observer brackets
// the extrapolation (so that sound is suppressed).
// Reference: docs/architecture.md, "Extrapolated rendering".
func TestExtrapolateLeavesStateUnchanged(t *testing.T) {
	var obs [2]observerLog
	var games [2]*partialGame
	wifi, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	ss, _, nw := connectedPairOver(t, wifi, func(i int, c *rollback.Config) {
		games[i] = &partialGame{Counter: c.Game.(*testgame.Counter)}
		c.Game, c.Observer = games[i], &obs[i]
		c.InputLag, c.FixedInputLag = i, true // one with input lag, one without
	})
	for f := range 300 {
		for i, s := range ss {
			offer(t, s, rollback.PlayerID(i), rollback.Input((f/7+i)%16))
			_, err := s.Advance()
			require.NoError(t, err)
			g := games[i]
			before := append([]byte(nil), g.Arena.Bytes()...)
			obs[i].calls = obs[i].calls[:0]
			rendered := false
			require.NoError(t, s.Extrapolate(0.25+float64(f%3)/4, func() {
				rendered = true
				assert.False(t, bytes.Equal(before, g.Arena.Bytes()), "render sees the extrapolated state")
				assert.Equal(t, []string{"extrapolate"}, obs[i].calls, "sound stays suppressed while rendering")
			}))
			assert.True(t, rendered)
			assert.True(t, bytes.Equal(before, g.Arena.Bytes()), "frame %d: the live state is bit-for-bit unchanged", f)
			assert.Equal(t, []string{"extrapolate", "live"}, obs[i].calls)
		}
		nw.Advance(match.Tick)
	}
	for i, g := range games {
		require.Len(t, g.partials, 300)
		assert.Equal(t, 0.25, g.partials[0])
		last := g.inputs[len(g.inputs)-1]
		require.Len(t, last, 2)
		assert.Equal(t, rollback.Confirmed, last[i].Status, "the local input is known")
	}
	// The match itself went on as if nothing had been rendered: both
	// sessions agree on every confirmed frame's state. (Frame advantage
	// aligns input frames, so with unequal input lags one may have
	// stalled once more: it catches up first.)
	for f := 300; ss[0].Frame() != ss[1].Frame() && f < 320; f++ {
		i := 0
		if ss[1].Frame() < ss[0].Frame() {
			i = 1
		}
		offer(t, ss[i], rollback.PlayerID(i), rollback.Input((f/7+i)%16))
		_, err := ss[i].Advance()
		require.NoError(t, err)
		nw.Advance(match.Tick)
	}
	for range 60 {
		for _, s := range ss {
			_, err := s.Idle()
			require.NoError(t, err)
		}
		nw.Advance(match.Tick)
	}
	require.Equal(t, ss[0].Frame(), ss[1].Frame())
	assert.True(t, bytes.Equal(games[0].Arena.Bytes(), games[1].Arena.Bytes()), "both peers end in the same state")
	assert.Positive(t, ss[0].Stats().Rollbacks+ss[1].Stats().Rollbacks, "the match rolled back")
	games[0].quiet = true
	assert.Zero(t, testing.AllocsPerRun(20, func() { _ = ss[0].Extrapolate(0.5, func() {}) }),
		"Extrapolate itself does not allocate")
}

func TestExtrapolateErrors(t *testing.T) {
	g := newCounterGame(t, 4096, false)
	s, err := rollback.NewSession(rollback.Config{Players: 1, Local: []rollback.PlayerID{0}, Layout: rollback.Layout{4}, State: g.Arena, Game: g})
	require.NoError(t, err)
	render := func() {}
	assert.ErrorIs(t, s.Extrapolate(0.5, render), rollback.ErrExtrapolate, "the game has no partial step")

	pg := &partialGame{Counter: newCounterGame(t, 4096, false)}
	s, err = rollback.NewSession(rollback.Config{Players: 1, Local: []rollback.PlayerID{0}, Layout: rollback.Layout{4}, State: pg.Arena, Game: pg})
	require.NoError(t, err)
	for _, bad := range []float64{-0.1, 1, 1.5, math.NaN(), math.Inf(1)} {
		assert.ErrorIs(t, s.Extrapolate(bad, render), rollback.ErrExtrapolate, "fraction %v", bad)
	}
	assert.ErrorIs(t, s.Extrapolate(0.5, nil), rollback.ErrExtrapolate)
	calls := 0
	require.NoError(t, s.Extrapolate(0, func() { calls++ }))
	assert.Equal(t, 1, calls, "a zero fraction renders the live state")
	assert.Empty(t, pg.partials)
	// Re-entering from render is refused, not corrupting.
	var inner error
	require.NoError(t, s.Extrapolate(0.5, func() { inner = s.Extrapolate(0.5, render) }))
	assert.ErrorIs(t, inner, rollback.ErrExtrapolate)
	assert.ErrorContains(t, inner, "inside its render")
	assert.Len(t, pg.partials, 1)
}

// TestRenderCannotAdvance: Advance, Idle and Close called from inside
// Extrapolate's render (the arena holds the throwaway state then) return
// ErrExtrapolate and change nothing; the live state is still bit for bit the
// one before, and the session goes on.
func TestRenderCannotAdvance(t *testing.T) {
	for _, fraction := range []float64{0, 0.5} {
		pg := &partialGame{Counter: newCounterGame(t, 4096, false)}
		s, err := rollback.NewSession(rollback.Config{Players: 1, Local: []rollback.PlayerID{0}, Layout: rollback.Layout{4}, State: pg.Arena, Game: pg})
		require.NoError(t, err)
		for f := range 5 {
			require.NoError(t, queued(s.AddLocalInput(0, rollback.Input(f%16))))
			_, err := s.Advance()
			require.NoError(t, err)
		}
		before := bytes.Clone(pg.Arena.Bytes())
		var errs []error
		require.NoError(t, s.Extrapolate(fraction, func() {
			_, _ = s.AddLocalInput(0, 1) // queueing an input is harmless here
			_, err := s.Advance()
			errs = append(errs, err)
			_, err = s.Idle()
			errs = append(errs, err, s.Close())
		}))
		require.Len(t, errs, 3)
		for i, err := range errs {
			assert.ErrorIs(t, err, rollback.ErrExtrapolate, "call %d, fraction %v", i, fraction)
		}
		assert.Equal(t, rollback.Frame(5), s.Frame(), "nothing was simulated inside render")
		assert.Equal(t, before, pg.Arena.Bytes(), "the live state is untouched")
		_, err = s.Advance()
		require.NoError(t, err, "the session goes on after render")
		assert.Equal(t, rollback.Frame(6), s.Frame())
	}
}
