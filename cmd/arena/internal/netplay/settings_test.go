package netplay

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/rtc"
	rdv "github.com/rewindgg/rewind/rtc/lobby"
)

// TestSettingsTravel: the creator's settings reach every other seat
// before its WebRTC signals, and the signals another seat sent first are
// given back, in order, to the dial that follows.
func TestSettingsTravel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sigs := rtc.MemorySignalers(3)
	if err := sigs[1].Send(ctx, 2, rdv.KindOffer, "first"); err != nil {
		t.Fatal(err)
	}
	if err := sigs[1].Send(ctx, 2, rdv.KindCandidate, "second"); err != nil {
		t.Fatal(err)
	}
	want := play.Settings{Frames: 3600, Rules: play.Rules{RoundFrames: 1800, Target: 7}}
	if err := SendSettings(ctx, sigs[0], 3, want); err != nil {
		t.Fatal(err)
	}
	for seat := 1; seat <= 2; seat++ {
		got, sig, err := ReceiveSettings(ctx, sigs[seat])
		if err != nil || got != want {
			t.Fatalf("seat %d received %+v, %v; want %+v", seat, got, err, want)
		}
		if seat == 2 {
			for _, data := range []string{"first", "second"} {
				if from, _, d, err := sig.Receive(ctx); err != nil || from != 1 || d != data {
					t.Fatalf("after the settings: from %d %q %v, want machine 1's %q", from, d, err, data)
				}
			}
		}
	}
	if _, ok := decodeSettings(settingsPrefix + "frames=-1 round=0 target=0"); ok {
		t.Error("negative frames accepted")
	}
	if _, ok := decodeSettings("candidate:1 1 udp 2130706431 127.0.0.1 5000 typ host"); ok {
		t.Error("a real candidate taken for settings")
	}
}

// TestAgree: a joiner plays the host's settings, unless it was given a
// different value, which is refused with both values named.
func TestAgree(t *testing.T) {
	host := play.Settings{Frames: 1200, Rules: play.Rules{RoundFrames: 600, Target: 10}}
	mine := play.Settings{Frames: 600, Rules: play.Rules{RoundFrames: 600, Target: 3}}
	if got, err := Agree(host, mine, Given{}); err != nil || got != host {
		t.Errorf("nothing given: %+v, %v; want the host's", got, err)
	}
	if got, err := Agree(host, mine, Given{Round: true}); err != nil || got != host {
		t.Errorf("the same round given: %+v, %v; want the host's", got, err)
	}
	_, err := Agree(host, mine, Given{Frames: true, Target: true})
	if err == nil {
		t.Fatal("different frames and target accepted")
	}
	for _, want := range []string{"-frames 1200 against 600", "a score of 10, this machine to 3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %q", err, want)
		}
	}
	t.Log(err)
}

// TestSentence: the rendezvous's refusals in words, still matching their
// sentinels; other errors unchanged.
func TestSentence(t *testing.T) {
	err := Sentence(&rdv.StatusError{Status: 429, Code: rdv.CodeRateLimited}, "https://example.com", "")
	if !errors.Is(err, rdv.ErrRateLimited) || !strings.Contains(err.Error(), "try again in a minute") {
		t.Errorf("rate limited: %v", err)
	}
	if err := Sentence(rdv.ErrLocked, "https://example.com", "ABC123"); !strings.HasPrefix(err.Error(), "match ABC123 refuses joins") {
		t.Errorf("locked: %v", err)
	}
	if err := Sentence(context.DeadlineExceeded, "https://example.com", ""); err != nil {
		t.Errorf("a timeout: %v, want nil (the caller words it)", err)
	}
}

// TestRefusal: a joiner that refuses the creator's settings tells it, and
// the creator's signaler ends with both machines' settings named.
func TestRefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sigs := rtc.MemorySignalers(2)
	ours := play.Settings{Frames: 1200, Rules: play.Rules{RoundFrames: 3600, Target: 10}}
	mine := play.Settings{Frames: 600, Rules: play.Rules{RoundFrames: 3600, Target: 3}}
	if err := SendRefusal(ctx, sigs[1], mine); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := WatchRefusals(sigs[0], ours).Receive(ctx)
	var re *RefusedError
	if !errors.As(err, &re) || re.Machine != 1 || re.Theirs != mine {
		t.Fatalf("the creator's Receive: %v", err)
	}
	want := "machine 1 refused the match: it was started with a match of 600 frames (10 s), not 1200 frames (20 s) (-frames 600 against 1200), a score target of 3, not 10 (-target)"
	if err.Error() != want {
		t.Errorf("%q\nwant %q", err, want)
	}
}
