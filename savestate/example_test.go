package savestate_test

import (
	"fmt"

	"github.com/rewindgg/rewind/savestate"
)

// Ship is game state: pointer-free, so it can live in an arena.
type Ship struct {
	X, Y  int32
	Alive bool
}

// A game allocates its state in the arena once; a snapshot is a copy of
// the whole arena, and a handle sees whatever the arena holds now.
func Example() {
	a, err := savestate.New(1 << 10)
	if err != nil {
		panic(err)
	}
	ship, err := savestate.Alloc[Ship](a)
	if err != nil {
		panic(err)
	}
	ship.Get(a).X = 10
	if err := a.Save(0); err != nil { // snapshot 0: X is 10
		panic(err)
	}
	ship.Get(a).X = 99
	if err := a.Restore(0); err != nil {
		panic(err)
	}
	fmt.Println("X after restore:", ship.Get(a).X)
	fmt.Println("field at its offset:", a.FieldPath(ship.Offset()))
	// Output:
	// X after restore: 10
	// field at its offset: savestate_test.Ship.X
}
