// Package predict guesses the inputs of remote players that have not arrived
// yet, so that a rollback session can keep simulating without waiting.
//
// A guess never has to be right: the session records the input it used for
// every frame and rolls back when the confirmed input differs. A better guess
// only means fewer and shallower rollbacks. [RepeatLast], the default, repeats
// the player's last confirmed input, which is exact for held buttons and close
// for analog sticks (the INVERSUS article's choice).
package predict

// Context is what a [Predictor] knows when it guesses one player's input for
// one frame. Inputs are the session's bit-packed input values.
type Context struct {
	Player    int    // the player whose input is guessed
	Frame     int32  // the frame being predicted
	Last      uint64 // the player's last confirmed input; 0 when none has arrived
	LastFrame int32  // the frame of Last; -1 when none has arrived
}

// Predictor guesses inputs. Predict must be a pure function of its argument:
// the session may ask for the same frame many times and during re-simulation,
// and expects the same answer each time.
type Predictor interface {
	Predict(c Context) uint64
}

// RepeatLast predicts that a player keeps doing what they last did.
type RepeatLast struct{}

// Predict returns c.Last.
func (RepeatLast) Predict(c Context) uint64 { return c.Last }

// Func adapts a function to the [Predictor] interface.
type Func func(c Context) uint64

// Predict returns f(c).
func (f Func) Predict(c Context) uint64 { return f(c) }

var (
	_ Predictor = RepeatLast{}
	_ Predictor = Func(nil)
)
