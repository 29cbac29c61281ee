package arena_test

import (
	"testing"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
	"github.com/rewindgg/rewind/sound"
)

// play runs an offline match of bots and returns the arena checksum and world.
func play(t *testing.T, players, frames int, seed uint64) (uint64, arena.World) {
	t.Helper()
	a, err := savestate.New(64 << 10)
	require.NoError(t, err)
	g, err := arena.New(a, players, seed)
	require.NoError(t, err)
	bots := make([]*arena.Bot, players)
	for i := range bots {
		bots[i] = arena.NewBot(seed*31 + uint64(i))
	}
	in := make([]rollback.PlayerInput, players)
	for f := range frames {
		for i, b := range bots {
			in[i] = rollback.PlayerInput{Input: b.Next(), Status: rollback.Confirmed}
		}
		g.Step(rollback.Frame(f), in)
	}
	return xxhash.Sum64(a.Bytes()), *g.World()
}

func TestDeterministic(t *testing.T) {
	a, wa := play(t, 4, 3000, 9)
	b, _ := play(t, 4, 3000, 9)
	c, _ := play(t, 4, 3000, 10)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
	assert.Equal(t, int32(3000), wa.Frame)
}

// TestRestoreReplays: the whole state, the random generator and the
// fixed-point positions included, is in the arena: after a restore, the
// same inputs play the same frames again, respawns (which draw random
// positions) included.
func TestRestoreReplays(t *testing.T) {
	a, err := savestate.New(64 << 10)
	require.NoError(t, err)
	g, err := arena.New(a, 8, 11)
	require.NoError(t, err)
	bots := make([]*arena.Bot, 8)
	for i := range bots {
		bots[i] = arena.NewBot(uint64(i))
	}
	inputs := make([][]rollback.PlayerInput, 1200)
	for f := range inputs {
		inputs[f] = make([]rollback.PlayerInput, len(bots))
		for i, b := range bots {
			inputs[f][i] = rollback.PlayerInput{Input: b.Next(), Status: rollback.Confirmed}
		}
	}
	for f := range 600 {
		g.Step(rollback.Frame(f), inputs[f])
	}
	require.NoError(t, a.Save(0))
	saved := *g.World()
	hits := saved.Hits
	for f := 600; f < 1200; f++ {
		g.Step(rollback.Frame(f), inputs[f])
	}
	first, world := xxhash.Sum64(a.Bytes()), *g.World()
	require.Greater(t, world.Hits, hits, "ships died, and respawned at random spots, after the snapshot")
	require.NotEqual(t, saved.Rand, world.Rand)
	require.NoError(t, a.Restore(0))
	assert.Equal(t, saved, *g.World())
	for f := 600; f < 1200; f++ {
		g.Step(rollback.Frame(f), inputs[f])
	}
	assert.Equal(t, first, xxhash.Sum64(a.Bytes()))
	assert.Equal(t, world, *g.World())
}

// TestGoldenWorld pins the world after three bot matches, bit for bit:
// a change to the simulation's arithmetic changes these hashes, and every
// peer and replay of an older build would desync. The hashes were taken
// before fixed.Num became a struct and are unchanged by it; update them
// only for a deliberate change of the game's rules.
func TestGoldenWorld(t *testing.T) {
	for _, c := range []struct {
		players, frames int
		seed            uint64
		hash            uint64
		hits            int32
	}{
		{4, 3000, 9, 0x21eb953f316d3612, 10},
		{8, 3600, 1, 0x5ea4d09f13f46a52, 61},
		{2, 5000, 77, 0x5aa6f9a74b0b1756, 4},
	} {
		_, w := play(t, c.players, c.frames, c.seed)
		b := unsafe.Slice((*byte)(unsafe.Pointer(&w)), unsafe.Sizeof(w))
		assert.Equal(t, c.hash, xxhash.Sum64(b), "%d players, seed %d: the world's hash after %d frames", c.players, c.seed, c.frames)
		assert.Equal(t, c.hits, w.Hits)
	}
}

func TestShipsMoveShootAndDie(t *testing.T) {
	_, w := play(t, 8, 3600, 1)
	assert.Positive(t, w.Hits, "ships hit each other in a minute of play")
	var deaths, score int32
	for _, s := range w.Ships {
		deaths += s.Deaths
		score += s.Score
		assert.GreaterOrEqual(t, s.X.Sign(), 0, "x = %v", s.X)
		assert.True(t, s.X.Less(arena.Size), "x = %v", s.X)
		assert.GreaterOrEqual(t, s.Y.Sign(), 0, "y = %v", s.Y)
		assert.True(t, s.Y.Less(arena.Size), "y = %v", s.Y)
	}
	assert.Equal(t, w.Hits, deaths)
	assert.Equal(t, w.Hits, score)
}

func TestPackUnpack(t *testing.T) {
	in := arena.Pack(arena.FireDown, 200, 17)
	f, a, m := arena.Unpack(in)
	assert.Equal(t, []uint8{arena.FireDown, 200, 17}, []uint8{f, a, m})
	assert.Zero(t, in&^arena.Layout.Mask())
}

func TestBotHoldsThenChanges(t *testing.T) {
	b := arena.NewBot(3)
	changes, prev := 0, b.Next()
	for range 6000 {
		in := b.Next()
		if in != prev {
			changes++
		}
		prev = in
	}
	// Held for 3 to 30 frames: between 200 and 2000 changes in 6000 frames.
	assert.Greater(t, changes, 200)
	assert.Less(t, changes, 2000)
}

func TestNewErrors(t *testing.T) {
	a, err := savestate.New(128)
	require.NoError(t, err)
	_, err = arena.New(a, 0, 1)
	assert.Error(t, err)
	_, err = arena.New(a, 2, 1)
	assert.ErrorIs(t, err, savestate.ErrFull)
}

// counter is a sound.Backend that counts what it is asked to do.
type counter struct {
	plays map[sound.Category]int
	ids   map[sound.ID]int
	stops int
}

func (c *counter) Play(_ sound.Voice, s sound.Sound)   { c.plays[s.Category]++; c.ids[s.ID&^0xff]++ }
func (c *counter) Stop(sound.Voice)                    { c.stops++ }
func (c *counter) FadeOut(sound.Voice, time.Duration)  {}
func (c *counter) SetVolume(sound.Voice, sound.Volume) {}

// TestSounds plays a match offline with a ledger: shots and explosions are
// Event sounds, one per shot and hit; engines are Stateful loops that start
// and stop with the thrust.
func TestSounds(t *testing.T) {
	a, err := savestate.New(64 << 10)
	require.NoError(t, err)
	g, err := arena.New(a, 4, 5)
	require.NoError(t, err)
	c := &counter{plays: map[sound.Category]int{}, ids: map[sound.ID]int{}}
	l, err := sound.NewLedger(sound.Config{Backend: c})
	require.NoError(t, err)
	g.SetLedger(l)
	l.Play(arena.SoundMusic, sound.FullVolume)
	bots := []*arena.Bot{arena.NewBot(1), arena.NewBot(2), arena.NewBot(3), arena.NewBot(4)}
	in := make([]rollback.PlayerInput, 4)
	for f := range 3600 {
		for i, b := range bots {
			in[i] = rollback.PlayerInput{Input: b.Next(), Status: rollback.Confirmed}
		}
		l.Simulating(rollback.Frame(f))
		g.Step(rollback.Frame(f), in)
		l.Update(g.Scene())
	}
	w := g.World()
	assert.Equal(t, 1, c.plays[sound.Global])
	assert.Equal(t, int(w.Hits), c.ids[arena.SoundExplosion], "one explosion per hit")
	assert.Greater(t, c.ids[arena.SoundShot], 100, "ships fire")
	assert.Equal(t, c.plays[sound.Event], c.ids[arena.SoundShot]+c.ids[arena.SoundExplosion])
	assert.Greater(t, c.ids[arena.SoundThrust], 20, "engines start")
	assert.Greater(t, c.stops, 20, "and stop")
	assert.Zero(t, l.Stats().Repeats+l.Stats().Faded, "offline, nothing is re-simulated")
}

// TestStepPartial: a partial step moves ships and shots part of the way a
// full step would, and otherwise runs the same logic: a ship whose cooldown
// is over fires in it too.
func TestStepPartial(t *testing.T) {
	a, err := savestate.New(64 << 10)
	require.NoError(t, err)
	g, err := arena.New(a, 2, 5)
	require.NoError(t, err)
	in := []rollback.PlayerInput{{Input: arena.Pack(arena.FireRight, 0, 255)}, {Input: arena.Pack(0, 64, 255)}}
	for f := range 24 {
		g.Step(rollback.Frame(f), in)
	}
	in[0].Input = arena.Pack(arena.FireLeft, 0, 255) // would fire now: cooldown is over
	before := *g.World()
	g.StepPartial(24, in, 0.5)
	half := *g.World()
	*g.World() = before
	g.Step(24, in)
	full := *g.World()
	for i := range 2 {
		dx := full.Ships[i].X.Sub(before.Ships[i].X).Raw() // in ulps
		hx := half.Ships[i].X.Sub(before.Ships[i].X).Raw() // in ulps
		assert.InDelta(t, float64(dx)/2, float64(hx), 2, "ship %d moves half as far in x", i)
		dy := full.Ships[i].Y.Sub(before.Ships[i].Y).Raw() // in ulps
		hy := half.Ships[i].Y.Sub(before.Ships[i].Y).Raw() // in ulps
		assert.InDelta(t, float64(dy)/2, float64(hy), 2, "ship %d moves half as far in y", i)
	}
	live := func(w arena.World) (n int) {
		for _, s := range w.Shots {
			if s.Live {
				n++
			}
		}
		return n
	}
	assert.Greater(t, live(full), live(before))
	assert.Equal(t, live(full), live(half), "the partial step fires as the full one does")
}
