// Command rendezvous is where Rewind's players find each other, in one
// binary: the lobby (create a match, join it by code), the WebRTC
// signaling relay between the seats of a match (the protocol and its
// client are package github.com/rewindgg/rewind/rtc/lobby), a STUN server
// and TURN relay (pion/turn) whose short-lived credentials the lobby hands
// to a full match's seats, and the static files of the browser build
// (web/, embedded; -web serves a directory instead).
//
// Everything a client can make it hold is bounded by the flags: matches
// (-max-matches; each at most 8 seats of 64 queued signals), queued signal
// bytes (-max-queued), long polls (-max-polls), connections (-max-conns;
// -max-conns-per-ip from one address), TURN allocations
// (-turn-allocs), rate-limit buckets (-max-ips); and per client address
// (an IPv6 client is its /64): matches (-max-matches-per-ip), queued
// signal bytes (-max-queued-per-ip), failed guesses (-guess-rate,
// -guess-burst). Matches that do not fill expire after 10 minutes, full
// ones 30 minutes after they filled. docs/security.md has the threat
// model and the arithmetic of each limit.
//
//	rendezvous -http :8080 -turn :3478 -public-ip 203.0.113.7
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "rendezvous:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cfg := defaultConfig()
	fl := flag.NewFlagSet("rendezvous", flag.ContinueOnError)
	httpAddr := fl.String("http", ":8080", "HTTP `address` of the lobby, signaling and static files")
	webDir := fl.String("web", "", "serve the static files from this `directory` instead of the embedded ones")
	debug := fl.Bool("debug", false, "log at debug level (pion's logs included)")
	fl.StringVar(&cfg.TURNAddr, "turn", cfg.TURNAddr, "UDP `address` of the STUN/TURN server; empty disables it")
	fl.StringVar(&cfg.TURNSecret, "turn-secret", "", "shared `secret` of the TURN credentials; random when empty")
	fl.StringVar(&cfg.PublicIP, "public-ip", cfg.PublicIP, "IPv4 `address` the TURN relay advertises, and the ICE servers' host")
	fl.StringVar(&cfg.PublicHost, "public-host", "", "`host` name in the ICE servers' URLs, when not -public-ip")
	fl.IntVar(&cfg.TURNAllocs, "turn-allocs", cfg.TURNAllocs, "most TURN allocations at once")
	fl.IntVar(&cfg.MaxMatches, "max-matches", cfg.MaxMatches, "most matches held at once (503 beyond)")
	fl.IntVar(&cfg.MaxQueuedBytes, "max-queued", cfg.MaxQueuedBytes, "most `bytes` of signal data queued over all seats (503 beyond)")
	fl.IntVar(&cfg.MaxWaiters, "max-polls", cfg.MaxWaiters, "most long polls held at once (beyond, polls are answered at once)")
	fl.Float64Var(&cfg.Rate, "rate", cfg.Rate, "requests per second per client IP; 0 disables the limit")
	fl.IntVar(&cfg.Burst, "burst", cfg.Burst, "requests a client IP may make at once")
	fl.IntVar(&cfg.MaxIPs, "max-ips", cfg.MaxIPs, "client IPs with a rate-limit bucket of their own (the others share one)")
	fl.IntVar(&cfg.IPv6Prefix, "ipv6-prefix", cfg.IPv6Prefix, "`bits` of an IPv6 address that make one client, for the rate limits and quotas")
	fl.IntVar(&cfg.MaxMatchesPerIP, "max-matches-per-ip", cfg.MaxMatchesPerIP, "most matches one client address holds (429 \"quota\" beyond)")
	fl.IntVar(&cfg.MaxQueuedPerIP, "max-queued-per-ip", cfg.MaxQueuedPerIP, "most `bytes` of signals one client address sent still waiting for their recipients (429 \"quota\" beyond)")
	fl.Float64Var(&cfg.GuessRate, "guess-rate", cfg.GuessRate, "failed guesses (joins of unknown codes, wrong tokens) a minute per client address")
	fl.IntVar(&cfg.GuessBurst, "guess-burst", cfg.GuessBurst, "failed guesses a client address may make at once (then its joins and wrong tokens get 429)")
	fl.IntVar(&cfg.LockAfter, "lock-after", cfg.LockAfter, "wrong tokens against one match before it refuses joins for -lock-for; 0 never")
	fl.DurationVar(&cfg.LockFor, "lock-for", cfg.LockFor, "how long a match refuses joins after -lock-after wrong tokens")
	fl.IntVar(&cfg.MaxConns, "max-conns", cfg.MaxConns, "most open HTTP connections (beyond, new ones are closed at once)")
	fl.IntVar(&cfg.MaxConnsPerIP, "max-conns-per-ip", cfg.MaxConnsPerIP, "most open HTTP connections from one client address (trusted proxies: -max-conns only)")
	fl.DurationVar(&cfg.ReadHeaderTimeout, "read-header-timeout", cfg.ReadHeaderTimeout, "time a connection has to send a request's headers")
	fl.IntVar(&cfg.MaxHeaderBytes, "max-header-bytes", cfg.MaxHeaderBytes, "most `bytes` of a request's headers (431 beyond)")
	proxies := fl.String("trusted-proxy", "", "comma-separated `prefixes` (e.g. 127.0.0.1/32) of reverse proxies whose X-Forwarded-For names the client, for the rate limit")
	if err := fl.Parse(args); err != nil {
		return err
	}
	for p := range strings.SplitSeq(*proxies, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			return fmt.Errorf("-trusted-proxy: %w", err)
		}
		cfg.TrustedProxies = append(cfg.TrustedProxies, prefix)
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg.Logger = log
	if *webDir != "" {
		fsys, err := webDirFS(*webDir)
		if err != nil {
			return err
		}
		cfg.Web = fsys
	}

	srv, err := newServer(cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Close(); err != nil {
			log.Warn("closing the TURN relay", "err", err)
		}
		log.Info("stopped")
	}()
	ln, err := listen(*httpAddr, srv)
	if err != nil {
		return err
	}
	hs := newHTTPServer(srv)
	attrs := []any{"http", ln.Addr().String()}
	if srv.relay != nil {
		attrs = append(attrs, "turn", srv.relay.addr().String(), "public_ip", cfg.PublicIP)
	}
	log.Info("rendezvous listening", attrs...)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go sweepEvery(ctx, srv, 10*time.Second)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil {
		log.Warn("shutdown", "err", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil // the deferred srv.Close stops the TURN relay
}

// webDirFS is the file system of -web dir: an os.Root, so that a symbolic
// link inside the directory to a file outside it is refused (os.DirFS
// follows it).
func webDirFS(dir string) (fs.FS, error) {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("-web %s: not a directory", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("-web: %w", err)
	}
	return root.FS(), nil // the root stays open while the process runs
}

// listen opens the HTTP listener, within the server's connection caps.
func listen(addr string, srv *server) (*connLimiter, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return newConnLimiter(ln, &srv.cfg), nil
}

// newHTTPServer is the http.Server that serves srv: the time a connection
// has to send a request's headers, their size, the other timeouts, and
// the long polls ended at shutdown.
func newHTTPServer(srv *server) *http.Server {
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: srv.cfg.ReadHeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      srv.cfg.MaxWait + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    srv.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(srv.log.Handler(), slog.LevelWarn),
	}
	hs.RegisterOnShutdown(srv.drain)
	return hs
}

// sweepEvery removes expired matches every period until ctx ends.
func sweepEvery(ctx context.Context, srv *server, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			srv.sweep()
		}
	}
}
