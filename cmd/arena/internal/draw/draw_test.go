package draw

import (
	"math"
	"testing"

	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/fixed"
	"github.com/rewindgg/rewind/rollback"
)

// busy is a world in play: 4 ships, one of them exploding, and 20 shots.
func busy() *arena.World {
	w := &arena.World{Players: 4}
	for i := range 4 {
		s := &w.Ships[i]
		s.X, s.Y = fixed.FromInt(100+200*i), fixed.FromInt(300+50*i)
		s.VX, s.VY = fixed.FromInt(3), fixed.FromInt(-2)
		s.Alive = i != 3
		s.RespawnIn = 50
		s.Score, s.Deaths = int32(10*i), int32(i)
	}
	for j := range 20 {
		sh := &w.Shots[j]
		sh.Live, sh.Owner = true, int8(j%4)
		sh.X, sh.Y = fixed.FromInt(40*j), fixed.FromInt(1000-45*j)
	}
	return w
}

var overlay = play.Overlay{Peers: 1, Rollbacks: 12, Depth: 3, TickFrames: 4}.Lines()

var ghosts = []play.Ghost{{Ship: 1, X: 500, Y: 500, Age: 3}}

// frame builds what the game's Draw builds for w, with a ghost and the
// overlay when full.
func frame(f *Frame, w *arena.World, full bool) {
	f.Reset()
	f.World(w)
	f.Scores(w, []rollback.PlayerID{0})
	f.Marks(w, []rollback.PlayerID{0})
	if !full {
		return
	}
	f.Ghosts(ghosts)
	for i, line := range overlay {
		f.Text(line, 8, ScreenSize-16*(5-i), white)
	}
}

// BenchmarkFrame builds a busy frame's vertices with the overlay shown
// (what Draw does before its one DrawTriangles call); BenchmarkFrameEmpty,
// the floor, a world with nothing in it: the border alone. Neither
// allocates.
func BenchmarkFrame(b *testing.B)      { benchFrame(b, busy(), true) }
func BenchmarkFrameEmpty(b *testing.B) { benchFrame(b, &arena.World{}, false) }

func benchFrame(b *testing.B, w *arena.World, full bool) {
	f := NewFrame()
	frame(f, w, full)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		frame(f, w, full)
	}
	b.ReportMetric(float64(f.Len()), "quads/frame")
}

func TestFrameAllocatesNothing(t *testing.T) {
	f, w := NewFrame(), busy()
	frame(f, w, true)
	if n := testing.AllocsPerRun(20, func() { frame(f, w, true) }); n != 0 {
		t.Errorf("a frame allocates %v times", n)
	}
}

// Reset empties the frame: the next one starts with no quads (the game
// paints the background under each frame itself).
func TestReset(t *testing.T) {
	f := NewFrame()
	f.World(busy())
	if f.Len() == 0 {
		t.Fatal("a busy world added no quads")
	}
	f.Reset()
	if f.Len() != 0 || len(f.Vertices()) != 0 || len(f.Indices()) != 0 {
		t.Fatalf("after Reset: %d quads, %d vertices, %d indices", f.Len(), len(f.Vertices()), len(f.Indices()))
	}
}

// Each pre-rendered shape covers its area: the alpha summed over a disc's
// sprite is πr² (a ring's, π(outer²−inner²)) within a few percent.
func TestShapes(t *testing.T) {
	l := newLayout()
	pix := l.pixels()
	for _, sh := range l.shapes {
		sum := 0.0
		for y := int(sh.s.y); y < int(sh.s.y+sh.s.h); y++ {
			for x := int(sh.s.x); x < int(sh.s.x+sh.s.w); x++ {
				sum += float64(pix[4*(y*l.w+x)+3]) / 255
			}
		}
		want := math.Pi * (sh.outer*sh.outer - sh.inner*sh.inner)
		if math.Abs(sum-want) > 0.05*want+1 {
			t.Errorf("shape %.1f–%.1f covers %.1f pixels, want %.1f", sh.inner, sh.outer, sum, want)
		}
	}
	if l.h > 1024 {
		t.Errorf("the atlas is %d×%d", l.w, l.h)
	}
}

// BenchmarkAtlas renders the atlas's shapes: once a game, at its first
// frame.
func BenchmarkAtlas(b *testing.B) {
	l := newLayout()
	b.ReportAllocs()
	for range b.N {
		l.pixels()
	}
}
