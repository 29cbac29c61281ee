package main

import (
	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/ebitenutil"

	"github.com/rewindgg/rewind/cmd/arena/internal/draw"
)

// atlas is draw's atlas as an image, made once a game, and what sends a
// draw.Frame to the screen: the background in one pass of a shader that
// samples no texture, then the frame's quads in one DrawTriangles call.
type atlas struct {
	img   *ebiten.Image
	solid *ebiten.Shader  // the vertices' colour, no texture
	vs    []ebiten.Vertex // the frame's vertices, copied: reused
	bg    [4]ebiten.Vertex
	op    ebiten.DrawTrianglesOptions
	bgOp  ebiten.DrawTrianglesShaderOptions
}

// solidKage paints its triangles in their vertices' colour. Under a
// software GL a pass over the whole screen costs by what its shader
// does per pixel: this one fetches no texel (measured under Xvfb: ~0.7 ms
// of CPU for the window's 768×768 pixels, against ~2 ms for
// Image.Fill, which samples a white texture, and ~5 ms for
// copying an image of the screen's size).
const solidKage = `//kage:unit pixels
package main

func Fragment(dst vec4, src vec2, color vec4) vec4 {
	return color
}
`

var bgIndices = []uint16{0, 1, 2, 1, 3, 2}

func newAtlas() *atlas {
	w, h, pix, glyphs, gx, gy := draw.Atlas()
	img := ebiten.NewImage(w, h)
	img.WritePixels(pix)
	ebitenutil.DebugPrintAt(img, glyphs, gx, gy)
	solid, err := ebiten.NewShader([]byte(solidKage))
	if err != nil {
		panic(err) // a constant program: it compiles
	}
	a := &atlas{img: img, solid: solid}
	a.op.Filter = ebiten.FilterLinear // sprites at fractional positions, rotated lines
	a.op.ColorScaleMode = ebiten.ColorScaleModePremultipliedAlpha
	a.bgOp.Blend = ebiten.BlendCopy
	return a
}

// dst is what a frame is drawn on: the offscreen image Draw gets, or
// the final screen (ebiten.FinalScreen).
type dst interface {
	DrawTriangles([]ebiten.Vertex, []uint16, *ebiten.Image, *ebiten.DrawTrianglesOptions)
	DrawTrianglesShader([]ebiten.Vertex, []uint16, *ebiten.Shader, *ebiten.DrawTrianglesShaderOptions)
}

// draw draws f onto d, the background first, with geoM placing the
// screen's draw.ScreenSize square on d.
func (a *atlas) draw(d dst, f *draw.Frame, geoM ebiten.GeoM) {
	c := draw.Background
	r, g, b := float32(c.R)/255, float32(c.G)/255, float32(c.B)/255
	for k := range a.bg {
		x, y := float64(k%2*draw.ScreenSize), float64(k/2*draw.ScreenSize)
		dx, dy := geoM.Apply(x, y)
		a.bg[k] = ebiten.Vertex{DstX: float32(dx), DstY: float32(dy), ColorR: r, ColorG: g, ColorB: b, ColorA: 1}
	}
	d.DrawTrianglesShader(a.bg[:], bgIndices, a.solid, &a.bgOp)
	ga, gb, gc, gd, tx, ty := float32(geoM.Element(0, 0)), float32(geoM.Element(0, 1)), float32(geoM.Element(1, 0)),
		float32(geoM.Element(1, 1)), float32(geoM.Element(0, 2)), float32(geoM.Element(1, 2))
	a.vs = a.vs[:0]
	for _, v := range f.Vertices() {
		a.vs = append(a.vs, ebiten.Vertex{DstX: ga*v.DstX + gb*v.DstY + tx, DstY: gc*v.DstX + gd*v.DstY + ty, SrcX: v.SrcX, SrcY: v.SrcY,
			ColorR: v.ColorR, ColorG: v.ColorG, ColorB: v.ColorB, ColorA: v.ColorA})
	}
	if is := f.Indices(); len(is) > 0 {
		d.DrawTriangles(a.vs, is, a.img, &a.op)
	}
}
