//go:build js

package main

import "github.com/hajimehoshi/ebiten/v2"

// save does nothing in a browser: there are no files to write (and no
// -screenshot or -shots to ask for one).
func (g *game) save(*ebiten.Image, string) {}
