// Package testgame is the tiny deterministic game of the rollback
// package's tests: one running total per player kept in the arena, and,
// when asked, a log of every frame simulated with its inputs.
package testgame

import (
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// Counter adds every input (and the frame number) to its player's total
// in the arena: any wrong or missing input, or a frame simulated from the
// wrong state, changes the totals.
type Counter struct {
	Arena *savestate.Arena
	State savestate.Handle[[128]uint64]
	// Leak also adds, from frame 30 on, a counter kept outside the arena,
	// which a rollback does not restore: the game is then not
	// deterministic (for the sync test to catch).
	Leak bool
	// Record logs every simulated frame and its inputs in Frames and Inputs.
	Record bool
	Frames []rollback.Frame
	Inputs [][]rollback.Input

	n uint64
}

// NewCounter returns a Counter in a new arena of size bytes.
func NewCounter(size int) (*Counter, error) {
	a, err := savestate.New(size)
	if err != nil {
		return nil, err
	}
	h, err := savestate.Alloc[[128]uint64](a)
	if err != nil {
		return nil, err
	}
	return &Counter{Arena: a, State: h}, nil
}

// Step simulates frame f.
func (g *Counter) Step(f rollback.Frame, in []rollback.PlayerInput) {
	st := g.State.Get(g.Arena)
	for i, p := range in {
		st[i] += uint64(p.Input) + uint64(f)
	}
	if g.Leak {
		g.n++
		if f >= 30 {
			st[100] += g.n
		}
	}
	if g.Record {
		g.Frames = append(g.Frames, f)
		row := make([]rollback.Input, len(in))
		for i, p := range in {
			row[i] = p.Input
		}
		g.Inputs = append(g.Inputs, row)
	}
}

// Totals returns a copy of the players' totals.
func (g *Counter) Totals() [128]uint64 { return *g.State.Get(g.Arena) }
