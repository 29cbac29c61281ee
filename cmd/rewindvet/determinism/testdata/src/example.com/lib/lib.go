// Package lib is a library that the test game calls: its hazards reach the
// game through facts.
package lib

import (
	"math/rand"
	"time"

	"github.com/rewindgg/rewind/rollback"
)

var Counter int // want Counter:"written\\(lib.go:16\\)"

var Table = [2]int{1, 2}

func Bump() { Counter++ } // want Bump:"hazards\\(globalvar\\)"

func Shuffle(s []int) { // want Shuffle:"hazards\\(rand\\)"
	rand.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
}

func SortedKeys(m map[int]int) []int { return keys(m) } // want SortedKeys:"hazards\\(maprange\\)"

func keys(m map[int]int) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}

func Pure(x int) int { return x + 1 }

func Allowed() int64 {
	return time.Now().Unix() //rewind:allow only logged, never stored in the state
}

func Mul(a, b float64) float64 { return a * b } // want Mul:"returns a \\* b at lib.go:38"

// Base implements rollback.Game itself, so it is checked here too, and a
// game that embeds it is reported where it is declared.
type Base struct{}

func (Base) Step(f rollback.Frame, in []rollback.PlayerInput) { // want Step:"hazards\\(time\\)"
	_ = time.Now() // want `time.Now: the wall clock differs per machine and per re-simulation; count frames`
}
