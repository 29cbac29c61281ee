package arena_test

import (
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
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

func TestShipsMoveShootAndDie(t *testing.T) {
	_, w := play(t, 8, 3600, 1)
	assert.Positive(t, w.Hits, "ships hit each other in a minute of play")
	var deaths, score int32
	for _, s := range w.Ships {
		deaths += s.Deaths
		score += s.Score
		assert.GreaterOrEqual(t, s.X, int32(0))
		assert.Less(t, s.X, int32(arena.Size))
	}
	assert.Equal(t, w.Hits, deaths)
	assert.Equal(t, w.Hits, score)
}

func TestPackUnpack(t *testing.T) {
	in := arena.Pack(arena.FireDown, 200, 17)
	f, a, m := arena.Unpack(in)
	assert.Equal(t, []uint8{arena.FireDown, 200, 17}, []uint8{f, a, m})
	assert.Zero(t, uint64(in)&^arena.Layout.Mask())
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
