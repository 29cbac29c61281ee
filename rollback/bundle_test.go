package rollback_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/desync/bundle"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// systemsGame is a deterministic game of three marked systems, "move",
// "hit" and "score"; with fault set, its "hit" system flips a bit of the
// state on frame faultAt, every time it simulates it: one machine's
// injected desync, inside a named system.
type systemsGame struct {
	a       *savestate.Arena
	h       savestate.Handle[[4]uint64]
	marks   *desync.Marks
	fault   bool
	faultAt rollback.Frame
}

func newSystemsGame(t testing.TB) *systemsGame {
	a, err := savestate.New(4096)
	require.NoError(t, err)
	h, err := savestate.Alloc[[4]uint64](a)
	require.NoError(t, err)
	return &systemsGame{a: a, h: h, marks: &desync.Marks{}}
}

func (g *systemsGame) Step(f rollback.Frame, in []rollback.PlayerInput) {
	st := g.h.Get(g.a)
	for i, p := range in {
		st[i] = st[i]*3 + uint64(p.Input)
	}
	g.marks.Mark("move")
	st[2] += st[0] ^ st[1]
	if g.fault && f == g.faultAt {
		st[2] ^= 1 << 7
	}
	g.marks.Mark("hit")
	st[3] += st[2] & 0xff
	g.marks.Mark("score")
}

// bundleMatch plays two machines of games gs over a clean simulated
// network, checksums every 10 frames, each with Config.Bundle, until
// both handed a bundle (or ticks run out), and returns them.
func bundleMatch(t *testing.T, gs [2]rollback.Game, marks [2]*desync.Marks, arenas [2]*savestate.Arena, every, ticks int) [2]*bundle.Bundle {
	t.Helper()
	nw, err := netsim.New(2, 1, netsim.Profile{})
	require.NoError(t, err)
	var ss [2]*rollback.Session
	var got [2]*bundle.Bundle
	for i := range ss {
		ss[i], err = rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
			Layout: rollback.Layout{4}, State: arenas[i], Game: gs[i], Transport: nw.Endpoint(i), Marks: marks[i],
			Clock: nw.Now, Rand: match.SeededRand(1, i), SessionID: 5, ChecksumEvery: every,
			Bundle: func(b *bundle.Bundle) {
				if got[i] == nil {
					got[i] = b
				}
			}})
		require.NoError(t, err)
	}
	for tick := 0; tick < ticks && (got[0] == nil || got[1] == nil); tick++ {
		for i, s := range ss {
			offer(t, s, rollback.PlayerID(i), rollback.Input((tick*(i+1))%16))
			if _, err := s.Advance(); err != nil {
				var de *desync.Error
				require.True(t, errors.As(err, &de), "unexpected error %v", err)
			}
		}
		nw.Advance(match.Tick)
	}
	require.NotNil(t, got[0], "machine 0 handed a bundle")
	require.NotNil(t, got[1], "machine 1 handed a bundle")
	return got
}

// TestBundleNamesSystem: one machine's game flips a bit inside its "hit"
// system at a frame; both machines' bundles, written and read back, set
// side by side name the frame after it (the first state that differs),
// "hit", and the field; each bundle is bounded, and replaying each with
// its game reproduces its checksums and the same divergence. Checksums
// every 10 frames, and every 300 (a span longer than the input ring: the
// inputs are kept as they become final).
func TestBundleNamesSystem(t *testing.T) {
	for _, tc := range []struct{ every, fault int }{{10, 25}, {300, 350}} {
		t.Run(fmt.Sprintf("every-%d", tc.every), func(t *testing.T) { testBundleNamesSystem(t, tc.every, tc.fault) })
	}
}

func testBundleNamesSystem(t *testing.T, every, fault int) {
	var gs [2]*systemsGame
	for i := range gs {
		gs[i] = newSystemsGame(t)
	}
	gs[1].fault, gs[1].faultAt = true, rollback.Frame(fault)
	bs := bundleMatch(t, [2]rollback.Game{gs[0], gs[1]}, [2]*desync.Marks{gs[0].marks, gs[1].marks}, [2]*savestate.Arena{gs[0].a, gs[1].a}, every, 3*every+fault)
	var read [2]*bundle.Bundle
	for i, b := range bs {
		require.Empty(t, b.Note, "machine %d", i)
		assert.Equal(t, int32(fault/every*every+every), b.Report.Frame, "the first checksum frame after the fault")
		assert.Equal(t, int32(fault/every*every), b.Start, "the last checksum frame both agreed on")
		assert.Equal(t, every, b.Frames())
		assert.True(t, b.Reproduced(), "machine %d's re-simulation reached its own checksum", i)
		enc := b.Encode()
		assert.Less(t, len(enc), 1024+every*64, "a bundle of a 32-byte state: about 60 bytes a frame")
		var err error
		read[i], err = bundle.Read(enc)
		require.NoError(t, err)
		assert.Equal(t, enc, read[i].Encode(), "read back whole")
		assert.Equal(t, b.Sums, read[i].Sums)
	}
	d := bundle.Compare(read[0], read[1], gs[0].a, 0)
	assert.Equal(t, int32(fault+1), d.Frame, "%+v", d)
	assert.Equal(t, "hit", d.System, "%+v", d)
	require.NotEmpty(t, d.Fields)
	assert.Equal(t, "[4]uint64[2]", d.Fields[0].Path)

	// Replay: each bundle, re-simulated offline with its machine's game,
	// gives the same checksums, traces and divergence.
	var replayed [2]*bundle.Bundle
	for i, b := range read {
		g := newSystemsGame(t)
		g.fault, g.faultAt = gs[i].fault, gs[i].faultAt
		r, err := bundle.Read(b.Encode())
		require.NoError(t, err)
		require.NoError(t, r.Resimulate(g.a, stepOf(g), g.marks))
		assert.Equal(t, b.Sums, r.Sums, "machine %d's replay", i)
		assert.Equal(t, b.Traces, r.Traces)
		replayed[i] = r
	}
	assert.Equal(t, d, bundle.Compare(replayed[0], replayed[1], gs[0].a, 0))
}

// stepOf adapts a game to bundle.Step.
func stepOf(g rollback.Game) bundle.Step {
	var in []rollback.PlayerInput
	return func(f int32, inputs []uint64, st []uint8) {
		in = in[:0]
		for j := range inputs {
			in = append(in, rollback.PlayerInput{Input: rollback.Input(inputs[j]), Status: rollback.InputStatus(st[j])})
		}
		g.Step(rollback.Frame(f), in)
	}
}

// TestBundleMapOrder: a real non-determinism, not an injected bit — the
// game ranges over a Go map in its "ai" system from frame 50 on. Each
// machine's bundle re-simulates from frame 50, the last agreed; set side
// by side they name "ai" (the re-simulations iterate the map in orders of
// their own: the first frame is 51 unless two orders happened to agree).
func TestBundleMapOrder(t *testing.T) {
	var gs [2]*mapGame
	for i := range gs {
		gs[i] = newMapGame(t)
		gs[i].marks = &desync.Marks{}
	}
	bs := bundleMatch(t, [2]rollback.Game{gs[0], gs[1]}, [2]*desync.Marks{gs[0].marks, gs[1].marks}, [2]*savestate.Arena{gs[0].a, gs[1].a}, 10, 600)
	for i, b := range bs {
		require.Empty(t, b.Note, "machine %d", i)
		assert.Equal(t, int32(50), b.Start)
	}
	d := bundle.Compare(bs[0], bs[1], gs[0].a, 0)
	assert.GreaterOrEqual(t, d.Frame, int32(51), "%+v", d)
	assert.Less(t, d.Frame, int32(61), "%+v", d)
	assert.Equal(t, "ai", d.System, "%+v", d)
	require.NotEmpty(t, d.Fields)
	assert.Equal(t, "[4]uint64[3]", d.Fields[0].Path)
}

// TestBundleDamaged: a bundle cut short or with a byte flipped anywhere
// is refused with an error naming an offset, never read as another
// bundle, and never panics.
func TestBundleDamaged(t *testing.T) {
	gs := [2]*systemsGame{newSystemsGame(t), newSystemsGame(t)}
	gs[1].fault, gs[1].faultAt = true, 25
	bs := bundleMatch(t, [2]rollback.Game{gs[0], gs[1]}, [2]*desync.Marks{gs[0].marks, gs[1].marks}, [2]*savestate.Arena{gs[0].a, gs[1].a}, 10, 600)
	enc := bs[0].Encode()
	for i := range enc {
		bad := append([]byte(nil), enc...)
		bad[i] ^= 0x10
		_, err := bundle.Read(bad)
		require.Error(t, err, "byte %d flipped", i)
		require.ErrorIs(t, err, bundle.ErrFormat)
		require.Regexp(t, `offset \d+`, err.Error())
	}
	for n := range len(enc) {
		_, err := bundle.Read(enc[:n])
		require.ErrorIs(t, err, bundle.ErrFormat, "cut at %d", n)
		require.Regexp(t, `offset \d+`, err.Error())
	}
	bad := append([]byte(nil), enc...)
	bad[len(bundle.Magic)+20] ^= 1
	_, err := bundle.Read(bad)
	assert.Regexp(t, `^bundle: section "header" at offset 21: corrupt: its checksum does not match its contents$`, err.Error())
}
