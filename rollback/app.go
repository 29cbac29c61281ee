package rollback

// app is the game as a session or a spectator calls it: each Game.Step,
// told first to the Observer when it watches; the steps it is told are
// not news (Extrapolating); and the game's render function, during which
// the calls that would change the session are refused (errInRender).
type app struct {
	game      Game
	obs       Observer // nil: none
	rendering bool     // inside render
}

// step simulates frame f with in; the observer hears of it when observed.
func (a *app) step(f Frame, in []PlayerInput, observed bool) {
	if a.obs != nil && observed {
		a.obs.Simulating(f)
	}
	a.game.Step(f, in)
}

// extrapolating tells the observer that the steps until the next call
// with false are not news (on), or that they are over.
func (a *app) extrapolating(on bool) {
	if a.obs != nil {
		a.obs.Extrapolating(on)
	}
}

// render calls the game's render function f.
func (a *app) render(f func()) {
	a.rendering = true
	defer func() { a.rendering = false }()
	f()
}
