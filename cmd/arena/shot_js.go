//go:build js

package main

import "github.com/hajimehoshi/ebiten/v2"

// save does nothing in a browser: there are no files to write (and no
// -screenshot to ask for one).
func (g *game) save(*ebiten.Image) { g.shotPath = g.o.screenshot }
