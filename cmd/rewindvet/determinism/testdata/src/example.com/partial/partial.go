// Package partial is checked with -partial=false: StepPartial is not a
// root then.
package partial

import (
	"time"

	"github.com/rewindgg/rewind/rollback"
)

type Game struct{ t int64 }

func (g *Game) Step(f rollback.Frame, in []rollback.PlayerInput) { // want Step:"hazards\\(time\\)"
	g.t = time.Now().Unix() // want `time.Now`
}

func (g *Game) StepPartial(f rollback.Frame, in []rollback.PlayerInput, fraction float64) { // want StepPartial:"hazards\\(time\\)"
	g.t = time.Now().Unix()
}
