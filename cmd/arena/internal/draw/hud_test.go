package draw

import (
	"testing"

	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/rollback"
)

func TestClock(t *testing.T) {
	for frames, want := range map[int]string{0: "0:00", 1: "0:01", 59: "0:01", 60: "0:01", 61: "0:02", 3600: "1:00", 5399: "1:30"} {
		if got := string(appendClock(nil, frames)); got != want {
			t.Errorf("appendClock(%d) = %q, want %q", frames, got, want)
		}
	}
}

func TestWrap(t *testing.T) {
	got := wrap("the match settings differ: the host's match lasts 1200 frames", 20)
	for _, l := range got {
		if len(l) > 20 {
			t.Errorf("line %q longer than 20", l)
		}
	}
	if len(got) != 4 {
		t.Errorf("wrap: %q", got)
	}
}

// TestScreens: the title, the round-end screen and the status lines
// draw something, and the HUD of a match in play allocates nothing.
func TestScreens(t *testing.T) {
	f := NewFrame()
	f.Reset()
	f.Title(Menu{Items: []string{"Play against 3 bots", "Host", "Join by address: 127.0.0.1_"}, Selected: 2,
		Hints: []string{"keys"}, Error: "nobody answered", Status: []string{"hosting"}})
	if f.Len() < 50 {
		t.Errorf("the title is %d quads", f.Len())
	}
	f.Reset()
	rd := play.Round{Number: 2, Over: 1, Start: 600, End: 4200, Winner: 1, Scores: [8]int32{3, 10, 1, 0}, Deaths: [8]int32{2, 1, 5, 0}}
	f.RoundEnd(RoundEnd{Round: rd, Players: 4, Local: []rollback.PlayerID{1}, RematchIn: 300, Leave: "Esc: leave"})
	if f.Len() < 100 {
		t.Errorf("the round-end screen is %d quads", f.Len())
	}
	n := f.Len()
	f.Reset()
	rd.Final = 1
	f.RoundEnd(RoundEnd{Round: rd, Players: 4, Local: []rollback.PlayerID{1}, ClosesIn: 200, Close: "Esc: close now"})
	if f.Len() < 100 || f.Len() == n {
		t.Errorf("the match's standings are %d quads (the round-end screen's %d): want the heading and the lines changed", f.Len(), n)
	}
	w := busy()
	local := []rollback.PlayerID{0}
	status := []string{"waiting for a slow peer"}
	allocs := testing.AllocsPerRun(100, func() {
		f.Reset()
		f.World(w)
		f.Marks(w, local)
		f.Scores(w, local)
		f.Timer(play.Round{Number: 1}, play.DefaultRules, 1234)
		f.Status(status)
	})
	if allocs != 0 {
		t.Errorf("the HUD allocates %v times a frame", allocs)
	}
}
