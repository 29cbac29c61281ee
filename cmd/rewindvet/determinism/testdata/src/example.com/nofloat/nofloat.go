// Package nofloat is a fixed-point game for -nofloat: any floating-point
// value reachable from Step is reported, and nothing else is.
package nofloat

import "github.com/rewindgg/rewind/rollback"

type World struct {
	X int64
	F float64
}

type Game struct{ w World }

const scale = 2.5

func (g *Game) Step(f rollback.Frame, in []rollback.PlayerInput) { // want Step:"hazards\\(float floatconv float float\\)"
	g.w.X += int64(f)
	g.w.X += int64(scale * 4) // a constant: fine
	g.w.F += 1                // want `floating point \(float64\): -nofloat forbids floating point in the simulation; use fixed point`
	g.w.X += int64(half(3))   // want `floating point \(float64\)` `float-to-integer conversion int64\(half\(3\)\)`
	g.w.X = mid(g.w.X, 7)
}

func half(x int64) float64 {
	return float64(x) / 2 // want `floating point \(float64\)`
}

func mid(a, b int64) int64 { return (a + b) / 2 }

// setup is not reachable from Step: its floats are fine.
func setup() float64 { return scale * 3 }
