// Package layout allocates states in the arena whose layouts differ
// between 32- and 64-bit platforms, and some whose layouts do not.
package layout

import (
	ss "github.com/rewindgg/rewind/savestate"
)

// A newcomer's World: an int is 4 bytes on 386 and arm, 8 on amd64,
// arm64 and wasm.
type World struct {
	Frame int32
	Count int
	X     float64
}

// Mixed: int64 after an int32 is at byte 4 on 386 and arm (aligned on
// 4 there), at 8 elsewhere.
type Mixed struct {
	A int32
	B int64
}

// Same everywhere: sized types, 64-bit fields first.
type Good struct {
	X, Y   float64
	Frame  int64
	Flags  [4]uint8
	Health int32
}

// Nested: the difference is inside an array of structs.
type Ship struct {
	ID  uint32
	Pos uintptr
}

type Fleet struct {
	Ships [8]Ship
}

// Tail: the same fields everywhere, but the size differs (trailing
// padding to int64's alignment on 64-bit platforms).
type Tail struct {
	T int64
	U int32
}

func setup(a *ss.Arena) {
	ss.Alloc[World](a) // want `World is laid out differently across platforms: layout.World.Count is at byte 4 \(4 bytes\) on 386 and arm, but at byte 8 \(8 bytes\) on amd64, arm64 and wasm`
	ss.Alloc[Mixed](a) // want `layout.Mixed.B is at byte 4 \(8 bytes\) on 386 and arm, but at byte 8 \(8 bytes\) on amd64, arm64 and wasm`
	ss.Alloc[Good](a)
	ss.Alloc[Fleet](a) // want `layout.Fleet.Ships\[0\].Pos is at byte 4 \(4 bytes\) on 386 and arm, but at byte 8 \(8 bytes\) on amd64, arm64 and wasm`
	ss.Alloc[Tail](a)  // want `Tail's size differs across platforms: 12 bytes on 386 and arm, but 16 bytes on amd64, arm64 and wasm`
	//rewind:allow this world only runs on 64-bit servers
	ss.Alloc[World](a)
}
