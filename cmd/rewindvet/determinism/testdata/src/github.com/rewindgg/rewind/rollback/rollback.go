// Package rollback is a stub of github.com/rewindgg/rewind/rollback for the
// analyzer's tests: the types a game's Step sees.
package rollback

type Frame int32

type Input uint64

type InputStatus uint8

type PlayerInput struct {
	Input  Input
	Status InputStatus
}

type Game interface {
	Step(f Frame, in []PlayerInput)
}

type PartialStepper interface {
	StepPartial(f Frame, in []PlayerInput, fraction float64)
}

type GameFunc func(f Frame, in []PlayerInput)

func (g GameFunc) Step(f Frame, in []PlayerInput) { g(f, in) }

type PlayerID uint8

// Config is the part of the session's configuration the analyzer reads:
// the StandIn is checked like Step.
type Config struct {
	Players int
	StandIn func(f Frame, p PlayerID) Input
}
