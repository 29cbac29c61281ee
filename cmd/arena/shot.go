//go:build !js

package main

import (
	"image"
	"image/png"
	"os"

	"github.com/hajimehoshi/ebiten/v2"
)

// save writes the screen as a PNG at path (the play test checks what it
// shows). It is written beside path and renamed to it, so that path
// appears whole: a reader that sees it can decode it.
func (g *game) save(screen *ebiten.Image, path string) {
	g.paint(screen)
	b := screen.Bounds()
	img := image.NewRGBA(b)
	screen.ReadPixels(img.Pix)
	tmp := path + ".part"
	f, err := os.Create(tmp)
	if err == nil {
		err = png.Encode(f, img)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, path)
		} else {
			_ = os.Remove(tmp)
		}
	}
	if err != nil {
		g.err = err
	}
	g.shots = append(g.shots, path)
}
