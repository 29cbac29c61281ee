package determinism

import (
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// testWorld is the test game's whole state.
type testWorld struct {
	Frame int64
	Wells [2]testWell
	Sum   float64
}

type testWell struct{ X, Mass float64 }

// testGame is a small game for the package's tests: each player's input
// bit 0 doubles the mass of its well, which moves by its mass every frame.
// hidden, when set, keeps part of its state outside the arena (a
// rollback does not restore it), which the sync test must catch.
type testGame struct{ hidden bool }

var testGames = []Game{testGame{}}

func (g testGame) Name() string {
	if g.hidden {
		return "hidden"
	}
	return "test"
}

func (testGame) Layout() rollback.Layout { return rollback.Layout{4} }

func (g testGame) New(a *savestate.Arena, players int, seed uint64) (rollback.Game, error) {
	h, err := savestate.Alloc[testWorld](a)
	if err != nil {
		return nil, err
	}
	h.Get(a).Sum = float64(seed % 64)
	var outside int64
	return rollback.GameFunc(func(f rollback.Frame, in []rollback.PlayerInput) {
		w := h.Get(a)
		w.Frame++
		for p := range w.Wells {
			w.Wells[p].Mass = 1
			if p < len(in) && in[p].Input&1 != 0 {
				w.Wells[p].Mass = 2
			}
			w.Wells[p].X += w.Wells[p].Mass / 4
			w.Sum += w.Wells[p].X
		}
		if g.hidden {
			outside++
			w.Sum += float64(outside)
		}
	}), nil
}
