package play

import (
	"fmt"
	"slices"
	"strings"

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
	// Final is 1 when the match's frame limit (Config.Frames) ended it,
	// or came while its round-end screen showed: its result is the
	// match's standings, and no rematch follows.
	Final  int32
	Scores [arena.MaxShips]int32 // the ships' scores and deaths when the round ended
	Deaths [arena.MaxShips]int32
	// Wins are the rounds each ship has won in the match so far (this
	// one included once it ended): the match's standings.
	Wins [arena.MaxShips]int32
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
	end   int32                  // the match's frame limit (0: none)
	quiet []rollback.PlayerInput // the inputs of a round-end frame: the ships drift and fall silent
}

var (
	_ rollback.Game           = (*rounds)(nil)
	_ rollback.PartialStepper = (*rounds)(nil)
)

func newRounds(a *savestate.Arena, g *arena.Game, rules Rules, frames int) (*rounds, error) {
	h, err := savestate.Alloc[Round](a)
	if err != nil {
		return nil, err
	}
	r := &rounds{g: g, a: a, round: h, rules: rules, end: int32(frames), quiet: make([]rollback.PlayerInput, arena.MaxShips)}
	*r.Round() = Round{Number: 1, Winner: -1}
	return r, nil
}

// Round is the live round.
func (r *rounds) Round() *Round { return r.round.Get(r.a) }

// Step runs the arena's frame f and the round's rules: the round ends on
// the score target, the timer or the match's last frame; on the
// round-end screen the ships drift without input, and the next round
// starts when every player asked for it (Ready) or RematchFrames later,
// with the scores back at zero — unless the match's last frame came
// first: the round's result is then the match's (Final).
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
	if r.last(int32(f) + 1) {
		rd.Final = 1
		return
	}
	all := uint32(1)<<w.Players - 1
	if rd.Ready&all == all || int32(f)+1-rd.End >= RematchFrames {
		*rd = Round{Number: rd.Number + 1, Start: int32(f) + 1, Winner: -1, Wins: rd.Wins}
		for i := range w.Ships {
			w.Ships[i].Score, w.Ships[i].Deaths = 0, 0
		}
		for j := range w.Shots {
			w.Shots[j].Live = false
		}
	}
}

// last reports whether next is the match's frame limit: the frame after
// its last.
func (r *rounds) last(next int32) bool { return r.end > 0 && next >= r.end }

// judge ends the round at frame next (the frame after the one just
// simulated) if a ship reached the target, the timer ran out, or the
// match's frames did (Final).
func (r *rounds) judge(rd *Round, w *arena.World, next int32) {
	reached := false
	for i := range int(w.Players) {
		if r.rules.Target > 0 && w.Ships[i].Score >= int32(r.rules.Target) {
			reached = true
		}
	}
	final := r.last(next)
	if !reached && !final && (r.rules.RoundFrames == 0 || next-rd.Start < int32(r.rules.RoundFrames)) {
		return
	}
	if final {
		rd.Final = 1
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
	if rd.Winner >= 0 {
		rd.Wins[rd.Winner]++
	}
}

// MatchWinner is the ship that won the most rounds of the match so far,
// or -1 when two or more share the most (or none won any).
func (rd Round) MatchWinner(players int) int {
	best, tie := -1, false
	for i := range min(max(players, 0), arena.MaxShips) {
		switch {
		case best < 0 || rd.Wins[i] > rd.Wins[best]:
			best, tie = i, false
		case rd.Wins[i] == rd.Wins[best]:
			tie = true
		}
	}
	if best < 0 || tie || rd.Wins[best] == 0 {
		return -1
	}
	return best
}

// StepPartial extrapolates like the arena does, with the round-end
// screen's silent inputs.
func (r *rounds) StepPartial(f rollback.Frame, in []rollback.PlayerInput, fraction float64) {
	if r.Round().Over != 0 {
		in = r.quiet[:len(in)]
	}
	r.g.StepPartial(f, in, fraction)
}

// Order is the ships of the round's result, best first: most points,
// then fewest deaths, then by number.
func (rd Round) Order(players int) []int {
	order := make([]int, min(max(players, 0), arena.MaxShips))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if d := rd.Scores[b] - rd.Scores[a]; d != 0 {
			return int(d)
		}
		return int(rd.Deaths[a] - rd.Deaths[b])
	})
	return order
}

// Standings says in sentences how the round ended, naming this machine's
// people's ships "(you)": "P2 won round 3 with 7 points. Scores: P2 7, P1
// (you) 5, P3 2." or "Round 3 was a draw: P1 and P2 tied at 4 points.
// Scores: ...". The match's last round (Final) is preceded by the
// match's result, by rounds won: "P1 won the match with 2 rounds of 4
// (P2 1, P3 0). " or "The match was a draw: P1 and P2 won 1 round each
// of 3. "; a match of one round is that round: "P1 won the match with 3
// points. Scores: ...".
func (rd Round) Standings(players int, local []rollback.PlayerID) string {
	name := func(i int) string {
		if slices.Contains(local, rollback.PlayerID(i)) {
			return fmt.Sprintf("P%d (you)", i+1)
		}
		return fmt.Sprintf("P%d", i+1)
	}
	order := rd.Order(players)
	var b strings.Builder
	// A match of one round: the round is the match.
	round := fmt.Sprintf("round %d", rd.Number)
	if rd.Final != 0 && rd.Number == 1 {
		round = "the match"
	}
	if rd.Final != 0 && rd.Number > 1 && len(order) > 0 {
		byWins := slices.Clone(order)
		slices.SortStableFunc(byWins, func(a, b int) int { return int(rd.Wins[b] - rd.Wins[a]) })
		if w := rd.MatchWinner(players); w >= 0 {
			fmt.Fprintf(&b, "%s won the match with %d %s of %d (", name(w), rd.Wins[w], plural(int(rd.Wins[w]), "round"), rd.Number)
			k := 0
			for _, i := range byWins {
				if i != w {
					if k++; k > 1 {
						b.WriteString(", ")
					}
					fmt.Fprintf(&b, "%s %d", name(i), rd.Wins[i])
				}
			}
			b.WriteString("). ")
		} else {
			var top []string
			for _, i := range byWins {
				if rd.Wins[i] == rd.Wins[byWins[0]] {
					top = append(top, name(i))
				}
			}
			if rd.Wins[byWins[0]] == 0 {
				b.WriteString("The match was a draw: no ship won a round. ")
			} else {
				fmt.Fprintf(&b, "The match was a draw: %s won %d %s each of %d. ", and(top), rd.Wins[byWins[0]], plural(int(rd.Wins[byWins[0]]), "round"), rd.Number)
			}
		}
	}
	switch {
	case len(order) == 0:
		fmt.Fprintf(&b, "Round %d ended without ships.", rd.Number)
		return b.String()
	case rd.Winner >= 0 && int(rd.Winner) < len(order):
		w := int(rd.Winner)
		fmt.Fprintf(&b, "%s won %s with %d %s.", name(w), round, rd.Scores[w], plural(int(rd.Scores[w]), "point"))
	default:
		var tied []string
		for _, i := range order {
			if rd.Scores[i] == rd.Scores[order[0]] && rd.Deaths[i] == rd.Deaths[order[0]] {
				tied = append(tied, name(i))
			}
		}
		fmt.Fprintf(&b, "%s was a draw: %s tied at %d %s.", strings.ToUpper(round[:1])+round[1:], and(tied), rd.Scores[order[0]], plural(int(rd.Scores[order[0]]), "point"))
	}
	b.WriteString(" Scores: ")
	for k, i := range order {
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", name(i), rd.Scores[i])
	}
	b.WriteString(".")
	return b.String()
}

// and joins names as a sentence does: "P1, P2 and P3".
func and(names []string) string {
	if k := len(names); k > 1 {
		return strings.Join(names[:k-1], ", ") + " and " + names[k-1]
	}
	return strings.Join(names, "")
}

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
