package play

import (
	"fmt"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// Rules are a match's rounds: how long one lasts and the score that wins
// it. Every machine of a match must play by the same rules (and frames):
// they are part of the simulation. Settings carries them with the match
// length, for the lobbies to hand out and compare.
type Rules struct {
	// RoundFrames is the round timer: a round ends this many frames after
	// it starts (0: no timer).
	RoundFrames int
	// Target is the score target: a round ends on the frame a ship
	// reaches it (0: no target).
	Target int
}

// DefaultRules are the arena's: rounds of a minute, first to 10.
var DefaultRules = Rules{RoundFrames: 60 * 60, Target: 10}

// RematchFrames is how long the round-end screen waits for every player
// to ask for the rematch (Enter) before the next round starts anyway: a
// player who left, or who is away, cannot hold the others.
const RematchFrames = 10 * 60

// MaxRoundFrames bounds a round timer: a day at 60 frames a second.
const MaxRoundFrames = 24 * 60 * 60 * 60

// Check reports rules no match can be played by.
func (r Rules) Check() error {
	switch {
	case r.RoundFrames < 0 || r.RoundFrames > MaxRoundFrames:
		return fmt.Errorf("a round of %d frames (want 0 to %d)", r.RoundFrames, MaxRoundFrames)
	case r.Target < 0 || r.Target > 255:
		return fmt.Errorf("a score target of %d (want 0 to 255)", r.Target)
	}
	return nil
}

// String names the rules as a person reads them: "rounds of 60 s, first
// to 10".
func (r Rules) String() string {
	timer := "rounds without a timer"
	if r.RoundFrames > 0 {
		timer = fmt.Sprintf("rounds of %s", seconds(r.RoundFrames))
	}
	if r.Target == 0 {
		return timer + ", no score target"
	}
	return fmt.Sprintf("%s, first to %d", timer, r.Target)
}

// seconds writes a frame count as seconds at 60 Hz.
func seconds(frames int) string {
	if frames%60 == 0 {
		return fmt.Sprintf("%d s", frames/60)
	}
	return fmt.Sprintf("%.2f s", float64(frames)/60)
}

// Settings are everything the machines of a match must agree on beyond
// who plays which ship: the match length and the rules. The host's (or a
// rendezvous match's creator's) travel to the others in the lobby.
type Settings struct {
	Frames int // the match ends after this many frames (0: when the players leave)
	Rules
}

// String names the settings with the flags that set them.
func (s Settings) String() string {
	length := "an endless match"
	if s.Frames > 0 {
		length = fmt.Sprintf("a match of %d frames", s.Frames)
	}
	return fmt.Sprintf("%s, %v", length, s.Rules)
}

// Round is the round in progress, part of the game state (it rolls back
// with the world): its number, whether it is over, and the result.
type Round struct {
	Number int32 // from 1
	Over   int32 // 1 once the round has ended, until the rematch starts
	Start  int32 // the frame the round started on
	End    int32 // the frame it ended on (with Over)
	Winner int32 // the winning ship, or -1 for a draw
	Ready  uint32
	Scores [arena.MaxShips]int32 // the ships' scores and deaths when the round ended
	Deaths [arena.MaxShips]int32
}

// readyFire is the fire field of the rematch input: the arena's ships
// fire in directions 1 to 4 and ignore the rest.
const readyFire = 7

// Ready is the input that asks for the rematch on the round-end screen.
var Ready = arena.Pack(readyFire, 0, 0)

// rounds is the game the session steps: the arena, with rounds around it.
type rounds struct {
	g     *arena.Game
	a     *savestate.Arena
	round savestate.Handle[Round]
	rules Rules
	quiet []rollback.PlayerInput // the inputs of a round-end frame: the ships drift and fall silent
}

var (
	_ rollback.Game           = (*rounds)(nil)
	_ rollback.PartialStepper = (*rounds)(nil)
)

func newRounds(a *savestate.Arena, g *arena.Game, rules Rules) (*rounds, error) {
	h, err := savestate.Alloc[Round](a)
	if err != nil {
		return nil, err
	}
	r := &rounds{g: g, a: a, round: h, rules: rules, quiet: make([]rollback.PlayerInput, arena.MaxShips)}
	*r.Round() = Round{Number: 1, Winner: -1}
	return r, nil
}

// Round is the live round.
func (r *rounds) Round() *Round { return r.round.Get(r.a) }

// Step runs the arena's frame f and the round's rules: the round ends on
// the score target or the timer; on the round-end screen the ships drift
// without input, and the next round starts when every player asked for
// it (Ready) or RematchFrames later, with the scores back at zero.
func (r *rounds) Step(f rollback.Frame, in []rollback.PlayerInput) {
	rd := r.Round()
	w := r.g.World()
	if rd.Over == 0 {
		r.g.Step(f, in)
		r.judge(rd, w, int32(f)+1)
		return
	}
	r.g.Step(f, r.quiet[:len(in)])
	for i := range min(len(in), int(w.Players)) {
		if fire, _, _ := arena.Unpack(in[i].Input); fire == readyFire {
			rd.Ready |= 1 << i
		}
	}
	all := uint32(1)<<w.Players - 1
	if rd.Ready&all == all || int32(f)+1-rd.End >= RematchFrames {
		*rd = Round{Number: rd.Number + 1, Start: int32(f) + 1, Winner: -1}
		for i := range w.Ships {
			w.Ships[i].Score, w.Ships[i].Deaths = 0, 0
		}
		for j := range w.Shots {
			w.Shots[j].Live = false
		}
	}
}

// judge ends the round at frame next (the frame after the one just
// simulated) if a ship reached the target or the timer ran out.
func (r *rounds) judge(rd *Round, w *arena.World, next int32) {
	reached := false
	for i := range int(w.Players) {
		if r.rules.Target > 0 && w.Ships[i].Score >= int32(r.rules.Target) {
			reached = true
		}
	}
	if !reached && (r.rules.RoundFrames == 0 || next-rd.Start < int32(r.rules.RoundFrames)) {
		return
	}
	rd.Over, rd.End, rd.Winner = 1, next, -1
	best := -1
	for i := range int(w.Players) {
		s := &w.Ships[i]
		rd.Scores[i], rd.Deaths[i] = s.Score, s.Deaths
		switch {
		case best < 0 || s.Score > w.Ships[best].Score || s.Score == w.Ships[best].Score && s.Deaths < w.Ships[best].Deaths:
			best, rd.Winner = i, int32(i)
		case s.Score == w.Ships[best].Score && s.Deaths == w.Ships[best].Deaths:
			rd.Winner = -1 // a draw, unless a better ship follows
		}
	}
}

// StepPartial extrapolates like the arena does, with the round-end
// screen's silent inputs.
func (r *rounds) StepPartial(f rollback.Frame, in []rollback.PlayerInput, fraction float64) {
	if r.Round().Over != 0 {
		in = r.quiet[:len(in)]
	}
	r.g.StepPartial(f, in, fraction)
}
