package play

import (
	"testing"
	"time"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// TestRounds: two machines play rounds of 5 seconds over a link of 60 ms
// each way; the person at machine 0 asks for every rematch as soon as
// the round-end screen shows, and the bots always do, so each next round
// starts at once. Both end on the same state, having played the same
// rounds, and every round-end screen showed a result on both.
func TestRounds(t *testing.T) {
	const frames, round = 1500, 300
	var ended [2]map[int32]Round
	ms, _ := pairWith(t, netsim.Profile{Latency: 60 * time.Millisecond}, frames, Keys{Right: true, FireUp: true}.Input(),
		Rules{RoundFrames: round}, func(m *Match) {
			k := m.cfg.Humans ^ 1 // machine 0 has the human
			if ended[k] == nil {
				ended[k] = map[int32]Round{}
			}
			if m.RoundOver() {
				ended[k][m.Round().Number] = m.Round()
				m.Rematch()
			}
		})
	if ms[0].Hash() != ms[1].Hash() {
		t.Fatalf("hashes differ: %x and %x", ms[0].Hash(), ms[1].Hash())
	}
	rd := ms[0].Round()
	// Rounds of 300 frames and a rematch at most a few frames later each
	// (the round-end screen shows once the last frame is confirmed): the
	// fifth round runs at frame 1500.
	if rd.Number < 4 || rd.Number > 5 {
		t.Errorf("round %d at frame %d, want 4 or 5: the rematches did not start the rounds at once", rd.Number, ms[0].Frame())
	}
	for n := int32(1); n < rd.Number; n++ {
		a, b := ended[0][n], ended[1][n]
		a.Ready, b.Ready = 0, 0 // who asked so far, when each machine looked
		if a != b || a.Number != n || a.End != a.Start+round {
			t.Errorf("round %d ended as %+v on machine 0 and %+v on machine 1", n, a, b)
		}
	}
}

// TestRoundJudge: the round ends on the frame a ship reaches the target,
// the best score wins (fewer deaths breaking a tie), an exact tie is a
// draw, and the rematch comes RematchFrames later without a Ready.
func TestRoundJudge(t *testing.T) {
	a, err := savestate.New(64 << 10)
	if err != nil {
		t.Fatal(err)
	}
	g, err := arena.New(a, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRounds(a, g, Rules{Target: 3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := g.World()
	in := make([]rollback.PlayerInput, 3)
	set := func(scores, deaths [3]int32) {
		for i := range 3 {
			w.Ships[i].Score, w.Ships[i].Deaths = scores[i], deaths[i]
		}
	}
	set([3]int32{2, 2, 1}, [3]int32{0, 1, 0})
	r.Step(0, in)
	if r.Round().Over != 0 {
		t.Fatalf("over without a ship at the target: %+v", *r.Round())
	}
	set([3]int32{3, 3, 1}, [3]int32{2, 1, 0})
	r.Step(1, in)
	if rd := r.Round(); rd.Over != 1 || rd.End != 2 || rd.Winner != 1 || rd.Scores[0] != 3 || rd.Deaths[1] != 1 {
		t.Fatalf("at the target, ship 1 with fewer deaths: %+v", *rd)
	}
	for f := rollback.Frame(2); f < 2+RematchFrames-1; f++ {
		r.Step(f, in)
	}
	if r.Round().Over != 1 {
		t.Fatalf("the rematch came before RematchFrames: %+v", *r.Round())
	}
	r.Step(2+RematchFrames-1, in)
	if rd := r.Round(); rd.Over != 0 || rd.Number != 2 || rd.Start != 2+RematchFrames || w.Ships[0].Score != 0 || rd.Wins != [8]int32{0, 1} {
		t.Fatalf("no rematch RematchFrames after the end: %+v, ship 0 scored %d", *rd, w.Ships[0].Score)
	}
	// A draw: the same score and deaths at the top.
	r.rules = Rules{RoundFrames: 10}
	set([3]int32{1, 4, 4}, [3]int32{0, 2, 2})
	for f := rollback.Frame(2 + RematchFrames); r.Round().Over == 0; f++ {
		r.Step(f, in)
	}
	if rd := r.Round(); rd.Winner != -1 || rd.End != rd.Start+10 || rd.Wins != [8]int32{0, 1} {
		t.Fatalf("a tie at the top is a draw at the timer: %+v", *rd)
	}
	// Every player ready: the rematch at once.
	for i := range in {
		in[i].Input = Ready
	}
	r.Step(rollback.Frame(r.Round().End), in)
	if rd := r.Round(); rd.Over != 0 || rd.Number != 3 {
		t.Fatalf("every player ready: %+v", *rd)
	}
	// The frame limit: the round in play ends with it, judged (ship 2
	// ahead), and the match's standings are the rounds won.
	r.end = int32(r.Round().Start) + 5
	set([3]int32{0, 1, 2}, [3]int32{0, 0, 0})
	for f := rollback.Frame(r.Round().Start); f < rollback.Frame(r.end); f++ {
		r.Step(f, in)
	}
	if rd := r.Round(); rd.Over != 1 || rd.Final != 1 || rd.End != r.end || rd.Winner != 2 || rd.Wins != [8]int32{0, 1, 1} || rd.MatchWinner(3) != -1 {
		t.Fatalf("at the frame limit: %+v (match winner %d)", *rd, rd.MatchWinner(3))
	}
}
