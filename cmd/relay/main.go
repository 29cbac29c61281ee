// Command relay forwards one match's datagrams between its machines: the
// relay topology's server (package relay, issue 50), over UDP.
//
//	relay -listen :7100 -machines 203.0.113.5:7000,198.51.100.7:7000,192.0.2.9:7000
//
// -machines lists the machines' addresses in slot order: slot k is the
// k-th, and a datagram from any other address is dropped (rollback/udp).
// Each machine's session uses a relay.Client over a udp.Transport whose one
// peer is this relay's address. The relay polls its socket every
// millisecond and sends each machine what it gathered for it once a tick
// (-tick); it runs until interrupted (SIGINT, SIGTERM), logging its
// counts every -stats and at the end.
//
// This is the first step: one match per process, the machines' addresses
// given on the command line. Not built yet: placement by the rendezvous,
// several matches a process, WebRTC, metrics, moving a match to another
// relay.
//
// Exit status: 0 after an interrupt, 1 when the socket fails, 2 for bad
// flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/rollback/udp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr, nil))
}

// run serves one match until ctx is done; ready, when set, is called with
// the bound address once the relay listens.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(netip.AddrPort)) int {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", ":7100", "the UDP address to listen on")
	list := fs.String("machines", "", "the match's machines' addresses, comma-separated, in slot order (2 or more)")
	tick := fs.Duration("tick", time.Second/60, "how often each machine is sent what was gathered for it")
	every := fs.Duration("stats", 10*time.Second, "how often to log the counts (0: only at the end)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	machines, err := parseMachines(*list)
	if err == nil && fs.NArg() > 0 {
		err = errors.New("unexpected arguments (all settings are flags)")
	}
	if err == nil && (*tick <= 0 || *every < 0) {
		err = errors.New("-tick must be positive and -stats not negative")
	}
	if err != nil {
		fmt.Fprintf(stderr, "relay: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	conn, err := net.ListenPacket("udp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "relay: %v\n", err)
		return 1
	}
	t, err := udp.New(conn, machines)
	if err != nil {
		_ = conn.Close()
		fmt.Fprintf(stderr, "relay: %v\n", err)
		return 1
	}
	defer t.Close()
	r, err := relay.New(relay.Config{Machines: len(machines), Link: t, Tick: *tick})
	if err != nil {
		fmt.Fprintf(stderr, "relay: %v\n", err)
		return 2
	}
	addr := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	log.Info("relaying", "listen", addr, "machines", len(machines))
	if ready != nil {
		ready(addr)
	}
	start := time.Now()
	lastLog := start
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			logStats(log, "stopped", r.Stats(), t.Stats())
			return 0
		case now := <-poll.C:
			r.Poll(now.Sub(start))
			if *every > 0 && now.Sub(lastLog) >= *every {
				lastLog = now
				logStats(log, "counts", r.Stats(), t.Stats())
			}
		}
	}
}

// parseMachines parses -machines.
func parseMachines(list string) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		a, err := netip.ParseAddrPort(s)
		if err != nil {
			return nil, fmt.Errorf("-machines: %v", err)
		}
		out = append(out, a)
	}
	if len(out) < 2 || len(out) > relay.MaxSlots {
		return nil, fmt.Errorf("-machines: %d addresses (want 2 to %d)", len(out), relay.MaxSlots)
	}
	return out, nil
}

func logStats(log *slog.Logger, msg string, st relay.Stats, ts udp.Stats) {
	log.Info(msg, "envelopes_in", st.EnvelopesIn, "envelopes_out", st.EnvelopesOut, "bytes_in", st.BytesIn,
		"bytes_out", st.BytesOut, "forwarded", st.Forwarded, "rebuilt", st.Rebuilt, "malformed", st.Malformed,
		"unknown_address", ts.UnknownAddress, "queue_full", ts.QueueFull, "send_errors", ts.SendErrors)
}
