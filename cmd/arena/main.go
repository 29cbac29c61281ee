//go:build !js

// Command arena is the arena example on screen: up to eight ships over
// UDP or WebRTC, with sound, an overlay of the netcode's figures and the
// ghosts of the ships a correction moved. Its source is the integration
// example: a rollback.Session driven from a real render loop
// (Ebitengine's).
//
//	arena                          # the title screen: bots, host, join by address (or code)
//	arena -solo                    # you against three bots, on this machine, at once
//	arena -host :7000 -machines 2  # host a match for two machines
//	arena -join 192.0.2.1:7000     # join it
//	arena -host :7000 -profile wifi  # feel rollback: impair what this machine sends
//
// Through a rendezvous server (cmd/rendezvous), over WebRTC: machines
// behind NATs meet by a match code, and browsers (the same game built for
// js/wasm, served by the rendezvous) play native machines.
//
//	arena -rendezvous https://example.com -machines 2 -frames 3600      # create a match: prints its code
//	arena -rendezvous https://example.com -code K7QX2MPL4Z              # join it
//
// With -rendezvous every machine flies one ship (-humans 0 for a bot, 1
// for you; player p is seat p) and the seed is derived from the match's
// session id. -title with -rendezvous opens the title screen, which then
// creates matches there and joins them by code.
//
// A match is played in rounds: a round ends when its timer runs out
// (-round) or a ship reaches the score target (-target); the round-end
// screen shows the winner and the scores, and the rematch starts when
// every player asked (Enter; bots always do) or play.RematchFrames
// later. -frames ends the whole match: its last round ends with it, and
// the round-end screen shows the match's standings. These settings are the host's
// (or the rendezvous match's creator's): a joiner receives them (in the
// UDP lobby's plan, or in a signal before WebRTC's) and plays them, or
// refuses the match, naming both values, when it was given different
// ones itself.
//
// -relay sends everything through the rendezvous's TURN relay; -loopback
// gathers loopback candidates only (tests in a loopback-only network
// namespace). -relayed creates a relayed match: every machine connects
// to a match relay the rendezvous places it on, and none learns another's
// address; a relayed match carries no signal between machines, so each
// plays the settings it was given (give every machine the same -frames,
// -round and -target).
//
// Every wait says what it waits for and for how long: -wait (2 minutes)
// for the other machines to join, -connect-wait (30 seconds) for the
// WebRTC connections once a rendezvous match is full; a timeout says what
// did not happen in time. Flags are checked before anything starts (exit
// status 2, one line naming the flag). Without an X display the arena
// says so in one line and exits with status 1 (package
// internal/display/gate, before Ebitengine's initialization would
// panic); without an audio device it warns and plays muted.
//
// Keys: WASD thrusts, the arrows fire (with -humans 2: WASD and TFGH, IJKL
// and the arrows); a gamepad's left stick thrusts and its right stick or
// face buttons fire. Tab shows the overlay; Enter asks for the rematch on
// the round-end screen; Escape in a match leaves it (the peers are told)
// for the title screen, where Escape quits. When every other machine
// left at the round-end screen, "your opponent left the match" shows for
// 3 seconds, then the title screen. When -frames ends the match, its
// standings show on the round-end screen for 4 seconds (Escape: at
// once), then the arena closes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/rewindgg/rewind/cmd/arena/internal/cli"
	_ "github.com/rewindgg/rewind/cmd/arena/internal/display/gate" // before Ebitengine: no display is one line, not a panic
	"github.com/rewindgg/rewind/cmd/arena/internal/lobby"
	"github.com/rewindgg/rewind/cmd/arena/internal/netplay"
	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/udp"
)

func main() {
	var o options
	flag.StringVar(&o.host, "host", "", "host a match on this UDP address (e.g. :7000)")
	flag.StringVar(&o.join, "join", "", "join the match hosted at this UDP address")
	flag.StringVar(&o.rendezvous, "rendezvous", "", "meet through the rendezvous server at this base `URL` and play over WebRTC (one ship per machine)")
	flag.StringVar(&o.code, "code", "", "with -rendezvous: join the match with this code (without it: create one and print its code)")
	flag.BoolVar(&o.relayed, "relayed", false, "with -rendezvous, creating a match: a relayed match, every machine playing through a match relay the rendezvous places it on, none learning another's address (a joiner plays relayed when the match is)")
	flag.BoolVar(&o.relay, "relay", false, "with -rendezvous: send everything through its TURN relay (only relayed candidates)")
	flag.BoolVar(&o.loopback, "loopback", false, "with -rendezvous: gather loopback candidates only (tests in a loopback-only network namespace)")
	flag.IntVar(&o.machines, "machines", 2, "with -host, or -rendezvous without -code: machines in the match, this one included (2 to 8)")
	flag.IntVar(&o.players, "players", 4, "ships in the match (with -host, or alone); bots fly those nobody plays")
	flag.IntVar(&o.humans, "humans", 1, "people at this machine: 0 (bots only), 1, or 2 sharing the keyboard (not with -rendezvous)")
	flag.IntVar(&o.frames, "frames", 0, "end the match after this many frames (0: play until you quit); a joiner plays the host's, and refuses a different one given here")
	flag.DurationVar(&o.round, "round", time.Minute, "the round timer: a round ends this long after it starts (0: no timer); a joiner plays the host's, and refuses a different one given here")
	flag.IntVar(&o.target, "target", play.DefaultRules.Target, "the score target: a round ends when a ship reaches it (0: none); a joiner plays the host's, and refuses a different one given here")
	flag.BoolVar(&o.solo, "solo", false, "skip the title screen: play against bots on this machine at once")
	flag.BoolVar(&o.title, "title", false, "show the title screen even with -rendezvous (it then creates or joins matches there)")
	flag.StringVar(&o.listen, "listen", ":7000", "the UDP address the title screen's \"Host\" listens on")
	flag.StringVar(&o.shots, "shots", "", "save PNGs of the title screen, the first round-end screen and the match at -screenshot-at, named by this `prefix` (title.png, winner.png, match.png, final.png appended; final.png: the standings when -frames ends the match)")
	flag.StringVar(&o.profile, "profile", "", "impair the datagrams this machine sends like a soak profile (lan, wifi, continental, intercontinental, far, hell, or a spec such as latency=80ms,loss=2%)")
	flag.BoolVar(&o.mute, "mute", false, "no sound (no audio device is opened)")
	flag.BoolVar(&o.overlay, "overlay", false, "start with the overlay shown (Tab toggles it)")
	flag.IntVar(&o.maxFPS, "max-fps", 0, "draw at most this many frames a second (0: as many as the display's vsync lets through; Xvfb's lets through all)")
	flag.StringVar(&o.screenshot, "screenshot", "", "save a PNG of the window to this file at -screenshot-at")
	flag.IntVar(&o.screenshotAt, "screenshot-at", 600, "the frame of -screenshot")
	flag.StringVar(&o.result, "result", "", "write a JSON summary here on exit (frame, state hash, sound and input counts, the drawing's cost and frames a second; the error if it failed)")
	flag.IntVar(&o.windowX, "window-x", -1, "the window's position (default: the system's choice)")
	flag.IntVar(&o.windowY, "window-y", -1, "with -window-x: the window's position (default: the system's choice)")
	flag.DurationVar(&o.wait, "wait", 2*time.Minute, "how long to wait for the other machines to join (the host for them, a joiner for the match to start)")
	flag.DurationVar(&o.connectWait, "connect-wait", 30*time.Second, "with -rendezvous: how long to wait for the WebRTC connections to the other machines once the match is full")
	flag.Func("lobby-timeout", "the old flag: sets both -wait and -connect-wait", func(s string) error {
		d, err := time.ParseDuration(s)
		o.wait, o.connectWait = d, d
		return err
	})
	// The flag package's own errors (an unknown flag, a value that does
	// not parse) in one line too, not followed by every flag's usage.
	flag.CommandLine.Init(os.Args[0], flag.ContinueOnError)
	flag.CommandLine.SetOutput(io.Discard)
	if err := flag.CommandLine.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			flag.CommandLine.SetOutput(os.Stderr)
			flag.Usage()
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "arena: %v (arena -h lists the flags)\n", err)
		os.Exit(2)
	}
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "frames":
			o.given.Frames = true
		case "round":
			o.given.Round = true
		case "target":
			o.given.Target = true
		}
	})
	if err := cli.Check(o.flags(flag.Args())); err != nil {
		// One line naming the flag; -h shows them all.
		fmt.Fprintf(os.Stderr, "arena: %v (arena -h lists the flags)\n", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "arena:", err)
		os.Exit(1)
	}
}

// hasUDP says the title screen offers joining by address: a native build
// has UDP sockets.
const hasUDP = true

// closeHint is how the match's standings are cut short.
const closeHint = "Esc: close the arena now"

// waitFlag and connectWaitFlag are what a person changes to wait longer,
// as the waits' announcements and timeouts name them.
const (
	waitFlag        = "-wait"
	connectWaitFlag = "-connect-wait"
)

// flags are the options cli.Check validates.
func (o options) flags(args []string) cli.Flags {
	return cli.Flags{Host: o.host, Join: o.join, Rendezvous: o.rendezvous, Code: o.code, Relay: o.relay, Loopback: o.loopback, Relayed: o.relayed,
		Machines: o.machines, Players: o.players, Humans: o.humans, Frames: o.frames, Round: o.round, Target: o.target, Solo: o.solo, Title: o.title, Profile: o.profile,
		ScreenshotAt: o.screenshotAt, MaxFPS: o.maxFPS, Wait: o.wait, ConnectWait: o.connectWait, Args: args}
}

// showStatus prints what a state change says (and shows it on the title
// screen's status); the error is main's to print.
func showStatus(state, text string) {
	if text != "" && state != stateError {
		say(text)
	}
}

// say prints a status line, and shows it on screen while the title
// screen waits for a match.
func say(s string) {
	fmt.Println(s)
	board.add(s)
}

// showEnd prints how the match ended (the winner, the scores) and a
// detail line (the state hash).
func showEnd(sentences, detail string) {
	showStatus(stateDone, sentences+" "+detail)
}

// showCode prints the code of the match this machine created, and how the
// others join it.
func showCode(o options, code string) {
	say(cli.Waiting(fmt.Sprintf("match code %s: waiting for %s to join", code, cli.Machines(o.machines-1)), o.wait, waitFlag))
	say(fmt.Sprintf("  join it with: arena -rendezvous %s -code %s", o.rendezvous, code))
	say(fmt.Sprintf("  or in a browser: %s/%s", o.rendezvous, netplay.Share(code, o.frames)))
}

// showRoute prints how the datagrams to the other machines travel (the
// selected candidate pairs' types, such as "host-host" or "relay-relay").
func showRoute(routes []string) {
	if len(routes) > 0 {
		say(fmt.Sprintf("connected: routes %v", routes))
	}
}

// showFrame is the browser build's window.rewindFrame (for its tests);
// natively the -result file has the last frame.
func showFrame(rollback.Frame) {}

// publish writes r to the -result file, if any.
func publish(o options, r result) error {
	if o.result == "" {
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(o.result, append(b, '\n'), 0o644)
}

// setUp makes the match's configuration: alone, or through the UDP lobby
// over the UDP socket the session then uses.
func setUp(o options) (cfg play.Config, closeNet func(), title string, err error) {
	if o.humans < 0 || o.humans > 2 {
		return cfg, nil, "", fmt.Errorf("-humans %d: want 0, 1 or 2", o.humans)
	}
	if o.host == "" && o.join == "" {
		return alone(o), func() {}, "Rewind arena — against bots", nil
	}
	var plan lobby.Plan
	var conn *net.UDPConn
	ctx, cancel := context.WithTimeout(o.context(), o.wait)
	defer cancel()
	if o.host != "" {
		if conn, err = listen(o.host); err != nil {
			return cfg, nil, "", err
		}
		say(cli.Waiting(fmt.Sprintf("hosting on %v: waiting for %s to join", conn.LocalAddr(), cli.Machines(o.machines-1)), o.wait, waitFlag))
		st := o.settings()
		plan, err = lobby.Host(ctx, conn, lobby.HostOptions{Machines: o.machines, Players: o.players, Humans: o.humans,
			Frames: st.Frames, RoundFrames: st.RoundFrames, Target: st.Target, Log: say})
		err = cli.TimedOut(err, fmt.Sprintf("%s joined the match hosted on %v", cli.Nobody(o.machines), conn.LocalAddr()), o.wait, waitFlag)
	} else {
		var to netip.AddrPort
		if to, err = resolve(o.join); err != nil {
			return cfg, nil, "", err
		}
		if conn, err = listen(":0"); err != nil {
			return cfg, nil, "", err
		}
		say(cli.Waiting(fmt.Sprintf("joining %v from %v: waiting for the host to answer and its match to fill", to, conn.LocalAddr()), o.wait, waitFlag))
		// The settings this machine was given go with its hello: a host
		// with others turns it away with its own, and both say so.
		st := o.settings()
		plan, err = lobby.Join(ctx, conn, to, lobby.JoinOptions{Humans: o.humans,
			Settings: lobby.Settings{Frames: st.Frames, RoundFrames: st.RoundFrames, Target: st.Target},
			Wants:    lobby.Wants{Frames: o.given.Frames, RoundFrames: o.given.Round, Target: o.given.Target}})
		var se *lobby.SettingsError
		if errors.As(err, &se) {
			_, err = netplay.Agree(netplay.Settings(lobby.Plan{Frames: se.Host.Frames, RoundFrames: se.Host.RoundFrames, Target: se.Host.Target}), st, o.given)
		}
		err = cli.TimedOut(err, fmt.Sprintf("the host at %v did not start a match", to), o.wait, waitFlag)
	}
	if err != nil {
		conn.Close()
		return cfg, nil, "", err
	}
	tr, err := udp.New(conn, plan.PeerAddrs())
	if err != nil {
		conn.Close()
		return cfg, nil, "", err
	}
	cfg, closeNet, err = configure(plan, tr, func() { _ = tr.Close() }, o)
	return cfg, closeNet, fmt.Sprintf("Rewind arena — machine %d", plan.Machine), err
}

func listen(addr string) (*net.UDPConn, error) {
	a, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	return net.ListenUDP("udp", a)
}

func resolve(addr string) (netip.AddrPort, error) {
	a, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}
