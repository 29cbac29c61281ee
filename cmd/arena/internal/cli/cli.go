// Package cli holds what the arena demo says to a person at a terminal:
// its flags checked before anything starts, and the waits and timeouts
// of meeting other machines told in sentences. It imports no Ebitengine,
// so its tests run without a display.
package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// Flags are the flags Check validates (cmd/arena's, by value).
type Flags struct {
	Host, Join       string
	Rendezvous, Code string
	Relay, Loopback  bool
	Relayed          bool // create a relayed match (through a match relay)
	Machines         int
	Players          int
	Humans           int
	Frames           int
	Round            time.Duration // the round timer (0: none)
	Target           int           // the score target (0: none)
	Solo, Title      bool
	Profile          string
	ScreenshotAt     int
	MaxFPS           int
	Wait             time.Duration // for the other machines to join
	ConnectWait      time.Duration // with -rendezvous: for the WebRTC connections
	Args             []string      // what is left after the flags
}

// MaxMachines bounds -machines and -players: every machine plays at
// least one ship.
const MaxMachines = rollback.MaxPlayers

// Check returns the first flag error, as one line that names the flag
// and what it accepts; nil if the flags go together.
func Check(f Flags) error {
	switch {
	case len(f.Args) > 0:
		return fmt.Errorf("unexpected arguments %q: every setting is a flag (-host, -join, -rendezvous, ...)", f.Args)
	case f.Host != "" && f.Join != "":
		return errors.New("-host and -join: choose one")
	case f.Rendezvous != "" && (f.Host != "" || f.Join != ""):
		return errors.New("-rendezvous meets through the server: not with -host or -join")
	case f.Rendezvous == "" && (f.Code != "" || f.Relay || f.Loopback):
		return errors.New("-code, -relay and -loopback go with -rendezvous")
	case f.Relayed && (f.Rendezvous == "" || f.Code != ""):
		return errors.New("-relayed goes with -rendezvous, creating a match (a joiner plays relayed when the match is)")
	case f.Rendezvous != "" && !strings.HasPrefix(f.Rendezvous, "http://") && !strings.HasPrefix(f.Rendezvous, "https://"):
		return fmt.Errorf("-rendezvous %q: want the server's base URL, starting with https:// or http://", f.Rendezvous)
	case f.Machines < 2 || f.Machines > MaxMachines:
		return fmt.Errorf("-machines %d: want 2 to %d (this machine included)", f.Machines, MaxMachines)
	case f.Players < 0 || f.Players > rollback.MaxPlayers:
		return fmt.Errorf("-players %d: want 0 to %d", f.Players, rollback.MaxPlayers)
	case f.Rendezvous != "" && (f.Humans < 0 || f.Humans > 1):
		return fmt.Errorf("-humans %d: with -rendezvous each machine flies one ship (want 0 or 1)", f.Humans)
	case f.Humans < 0 || f.Humans > 2:
		return fmt.Errorf("-humans %d: want 0, 1 or 2", f.Humans)
	case f.Frames < 0:
		return fmt.Errorf("-frames %d: want 0 (play until you quit) or more", f.Frames)
	case f.Round < 0 || f.Round > 24*time.Hour:
		return fmt.Errorf("-round %v: want a duration from 0 (no timer) to 24h, such as 90s or 2m", f.Round)
	case f.Target < 0 || f.Target > 255:
		return fmt.Errorf("-target %d: want 0 (no score target) to 255", f.Target)
	case f.Solo && (f.Host != "" || f.Join != "" || f.Rendezvous != "" || f.Title):
		return errors.New("-solo plays against bots on this machine: not with -host, -join, -rendezvous or -title")
	case f.ScreenshotAt < 0:
		return fmt.Errorf("-screenshot-at %d: want a frame, 0 or more", f.ScreenshotAt)
	case f.MaxFPS < 0:
		return fmt.Errorf("-max-fps %d: want 0 (as many as the display shows) or more", f.MaxFPS)
	case f.Wait <= 0:
		return fmt.Errorf("-wait %v: want a positive duration, such as 2m or 30s", f.Wait)
	case f.ConnectWait <= 0:
		return fmt.Errorf("-connect-wait %v: want a positive duration, such as 30s or 2m", f.ConnectWait)
	}
	return Profile(f.Profile)
}

// Profile checks -profile: empty, a preset's name or a spec netsim
// parses.
func Profile(s string) error {
	if s == "" {
		return nil
	}
	_, err := netsim.ParseProfile(s)
	if err == nil {
		return nil
	}
	names := make([]string, len(netsim.Presets))
	for i, p := range netsim.Presets {
		names[i] = p.Name
	}
	want := fmt.Sprintf("want %s, or a spec such as latency=80ms,jitter=10ms,loss=2%%", strings.Join(names, ", "))
	if !strings.Contains(s, "=") {
		return fmt.Errorf("-profile %q: no such profile: %s", s, want)
	}
	why := strings.TrimPrefix(strings.TrimPrefix(err.Error(), netsim.ErrProfile.Error()), ": ")
	return fmt.Errorf("-profile %q: %s: %s (keys: latency, jitter, loss, burst, burstlen, dup, reorder, reorderdelay)", s, why, want)
}

// Machines is "1 more machine" or "n more machines".
func Machines(n int) string {
	if n == 1 {
		return "1 more machine"
	}
	return fmt.Sprintf("%d more machines", n)
}

// Nobody is who did not join a match of n machines in time: "nobody"
// when one machine was awaited, else "not every machine".
func Nobody(n int) string {
	if n == 2 {
		return "nobody"
	}
	return "not every machine"
}

// Waiting is the line printed before a wait: what for, how long at most,
// and the flag that changes it.
func Waiting(what string, d time.Duration, flag string) string {
	return fmt.Sprintf("%s (up to %v; %s to change)", what, d, flag)
}

// TimedOut returns err as a sentence when it is a context deadline: what
// did not happen within d, and the flag that waits longer. Other errors
// are returned as they are. The returned error still matches
// context.DeadlineExceeded with errors.Is.
func TimedOut(err error, what string, d time.Duration, flag string) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// The cause's own words, without the "context deadline exceeded"
	// this sentence replaces.
	cause := err.Error()
	cause = strings.TrimSuffix(cause, context.DeadlineExceeded.Error())
	cause = strings.TrimSuffix(strings.TrimSpace(cause), ":")
	return &timeout{msg: fmt.Sprintf("%s within %v (%s to wait longer)", what, d, flag), cause: cause, err: err}
}

type timeout struct {
	msg, cause string
	err        error
}

func (t *timeout) Error() string {
	if t.cause == "" {
		return t.msg
	}
	return t.msg + ": " + t.cause
}

func (t *timeout) Unwrap() error { return t.err }
