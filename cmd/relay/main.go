// Command relay forwards the datagrams of many matches between their
// machines over one UDP socket: the relay topology's server (package
// relay, issue 50).
//
//	relay -listen :7100 -admin 127.0.0.1:7101 -token-file /etc/relay/token -metrics 127.0.0.1:9100
//
// A match is opened by the admin call (admin.go), which the rendezvous is
// to make when it places a match on this relay: POST /matches with the
// machines' addresses in slot order and the bearer token of -token-file
// (or $RELAY_TOKEN). Slot k is the k-th address; a datagram from any
// address that is no live match's machine is dropped. The relay closes a
// match none of whose machines has sent anything for -idle, one open for
// -max-life, and one the admin call deletes. It holds at most
// -max-matches, at most -max-per-ip machines behind one IP address (an
// IPv6 address's /64), and an address in one live match only; the call
// answers every refusal with its own status.
//
//	relay -listen :7100 -machines 203.0.113.5:7000,198.51.100.7:7000,192.0.2.9:7000
//
// opens one match at start that never expires: the first version's usage.
//
//	relay -listen :7100 -webrtc :7102 -admin 10.0.0.5:7101 -token-file /etc/relay/token -announce http://10.0.0.2:8080
//
// also takes matches of WebRTC seats (webrtc.go; browsers, and machines
// over package rtc's DialRelay), whose ICE shares the one socket of
// -webrtc: the admin call opens one with {"seats": N}, and the
// rendezvous carries each seat's offer and candidates to it
// (POST /matches/{id}/signals). -announce tells the rendezvous at that
// URL, every -announce-every, that this relay is live and how loaded,
// so that it places its relayed lobbies here (announce.go).
//
// Each machine's session uses a relay.Client over a udp.Transport whose
// one peer is this relay's address. Each match is a relay.Relay: one
// goroutine reads the socket (-batch datagrams a system call, recvmmsg)
// and routes each datagram to its match, which gathers its records by
// destination; at every multiple of -tick since the Unix epoch, -writers
// goroutines have every match send each machine what was gathered for it,
// 64 matches at a time, and write them (sendmmsg). No goroutine per match.
// make relay-load measures how many matches it holds (relayload;
// docs/deployment.md, "Match relay"). It runs until interrupted
// (SIGINT, SIGTERM), logging each match opened and closed, and its counts
// every -stats; -metrics serves the Prometheus metrics (metrics.go).
//
// Exit status: 0 after an interrupt, 1 when a socket fails, 2 for bad
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
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rewindgg/rewind/relay"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr, os.LookupEnv, nil))
}

// bound is where a running relay listens: its UDP socket, and its admin
// and metrics listeners (empty when off).
type bound struct {
	UDP                    netip.AddrPort
	Admin, Metrics, WebRTC string
}

// run serves until ctx is done; ready, when set, is called once the relay
// listens.
func run(ctx context.Context, args []string, stderr io.Writer, lookupEnv func(string) (string, bool), ready func(bound)) int {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := defaultServerConfig()
	listen := fs.String("listen", ":7100", "the UDP `address` to listen on (IPv4 when its host is empty or IPv4, else IPv6)")
	adminAddr := fs.String("admin", "", "the TCP `address` of the admin call (POST /matches); keep it off the public internet; empty: none")
	tokenFile := fs.String("token-file", "", "`file` holding the admin call's bearer token (else $RELAY_TOKEN)")
	metricsAddr := fs.String("metrics", "", "serve the Prometheus metrics on this `address` at /metrics; empty: none")
	webrtcAddr := fs.String("webrtc", "", "the UDP `address` of the WebRTC seats' ICE (one socket for every peer connection); empty: no WebRTC seats")
	var rc rtcConfig
	fs.BoolVar(&rc.Loopback, "webrtc-loopback", false, "gather WebRTC candidates on the loopback interface only, and accept seats' loopback candidates (tests)")
	fs.Func("webrtc-allow", "a `prefix` (repeatable) among the private, loopback and link-local addresses at which seats' ICE candidates are accepted", func(v string) error {
		p, err := netip.ParsePrefix(v)
		rc.Allow = append(rc.Allow, p)
		return err
	})
	announce := fs.String("announce", "", "the rendezvous's base `URL` (http://10.0.0.2:8080) to announce this relay to, with the admin call's token, so that it places relayed matches here; empty: none")
	announceAdmin := fs.String("announce-admin", "", "the admin call's base `URL` as the rendezvous reaches it; empty: http:// and -admin's address")
	announceEvery := fs.Duration("announce-every", 5*time.Second, "how often to announce (the rendezvous forgets a relay after -relay-ttl, 15 s)")
	list := fs.String("machines", "", "one match opened at start, which never expires: its machines' addresses, comma-separated, in slot order")
	fs.DurationVar(&cfg.Tick, "tick", cfg.Tick, "how often each machine is sent what was gathered for it")
	fs.DurationVar(&cfg.Idle, "idle", cfg.Idle, "close a match none of whose machines sent anything this long")
	fs.DurationVar(&cfg.MaxLife, "max-life", cfg.MaxLife, "close a match this long after it opened")
	fs.IntVar(&cfg.MaxMatches, "max-matches", cfg.MaxMatches, "matches held at once")
	fs.IntVar(&cfg.MaxPerIP, "max-per-ip", cfg.MaxPerIP, "machines of the live matches behind one IP address (an IPv6 address's /64)")
	batch := fs.Int("batch", 64, "datagrams a system call (recvmmsg, sendmmsg); 1: one")
	fs.IntVar(&cfg.Writers, "writers", 0, "goroutines that flush the matches and write, each tick (0: GOMAXPROCS, the cores it may use)")
	rcvbuf := fs.Int("rcvbuf", 4<<20, "the socket's receive buffer, `bytes` (the kernel caps it at net.core.rmem_max)")
	every := fs.Duration("stats", 10*time.Second, "how often to log the counts (0: only at the end)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (runtime/pprof) to this `file` until stopped")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "relay: %v\n", err)
		return code
	}
	var machines []netip.AddrPort
	var err error
	if *list != "" {
		machines, err = parseMachines(*list)
	}
	token := ""
	switch {
	case err != nil:
	case fs.NArg() > 0:
		err = errors.New("unexpected arguments (all settings are flags)")
	case cfg.Tick <= 0 || cfg.Idle <= 0 || cfg.MaxLife <= 0 || cfg.MaxMatches <= 0 || cfg.MaxPerIP <= 0 || *batch <= 0 || cfg.Writers < 0 || *every < 0:
		err = errors.New("-tick, -idle, -max-life, -max-matches, -max-per-ip and -batch must be positive, -writers and -stats not negative")
	case *list == "" && *adminAddr == "":
		err = errors.New("nothing to relay: give -admin, -machines or both")
	case *announce != "" && (*adminAddr == "" || *announceEvery <= 0):
		err = errors.New("-announce needs -admin and a positive -announce-every")
	case *adminAddr != "":
		token, err = readToken(*tokenFile, lookupEnv)
	}
	if err != nil {
		return fail(2, err)
	}
	if cfg.Writers == 0 {
		cfg.Writers = runtime.GOMAXPROCS(0)
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return fail(2, fmt.Errorf("-listen: %v", err))
	}
	network := "udp4"
	if a, err := netip.ParseAddr(host); err == nil && !a.Unmap().Is4() {
		network, cfg.IPv4 = "udp6", false
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			return fail(1, err)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	ua, err := net.ResolveUDPAddr(network, *listen)
	if err != nil {
		return fail(2, fmt.Errorf("-listen: %v", err))
	}
	conn, err := net.ListenUDP(network, ua)
	if err != nil {
		return fail(1, err)
	}
	defer conn.Close()
	setReadBuffer(conn, *rcvbuf, log)
	k := newSocket(conn, cfg.IPv4, *batch, cfg.Writers)
	s := newServer(cfg, log, k.write)
	defer s.stop()
	var rtcAt string
	if *webrtcAddr != "" {
		rconn, err := net.ListenPacket(network, *webrtcAddr)
		if err != nil {
			return fail(1, fmt.Errorf("-webrtc: %v", err))
		}
		defer rconn.Close()
		s.rtc = newRTCHost(rconn, rc)
		defer s.rtc.close()
		rtcAt = rconn.LocalAddr().String()
	}
	if machines != nil {
		if _, err := s.open(machines, true); err != nil {
			return fail(2, fmt.Errorf("-machines: %v", err))
		}
	}
	m := newMetrics(s, k)
	at := bound{UDP: conn.LocalAddr().(*net.UDPAddr).AddrPort(), WebRTC: rtcAt}
	var servers []*http.Server
	defer func() {
		for _, hs := range servers {
			_ = hs.Close()
		}
	}()
	metricsMux := http.NewServeMux()
	metricsMux.Handle("GET /metrics", m.handler())
	for _, l := range []struct {
		addr string
		to   *string
		h    http.Handler
	}{
		{*adminAddr, &at.Admin, admin(s, token)},
		{*metricsAddr, &at.Metrics, metricsMux},
	} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return fail(1, err)
		}
		hs := &http.Server{Handler: l.h, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		servers = append(servers, hs)
		go hs.Serve(ln)
		*l.to = ln.Addr().String()
	}
	log.Info("relaying", "listen", at.UDP, "webrtc", at.WebRTC, "admin", at.Admin, "metrics", at.Metrics, "batch", *batch, "writers", cfg.Writers, "tick", cfg.Tick)
	if ready != nil {
		ready(at)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	if *announce != "" {
		admin := *announceAdmin
		if admin == "" {
			admin = "http://" + at.Admin
		}
		an := newAnnouncer(*announce, token, *announceEvery,
			announcement{Admin: admin, UDP: at.UDP.String(), WebRTC: at.WebRTC, MaxMatches: cfg.MaxMatches},
			s.openCount, log)
		wg.Go(func() { an.loop(ctx) })
	}
	readErr := make(chan error, 1)
	wg.Go(func() { readErr <- k.readLoop(s) })
	wg.Go(func() { tickLoop(ctx, s, func(d time.Duration) { m.tick.Observe(d.Seconds()) }) })
	var logs <-chan time.Time
	if *every > 0 {
		t := time.NewTicker(*every)
		defer t.Stop()
		logs = t.C
	}
	code := 0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-readErr:
			log.Error("socket", "err", err)
			code = 1
			break loop
		case <-logs:
			logCounts(log, "counts", s, k)
		}
	}
	cancel()
	_ = conn.Close()
	wg.Wait()
	logCounts(log, "stopped", s, k)
	return code
}

// readToken reads the admin call's bearer token from file, or else
// $RELAY_TOKEN; it must not be empty.
func readToken(file string, lookupEnv func(string) (string, bool)) (string, error) {
	var t string
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("-token-file: %v", err)
		}
		t = string(b)
	} else {
		t, _ = lookupEnv("RELAY_TOKEN")
	}
	if t = strings.TrimSpace(t); t == "" {
		return "", errors.New("-admin needs a token: -token-file or $RELAY_TOKEN")
	}
	return t, nil
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

func logCounts(log *slog.Logger, msg string, s *server, k *socket) {
	sn := s.snapshot()
	st := sn.stats
	log.Info(msg, "open", sn.open, "opened", sn.opened, "envelopes_in", st.EnvelopesIn, "envelopes_out", st.EnvelopesOut,
		"bytes_in", st.BytesIn, "bytes_out", st.BytesOut, "forwarded", st.Forwarded, "rebuilt", st.Rebuilt,
		"malformed", st.Malformed, "unknown_address", sn.unknown, "send_errors", k.sendErr.Load())
}
