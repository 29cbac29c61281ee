package play

import (
	"strings"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// progress is a Progress set by hand.
type progress struct {
	done, over, left bool
	peers            int
	round            Round
}

func (p *progress) Done() bool                  { return p.done }
func (p *progress) RoundOver() bool             { return p.over }
func (p *progress) Round() Round                { return p.round }
func (p *progress) Peers() int                  { return p.peers }
func (p *progress) AllLeft(rollback.Frame) bool { return p.left }

// TestFlow: Escape in a match goes to the title; every other machine
// gone at the round-end screen shows "your opponent left" for
// NoticeTicks, then the title; the frame limit's standings show for
// FinalTicks (Escape cuts them short), then the game ends.
func TestFlow(t *testing.T) {
	var f Flow
	p := &progress{peers: 1}
	if n := f.Update(p, false); n != Stay || f.Alone() != "" {
		t.Fatalf("playing: %v, alone %q", n, f.Alone())
	}
	if n := f.Update(p, true); n != Title || f.Notice != "You left the match." {
		t.Fatalf("Escape while playing: %v, notice %q", n, f.Notice)
	}

	// The peer left while the round-end screen showed.
	f = Flow{}
	p.over, p.left = true, true
	for k := range NoticeTicks {
		if n := f.Update(p, false); n != Stay || f.Alone() != "your opponent left the match" {
			t.Fatalf("tick %d of the notice: %v, alone %q", k, n, f.Alone())
		}
	}
	if n := f.Update(p, false); n != Title || !strings.Contains(f.Notice, "your opponent left the match") {
		t.Fatalf("after the notice: %v, notice %q", n, f.Notice)
	}
	f = Flow{}
	p.peers = 3
	if f.Update(p, false); f.Alone() != "the other players left the match" {
		t.Errorf("three peers gone: alone %q", f.Alone())
	}
	// Gone before the round ended (AllLeft false): the match goes on.
	f = Flow{}
	p.left = false
	for range 2 * NoticeTicks {
		if n := f.Update(p, false); n != Stay || f.Alone() != "" {
			t.Fatalf("a peer gone before the round ended: %v, alone %q", n, f.Alone())
		}
	}

	// The frame limit: the standings, then the end.
	f = Flow{}
	p.done, p.left = true, true
	for k := range FinalTicks {
		if n := f.Update(p, false); n != Stay {
			t.Fatalf("tick %d of the standings: %v", k, n)
		}
		if final, left := f.Final(); !final || left != FinalTicks-k-1 {
			t.Fatalf("tick %d of the standings: Final() = %v, %d", k, final, left)
		}
	}
	if n := f.Update(p, false); n != Close {
		t.Fatalf("after the standings: %v, want Close", n)
	}
	f = Flow{}
	f.Update(p, false)
	if n := f.Update(p, true); n != Close {
		t.Fatalf("Escape on the standings: %v, want Close", n)
	}
}

// TestOpponentLeaves: two machines over a 40 ms link play rounds of 2
// seconds without a frame limit, each with its Flow. In "at the
// round-end screen" the person at machine 0 leaves (Escape) once the
// first round-end screen shows, and closes its match: machine 1 shows
// "your opponent left the match" and then goes to the title screen,
// before the rematch would have started. In "mid-round" machine 0
// leaves at frame 60: machine 1 plays on through the round-end screen
// and the rematch, never sent to the title.
func TestOpponentLeaves(t *testing.T) {
	for _, tc := range []struct {
		name    string
		leaveAt func(m *Match) bool
		title   bool
	}{
		{"at the round-end screen", (*Match).RoundOver, true},
		{"mid-round", func(m *Match) bool { return m.Frame() >= 60 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nw, ms := twoMatches(t, func(c *Config) { c.Humans, c.Rules = 1, Rules{RoundFrames: 120} })
			var flows [2]Flow
			gone, sawAlone := false, false
			for tick := 0; ; tick++ {
				if tick > 120+RematchFrames+NoticeTicks+120 {
					if tc.title {
						t.Fatalf("machine 1 not sent to the title after %d ticks: frame %d, round %+v, alone %q", tick, ms[1].Frame(), ms[1].Round(), flows[1].Alone())
					}
					break
				}
				if !gone {
					switch n := flows[0].Update(ms[0], tc.leaveAt(ms[0])); n {
					case Title:
						gone = true
						if err := ms[0].Close(); err != nil {
							t.Fatal(err)
						}
					case Stay:
						if err := ms[0].Tick([]rollback.Input{0}); err != nil {
							t.Fatal(err)
						}
					default:
						t.Fatalf("machine 0: %v", n)
					}
				}
				n := flows[1].Update(ms[1], false)
				sawAlone = sawAlone || flows[1].Alone() == "your opponent left the match"
				if n == Title {
					if !tc.title {
						t.Fatalf("machine 1 sent to the title (%q) though its peer left mid-round", flows[1].Notice)
					}
					if !sawAlone || !strings.Contains(flows[1].Notice, "your opponent left") || !ms[1].RoundOver() {
						t.Fatalf("machine 1 went to the title: notice %q, the status line shown %v, round-end screen %v", flows[1].Notice, sawAlone, ms[1].RoundOver())
					}
					return
				}
				if n != Stay {
					t.Fatalf("machine 1: %v", n)
				}
				if err := ms[1].Tick([]rollback.Input{0}); err != nil {
					t.Fatal(err)
				}
				nw.Advance(Tick)
			}
			if !gone || len(ms[1].Left()) != 1 {
				t.Fatalf("machine 0 left %v; machine 1 lists %v as gone: the test proves nothing", gone, ms[1].Left())
			}
			if rd := ms[1].Round(); rd.Number < 2 || sawAlone {
				t.Errorf("machine 1 in round %d, the opponent-left line shown %v: want the rematch played, no line", rd.Number, sawAlone)
			}
		})
	}
}

// TestFinalStandings: the frame limit ends the match's round (Final),
// judged like the timer, on every machine alike: in a round in play (no
// timer), on a round-end screen nobody asked the rematch of (the limit
// comes first: no rematch), and in the round after a rematch.
func TestFinalStandings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rules   Rules
		rematch bool
		number  int32
		end     int32
	}{
		{"in play", Rules{}, false, 1, 300},
		{"on the round-end screen", Rules{RoundFrames: 200}, false, 1, 200},
		{"after a rematch", Rules{RoundFrames: 120}, true, 3, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, _ := pairWith(t, netsim.Profile{Latency: 30 * time.Millisecond}, 300, Keys{Right: true, FireUp: true}.Input(), tc.rules,
				func(m *Match) {
					if tc.rematch && m.RoundOver() {
						m.Rematch()
					}
				})
			a, b := ms[0].Round(), ms[1].Round()
			if ms[0].Hash() != ms[1].Hash() || a != b {
				t.Fatalf("the machines end differently: %+v and %+v", a, b)
			}
			if a.Final != 1 || a.Over != 1 || a.Number != tc.number || a.End != tc.end || !ms[0].RoundOver() {
				t.Fatalf("at the frame limit: %+v (round-end screen %v), want round %d over and final, ended on %d", a, ms[0].RoundOver(), tc.number, tc.end)
			}
			order := a.Order(4)
			if a.Winner >= 0 && int(a.Winner) != order[0] {
				t.Errorf("winner P%d, but the standings put P%d first: %+v", a.Winner+1, order[0]+1, a)
			}
			t.Logf("%s", a.Standings(4, []rollback.PlayerID{0}))
		})
	}
}

func TestStandings(t *testing.T) {
	rd := Round{Number: 3, Over: 1, Winner: 1, Scores: [8]int32{5, 7, 2}, Deaths: [8]int32{1, 0, 4}}
	if got, want := rd.Standings(3, []rollback.PlayerID{0}), "P2 won round 3 with 7 points. Scores: P2 7, P1 (you) 5, P3 2."; got != want {
		t.Errorf("a win:\n got %q\nwant %q", got, want)
	}
	rd = Round{Number: 2, Over: 1, Winner: -1, Scores: [8]int32{1, 4, 4, 1}, Deaths: [8]int32{0, 2, 2, 0}}
	if got, want := rd.Standings(4, []rollback.PlayerID{2}), "Round 2 was a draw: P2 and P3 (you) tied at 4 points. Scores: P2 4, P3 (you) 4, P1 1, P4 1."; got != want {
		t.Errorf("a draw:\n got %q\nwant %q", got, want)
	}
	rd = Round{Number: 1, Over: 1, Winner: 0, Scores: [8]int32{1}}
	if got, want := rd.Standings(2, nil), "P1 won round 1 with 1 point. Scores: P1 1, P2 0."; got != want {
		t.Errorf("one point:\n got %q\nwant %q", got, want)
	}
	// The match's last round: the match's result by rounds won first.
	rd = Round{Number: 4, Over: 1, Final: 1, Winner: -1, Scores: [8]int32{0, 0, 0}, Wins: [8]int32{1, 2, 0}}
	if got, want := rd.Standings(3, []rollback.PlayerID{0}), "P2 won the match with 2 rounds of 4 (P1 (you) 1, P3 0). Round 4 was a draw: P1 (you), P2 and P3 tied at 0 points. Scores: P1 (you) 0, P2 0, P3 0."; got != want {
		t.Errorf("the match's end:\n got %q\nwant %q", got, want)
	}
	rd = Round{Number: 3, Over: 1, Final: 1, Winner: 0, Scores: [8]int32{3, 1}, Wins: [8]int32{1, 1, 0}}
	if got, want := rd.Standings(3, nil), "The match was a draw: P1 and P2 won 1 round each of 3. P1 won round 3 with 3 points. Scores: P1 3, P2 1, P3 0."; got != want {
		t.Errorf("a drawn match:\n got %q\nwant %q", got, want)
	}
	rd = Round{Number: 1, Over: 1, Final: 1, Winner: -1, Scores: [8]int32{2, 2}}
	if got, want := rd.Standings(2, nil), "The match was a draw: P1 and P2 tied at 2 points. Scores: P1 2, P2 2."; got != want {
		t.Errorf("a match of one round:\n got %q\nwant %q", got, want)
	}
}
