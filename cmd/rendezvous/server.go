package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
	"github.com/rewindgg/rewind/rtc/lobby"
)

// config is everything the server is built from; main fills it from flags.
type config struct {
	TURNAddr   string // UDP address of the STUN/TURN server; "" disables it
	TURNSecret string // shared secret of the TURN credentials; random when "" (and no TURNSecretFile)
	PublicIP   string // the relay's advertised IPv4 address, and the ICE servers' host
	PublicHost string // the ICE servers' host, when not PublicIP
	TURNAllocs int    // most TURN allocations at once

	TURNSecretFile    string         // a file of TURN secrets, one a line, the first signs; re-read when it changes
	TURNSeatAllocs    int            // most TURN allocations of one seat (0: relay.DefaultMaxPerCredential for each TURN URL handed out)
	TURNBandwidth     int            // bytes a second one TURN allocation may send (0: relay.DefaultBandwidth)
	TURNCredentialTTL time.Duration  // how long a seat's TURN credentials allow new allocations (0: relay.DefaultCredentialTTL)
	TURNAllowPeers    []netip.Prefix // peers the relay may reach although private, loopback, its own... (none by default)

	TURNTCPAddr    string // TCP address of TURN over TCP: "" means TURNAddr's, "off" none
	TURNTLSAddr    string // TCP address of TURN over TLS ("" none), with TURNCertFile and TURNKeyFile
	TURNCertFile   string // the TLS certificate (PEM, its chain after it); re-read when it changes
	TURNKeyFile    string // the TLS certificate's private key (PEM)
	PublicIP6      string // the relay's IPv6 address: IPv6 clients reach it over UDP at TURNAddr's port, and IPv6 relayed addresses; "" none
	TURNConns      int    // most TCP and TLS connections (0: relay.DefaultMaxConnections)
	TURNConnsPerIP int    // most TCP and TLS connections of one IPv4 address or IPv6 /64 (0: relay.DefaultMaxConnectionsPerAddr)

	// TURNExternal are the turn: and turns: URLs of TURN servers the
	// operator runs (coturn with use-auth-secret) with TURNSecret's or
	// TURNSecretFile's secret: the seats get them, with credentials
	// minted here, and the embedded relay does not start.
	TURNExternal []string

	Web fs.FS // the static files; nil means the embedded ones

	// Where the lobby's state is kept (store.go): storeNATS (the default,
	// ""), NATS JetStream, shared by every instance that uses the same NATS
	// servers: those at NATSURL, or a server embedded in this process when
	// it is empty; storeMemory, this process's memory alone (one instance,
	// nothing outlives it; the smallest footprint).
	Store        string
	NATSURL      string // comma-separated nats:// URLs of an external cluster
	NATSDir      string // the embedded server's JetStream files; "" keeps its state in memory
	NATSReplicas int    // replicas of the buckets and streams in an external cluster (0: 3 in a cluster, else 1)

	MaxMatches     int           // most matches held at once (503 beyond)
	MaxQueuedBytes int           // most bytes of signal data queued over all seats (503 beyond)
	MaxWaiters     int           // most long polls held at once; beyond, polls answer at once
	MaxWait        time.Duration // longest long poll
	OpenTTL        time.Duration // a match that is not full expires this long after creation
	FullTTL        time.Duration // a full match expires this long after it filled

	Rate   float64 // requests per second per client IP; 0 disables the limit
	Burst  int     // the rate limit's bucket size
	MaxIPs int     // client IPs with a bucket of their own (the others share one)

	// What one client address may hold. An address is an IPv4 address,
	// or an IPv6 address's /IPv6Prefix; behind TrustedProxies, the one
	// X-Forwarded-For names. The rate limits count the same way.
	IPv6Prefix      int // bits of an IPv6 address that make one client
	MaxMatchesPerIP int // matches created and not yet removed (429 "quota" beyond)
	MaxQueuedPerIP  int // bytes of signal data sent and still queued (429 "quota" beyond)

	// Failed guesses: a join of a code that does not exist, a request with
	// a token that is not the match's. Each address has a bucket of
	// GuessBurst, refilled at GuessRate a minute; once it is empty its
	// joins are refused (429, before the code is looked at) and so are its
	// wrong tokens, until a guess is back. A match against which LockAfter
	// wrong tokens were tried refuses joins for LockFor.
	GuessRate  float64       // failed guesses a minute per address, refilled
	GuessBurst int           // failed guesses an address may make at once
	LockAfter  int           // wrong tokens against one match before it refuses joins; 0 never
	LockFor    time.Duration // how long such a match refuses joins

	// The HTTP server's connections (main's listener and http.Server).
	MaxConns          int           // open connections at once; beyond, new ones are closed at once
	MaxConnsPerIP     int           // open connections at once from one address (trusted proxies: no limit but MaxConns)
	ReadHeaderTimeout time.Duration // a connection must send a request's headers within this
	MaxHeaderBytes    int           // most bytes of a request's headers (431 beyond)

	// TrustedProxies are the addresses of reverse proxies (a TLS
	// terminator) whose X-Forwarded-For names the client; none by default.
	TrustedProxies []netip.Prefix

	AccessLog bool // log every request (method, route, status, size, time, client IP) at Info

	// Match relays (cmd/relay; placement.go): RelayToken is the bearer
	// token of their announcements (POST /v1/relays) and of this server's
	// admin calls to them; "" means none, and no relayed matches. An
	// announcement is live for RelayTTL.
	RelayToken string
	RelayTTL   time.Duration

	Now    func() time.Time // the clock of expiry and rate limits; nil means time.Now
	Logger *slog.Logger     // nil means a JSON handler on stderr
}

// defaultConfig is the binary's configuration without flags.
func defaultConfig() config {
	return config{
		TURNAddr:       ":3478",
		PublicIP:       "127.0.0.1",
		TURNAllocs:     1000,
		MaxMatches:     10000,
		MaxQueuedBytes: 64 << 20,
		MaxWaiters:     20000,
		MaxWait:        25 * time.Second,
		OpenTTL:        10 * time.Minute,
		FullTTL:        30 * time.Minute,
		RelayTTL:       15 * time.Second,
		Rate:           20,
		Burst:          60,
		MaxIPs:         100000,

		TURNBandwidth:     relay.DefaultBandwidth,
		TURNCredentialTTL: relay.DefaultCredentialTTL,

		IPv6Prefix:      64,
		MaxMatchesPerIP: 20,
		MaxQueuedPerIP:  256 << 10,
		GuessRate:       6,
		GuessBurst:      10,
		LockAfter:       5,
		LockFor:         time.Minute,

		MaxConns:          25000,
		MaxConnsPerIP:     64,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}

func (c *config) check() error {
	switch {
	case c.MaxMatches < 1:
		return errors.New("the match cap must be at least 1")
	case c.MaxQueuedBytes < 1:
		return errors.New("the queued bytes cap must be at least 1")
	case c.MaxWaiters < 0:
		return errors.New("the long poll cap must not be negative")
	case c.MaxWait <= 0:
		return errors.New("the longest long poll must be positive")
	case c.OpenTTL <= 0 || c.FullTTL <= 0:
		return errors.New("match lifetimes must be positive")
	case c.Rate < 0:
		return errors.New("the rate limit must not be negative")
	case c.Rate > 0 && c.Burst < 1:
		return errors.New("the rate limit's burst must be at least 1")
	case c.MaxIPs < 1:
		return errors.New("the tracked IPs cap must be at least 1")
	case c.IPv6Prefix < 1 || c.IPv6Prefix > 128:
		return errors.New("the IPv6 prefix must be from 1 to 128 bits")
	case c.MaxMatchesPerIP < 1:
		return errors.New("the matches per address quota must be at least 1")
	case c.MaxQueuedPerIP < lobby.MaxSignalData:
		return fmt.Errorf("the queued bytes per address quota must be at least a signal's %d bytes", lobby.MaxSignalData)
	case c.GuessRate <= 0 || c.GuessBurst < 1:
		return errors.New("the failed guesses' rate must be positive and their burst at least 1")
	case c.LockAfter < 0 || (c.LockAfter > 0 && c.LockFor <= 0):
		return errors.New("the lock after wrong tokens must not be negative, nor last no time")
	case c.MaxConns < 1 || c.MaxConnsPerIP < 1:
		return errors.New("the connection caps must be at least 1")
	case c.ReadHeaderTimeout <= 0:
		return errors.New("the read header timeout must be positive")
	case c.MaxHeaderBytes < 1<<10:
		return errors.New("the header bytes cap must be at least 1 KiB")
	case c.TURNAddr != "" && c.TURNAllocs < 1:
		return errors.New("the TURN allocations cap must be at least 1")
	case c.TURNSeatAllocs < 0 || c.TURNBandwidth < 0 || c.TURNCredentialTTL < 0:
		return errors.New("the TURN per-seat allocations, bandwidth and credential lifetime must not be negative")
	case c.TURNSecret != "" && c.TURNSecretFile != "":
		return errors.New("give the TURN secret or a file of them, not both")
	case c.Store != "" && c.Store != storeMemory && c.Store != storeNATS:
		return fmt.Errorf("unknown store %q: %s or %s", c.Store, storeMemory, storeNATS)
	case c.Store != storeNATS && (c.NATSURL != "" || c.NATSDir != ""):
		return errors.New("a NATS URL or directory for a store that is not NATS")
	case c.NATSURL != "" && c.NATSDir != "":
		return errors.New("a NATS directory is for the embedded server, not an external cluster")
	case c.NATSReplicas < 0 || c.NATSReplicas > 5:
		return errors.New("NATS replicas must be from 1 to 5")
	case c.NATSReplicas > 1 && c.NATSURL == "":
		return errors.New("NATS replicas are for an external cluster: the embedded server is one")
	case c.TURNConns < 0 || c.TURNConnsPerIP < 0:
		return errors.New("the TURN connection caps must not be negative")
	case c.TURNTLSAddr != "" && (c.TURNCertFile == "" || c.TURNKeyFile == ""):
		return errors.New("TURN over TLS needs a certificate and its key")
	case c.TURNTLSAddr == "" && (c.TURNCertFile != "" || c.TURNKeyFile != ""):
		return errors.New("a TURN certificate without a TLS address to serve it on")
	}
	if c.PublicIP6 != "" {
		if ip, err := netip.ParseAddr(c.PublicIP6); err != nil || !ip.Is6() || ip.Is4In6() || ip.Zone() != "" {
			return fmt.Errorf("public IPv6 address %q is not an IPv6 address", c.PublicIP6)
		}
	}
	if ip := net.ParseIP(c.PublicIP); ip == nil || ip.To4() == nil {
		return fmt.Errorf("public IP %q is not an IPv4 address", c.PublicIP)
	}
	return nil
}

// server is the rendezvous server: the lobby and signaling API over the
// store (memory or NATS), the rate limit, the static files, and the
// STUN/TURN relay.
type server struct {
	cfg     config
	log     *slog.Logger
	reg     store      // the lobby's state (store.go)
	limit   *ipLimiter // nil when there is no rate limit
	guesses *ipLimiter // failed guesses per address
	relay   *turnRelay // the embedded TURN relay; nil when disabled or external
	ice     iceSource  // the relay or the external TURN servers; nil when TURN is disabled
	static  *static
	metrics *metrics
	waiters chan struct{}  // a token per long poll held
	parked  sync.WaitGroup // the long polls taken out of net/http (poll.go)
	parkMu  sync.Mutex     // guards closed against parked.Add
	closed  bool           // Close has begun: no poll is parked any more
	started time.Time

	closing   chan struct{} // closed by drain: every long poll returns
	closeOnce sync.Once
	onPoll    func() // tests: called when a long poll starts to wait

	secrets *secretFile  // the TURN secrets' file; nil without config.TURNSecretFile
	relays  *relayClient // the match relays' admin calls; nil without config.RelayToken
}

// newServer builds the server and starts the TURN relay; Close stops it.
func newServer(cfg config) (*server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if cfg.Web == nil {
		cfg.Web = webFS()
	}
	if cfg.Store == "" {
		cfg.Store = storeNATS
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &server{
		cfg:     cfg,
		log:     cfg.Logger,
		closing: make(chan struct{}),
		static:  newStatic(cfg.Web),
		waiters: make(chan struct{}, cfg.MaxWaiters),
		started: cfg.Now(),
		guesses: newIPLimiter(cfg.GuessRate/60, cfg.GuessBurst, cfg.MaxIPs, cfg.Now),
	}
	reg, err := openStore(&cfg)
	if err != nil {
		return nil, err
	}
	s.reg = reg
	if cfg.RelayToken != "" {
		s.relays = newRelayClient(cfg.RelayToken)
	}
	if cfg.Rate > 0 {
		s.limit = newIPLimiter(cfg.Rate, cfg.Burst, cfg.MaxIPs, cfg.Now)
	}
	if err := s.startTURN(); err != nil {
		s.reg.close()
		return nil, err
	}
	s.metrics = newMetrics(s)
	return s, nil
}

// startTURN starts the embedded TURN relay, or readies the external TURN
// servers' credentials (config.TURNExternal), or neither when TURN is
// disabled.
func (s *server) startTURN() error {
	cfg := &s.cfg
	if cfg.TURNAddr == "" && len(cfg.TURNExternal) == 0 {
		return nil
	}
	var secrets []string
	if cfg.TURNSecret != "" {
		secrets = []string{cfg.TURNSecret}
	}
	if cfg.TURNSecretFile != "" {
		s.secrets = &secretFile{path: cfg.TURNSecretFile, log: cfg.Logger}
		list, err := s.secrets.read()
		if err != nil {
			return err
		}
		secrets = list
	}
	if len(cfg.TURNExternal) > 0 {
		e, err := newExternalTURN(cfg.TURNExternal, secrets, cfg.TURNCredentialTTL, cfg.Now)
		if err != nil {
			return err
		}
		s.ice = e
		if s.secrets != nil {
			s.secrets.apply = e.setSecrets
		}
		return nil
	}
	r, err := newRelay(cfg, secrets, s.seatState, cfg.Logger)
	if err != nil {
		return err
	}
	s.relay, s.ice = r, r
	if s.secrets != nil {
		s.secrets.apply = r.SetSecrets
	}
	return nil
}

// iceSource hands a full match's seat its ICE servers: the embedded relay
// (turnRelay) or the operator's TURN servers (externalTURN).
type iceSource interface {
	iceServers(code string, seat int) ([]lobby.ICEServer, error)
}

// seatState is what the TURN relay asks of a credential's seat.
func (s *server) seatState(code string, i int) relay.SeatState {
	switch exists, held := s.reg.seatHeld(code, i); {
	case held:
		return relay.SeatHeld
	case exists:
		return relay.SeatLeft
	}
	return relay.MatchGone
}

// sweep removes expired matches and idle rate-limit buckets; main calls
// it every few seconds, tests when they move their clock.
func (s *server) sweep() {
	if n := s.reg.sweep(); n > 0 {
		s.log.Info("matches expired", "count", n)
	}
	if s.limit != nil {
		s.limit.sweep()
	}
	s.guesses.sweep()
}

// sweepPeriodic is main's sweep every period: a store that many
// instances share walks its matches from one of them each period.
func (s *server) sweepPeriodic(period time.Duration) {
	if l, ok := s.reg.(interface{ sweepLeased(time.Duration) int }); ok {
		if n := l.sweepLeased(period); n > 0 {
			s.log.Info("matches expired", "count", n)
		}
		if s.limit != nil {
			s.limit.sweep()
		}
		s.guesses.sweep()
		return
	}
	s.sweep()
}

// drain ends every long poll now and makes new ones return at once:
// http.Server.Shutdown waits for the handlers.
func (s *server) drain() { s.closeOnce.Do(func() { close(s.closing) }) }

// Close ends the long polls (and waits for the parked ones to be
// answered), stops the TURN relay and lets go of the store.
func (s *server) Close() error {
	s.parkMu.Lock()
	s.closed = true
	s.parkMu.Unlock()
	s.drain()
	s.parked.Wait()
	var err error
	if s.relay != nil {
		err = s.relay.Close()
	}
	return errors.Join(err, s.reg.close())
}
