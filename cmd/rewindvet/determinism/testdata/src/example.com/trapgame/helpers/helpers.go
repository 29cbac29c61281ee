// Package helpers is the trap game's library: easing curves, movers
// behind an interface and a sine table built in init. Its hazards reach
// the game through facts; the lines of the game that reach them are
// marked there.
package helpers

import (
	"math"
	"os"
	"time"
)

// Ease is an easing curve the game stores as a function value.
func Ease(t float64) float64 { return math.Pow(t, 2.2) }

// Linear is an easing curve without hazards.
func Linear(t float64) float64 { return t }

// Clamp is pure integer arithmetic.
func Clamp(v, lo, hi int32) int32 { return min(max(v, lo), hi) }

// Mover moves an entity; the game holds movers behind this interface.
type Mover interface {
	Move(x, y int32) (int32, int32)
}

// Drift moves by the wall clock.
type Drift struct{}

// Move reads the clock.
func (Drift) Move(x, y int32) (int32, int32) {
	return x + int32(time.Now().UnixNano()&3), y
}

// Step moves by one cell: harmless.
type Step struct{ DX, DY int32 }

// Move adds the step.
func (s Step) Move(x, y int32) (int32, int32) { return x + s.DX, y + s.DY }

// sinTable is filled in init with math.Sin, whose last bit differs
// between platforms.
var sinTable [64]float64

func init() {
	for i := range sinTable {
		sinTable[i] = math.Sin(float64(i) * (2 * math.Pi / 64))
	}
}

// Sin looks the sine of a 64th of a turn up in the table.
func Sin(i int32) float64 { return sinTable[i&63] }

// squares is filled in init with integer arithmetic: harmless.
var squares [64]int32

func init() {
	for i := range squares {
		squares[i] = int32(i * i)
	}
}

// Square looks a square up.
func Square(i int32) int32 { return squares[i&63] }

// NewDrift returns a mover behind the interface: the game cannot see
// its type.
func NewDrift() Mover { return Drift{} }

// Cell converts a position to a cell: a float-to-integer conversion.
func Cell(x float64) int32 { return int32(x / 16) }

// Difficulty reads the environment: for setting a match up, never
// called from Step.
func Difficulty() int { return len(os.Getenv("DIFFICULTY")) }

// NewCounter returns a counter whose count is a captured variable: state
// outside the arena.
func NewCounter() func() int32 {
	n := int32(0)
	return func() int32 {
		n++
		return n
	}
}

// Scale returns a pure function.
func Scale(k int64) func(int64) int64 {
	return func(x int64) int64 { return x * k }
}

// MoveAll moves every mover: it calls the game's own types' methods.
func MoveAll(ms []Mover, x, y int32) (int32, int32) {
	for _, m := range ms {
		x, y = m.Move(x, y)
	}
	return x, y
}
