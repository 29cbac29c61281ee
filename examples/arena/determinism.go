package arena

import (
	"github.com/rewindgg/rewind/determinism"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// Determinism returns the arena example as the determinism matrix plays it
// (package determinism; make determinism runs cmd/determinism with
// -game ./examples/arena): its replays are this package's (ReplayName,
// ReplayParams), its players its bots.
func Determinism() []determinism.Game { return []determinism.Game{matrixGame{}} }

// matrixGame is the arena as a determinism.Game and determinism.Bots.
type matrixGame struct{}

var (
	_ determinism.Game = matrixGame{}
	_ determinism.Bots = matrixGame{}
)

func (matrixGame) Name() string            { return ReplayName }
func (matrixGame) Layout() rollback.Layout { return Layout }

func (matrixGame) New(a *savestate.Arena, players int, seed uint64) (rollback.Game, error) {
	return New(a, players, seed)
}

func (matrixGame) Bot(p rollback.PlayerID, seed uint64) func() rollback.Input {
	return NewBot(seed + uint64(p)).Next
}
