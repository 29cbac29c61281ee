package sound_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
	"github.com/rewindgg/rewind/sound"
)

// nop is a Backend that does nothing.
type nop struct{}

func (nop) Play(sound.Voice, sound.Sound)       {}
func (nop) Stop(sound.Voice)                    {}
func (nop) FadeOut(sound.Voice, time.Duration)  {}
func (nop) SetVolume(sound.Voice, sound.Volume) {}

// arenaMatch is a single-machine arena session with a ledger as its
// observer, and the bots that play it.
func arenaMatch(t testing.TB, b sound.Backend, syncTest int) (*rollback.Session, *arena.Game, *sound.Ledger, []*arena.Bot) {
	a, err := savestate.New(64 << 10)
	require.NoError(t, err)
	g, err := arena.New(a, 4, 3)
	require.NoError(t, err)
	l, err := sound.NewLedger(sound.Config{Backend: b})
	require.NoError(t, err)
	g.SetLedger(l)
	s, err := rollback.NewSession(rollback.Config{Players: 4, Local: []rollback.PlayerID{0, 1, 2, 3}, Layout: arena.Layout,
		State: a, Game: g, Observer: l, SyncTest: syncTest})
	require.NoError(t, err)
	bots := []*arena.Bot{arena.NewBot(1), arena.NewBot(2), arena.NewBot(3), arena.NewBot(4)}
	return s, g, l, bots
}

func play(t testing.TB, s *rollback.Session, g *arena.Game, l *sound.Ledger, bots []*arena.Bot) {
	for i, b := range bots {
		if _, err := s.AddLocalInput(rollback.PlayerID(i), b.Next()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Advance(); err != nil {
		t.Fatal(err)
	}
	l.Update(g.Scene())
}

// TestSyncTestHearsEverySoundOnce runs the arena in sync-test mode, which
// rolls back 8 frames and re-simulates them on every frame: every sound is
// asked for nine times, and must be heard once, exactly as without the
// rollbacks.
func TestSyncTestHearsEverySoundOnce(t *testing.T) {
	var with, without tape
	s1, g1, l1, b1 := arenaMatch(t, &with, 8)
	s2, g2, l2, b2 := arenaMatch(t, &without, 0)
	for range 1200 {
		play(t, s1, g1, l1, b1)
		play(t, s2, g2, l2, b2)
	}
	assert.Positive(t, s1.Stats().Rollbacks)
	assert.Positive(t, l1.Stats().Repeats, "re-simulated frames asked again")
	assert.Zero(t, l1.Stats().Faded, "a deterministic re-simulation un-happens nothing")
	assert.Positive(t, l2.Stats().Triggered)
	assert.Equal(t, without.calls, with.calls, "the backend hears the same thing as without rollbacks")
}

// TestLedgerDoesNotAllocate: a frame of play with a rollback, triggers and
// an Update allocates nothing once warm.
func TestLedgerDoesNotAllocate(t *testing.T) {
	s, g, l, bots := arenaMatch(t, nop{}, 8)
	for range 300 {
		play(t, s, g, l, bots)
	}
	assert.Zero(t, testing.AllocsPerRun(200, func() { play(t, s, g, l, bots) }))
}

// BenchmarkLedger measures what sound adds to a frame: a re-simulation of
// 20 frames with a few sounds on each, and an Update.
func BenchmarkLedger(b *testing.B) {
	l, err := sound.NewLedger(sound.Config{Backend: nop{}})
	require.NoError(b, err)
	var sc sound.Scene
	for i := range 8 {
		sc.Start(0, sound.ID(i), 1, 0)
	}
	f := rollback.Frame(0)
	b.ReportAllocs()
	for b.Loop() {
		for g := max(0, f-20); g <= f; g++ {
			l.Simulating(g)
			l.Trigger(sound.ID(g%5), 1)
			l.Trigger(sound.ID(g%7+10), 1)
		}
		l.Update(&sc)
		f++
	}
}

// TestExtrapolationIsSilent renders a fraction of a frame ahead after every
// frame of an arena match. The arena's partial step runs the game logic, so
// ships fire in it; none of that may reach the backend: it must hear
// exactly what it hears without extrapolation.
func TestExtrapolationIsSilent(t *testing.T) {
	var with, without tape
	s1, g1, l1, b1 := arenaMatch(t, &with, 0)
	s2, g2, l2, b2 := arenaMatch(t, &without, 0)
	for i := range 1200 {
		play(t, s1, g1, l1, b1)
		require.NoError(t, s1.Extrapolate(float64(i%4+1)/5, func() {}))
		play(t, s2, g2, l2, b2)
	}
	assert.Positive(t, l1.Stats().Suppressed, "the extrapolated steps asked for sounds")
	assert.Zero(t, l2.Stats().Suppressed)
	assert.Equal(t, without.calls, with.calls)
}
