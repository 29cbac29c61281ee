package play

import "github.com/rewindgg/rewind/rollback"

// What the game loop does after Flow.Update.
type Next int

const (
	Stay  Next = iota // go on with the match (the round-end screen included)
	Title             // leave the match for the title screen; Flow.Notice says why
	Close             // the match is over and its standings were shown: end the game
)

// NoticeTicks is how long "your opponent left" shows over the round-end
// screen before the title screen: 3 seconds of 60 Hz ticks.
const NoticeTicks = 3 * 60

// FinalTicks is how long the match's standings show once its frame limit
// ended it (Config.Frames) before the game ends: 4 seconds.
const FinalTicks = 4 * 60

// Progress is what Flow reads of a match; *Match is one.
type Progress interface {
	Done() bool
	RoundOver() bool
	Round() Round
	Peers() int
	AllLeft(since rollback.Frame) bool
}

var _ Progress = (*Match)(nil)

// Flow is what comes after the rounds, outside the simulation (UI only,
// each machine its own): leaving the match (Escape) returns to the title
// screen; when every other machine left while a round-end screen showed
// (its players chose to leave rather than rematch), "your opponent left"
// shows for NoticeTicks, then the title; when the match's frame limit
// ended it, its standings show for FinalTicks (Escape cuts it short),
// then the game ends. A peer that leaves mid-round is the match's
// business: its ship flies on without input, and the match goes on.
type Flow struct {
	// Notice is what the title screen says after Title: why the match
	// ended ("Your opponent left the match.").
	Notice string
	alone  string // the status line while the notice shows
	held   int    // ticks the notice or the standings have shown
	final  bool
}

// Update is called once a tick (before the match's Tick) with whether
// the person pressed Escape since the last; it says what the game does
// next.
func (f *Flow) Update(m Progress, leave bool) Next {
	if m.Done() {
		if !f.final {
			f.final, f.held, f.alone = true, 0, ""
		}
		if f.held++; leave || f.held > FinalTicks {
			return Close
		}
		return Stay
	}
	if leave {
		f.Notice = "You left the match."
		return Title
	}
	if !m.RoundOver() || !m.AllLeft(rollback.Frame(m.Round().End)) {
		f.alone, f.held = "", 0
		return Stay
	}
	if f.alone == "" {
		f.alone = "the other players left the match"
		if m.Peers() == 1 {
			f.alone = "your opponent left the match"
		}
	}
	if f.held++; f.held > NoticeTicks {
		f.Notice = "The match is over: " + f.alone + " at the round-end screen."
		return Title
	}
	return Stay
}

// Alone is the status line to show while every other machine has left
// at the round-end screen ("your opponent left the match"), or "".
func (f *Flow) Alone() string { return f.alone }

// Final reports whether the match's standings show (its frame limit
// ended it), and for how many more ticks.
func (f *Flow) Final() (final bool, ticksLeft int) {
	return f.final, max(FinalTicks-f.held, 0)
}
