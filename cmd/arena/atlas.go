package main

import (
	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/ebitenutil"

	"github.com/rewindgg/rewind/cmd/arena/internal/draw"
)

// atlas is draw's atlas as an image, made once a game, and what sends a
// draw.Frame to the screen in one DrawTriangles call.
type atlas struct {
	img *ebiten.Image
	vs  []ebiten.Vertex // the frame's vertices, copied: reused
	op  ebiten.DrawTrianglesOptions
}

func newAtlas() *atlas {
	w, h, pix, glyphs, gx, gy := draw.Atlas()
	img := ebiten.NewImage(w, h)
	img.WritePixels(pix)
	ebitenutil.DebugPrintAt(img, glyphs, gx, gy)
	a := &atlas{img: img}
	a.op.Filter = ebiten.FilterLinear // sprites at fractional positions, rotated lines
	a.op.ColorScaleMode = ebiten.ColorScaleModePremultipliedAlpha
	return a
}

// draw draws f onto dst.
func (a *atlas) draw(dst *ebiten.Image, f *draw.Frame) {
	a.vs = a.vs[:0]
	for _, v := range f.Vertices() {
		a.vs = append(a.vs, ebiten.Vertex{DstX: v.DstX, DstY: v.DstY, SrcX: v.SrcX, SrcY: v.SrcY,
			ColorR: v.ColorR, ColorG: v.ColorG, ColorB: v.ColorB, ColorA: v.ColorA})
	}
	if is := f.Indices(); len(is) > 0 {
		dst.DrawTriangles(a.vs, is, a.img, &a.op)
	}
}
