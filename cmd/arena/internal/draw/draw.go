// Package draw draws the arena with one DrawTriangles call a frame: every
// shape it shows (ship discs, shots, rings, the heading lines, the
// border, the score squares and the text) is a quad of one atlas image,
// made once. The discs and rings are pre-rendered there with antialiased
// edges (4×4 samples a pixel), tinted per vertex; rectangles and lines
// sample a white block and a line's cross-section; the text is
// Ebitengine's debug font (ebitenutil), copied into the atlas once.
//
// The vector package it replaces rebuilt each shape's path every frame
// and, for antialiasing, drew into an offscreen image twice the screen's
// size that was cleared and shrunk onto the screen each frame: under a
// software GL (Mesa's llvmpipe under Xvfb) those passes cost more than
// everything else a frame does. Building a frame's vertices allocates
// nothing once the buffers have grown (BenchmarkFrame).
package draw

import (
	"image/color"
	"math"

	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/fixed"
)

// ScreenSize is the window's side in pixels; the arena (1024 units) is
// scaled into it.
const ScreenSize = 768

// scale is pixels per unit (a variable: arena.Size is a fixed.Num, not a
// constant).
var scale = float32(ScreenSize) / float32(arena.Size.Int())

var (
	// Background is the screen's colour under everything.
	Background = color.RGBA{14, 16, 30, 255}
	border     = color.RGBA{60, 64, 100, 255}
	heading    = color.RGBA{190, 190, 205, 255} // not white: white is the shots' cores
	// ShipColors are the players' colours, by ship.
	ShipColors = [arena.MaxShips]color.RGBA{
		{255, 90, 90, 255}, {90, 170, 255, 255}, {120, 230, 110, 255}, {250, 210, 80, 255},
		{210, 120, 250, 255}, {90, 230, 220, 255}, {250, 150, 60, 255}, {235, 235, 235, 255},
	}
	white = color.RGBA{255, 255, 255, 255}
)

// The shapes' sizes, in pixels.
var (
	shipRadius = 12 * scale
)

const (
	shotRadius, shotCore = 4, 2
	ghostWidth           = 1.5
	// An explosion is a ring that grows and fades over half a second of
	// the respawn wait: explosionFrames rings, one a frame.
	explosionFrames = 30
	explosionWidth  = 3
	explosionGrowth = 2 // pixels of radius a frame
	lineWidth       = 2 // the heading line's (its profile in the atlas is made for it)
)

// Glyphs: the debug font's cells, for the printable ASCII characters.
const (
	glyphW, glyphH = 6, 16
	firstGlyph     = ' '
	lastGlyph      = '~'
)

// A sprite is a rectangle of the atlas; it is drawn centred on a point.
type sprite struct{ x, y, w, h float32 }

// layout is where everything is in the atlas.
type layout struct {
	w, h      int
	white     sprite // a block of opaque white: rectangles sample its centre
	line      sprite // a line's cross-section: transparent, white, white, transparent
	ship      sprite
	shot      sprite
	core      sprite
	ghost     sprite
	mark      sprite // the ring around this machine's ships
	explosion [explosionFrames]sprite
	glyphs    sprite // the font's cells from firstGlyph to lastGlyph in a row
	shapes    []shape
}

// A shape is a disc (inner 0) or a ring, pre-rendered into a sprite.
type shape struct {
	s            *sprite
	inner, outer float64
}

// pad is the transparent margin around each sprite: linear filtering
// reads one texel beyond the edge.
const pad = 2

// newLayout packs the sprites in rows (a shelf packer).
func newLayout() *layout {
	l := &layout{w: 1024}
	disc := func(s *sprite, inner, outer float64) {
		side := float32(2 * (int(math.Ceil(outer)) + pad))
		*s = sprite{w: side, h: side}
		l.shapes = append(l.shapes, shape{s, inner, outer})
	}
	ring := func(s *sprite, radius, width float64) { disc(s, radius-width/2, radius+width/2) }
	l.white = sprite{w: 4, h: 4}
	l.line = sprite{w: 3, h: 4}
	l.glyphs = sprite{w: glyphW * (lastGlyph - firstGlyph + 1), h: glyphH}
	disc(&l.ship, 0, float64(shipRadius))
	disc(&l.shot, 0, shotRadius)
	disc(&l.core, 0, shotCore)
	ring(&l.ghost, float64(shipRadius), ghostWidth)
	ring(&l.mark, float64(shipRadius)+7, 2)
	for t := range l.explosion {
		ring(&l.explosion[t], float64(shipRadius)+float64(t*explosionGrowth), explosionWidth)
	}
	all := []*sprite{&l.glyphs, &l.white, &l.line, &l.ship, &l.shot, &l.core, &l.ghost, &l.mark}
	for t := range l.explosion {
		all = append(all, &l.explosion[t])
	}
	x, y, row := 0, 0, 0
	for _, s := range all {
		if x+int(s.w) > l.w {
			x, y, row = 0, y+row+1, 0
		}
		s.x, s.y = float32(x), float32(y)
		x += int(s.w) + 1
		row = max(row, int(s.h))
	}
	l.h = y + row
	return l
}

// pixels renders the atlas's shapes (premultiplied RGBA, white with the
// shapes' coverage as alpha); the glyphs' cells are left transparent.
func (l *layout) pixels() []byte {
	pix := make([]byte, 4*l.w*l.h)
	set := func(x, y int, a float64) {
		v := uint8(math.Round(255 * a))
		i := 4 * (y*l.w + x)
		pix[i], pix[i+1], pix[i+2], pix[i+3] = v, v, v, v
	}
	for _, s := range []sprite{l.white, {l.line.x, l.line.y + 1, l.line.w, 2}} {
		for y := int(s.y); y < int(s.y+s.h); y++ {
			for x := int(s.x); x < int(s.x+s.w); x++ {
				set(x, y, 1)
			}
		}
	}
	const n = 4 // samples a side
	for _, sh := range l.shapes {
		s := sh.s
		c := float64(s.w) / 2
		in2, out2 := sh.inner*sh.inner, sh.outer*sh.outer
		for py := range int(s.h) {
			for px := range int(s.w) {
				in := 0
				for sy := range n {
					for sx := range n {
						dx := float64(px) + (float64(sx)+0.5)/n - c
						dy := float64(py) + (float64(sy)+0.5)/n - c
						if d2 := dx*dx + dy*dy; d2 <= out2 && d2 >= in2 {
							in++
						}
					}
				}
				if in > 0 {
					set(int(s.x)+px, int(s.y)+py, float64(in)/(n*n))
				}
			}
		}
	}
	return pix
}

// A Vertex is ebiten.Vertex's first eight fields: this package does not
// import Ebitengine, whose initialization needs a display (its tests and
// benchmarks run without one); the game copies them into its own.
type Vertex struct {
	DstX, DstY, SrcX, SrcY         float32
	ColorR, ColorG, ColorB, ColorA float32 // premultiplied (ebiten.ColorScaleModePremultipliedAlpha)
}

// Frame builds one frame's vertices and indices, for one DrawTriangles
// call with the atlas (Atlas) as its source, linear filtering, and
// premultiplied vertex colours, over the Background the game paints
// first.
type Frame struct {
	l   *layout
	vs  []Vertex
	is  []uint16
	num []byte // scratch for numbers
}

// NewFrame returns an empty frame.
func NewFrame() *Frame { return &Frame{l: layoutOnce()} }

var theLayout *layout

func layoutOnce() *layout {
	if theLayout == nil {
		theLayout = newLayout()
	}
	return theLayout
}

// Reset empties the frame for the next one, keeping its buffers.
func (f *Frame) Reset() { f.vs, f.is = f.vs[:0], f.is[:0] }

// Len is the number of quads in the frame.
func (f *Frame) Len() int { return len(f.is) / 6 }

// quad adds the rectangle (x0, y0)–(x1, y1) of the atlas to the frame
// with corners d[0] (top left), d[1] (top right), d[2] (bottom left) and
// d[3] (bottom right), tinted by c (a premultiplied colour, as
// color.RGBA holds it; like the vector package, a colour whose red, green
// or blue exceeds its alpha adds light).
func (f *Frame) quad(d [4][2]float32, x0, y0, x1, y1 float32, c color.RGBA) {
	r, g, b, a := float32(c.R)/255, float32(c.G)/255, float32(c.B)/255, float32(c.A)/255
	base := uint16(len(f.vs))
	src := [4][2]float32{{x0, y0}, {x1, y0}, {x0, y1}, {x1, y1}}
	for k := range 4 {
		f.vs = append(f.vs, Vertex{DstX: d[k][0], DstY: d[k][1], SrcX: src[k][0], SrcY: src[k][1],
			ColorR: r, ColorG: g, ColorB: b, ColorA: a})
	}
	f.is = append(f.is, base, base+1, base+2, base+1, base+3, base+2)
}

// sprite adds s centred on (x, y).
func (f *Frame) sprite(s sprite, x, y float32, c color.RGBA) {
	x0, y0 := x-s.w/2, y-s.h/2
	x1, y1 := x0+s.w, y0+s.h
	f.quad([4][2]float32{{x0, y0}, {x1, y0}, {x0, y1}, {x1, y1}}, s.x, s.y, s.x+s.w, s.y+s.h, c)
}

// Rect adds a filled rectangle (sharp edges, like the vector package's
// without antialiasing).
func (f *Frame) Rect(x, y, w, h float32, c color.RGBA) {
	cx, cy := f.l.white.x+f.l.white.w/2, f.l.white.y+f.l.white.h/2
	f.quad([4][2]float32{{x, y}, {x + w, y}, {x, y + h}, {x + w, y + h}}, cx, cy, cx, cy, c)
}

// line adds a line lineWidth wide from (x0, y0) to (x1, y1), its long
// edges antialiased (its cross-section is sampled linearly: half a pixel
// of fade either side).
func (f *Frame) line(x0, y0, x1, y1 float32, c color.RGBA) {
	dx, dy := x1-x0, y1-y0
	n := float32(math.Hypot(float64(dx), float64(dy)))
	if n == 0 {
		return
	}
	// The quad is the profile's height (4: a pixel beyond each edge).
	h := f.l.line.h / 2
	nx, ny := -dy/n*h, dx/n*h
	sx := f.l.line.x + f.l.line.w/2
	f.quad([4][2]float32{{x0 + nx, y0 + ny}, {x1 + nx, y1 + ny}, {x0 - nx, y0 - ny}, {x1 - nx, y1 - ny}},
		sx, f.l.line.y, sx, f.l.line.y+f.l.line.h, c)
}

// Text adds s in the debug font at (x, y), as ebitenutil.DebugPrintAt
// draws it; characters outside printable ASCII show as spaces.
func (f *Frame) Text(s string, x, y int, c color.RGBA) {
	for i := 0; i < len(s); i++ {
		f.glyph(s[i], x+1+glyphW*i, y, c)
	}
}

func (f *Frame) glyph(ch byte, x, y int, c color.RGBA) {
	if ch <= firstGlyph || ch > lastGlyph {
		return
	}
	g := f.l.glyphs
	sx := g.x + float32(glyphW*int(ch-firstGlyph))
	x0, y0 := float32(x), float32(y)
	x1, y1 := x0+glyphW, y0+glyphH
	f.quad([4][2]float32{{x0, y0}, {x1, y0}, {x0, y1}, {x1, y1}}, sx, g.y, sx+glyphW, g.y+glyphH, c)
}

func px(v fixed.Num) float32 { return float32(v.Float()) * scale }

// World adds the border, the shots, the ships and the explosions; it
// reads the world only.
func (f *Frame) World(w *arena.World) {
	const s, t = ScreenSize, 2 // the border's thickness
	f.Rect(0, 0, s, t, border)
	f.Rect(0, s-t, s, t, border)
	f.Rect(0, t, t, s-2*t, border)
	f.Rect(s-t, t, t, s-2*t, border)
	for j := range w.Shots {
		sh := &w.Shots[j]
		if !sh.Live {
			continue
		}
		x, y := px(sh.X), px(sh.Y)
		f.sprite(f.l.shot, x, y, ShipColors[sh.Owner])
		f.sprite(f.l.core, x, y, white)
	}
	for i := range int(w.Players) {
		s := &w.Ships[i]
		c := ShipColors[i]
		if !s.Alive {
			// The explosion: a ring that grows and fades.
			if t := max(60-int(s.RespawnIn), 0); t < explosionFrames {
				c.A = uint8(255 * (explosionFrames - t) / explosionFrames)
				f.sprite(f.l.explosion[t], px(s.X), px(s.Y), c)
			}
			continue
		}
		x, y := px(s.X), px(s.Y)
		f.sprite(f.l.ship, x, y, c)
		// A line along the velocity: where the ship is heading.
		f.line(x, y, x+px(s.VX)*6, y+px(s.VY)*6, heading)
	}
}

// Ghosts adds where the prediction had drawn ships before a correction
// moved them: rollback, made visible.
func (f *Frame) Ghosts(gs []play.Ghost) {
	for _, gh := range gs {
		c := ShipColors[gh.Ship]
		c.A = uint8(200 * (play.GhostFrames - gh.Age) / play.GhostFrames)
		f.sprite(f.l.ghost, float32(gh.X)*scale, float32(gh.Y)*scale, c)
	}
}

// Vertices and Indices are the frame's, for DrawTriangles.
func (f *Frame) Vertices() []Vertex { return f.vs }
func (f *Frame) Indices() []uint16  { return f.is }

// Atlas is the image every frame samples: its size, its pixels
// (premultiplied RGBA) but for the glyphs, and the text to draw at
// (glyphX, glyphY) with ebitenutil.DebugPrintAt to put the glyphs in.
func Atlas() (w, h int, pix []byte, glyphs string, glyphX, glyphY int) {
	l := layoutOnce()
	b := make([]byte, 0, lastGlyph-firstGlyph+1)
	for ch := byte(firstGlyph); ch <= lastGlyph; ch++ {
		b = append(b, ch)
	}
	// DebugPrintAt draws a string's first cell a pixel right of x.
	return l.w, l.h, l.pixels(), string(b), int(l.glyphs.x) - 1, int(l.glyphs.y)
}
