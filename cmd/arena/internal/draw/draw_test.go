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

// The background is painted over every quad of the frame before.
func TestReset(t *testing.T) {
	f := NewFrame()
	if !f.Reset() {
		t.Fatal("the first frame does not ask for the screen to be filled")
	}
	f.World(busy())
	drawn := append([]box(nil), f.cur...)
	if f.Reset() {
		t.Fatal("the second frame asks for the screen to be filled")
	}
	if f.Len() != len(drawn) || len(f.cur) != 0 {
		t.Fatalf("%d quads after Reset for %d boxes drawn (%d boxes noted)", f.Len(), len(drawn), len(f.cur))
	}
	for k, b := range drawn {
		v := f.vs[4*k:]
		if v[0].DstX != b.x0 || v[0].DstY != b.y0 || v[3].DstX != b.x1 || v[3].DstY != b.y1 {
			t.Errorf("erasing quad %d is %v–%v, drawn box %+v", k, v[0], v[3], b)
		}
		if v[0].ColorA != 1 {
			t.Errorf("erasing quad %d is not opaque", k)
		}
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
