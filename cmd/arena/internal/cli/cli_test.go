package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// ok is a valid set of flags: the defaults of cmd/arena.
var ok = Flags{Machines: 2, Players: 4, Humans: 1, ScreenshotAt: 600, Wait: 2 * time.Minute, ConnectWait: 30 * time.Second}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Flags)
		want string // a substring of the error; "" for none
	}{
		{"defaults", func(*Flags) {}, ""},
		{"host", func(f *Flags) { f.Host = ":7000"; f.Machines = 8; f.Players = 8 }, ""},
		{"rendezvous", func(f *Flags) { f.Rendezvous = "https://example.com"; f.Code = "K7QX2MPL4Z"; f.Relay = true }, ""},
		{"preset", func(f *Flags) { f.Profile = "wifi" }, ""},
		{"spec", func(f *Flags) { f.Profile = "latency=80ms,loss=2%" }, ""},
		{"arguments", func(f *Flags) { f.Args = []string{"host"} }, `unexpected arguments ["host"]`},
		{"host and join", func(f *Flags) { f.Host, f.Join = ":7000", "h:7000" }, "-host and -join: choose one"},
		{"rendezvous and host", func(f *Flags) { f.Rendezvous, f.Host = "https://e.com", ":7000" }, "not with -host or -join"},
		{"code alone", func(f *Flags) { f.Code = "K7QX" }, "-code, -relay and -loopback go with -rendezvous"},
		{"relayed alone", func(f *Flags) { f.Relayed = true }, "-relayed goes with -rendezvous, creating a match (a joiner plays relayed when the match is)"},
		{"relayed joiner", func(f *Flags) { f.Relayed, f.Rendezvous, f.Code = true, "http://localhost:8080", "K7QX" }, "-relayed goes with -rendezvous, creating a match (a joiner plays relayed when the match is)"},
		{"rendezvous not a URL", func(f *Flags) { f.Rendezvous = "example.com" }, `-rendezvous "example.com": want the server's base URL`},
		{"one machine", func(f *Flags) { f.Machines = 1 }, "-machines 1: want 2 to 8"},
		{"nine machines", func(f *Flags) { f.Machines = 9 }, "-machines 9: want 2 to 8"},
		{"nine players", func(f *Flags) { f.Players = 9 }, "-players 9: want 0 to 8"},
		{"three humans", func(f *Flags) { f.Humans = 3 }, "-humans 3: want 0, 1 or 2"},
		{"two humans, rendezvous", func(f *Flags) { f.Rendezvous = "https://e.com"; f.Humans = 2 }, "-humans 2: with -rendezvous"},
		{"negative frames", func(f *Flags) { f.Frames = -1 }, "-frames -1: want 0"},
		{"negative round", func(f *Flags) { f.Round = -time.Second }, "-round -1s: want a duration"},
		{"target 300", func(f *Flags) { f.Target = 300 }, "-target 300: want 0 (no score target) to 255"},
		{"solo and host", func(f *Flags) { f.Solo, f.Host = true, ":7000" }, "-solo plays against bots"},
		{"negative screenshot-at", func(f *Flags) { f.ScreenshotAt = -5 }, "-screenshot-at -5"},
		{"negative max-fps", func(f *Flags) { f.MaxFPS = -1 }, "-max-fps -1: want 0"},
		{"no wait", func(f *Flags) { f.Wait = 0 }, "-wait 0s: want a positive duration"},
		{"no connect wait", func(f *Flags) { f.ConnectWait = -time.Second }, "-connect-wait -1s: want a positive duration"},
		{"profile typo", func(f *Flags) { f.Profile = "wfi" }, `-profile "wfi": no such profile: want lan, wifi, continental, intercontinental, far, hell, or a spec`},
		{"profile bad key", func(f *Flags) { f.Profile = "lag=80ms" }, `-profile "lag=80ms": unknown key "lag": want lan`},
		{"profile bad value", func(f *Flags) { f.Profile = "loss=200%" }, `-profile "loss=200%"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := ok
			c.edit(&f)
			err := Check(f)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case c.want != "" && err == nil:
				t.Fatalf("Check: nil, want an error with %q", c.want)
			case err != nil && !strings.Contains(err.Error(), c.want):
				t.Fatalf("Check: %q, want it to contain %q", err, c.want)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("Check: %q is more than one line", err)
			}
		})
	}
}

func TestWaiting(t *testing.T) {
	got := Waiting(fmt.Sprintf("waiting for %s to join match ABC123", Machines(1)), 2*time.Minute, "-wait")
	want := "waiting for 1 more machine to join match ABC123 (up to 2m0s; -wait to change)"
	if got != want {
		t.Errorf("Waiting = %q, want %q", got, want)
	}
	if got := Machines(3); got != "3 more machines" {
		t.Errorf("Machines(3) = %q", got)
	}
	if a, b := Nobody(2), Nobody(4); a != "nobody" || b != "not every machine" {
		t.Errorf("Nobody(2), Nobody(4) = %q, %q", a, b)
	}
}

func TestTimedOut(t *testing.T) {
	rtcErr := fmt.Errorf("rtc: machines %v not connected: %w", []int{0}, context.DeadlineExceeded)
	for _, c := range []struct {
		name, what string
		err        error
		want       string
	}{
		{"bare", "nobody joined match ABC", context.DeadlineExceeded, "nobody joined match ABC within 2m0s (-wait to wait longer)"},
		{"wrapped", "not every machine connected", rtcErr, "not every machine connected within 2m0s (-wait to wait longer): rtc: machines [0] not connected"},
	} {
		err := TimedOut(c.err, c.what, 2*time.Minute, "-wait")
		if err.Error() != c.want {
			t.Errorf("%s: %q, want %q", c.name, err, c.want)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v does not match context.DeadlineExceeded", c.name, err)
		}
	}
	other := errors.New("lobby: match is full")
	if err := TimedOut(other, "x", time.Second, "-wait"); err != other {
		t.Errorf("TimedOut(other) = %v, want it unchanged", err)
	}
}
