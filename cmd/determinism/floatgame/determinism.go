package floatgame

import (
	"github.com/rewindgg/rewind/determinism"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// Determinism returns the float game as the determinism matrix plays it,
// once per source of divergence alone and once with all of them: games
// named "floatgame/fma", "floatgame/sin", "floatgame/exp" and
// "floatgame/fma+sin+exp" (make determinism runs cmd/determinism with
// -game ./cmd/determinism/floatgame and -may-diverge floatgame/).
func Determinism() []determinism.Game {
	return []determinism.Game{matrixGame{ModeFMA}, matrixGame{ModeSin}, matrixGame{ModeExp}, matrixGame{ModeAll}}
}

// matrixGame is the float game in one mode as a determinism.Game and
// determinism.Bots.
type matrixGame struct{ mode Mode }

var (
	_ determinism.Game = matrixGame{}
	_ determinism.Bots = matrixGame{}
)

func (g matrixGame) Name() string          { return ReplayName + "/" + g.mode.String() }
func (matrixGame) Layout() rollback.Layout { return Layout }

func (g matrixGame) New(a *savestate.Arena, players int, seed uint64) (rollback.Game, error) {
	return New(a, players, g.mode, seed)
}

func (matrixGame) Bot(p rollback.PlayerID, seed uint64) func() rollback.Input {
	return NewBot(seed + uint64(p)).Next
}
