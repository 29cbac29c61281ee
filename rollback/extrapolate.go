package rollback

import (
	"fmt"
	"math"
)

// Extrapolate renders the game fraction of a frame ahead of its last
// simulated frame, for displays whose refresh rate is not a multiple of the
// simulation rate. It forks the arena (savestate.Arena.Fork: one copy of the
// state into a scratch region), tells the Observer that it is
// extrapolating (so that no sound plays), steps the fork by fraction of the
// next frame with the latest inputs, calls render, and returns to the live
// state, which is bit-for-bit what it was: the extrapolated state is never
// restored over anything, it is simply left behind.
//
// The latest inputs are those the next frame would be simulated with now:
// local inputs already queued for it (otherwise the last frame's), and the
// remote inputs received or predicted. render reads the state through its
// handles as usual; it must not advance the session: Advance, Idle,
// Extrapolate and Close return [ErrExtrapolate] from inside it. The game must
// implement [PartialStepper]. A fraction of 0 just calls render.
//
// Extrapolate allocates nothing after its first call.
func (s *Session) Extrapolate(fraction float64, render func()) error {
	if err := s.usable(); err != nil {
		return err
	}
	ps, ok := s.app.game.(PartialStepper)
	switch {
	case !ok:
		return fmt.Errorf("%w: the game does not implement PartialStepper", ErrExtrapolate)
	case render == nil:
		return fmt.Errorf("%w: nil render", ErrExtrapolate)
	case math.IsNaN(fraction) || fraction < 0 || fraction >= 1:
		return fmt.Errorf("%w: fraction %v outside [0, 1)", ErrExtrapolate, fraction)
	case fraction == 0:
		s.app.render(render)
		return nil
	}
	if err := s.snaps.arena.Fork(); err != nil {
		return fmt.Errorf("%w: %v", ErrExtrapolate, err)
	}
	s.app.extrapolating(true)
	defer func() {
		s.snaps.arena.Leave()
		s.app.extrapolating(false)
	}()
	f, in := s.frame, s.io.stepIn[:s.roster.players]
	s.inputs.inputsFor(f, in)
	for _, p := range s.roster.local {
		if s.inputs.next[p] <= f && !s.inputs.absent(p, f) {
			// Not queued yet (no input lag): repeat the last frame's.
			in[p] = PlayerInput{Status: Confirmed}
			if f > 0 {
				in[p].Input = s.inputs.usedAt(f-1, p)
			}
		}
	}
	ps.StepPartial(f, in, fraction)
	s.app.render(render)
	return nil
}
