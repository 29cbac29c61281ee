// Package fix has fusable multiply-adds whose suggested fix converts the
// product.
package fix

import "github.com/rewindgg/rewind/rollback"

type Meters float64

type Game struct{ x, v, dt Meters }

func (g *Game) Step(f rollback.Frame, in []rollback.PlayerInput) { // want Step:"hazards\\(fma fma fma\\)"
	g.x = g.v*g.dt + g.x      // want `write Meters\(g.v\*g.dt\) \+ g.x`
	g.x -= g.v * g.dt         // want `g.x -= g.v \* g.dt: the compiler may fuse`
	g.x = g.x - -(g.v * g.dt) // want `write g.x - -\(Meters\(g.v \* g.dt\)\)`
}
