// Command rendezvous is where Rewind's players find each other, in one
// binary: the lobby (create a match, join it by code), the WebRTC
// signaling relay between the seats of a match (the protocol and its
// client are package github.com/rewindgg/rewind/rtc/lobby), a STUN server
// and TURN relay (pion/turn) whose short-lived credentials the lobby hands
// to each seat of a full match (valid while the seat is held; secrets from
// -turn-secret-file, re-read on SIGHUP), and the static files of the
// browser build (web/, embedded; -web serves a directory instead). The
// relay reaches only the internet: not the host's loopback, private or
// link-local networks, nor its own addresses (-turn-allow-peers names
// exceptions). Clients reach the relay over UDP, over TCP (-turn-tcp; on
// -turn's port by default) and over TLS (-turn-tls, -turn-cert,
// -turn-key), for networks that block UDP, and over IPv6 (-public-ip6).
//
// Everything a client can make it hold is bounded by the flags: matches
// (-max-matches; each at most 8 seats of 64 queued signals), queued signal
// bytes (-max-queued), long polls (-max-polls), connections (-max-conns;
// -max-conns-per-ip from one address), TURN allocations (-turn-allocs;
// -turn-seat-allocs per seat, each sending at most -turn-bandwidth bytes a
// second), TURN connections over TCP and TLS (-turn-conns,
// -turn-conns-per-ip), rate-limit buckets (-max-ips); and per client
// address (an IPv6 client is its /64): matches (-max-matches-per-ip),
// queued signal bytes (-max-queued-per-ip), failed guesses (-guess-rate,
// -guess-burst). Matches that do not fill expire after 10 minutes, full
// ones 30 minutes after they filled. docs/security.md has the threat
// model and the arithmetic of each limit.
//
// The matches and signals live in NATS JetStream (-store nats, the
// default): a NATS server embedded in the process, so that the binary
// alone needs no other service (-nats-dir keeps its state in files), or
// an external cluster (-nats URLs) that several instances share behind
// a load balancer. -store memory keeps them in this process's memory
// alone.
//
// Every flag can also come from the environment (RENDEZVOUS_MAX_MATCHES
// for -max-matches) or a config file (-config), in that order after the
// command line; docs/deployment.md has the details.
//
//	rendezvous -http :8080 -turn :3478 -public-ip 203.0.113.7 -turn-secret-file /etc/rendezvous/turn-secrets
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
	if err := run(os.Args[1:], os.LookupEnv); err != nil {
		fmt.Fprintln(os.Stderr, "rendezvous:", err)
		os.Exit(1)
	}
}

// run serves until SIGINT or SIGTERM, configured by args, the
// environment (lookupEnv) and the config file they name (applySettings).
func run(args []string, lookupEnv func(string) (string, bool)) error {
	cfg := defaultConfig()
	fl := flag.NewFlagSet("rendezvous", flag.ContinueOnError)
	httpAddr := fl.String("http", ":8080", "HTTP `address` of the lobby, signaling and static files")
	webDir := fl.String("web", "", "serve the static files from this `directory` instead of the embedded ones")
	debug := fl.Bool("debug", false, "log at debug level (pion's logs included)")
	metricsAddr := fl.String("metrics", "", "serve the Prometheus metrics on this `address` at /metrics (e.g. 127.0.0.1:9090; keep it off the public internet); empty: none")
	fl.BoolVar(&cfg.AccessLog, "access-log", false, "log every request: method, route, status, size, time, client IP")
	fl.StringVar(&cfg.TURNAddr, "turn", cfg.TURNAddr, "UDP `address` of the STUN/TURN server; empty disables it")
	fl.StringVar(&cfg.TURNSecret, "turn-secret", "", "shared `secret` of the TURN credentials; random when empty (ps shows it: prefer -turn-secret-file)")
	fl.StringVar(&cfg.TURNSecretFile, "turn-secret-file", "", "`file` of TURN secrets, one a line: the first signs, all verify; re-read on SIGHUP and when it changes")
	fl.StringVar(&cfg.PublicIP, "public-ip", cfg.PublicIP, "IPv4 `address` the TURN relay advertises, and the ICE servers' host")
	fl.StringVar(&cfg.PublicHost, "public-host", "", "`host` name in the ICE servers' URLs, when not -public-ip")
	fl.IntVar(&cfg.TURNAllocs, "turn-allocs", cfg.TURNAllocs, "most TURN allocations at once")
	fl.IntVar(&cfg.TURNSeatAllocs, "turn-seat-allocs", cfg.TURNSeatAllocs, "most TURN allocations of one seat's credentials; 0: 8 for each TURN URL handed out (a machine allocates over each, for each peer)")
	fl.IntVar(&cfg.TURNBandwidth, "turn-bandwidth", cfg.TURNBandwidth, "`bytes` a second one TURN allocation may send (beyond, datagrams are dropped)")
	fl.DurationVar(&cfg.TURNCredentialTTL, "turn-ttl", cfg.TURNCredentialTTL, "how long a seat's TURN credentials allow new allocations (each GET of the match gives fresh ones)")
	fl.StringVar(&cfg.TURNTCPAddr, "turn-tcp", "", "TCP `address` of TURN over TCP; empty: -turn's, on TCP; \"off\": none")
	fl.StringVar(&cfg.TURNTLSAddr, "turn-tls", "", "TCP `address` of TURN over TLS (e.g. :5349, or :443 where only HTTPS passes); empty: none. Needs -turn-cert and -turn-key")
	fl.StringVar(&cfg.TURNCertFile, "turn-cert", "", "`file` of the TLS certificate of -turn-tls (PEM, chain after it), naming -public-host; re-read on SIGHUP and when it changes")
	fl.StringVar(&cfg.TURNKeyFile, "turn-key", "", "`file` of the private key of -turn-cert (PEM)")
	fl.StringVar(&cfg.PublicIP6, "public-ip6", "", "IPv6 `address` of the TURN relay: IPv6 clients reach it over UDP at -turn's port, and may ask for IPv6 relayed addresses; empty: none")
	fl.IntVar(&cfg.TURNConns, "turn-conns", 0, "most TCP and TLS connections to the TURN relay; 0: 1000")
	fl.IntVar(&cfg.TURNConnsPerIP, "turn-conns-per-ip", 0, "most TCP and TLS connections to the TURN relay of one IPv4 address or IPv6 /64; 0: 32")
	external := fl.String("turn-external", "", "comma-separated turn: and turns: `URLs` of TURN servers you run (coturn with use-auth-secret and the same secret as -turn-secret-file): the seats get them with credentials minted here, and the embedded relay does not start")
	allowPeers := fl.String("turn-allow-peers", "", "comma-separated `prefixes` the relay may reach although loopback, private, link-local... or its own (e.g. 10.0.0.0/8 for a LAN's players)")
	fl.StringVar(&cfg.Store, "store", storeNATS, "where the matches and signals are kept: \"nats\" (NATS JetStream: a server embedded in this process, or the cluster of -nats, shared by every instance) or \"memory\" (this process alone)")
	fl.StringVar(&cfg.NATSURL, "nats", "", "comma-separated `URLs` (nats://host:4222) of an external NATS cluster with JetStream for -store nats; empty: a server embedded in this process")
	fl.StringVar(&cfg.NATSDir, "nats-dir", "", "`directory` of the embedded NATS server's JetStream files (the matches outlive a restart); empty: in memory")
	fl.IntVar(&cfg.NATSReplicas, "nats-replicas", 0, "replicas of the NATS buckets and streams in an external cluster; 0: 3 when the server is in a cluster (1 if it cannot place 3), else 1")
	fl.IntVar(&cfg.MaxMatches, "max-matches", cfg.MaxMatches, "most matches held at once (503 beyond)")
	fl.IntVar(&cfg.MaxQueuedBytes, "max-queued", cfg.MaxQueuedBytes, "most `bytes` of signal data queued over all seats (503 beyond)")
	fl.IntVar(&cfg.MaxWaiters, "max-polls", cfg.MaxWaiters, "most long polls held at once (beyond, polls are answered at once)")
	fl.Float64Var(&cfg.Rate, "rate", cfg.Rate, "requests per second per client IP; 0 disables the limit")
	fl.IntVar(&cfg.Burst, "burst", cfg.Burst, "requests a client IP may make at once")
	fl.IntVar(&cfg.MaxIPs, "max-ips", cfg.MaxIPs, "client IPs with a rate-limit bucket of their own (the others share one)")
	corsList := fl.String("cors", "", "comma-separated `origins` (e.g. https://games.example.com) whose pages may call the API; none by default")
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
	relayTokenFile := fl.String("relay-token-file", "", "`file` of the match relays' bearer token (cmd/relay's -token-file): their announcements (POST /v1/relays) and this server's admin calls to them; empty: no relayed matches")
	fl.DurationVar(&cfg.RelayTTL, "relay-ttl", cfg.RelayTTL, "how long a match relay's announcement lasts (relays announce every 5 s by default)")
	configFile := fl.String("config", "", "read settings from this `file`: a flag's name and value a line (\"max-matches 5000\"); the command line, then RENDEZVOUS_<FLAG> environment variables (RENDEZVOUS_TURN_SECRET_FILE), come first")
	showVersion := fl.Bool("version", false, "print the version and exit")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // -h: the usage is printed; asking for it is no failure
		}
		return err
	}
	if *showVersion {
		fmt.Println(version())
		return nil
	}
	if err := applySettings(fl, *configFile, lookupEnv); err != nil {
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
	for u := range strings.SplitSeq(*external, ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.TURNExternal = append(cfg.TURNExternal, u)
		}
	}
	allowed, err := parsePrefixes(*allowPeers)
	if err != nil {
		return fmt.Errorf("-turn-allow-peers: %w", err)
	}
	cfg.TURNAllowPeers = allowed
	origins, err := parseOrigins(*corsList)
	if err != nil {
		return fmt.Errorf("-cors: %w", err)
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	if *relayTokenFile != "" {
		b, err := os.ReadFile(*relayTokenFile)
		if err != nil {
			return fmt.Errorf("-relay-token-file: %w", err)
		}
		if cfg.RelayToken = strings.TrimSpace(string(b)); cfg.RelayToken == "" {
			return errors.New("-relay-token-file: the file is empty")
		}
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
	if note := srv.static.check(); note != "" {
		log.Warn("no browser game to serve", "why", note)
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
	hs := newHTTPServer(srv, origins)
	attrs := []any{"http", ln.Addr().String(), "store", srv.cfg.storeName()}
	if len(cfg.TURNExternal) > 0 {
		attrs = append(attrs, "turn_external", strings.Join(cfg.TURNExternal, ","))
	}
	if srv.relay != nil {
		attrs = append(attrs, "turn", srv.relay.addr().String(), "public_ip", cfg.PublicIP)
		for name, a := range map[string]netip.AddrPort{"turn6": srv.relay.Addr6(), "turn_tcp": srv.relay.TCPAddr(), "turn_tls": srv.relay.TLSAddr()} {
			if a.IsValid() {
				attrs = append(attrs, name, a.String())
			}
		}
	}
	log.Info("rendezvous listening", attrs...)
	if srv.relay != nil && relayUnreachable(srv.relay.addr(), cfg.PublicIP) {
		log.Warn("the TURN relay listens on every address but advertises a loopback -public-ip: no machine but this one can use it; give -public-ip the address players reach this host at",
			"public_ip", cfg.PublicIP)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go sweepEvery(ctx, srv, 10*time.Second)
	if *metricsAddr != "" {
		mln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return fmt.Errorf("-metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", srv.metrics.handler())
		ms := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		go ms.Serve(mln)
		defer ms.Close()
		log.Info("metrics listening", "metrics", mln.Addr().String())
	}
	if srv.secrets != nil {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go watch(ctx, srv.secrets, hup, secretCheck)
	}
	if srv.relay != nil && srv.relay.cert != nil {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go watch(ctx, srv.relay.cert, hup, secretCheck)
	}
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

// parsePrefixes parses comma-separated prefixes.
func parsePrefixes(list string) ([]netip.Prefix, error) {
	var prefixes []netip.Prefix
	for p := range strings.SplitSeq(list, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			return nil, err
		}
		prefixes = append(prefixes, prefix.Masked())
	}
	return prefixes, nil
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

// newHTTPServer is the http.Server that serves srv (to the pages of
// origins too, withCORS): the time a connection has to send a request's
// headers, their size, the other timeouts, and the long polls ended at
// shutdown.
func newHTTPServer(srv *server, origins []string) *http.Server {
	hs := &http.Server{
		Handler:           withCORS(srv, origins),
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
			srv.sweepPeriodic(period)
		}
	}
}
