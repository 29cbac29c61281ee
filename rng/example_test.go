package rng_test

import (
	"fmt"

	"github.com/rewindgg/rewind/rng"
)

// A generator is a value in the game state. A snapshot copies it, and the
// copy draws what the original drew after the snapshot.
func Example() {
	type World struct {
		Frame int32
		Rand  rng.Rand
	}
	w := World{Rand: rng.New(1234567)}
	fmt.Println(w.Rand.Uint64()) // the first SplitMix64 output for seed 1234567

	snapshot := w // what a rollback session saves
	a, b := w.Rand.IntN(6)+1, w.Rand.IntN(6)+1
	w = snapshot // the rollback
	fmt.Println(a == w.Rand.IntN(6)+1 && b == w.Rand.IntN(6)+1)
	// Output:
	// 6457827717110365317
	// true
}
