package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rewindgg/rewind/cmd/arena/internal/cli"
	"github.com/rewindgg/rewind/cmd/arena/internal/netplay"
	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/rtc"
	rdv "github.com/rewindgg/rewind/rtc/lobby"
)

// leaveTimeout bounds the goodbye to the rendezvous when the match ends.
const leaveTimeout = 2 * time.Second

// setUpRendezvous makes the match's configuration through the rendezvous
// server at o.rendezvous: it creates a match of o.machines seats (and
// shows its code) or joins match o.code, waits until every seat is taken
// (at most o.wait), then connects to every other machine over WebRTC
// with the match's ICE servers, signaling through the server (at most
// o.connectWait). Each wait is announced with its limit, and a timeout
// is told as what did not happen in time. The session's handshake is
// authenticated with the match's session id and secret, which only seat
// holders get.
func setUpRendezvous(o options) (cfg play.Config, closeNet func(), title string, err error) {
	if o.humans < 0 || o.humans > 1 {
		return cfg, nil, "", fmt.Errorf("%d humans: with a rendezvous each machine flies one ship (want 0 or 1)", o.humans)
	}
	base := strings.TrimRight(o.rendezvous, "/")
	ctx, cancel := context.WithTimeout(o.context(), o.wait)
	defer cancel()
	var c *rdv.Client
	if o.code == "" {
		showStatus(stateLobby, fmt.Sprintf("creating a match of %d machines at %s", o.machines, base))
		if c, err = rdv.Create(ctx, base, o.machines, &rdv.Options{Relayed: o.relayed}); err != nil {
			return cfg, nil, "", cli.TimedOut(sentence(err, base, ""), "the rendezvous at "+base+" did not create a match", o.wait, waitFlag)
		}
		showCode(o, c.Code())
	} else {
		showStatus(stateLobby, fmt.Sprintf("joining match %s at %s", o.code, base))
		if c, err = rdv.Join(ctx, base, o.code, nil); err != nil {
			switch {
			case errors.Is(err, rdv.ErrNotFound):
				return cfg, nil, "", fmt.Errorf("there is no match %s at %s: check the code (a match ends when its machines leave or it expires)", o.code, base)
			case errors.Is(err, rdv.ErrFull):
				return cfg, nil, "", fmt.Errorf("match %s at %s is full: every seat is taken", o.code, base)
			}
			return cfg, nil, "", cli.TimedOut(sentence(err, base, o.code), fmt.Sprintf("the rendezvous at %s did not let this machine join match %s", base, o.code), o.wait, waitFlag)
		}
		showStatus(stateLobby, cli.Waiting(fmt.Sprintf("match %s: seat %d taken, waiting for the other machines to join", c.Code(), c.Seat()), o.wait, waitFlag))
	}
	leave := func() {
		ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
		defer cancel()
		_ = c.Leave(ctx) // a courtesy: the server expires the match anyway
	}
	m, err := c.Wait(ctx)
	if err != nil {
		leave()
		if errors.Is(err, context.DeadlineExceeded) {
			return cfg, nil, "", cli.TimedOut(err, fmt.Sprintf("%s joined match %s", cli.Nobody(o.machines), c.Code()), o.wait, waitFlag)
		}
		if s := netplay.Sentence(err, base, c.Code()); s != nil {
			return cfg, nil, "", s
		}
		return cfg, nil, "", fmt.Errorf("match %s: %w", c.Code(), err)
	}
	showStatus(stateConnecting, cli.Waiting(fmt.Sprintf("match %s is full: machine %d of %d, connecting to the others", m.Code, c.Seat(), m.Seats), o.connectWait, connectWaitFlag))
	dctx, dcancel := context.WithTimeout(o.context(), o.connectWait)
	defer dcancel()
	// The creator's settings travel to the others before any WebRTC
	// signal; a joiner plays them, or refuses the match when it was
	// given others. A relayed match carries no signal between seats:
	// every machine plays the settings it was given (the same on each,
	// or the match desyncs).
	st := o.settings()
	var sig rtc.Signaler = c
	if m.Relayed {
		return setUpRelayed(dctx, o, c, m, st, leave)
	}
	if c.Seat() == 0 {
		err = netplay.SendSettings(dctx, c, m.Seats, st)
		sig = netplay.WatchRefusals(c, st) // a joiner's refusal ends the dial at once
	} else if st, sig, err = netplay.ReceiveSettings(dctx, c); err == nil {
		if st, err = netplay.Agree(st, o.settings(), o.given); err != nil {
			_ = netplay.SendRefusal(dctx, c, o.settings()) // the creator learns it now, not at its timeout
		}
	} else {
		err = cli.TimedOut(err, fmt.Sprintf("match %s: the settings of the machine that created it did not arrive", m.Code), o.connectWait, connectWaitFlag)
	}
	if err != nil {
		leave()
		return cfg, nil, "", err
	}
	plan, err := netplay.Plan(m, c.Seat(), o.humans, st)
	if err != nil {
		leave()
		return cfg, nil, "", err
	}
	tr, err := netplay.Dial(dctx, m, c.Seat(), sig, o.relay, o.loopback)
	var refused *netplay.RefusedError
	if errors.As(err, &refused) {
		leave()
		return cfg, nil, "", fmt.Errorf("match %s: %w", m.Code, refused)
	}
	if err != nil {
		leave()
		return cfg, nil, "", cli.TimedOut(err, fmt.Sprintf("match %s: the other machines did not all connect", m.Code), o.connectWait, connectWaitFlag)
	}
	var routes []string
	for p := range m.Seats - 1 {
		if r := tr.Route(p); r != "" {
			routes = append(routes, r)
		}
	}
	showRoute(routes)
	cfg, closeNet, err = configure(plan, tr, func() { _ = tr.Close(); leave() }, o)
	return cfg, closeNet, fmt.Sprintf("Rewind arena — machine %d, match %s", plan.Machine, m.Code), err
}

// sentence is err in words when netplay.Sentence knows it, else err.
func sentence(err error, base, code string) error {
	if s := netplay.Sentence(err, base, code); s != nil {
		return s
	}
	return err
}

// setUpRelayed connects seat c of the full relayed match m to its match
// relay (rtc.DialRelay) and plays over a relay.Client on that one link.
func setUpRelayed(ctx context.Context, o options, c *rdv.Client, m rdv.Match, st play.Settings, leave func()) (play.Config, func(), string, error) {
	plan, err := netplay.Plan(m, c.Seat(), o.humans, st)
	if err != nil {
		leave()
		return play.Config{}, nil, "", err
	}
	link, err := rtc.DialRelay(ctx, rtc.Config{Machine: c.Seat(), Machines: m.Seats, ICEServers: m.ICEServers, Relay: o.relay, Loopback: o.loopback}, c)
	if err != nil {
		leave()
		return play.Config{}, nil, "", cli.TimedOut(err, fmt.Sprintf("match %s: the match relay did not connect", m.Code), o.connectWait, connectWaitFlag)
	}
	tr, err := relay.NewClient(link, 0, c.Seat(), m.Seats)
	if err != nil {
		_ = link.Close()
		leave()
		return play.Config{}, nil, "", err
	}
	if r := link.Route(0); r != "" {
		showRoute([]string{"match relay " + r})
	}
	cfg, closeNet, err := configure(plan, tr, func() { _ = link.Close(); leave() }, o)
	return cfg, closeNet, fmt.Sprintf("Rewind arena — machine %d, match %s (relayed)", plan.Machine, m.Code), err
}
