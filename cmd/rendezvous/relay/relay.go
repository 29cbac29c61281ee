// Package relay is a STUN server and TURN relay (pion/turn) for the
// machines of a match that cannot reach each other directly. It answers
// STUN binding requests (a machine learns the address a NAT gives it) and
// relays for clients holding short-lived credentials derived from a
// shared secret (the "TURN REST API" scheme: the username is the expiry
// time and the seat, the password an HMAC of it), so the lobby that hands
// credentials out never shares the secret. It relays only to peers on the
// internet: not to the host's loopback, private or link-local networks,
// nor to its own addresses (other than to its own allocations), and each
// seat's allocations and each allocation's bandwidth are bounded. Clients
// reach it over UDP and, when asked, over TCP and TLS (RFC 5766 §2.1; the
// relayed side stays UDP), and over IPv6; it relays from IPv6 addresses
// too when given one (RFC 6156). The rendezvous server runs one; the soak
// runs one in process for -relay.
package relay

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/logging"
	"github.com/pion/stun/v3"
	"github.com/pion/turn/v4"
)

// Realm is the TURN realm.
const Realm = "rewind"

// The defaults of Config's limits.
const (
	DefaultMaxAllocations   = 1000
	DefaultMaxPerCredential = 8 // a seat of an 8-seat match connects to 7 peers
	DefaultBandwidth        = 64 << 10
	DefaultCredentialTTL    = 10 * time.Minute

	DefaultMaxConnections        = 1000
	DefaultMaxConnectionsPerAddr = 32 // a seat of an 8-seat match makes 7 over each of TCP and TLS
	DefaultFirstMessageTimeout   = 10 * time.Second
	DefaultIdleTimeout           = time.Minute
	DefaultWriteTimeout          = 10 * time.Second
)

// SeatState is what Config.Seat answers.
type SeatState int

const (
	MatchGone SeatState = iota // no such match (any more); the zero value
	SeatLeft                   // the match exists; the seat is not held
	SeatHeld                   // the seat's holder is in the match
)

// Config configures Listen. The zero value listens on 127.0.0.1 on a
// free UDP port with a random secret, and relays for credentials of any
// seat or none.
type Config struct {
	// Listen is the UDP address to listen on for IPv4 clients ("" means
	// 127.0.0.1:0).
	Listen string
	// PublicIP is the address the relay's allocations are reachable at
	// (the zero value means the listening address's). They bind to the
	// listening address's host, so a public IP that a cloud's NAT maps to
	// the machine works.
	PublicIP netip.Addr
	// Listen6 is the UDP address to listen on for IPv6 clients ("" means
	// none; port 0 means Listen's port). Its clients get IPv4 relayed
	// addresses unless they ask for IPv6 ones.
	Listen6 string
	// PublicIP6 is the address of IPv6 relayed addresses, which a client
	// asks for with REQUESTED-ADDRESS-FAMILY (RFC 6156); the zero value
	// means Listen6's host when it names one, and otherwise no IPv6
	// relayed addresses (such a request gets error 508). They bind to
	// Listen6's host, or to :: when it names none.
	PublicIP6 netip.Addr
	// ListenTCP is a TCP address to take TURN over TCP on, and ListenTLS
	// one to take it over TLS on, with TLS's certificate ("" means none).
	// The relayed side stays UDP. Each connection carries one client's
	// requests (at most one allocation), bounded by the limits below.
	ListenTCP, ListenTLS string
	// TLS configures ListenTLS: its Certificates or GetCertificate (which
	// lets the caller replace the certificate while the server runs).
	// Versions before TLS 1.2 are refused.
	TLS *tls.Config
	// MaxConnections bounds the open TCP and TLS connections (0 means
	// 1000), MaxConnectionsPerAddr those of one client IPv4 address or
	// IPv6 /64 (0 means 32). Beyond, and for a second connection from the
	// same address and port, a new connection is closed at once.
	MaxConnections, MaxConnectionsPerAddr int
	// FirstMessageTimeout bounds the TLS handshake and the first whole
	// TURN message of a connection (0 means 10 s), IdleTimeout the time
	// between two messages of a connection that holds no allocation (0
	// means a minute; with one, the allocation's lifetime rules), and
	// WriteTimeout a write to a client that does not read (0 means 10
	// s). Each closes the connection.
	FirstMessageTimeout, IdleTimeout, WriteTimeout time.Duration
	// MaxAllocations bounds the allocations at once (0 means 1000): each
	// holds a socket.
	MaxAllocations int
	// MaxPerCredential bounds the allocations of one seat's credentials
	// (whatever their expiry), or of one credential for no seat (0 means
	// 8: a machine makes one per peer).
	MaxPerCredential int
	// Bandwidth bounds what one allocation sends to its peers, in bytes a
	// second, with bursts of a second's worth (0 means 64 KiB/s; a match
	// sends a few KB/s per peer). Datagrams beyond it are dropped.
	Bandwidth int
	// CredentialTTL is how long SeatCredentials' credentials allow new
	// allocations (0 means 10 minutes). An allocation made in time is
	// refreshed past it while Seat says its seat is held.
	CredentialTTL time.Duration
	// Secrets derive the credentials: the first signs, every one verifies
	// (none means 32 random bytes). Every server and lobby that hands out
	// credentials for the relay must share the first. SetSecrets replaces
	// them.
	Secrets []string
	// Seat says whether a seat of a match is still held. With it, every
	// authenticated request needs a credential for a held seat, and a
	// credential for no seat is refused. Without it, credentials are
	// checked by their MAC and expiry alone.
	Seat func(match string, seat int) SeatState
	// AllowPeers are prefixes the relay may send to although they are of
	// a refused class (Class) or the server's own addresses: a LAN's
	// players, say.
	AllowPeers []netip.Prefix
	// Now is the clock of expiry and bandwidth (nil means time.Now).
	Now func() time.Time
	// Log receives the relay's own lines: allocations made and deleted
	// (Info), and refusals (Warn, at most one line per kind per 10 s). Nil
	// discards them.
	Log *slog.Logger
	// Logger receives pion's logs; nil discards them.
	Logger logging.LoggerFactory
}

// Stats counts the datagrams between the relay and its clients (the
// UDP listening sockets' datagrams and the TCP and TLS connections' TURN
// messages; not the relayed sockets' side), the allocations, the
// connections, and what the relay refused.
type Stats struct {
	PacketsIn, PacketsOut int64
	BytesIn, BytesOut     int64

	AllocationsCreated, AllocationsDeleted int64

	// Requests refused for their credential: a MAC that no secret makes,
	// an expired credential (for a new allocation), a match gone or a seat
	// left (with Config.Seat), a credential for no seat where one for a
	// seat is needed, a username that is none of ours or not the one the
	// client's allocation was made with.
	RefusedBadMAC, RefusedExpired, RefusedMatchGone, RefusedSeatLeft int64
	RefusedUnscoped, RefusedUsername                                 int64
	// Allocations refused by MaxPerCredential and by MaxAllocations.
	RefusedQuota, RefusedCapacity int64
	// Permissions (and channel bindings) refused for their peer's address.
	RefusedPermissions int64
	// Datagrams an allocation dropped: to or from an address the policy
	// refuses (a port of the server's own that is no allocation's), of a
	// seat no longer held, over the bandwidth.
	DroppedPeer, DroppedSeat, DroppedBandwidth int64

	// TCP and TLS connections: accepted; refused by MaxConnections,
	// MaxConnectionsPerAddr or for another open from the same address
	// and port; closed by FirstMessageTimeout, IdleTimeout or
	// WriteTimeout; closed for a stream that is not TURN messages or a
	// TLS handshake that failed.
	ConnectionsAccepted, RefusedConnections, ConnectionTimeouts, BadStreams int64
}

// counters are Stats' atomic counterparts.
type counters struct {
	packetsIn, packetsOut, bytesIn, bytesOut                 atomic.Int64
	allocsCreated, allocsDeleted                             atomic.Int64
	badMAC, expired, matchGone, seatLeft, unscoped, username atomic.Int64
	quota, capacity, permissions                             atomic.Int64
	droppedPeer, droppedSeat, droppedBandwidth               atomic.Int64
	accepted, refusedConns, timeouts, badStreams             atomic.Int64
}

// Server is a running STUN and TURN server.
type Server struct {
	cfg      Config
	logger   logging.LoggerFactory
	udp      []*turn.Server    // the UDP listening sockets' (IPv4, then IPv6)
	streams  []*streamListener // TCP, then TLS
	addr     netip.AddrPort    // UDP, IPv4
	addr6    netip.AddrPort    // UDP, IPv6; zero when none
	tcpAddr  netip.AddrPort    // zero when none
	tlsAddr  netip.AddrPort    // zero when none
	public   netip.Addr
	public6  netip.Addr // zero: no IPv6 relayed addresses
	bind4    string     // the host IPv4 relayed sockets bind to
	bind6    string     // the host IPv6 relayed sockets bind to
	secrets  atomic.Pointer[[]string]
	policy   *policy
	allocs   *allocTable
	conns    *connTable
	stats    counters
	refusals *refusalLog
	log      *slog.Logger
	wg       sync.WaitGroup // the streams' accept loops and connections
}

// Listen starts a server.
func Listen(c Config) (s *Server, err error) {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
	if len(c.Secrets) == 0 {
		var b [32]byte
		_, _ = rand.Read(b[:])
		c.Secrets = []string{hex.EncodeToString(b[:])}
	}
	if err := checkSecrets(c.Secrets); err != nil {
		return nil, err
	}
	if c.ListenTLS != "" && c.TLS == nil {
		return nil, errors.New("relay: ListenTLS without a TLS configuration")
	}
	c.MaxAllocations = orDefault(c.MaxAllocations, DefaultMaxAllocations)
	c.MaxPerCredential = orDefault(c.MaxPerCredential, DefaultMaxPerCredential)
	c.Bandwidth = orDefault(c.Bandwidth, DefaultBandwidth)
	c.CredentialTTL = orDefault(c.CredentialTTL, DefaultCredentialTTL)
	c.MaxConnections = orDefault(c.MaxConnections, DefaultMaxConnections)
	c.MaxConnectionsPerAddr = orDefault(c.MaxConnectionsPerAddr, DefaultMaxConnectionsPerAddr)
	c.FirstMessageTimeout = orDefault(c.FirstMessageTimeout, DefaultFirstMessageTimeout)
	c.IdleTimeout = orDefault(c.IdleTimeout, DefaultIdleTimeout)
	c.WriteTimeout = orDefault(c.WriteTimeout, DefaultWriteTimeout)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	logger := c.Logger
	if logger == nil {
		lf := logging.NewDefaultLoggerFactory()
		lf.DefaultLogLevel = logging.LogLevelDisabled
		logger = lf
	}
	s = &Server{cfg: c, logger: logger, allocs: newAllocTable(), refusals: newRefusalLog(c.Log, c.Now), log: c.Log}
	s.conns = newConnTable(c.MaxConnections, c.MaxConnectionsPerAddr)
	secrets := slices.Clone(c.Secrets)
	s.secrets.Store(&secrets)
	// Whatever fails below closes what was opened before.
	var sockets []interface{ Close() error }
	defer func() {
		if err != nil {
			for _, c := range sockets {
				_ = c.Close()
			}
			err = fmt.Errorf("relay: %w", err)
		}
	}()

	pc, err := net.ListenPacket("udp4", c.Listen)
	if err != nil {
		return nil, err
	}
	sockets = append(sockets, pc)
	s.addr = pc.LocalAddr().(*net.UDPAddr).AddrPort()
	listenIP := s.addr.Addr().Unmap()
	s.public = c.PublicIP.Unmap()
	if !s.public.IsValid() {
		s.public = listenIP
		if s.public.IsUnspecified() {
			return nil, errors.New("listening on every address: give PublicIP")
		}
	}
	if !s.public.Is4() {
		return nil, fmt.Errorf("PublicIP %s is not an IPv4 address", s.public)
	}
	s.bind4 = listenIP.String()
	own := []netip.Addr{listenIP, s.public}

	var pc6 net.PacketConn
	s.bind6 = "::"
	if c.Listen6 != "" {
		host, port, err := net.SplitHostPort(c.Listen6)
		if err != nil {
			return nil, err
		}
		if port == "0" || port == "" {
			port = strconv.Itoa(int(s.addr.Port()))
		}
		if pc6, err = net.ListenPacket("udp6", net.JoinHostPort(host, port)); err != nil {
			return nil, err
		}
		sockets = append(sockets, pc6)
		s.addr6 = pc6.LocalAddr().(*net.UDPAddr).AddrPort()
		if ip := s.addr6.Addr(); !ip.IsUnspecified() {
			s.bind6 = ip.String()
			own = append(own, ip)
		}
	}
	s.public6 = c.PublicIP6
	if !s.public6.IsValid() && s.bind6 != "::" {
		s.public6 = s.addr6.Addr()
	}
	if s.public6.IsValid() {
		if !s.public6.Is6() || s.public6.Is4In6() {
			return nil, fmt.Errorf("PublicIP6 %s is not an IPv6 address", s.public6)
		}
		own = append(own, s.public6)
	}

	var lns []*streamListener
	for _, a := range []struct {
		addr string
		tls  bool
		to   *netip.AddrPort
	}{{c.ListenTCP, false, &s.tcpAddr}, {c.ListenTLS, true, &s.tlsAddr}} {
		if a.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", a.addr)
		if err != nil {
			return nil, err
		}
		sockets = append(sockets, ln)
		*a.to = ln.Addr().(*net.TCPAddr).AddrPort()
		own = append(own, a.to.Addr().Unmap())
		sl := &streamListener{Listener: ln}
		if a.tls {
			sl.tls = tlsConfig(c.TLS)
		}
		lns = append(lns, sl)
	}
	for _, a := range own {
		if a.IsUnspecified() {
			own = append(own, ownAddrs()...)
			break
		}
	}
	s.policy = newPolicy(c.AllowPeers, []netip.Addr{s.public, s.public6}, own)

	for _, pc := range []net.PacketConn{pc, pc6} {
		if pc == nil {
			continue
		}
		srv, err := s.newTURN(&listenConn{PacketConn: pc, srv: s})
		if err != nil {
			return nil, err
		}
		s.udp = append(s.udp, srv)
	}
	s.streams = lns
	for _, ln := range lns {
		s.wg.Add(1)
		go s.accept(ln)
	}
	return s, nil
}

// A front is a socket pion reads TURN requests from and answers on: a
// UDP listening socket, or one client's TCP or TLS connection. Each has a
// pion server of its own, whose handlers know their front's request: the
// one pion is handling (pion reads the next only once it has handled it,
// and calls the handlers from the goroutine that read it).
type front interface {
	net.PacketConn
	request() *request
}

// request is the TURN message a front's pion server is handling, and the
// allocation its Allocate reserved (quota), until the allocation is made
// or the next request is read.
type request struct {
	raw      []byte // pion's buffer: valid until the next ReadFrom
	from     net.Addr
	reserved bool
	quotaKey string
	stream   *streamConn // the front, when it is a connection
}

// set records the request read, releasing the previous one's reservation.
func (r *request) set(s *Server, raw []byte, from net.Addr) {
	s.allocs.release(r)
	r.raw, r.from = raw, from
}

// of returns the request being handled if it came from a.
func (r *request) of(a net.Addr) []byte {
	if r.from == nil || a == nil || r.from.String() != a.String() {
		return nil
	}
	return r.raw
}

// newTURN starts a pion server on f, whose handlers see f's request.
func (s *Server) newTURN(f front) (*turn.Server, error) {
	req := f.request()
	return turn.NewServer(turn.ServerConfig{
		Realm:         Realm,
		LoggerFactory: s.logger,
		AuthHandler: func(username, realm string, src net.Addr) ([]byte, bool) {
			return s.authenticate(username, realm, src, req.of(src))
		},
		QuotaHandler: func(username, _ string, src net.Addr) bool { return s.quota(username, src, req) },
		EventHandler: turn.EventHandler{
			OnAllocationCreated: func(src, _ net.Addr, _, username, _ string, relayAddr net.Addr, _ int) {
				s.allocationCreated(src, username, relayAddr, req)
			},
			OnAllocationDeleted: func(src, _ net.Addr, _, username, _ string) { s.allocationDeleted(src, username) },
		},
		PacketConnConfigs: []turn.PacketConnConfig{{
			PacketConn:            f,
			RelayAddressGenerator: &generator{srv: s, req: req},
			PermissionHandler:     s.permit,
		}},
	})
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (s *Server) now() time.Time { return s.cfg.Now() }

// SetSecrets replaces the secrets (Config.Secrets): the first signs,
// every one verifies. Credentials signed by a secret no longer in the
// list are refused from now on.
func (s *Server) SetSecrets(secrets []string) error {
	if err := checkSecrets(secrets); err != nil {
		return err
	}
	list := slices.Clone(secrets)
	s.secrets.Store(&list)
	return nil
}

// authenticate is pion's AuthHandler: it returns the key of the secret
// whose MAC the request carries, when its credential may make the
// request. It sees the request itself (raw, which its front keeps).
func (s *Server) authenticate(username, realm string, src net.Addr, raw []byte) ([]byte, bool) {
	msg := &stun.Message{Raw: append([]byte(nil), raw...)}
	if raw == nil || msg.Decode() != nil {
		s.refuse(&s.stats.username, "username", "TURN request not found for its credential", src, username)
		return nil, false
	}
	var key []byte
	for _, secret := range *s.secrets.Load() {
		k := authKey(username, realm, secret)
		if stun.MessageIntegrity(k).Check(msg) == nil { // hmac.Equal inside
			key = k
			break
		}
	}
	if key == nil {
		s.refuse(&s.stats.badMAC, "mac", "TURN request with a bad MAC refused", src, username)
		return nil, false
	}
	cred, ok := parseUsername(username)
	if !ok {
		s.refuse(&s.stats.username, "username", "TURN request with a username that is none of ours refused", src, username)
		return nil, false
	}
	if s.cfg.Seat != nil {
		if !cred.scoped() {
			s.refuse(&s.stats.unscoped, "unscoped", "TURN credential for no seat refused", src, username)
			return nil, false
		}
		switch s.cfg.Seat(cred.match, cred.seat) {
		case SeatHeld:
		case SeatLeft:
			s.refuse(&s.stats.seatLeft, "seat-left", "TURN credential of a seat that was left refused", src, username)
			return nil, false
		default:
			s.refuse(&s.stats.matchGone, "match-gone", "TURN credential of a match that is gone refused", src, username)
			return nil, false
		}
	}
	mine, allocated := s.allocs.of(src)
	if allocated && mine.username != username {
		s.refuse(&s.stats.username, "username", "TURN request with another credential than its allocation's refused", src, username)
		return nil, false
	}
	if !s.now().Before(cred.expires) {
		// An allocation made in time lives on while its seat is held:
		// clients refresh it with the credential they made it with.
		renewal := allocated && msg.Type.Method != stun.MethodAllocate && cred.scoped() && s.cfg.Seat != nil
		if !renewal {
			s.refuse(&s.stats.expired, "expired", "expired TURN credential refused", src, username)
			return nil, false
		}
	}
	return key, true
}

// refuse counts a refused request and logs it (at most a line a kind
// every 10 s).
func (s *Server) refuse(n *atomic.Int64, kind, msg string, src net.Addr, username string) {
	n.Add(1)
	if len(username) > 64 {
		username = username[:64] + "…"
	}
	s.refusals.note(kind, msg, "client", src.String(), "username", username)
}

// quota is pion's QuotaHandler (after authenticate): the credential's
// allocations and the server's are bounded. An allocation it lets
// through is reserved in req until it is made or the next request is
// read, so that two connections cannot both take the last one.
func (s *Server) quota(username string, src net.Addr, req *request) bool {
	cred, _ := parseUsername(username)
	switch s.allocs.reserve(req, cred, s.cfg.MaxPerCredential, s.cfg.MaxAllocations) {
	case reserveQuota:
		s.refuse(&s.stats.quota, "quota", "TURN allocation over the credential's quota refused", src, username)
		return false
	case reserveCapacity:
		s.refuse(&s.stats.capacity, "capacity", "TURN allocation over the server's cap refused", src, username)
		return false
	}
	return true
}

// permit is the PermissionHandler: permissions (and channel bindings) to
// refused addresses are refused.
func (s *Server) permit(client net.Addr, peer net.IP) bool {
	ok, why := s.policy.permit(peer)
	if !ok {
		s.stats.permissions.Add(1)
		s.refusals.note("permission", "TURN permission for a refused peer refused", "client", client.String(),
			"peer", peer.String(), "why", why)
	}
	return ok
}

func (s *Server) allocationCreated(src net.Addr, username string, relayAddr net.Addr, req *request) {
	cred, _ := parseUsername(username)
	ap, _ := addrPort(relayAddr)
	s.allocs.created(req, src, cred, ap)
	s.stats.allocsCreated.Add(1)
	s.log.Info("TURN allocation created", "client", src.String(), "transport", transport(req),
		"relay", relayAddr.String(), "match", cred.match, "seat", cred.seat, "allocations", s.Allocations())
}

func (s *Server) allocationDeleted(src net.Addr, username string) {
	if _, ok := s.allocs.deleted(src); !ok {
		return
	}
	cred, _ := parseUsername(username)
	s.stats.allocsDeleted.Add(1)
	s.log.Info("TURN allocation deleted", "client", src.String(), "match", cred.match, "seat", cred.seat)
}

// transport names the transport of req's front.
func transport(req *request) string {
	switch {
	case req.stream == nil:
		return "udp"
	case req.stream.tls:
		return "tls"
	}
	return "tcp"
}

// Addr is the UDP address the server listens on for IPv4 clients.
func (s *Server) Addr() netip.AddrPort { return s.addr }

// Addr6 is the UDP address the server listens on for IPv6 clients (the
// zero value when none).
func (s *Server) Addr6() netip.AddrPort { return s.addr6 }

// TCPAddr and TLSAddr are the addresses the server takes TURN over TCP
// and over TLS on (the zero value when none).
func (s *Server) TCPAddr() netip.AddrPort { return s.tcpAddr }

// TLSAddr is the address the server takes TURN over TLS on.
func (s *Server) TLSAddr() netip.AddrPort { return s.tlsAddr }

// URLs are the server's STUN URL and its TURN URL over UDP, at host
// (empty: its public IP) and its port.
func (s *Server) URLs(host string) (stun, turn string) {
	if host == "" {
		host = s.public.String()
	}
	hp := net.JoinHostPort(host, fmt.Sprint(s.addr.Port()))
	return "stun:" + hp, "turn:" + hp + "?transport=udp"
}

// TURNURLs are the server's TURN URLs at host (empty: its public IP):
// over UDP, then over TCP and TLS ("turns:") when it listens on them. A
// TLS client checks that the certificate names host. With no host, and
// an IPv6 address that IPv6 clients reach it at (PublicIP6, or Listen6's
// host), the URLs over UDP and over TCP (when it listens on IPv6) at that
// address follow; with a host name, its AAAA record does that, at the
// same ports.
func (s *Server) TURNURLs(host string) []string {
	h := host
	if h == "" {
		h = s.public.String()
	}
	_, udp := s.URLs(host)
	urls := []string{udp}
	if s.tcpAddr.IsValid() {
		urls = append(urls, "turn:"+net.JoinHostPort(h, fmt.Sprint(s.tcpAddr.Port()))+"?transport=tcp")
	}
	if s.tlsAddr.IsValid() {
		urls = append(urls, "turns:"+net.JoinHostPort(h, fmt.Sprint(s.tlsAddr.Port()))+"?transport=tcp")
	}
	if host != "" {
		return urls
	}
	six := s.public6
	if s.addr6.IsValid() && !s.addr6.Addr().IsUnspecified() {
		six = s.addr6.Addr()
	}
	if !six.IsValid() {
		return urls
	}
	if s.addr6.IsValid() {
		urls = append(urls, "turn:"+netip.AddrPortFrom(six, s.addr6.Port()).String()+"?transport=udp")
	}
	if s.tcpAddr.IsValid() && (s.tcpAddr.Addr().IsUnspecified() || s.tcpAddr.Addr() == six) {
		urls = append(urls, "turn:"+netip.AddrPortFrom(six, s.tcpAddr.Port()).String()+"?transport=tcp")
	}
	return urls
}

// Credentials returns a username and password for the relay valid for
// ttl, for no seat: the relay takes them only without Config.Seat.
func (s *Server) Credentials(ttl time.Duration) (username, password string, err error) {
	return Credentials((*s.secrets.Load())[0], s.now().Add(ttl), "", 0)
}

// SeatCredentials returns a username and password for seat of match,
// valid for Config.CredentialTTL (an allocation made with them lives on
// while Config.Seat says the seat is held). match must not contain ':'.
func (s *Server) SeatCredentials(match string, seat int) (username, password string, err error) {
	if match == "" {
		return "", "", errors.New("relay: no match")
	}
	return Credentials((*s.secrets.Load())[0], s.now().Add(s.cfg.CredentialTTL), match, seat)
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	c := &s.stats
	return Stats{PacketsIn: c.packetsIn.Load(), PacketsOut: c.packetsOut.Load(),
		BytesIn: c.bytesIn.Load(), BytesOut: c.bytesOut.Load(),
		AllocationsCreated: c.allocsCreated.Load(), AllocationsDeleted: c.allocsDeleted.Load(),
		RefusedBadMAC: c.badMAC.Load(), RefusedExpired: c.expired.Load(),
		RefusedMatchGone: c.matchGone.Load(), RefusedSeatLeft: c.seatLeft.Load(),
		RefusedUnscoped: c.unscoped.Load(), RefusedUsername: c.username.Load(),
		RefusedQuota: c.quota.Load(), RefusedCapacity: c.capacity.Load(),
		RefusedPermissions: c.permissions.Load(),
		DroppedPeer:        c.droppedPeer.Load(), DroppedSeat: c.droppedSeat.Load(), DroppedBandwidth: c.droppedBandwidth.Load(),
		ConnectionsAccepted: c.accepted.Load(), RefusedConnections: c.refusedConns.Load(),
		ConnectionTimeouts: c.timeouts.Load(), BadStreams: c.badStreams.Load(),
	}
}

// Allocations is how many allocations exist now.
func (s *Server) Allocations() int { return s.allocs.count() }

// Connections is how many TCP and TLS connections are open now.
func (s *Server) Connections() int { return s.conns.count() }

// Close stops the server: it closes its sockets and connections, and
// returns once every connection's goroutine has ended.
func (s *Server) Close() error {
	var errs []error
	for _, srv := range s.udp {
		errs = append(errs, srv.Close())
	}
	for _, ln := range s.streams {
		errs = append(errs, ln.Close())
	}
	s.conns.closeAll()
	s.wg.Wait()
	return errors.Join(errs...)
}
