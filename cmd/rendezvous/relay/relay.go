// Package relay is a STUN server and TURN relay (pion/turn) for the
// machines of a match that cannot reach each other directly. It answers
// STUN binding requests (a machine learns the address a NAT gives it) and
// relays for clients holding short-lived credentials derived from a
// shared secret (the "TURN REST API" scheme: the username is the expiry
// time and the seat, the password an HMAC of it), so the lobby that hands
// credentials out never shares the secret. It relays only to peers on the
// internet: not to the host's loopback, private or link-local networks,
// nor to its own addresses (other than to its own allocations), and each
// seat's allocations and each allocation's bandwidth are bounded. The
// rendezvous server runs one; the soak runs one in process for -relay.
package relay

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
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
)

// SeatState is what Config.Seat answers.
type SeatState int

const (
	MatchGone SeatState = iota // no such match (any more); the zero value
	SeatLeft                   // the match exists; the seat is not held
	SeatHeld                   // the seat's holder is in the match
)

// Config configures Listen. The zero value listens on 127.0.0.1 on a
// free port with a random secret, and relays for credentials of any
// seat or none.
type Config struct {
	// Listen is the UDP address to listen on ("" means 127.0.0.1:0).
	Listen string
	// PublicIP is the address the relay's allocations are reachable at
	// (the zero value means the listening address's). They bind to the
	// listening address's host, so a public IP that a cloud's NAT maps to
	// the machine works.
	PublicIP netip.Addr
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
// listening socket; not the relayed sockets' side), the allocations, and
// what the relay refused.
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
}

// counters are Stats' atomic counterparts (but the listening socket's).
type counters struct {
	allocsCreated, allocsDeleted                             atomic.Int64
	badMAC, expired, matchGone, seatLeft, unscoped, username atomic.Int64
	quota, capacity, permissions                             atomic.Int64
	droppedPeer, droppedSeat, droppedBandwidth               atomic.Int64
}

// Server is a running STUN and TURN server.
type Server struct {
	srv      atomic.Pointer[turn.Server] // set once turn.NewServer returns (its read loop runs before)
	conn     *listenConn
	addr     netip.AddrPort
	public   netip.Addr
	cfg      Config
	secrets  atomic.Pointer[[]string]
	policy   *policy
	allocs   *allocTable
	stats    counters
	refusals *refusalLog
	log      *slog.Logger
}

// Listen starts a server.
func Listen(c Config) (*Server, error) {
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
	c.MaxAllocations = orDefault(c.MaxAllocations, DefaultMaxAllocations)
	c.MaxPerCredential = orDefault(c.MaxPerCredential, DefaultMaxPerCredential)
	c.Bandwidth = orDefault(c.Bandwidth, DefaultBandwidth)
	c.CredentialTTL = orDefault(c.CredentialTTL, DefaultCredentialTTL)
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
	pc, err := net.ListenPacket("udp4", c.Listen)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	addr := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	listenIP := addr.Addr().Unmap()
	public := c.PublicIP.Unmap()
	if !public.IsValid() {
		public = listenIP
		if public.IsUnspecified() {
			_ = pc.Close()
			return nil, errors.New("relay: listening on every address: give PublicIP")
		}
	}
	own := []netip.Addr{listenIP}
	if listenIP.IsUnspecified() {
		own = ownAddrs()
	}
	s := &Server{
		conn:     &listenConn{PacketConn: pc},
		addr:     addr,
		public:   public,
		cfg:      c,
		policy:   newPolicy(c.AllowPeers, public, own),
		allocs:   newAllocTable(),
		refusals: newRefusalLog(c.Log, c.Now),
		log:      c.Log,
	}
	secrets := slices.Clone(c.Secrets)
	s.secrets.Store(&secrets)
	srv, err := turn.NewServer(turn.ServerConfig{
		Realm:         Realm,
		AuthHandler:   s.authenticate,
		LoggerFactory: logger,
		QuotaHandler: func(username, _ string, src net.Addr) bool {
			srv := s.srv.Load()
			return srv != nil && s.quota(username, src, srv.AllocationCount())
		},
		EventHandler: turn.EventHandler{
			OnAllocationCreated: s.allocationCreated,
			OnAllocationDeleted: s.allocationDeleted,
		},
		PacketConnConfigs: []turn.PacketConnConfig{{
			PacketConn: s.conn,
			RelayAddressGenerator: &generator{srv: s, RelayAddressGeneratorStatic: turn.RelayAddressGeneratorStatic{
				RelayAddress: net.IP(public.AsSlice()),
				Address:      listenIP.String(),
			}},
			PermissionHandler: s.permit,
		}},
	})
	if err != nil {
		_ = pc.Close()
		return nil, fmt.Errorf("relay: %w", err)
	}
	s.srv.Store(srv)
	return s, nil
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
// request. It sees the request itself (listenConn keeps it).
func (s *Server) authenticate(username, realm string, src net.Addr) ([]byte, bool) {
	raw := s.conn.datagramFrom(src)
	msg := &stun.Message{Raw: append([]byte(nil), raw...)}
	if raw == nil || msg.Decode() != nil {
		s.refuse(&s.stats.username, "username", "TURN request not found for its credential", src, username)
		return nil, false
	}
	var key []byte
	for _, secret := range *s.secrets.Load() {
		k := authKey(username, realm, secret)
		if stun.MessageIntegrity(k).Check(msg) == nil {
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
// allocations and the server's are bounded.
func (s *Server) quota(username string, src net.Addr, allocations int) bool {
	cred, _ := parseUsername(username)
	if n := s.allocs.held(cred); n >= s.cfg.MaxPerCredential {
		s.refuse(&s.stats.quota, "quota", "TURN allocation over the credential's quota refused", src, username)
		return false
	}
	if allocations >= s.cfg.MaxAllocations {
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

func (s *Server) allocationCreated(src, _ net.Addr, _, username, _ string, relayAddr net.Addr, _ int) {
	cred, _ := parseUsername(username)
	port := -1
	if ua, ok := relayAddr.(*net.UDPAddr); ok {
		port = ua.Port
	}
	s.allocs.created(src, cred, port)
	s.stats.allocsCreated.Add(1)
	s.log.Info("TURN allocation created", "client", src.String(), "relay", relayAddr.String(),
		"match", cred.match, "seat", cred.seat, "allocations", s.Allocations())
}

func (s *Server) allocationDeleted(src, _ net.Addr, _, username, _ string) {
	cred, _ := parseUsername(username)
	s.allocs.deleted(src)
	s.stats.allocsDeleted.Add(1)
	s.log.Info("TURN allocation deleted", "client", src.String(), "match", cred.match, "seat", cred.seat)
}

// Addr is the address the server listens on.
func (s *Server) Addr() netip.AddrPort { return s.addr }

// URLs are the server's STUN and TURN URLs, at host (empty: its public
// IP) and its port.
func (s *Server) URLs(host string) (stun, turn string) {
	if host == "" {
		host = s.public.String()
	}
	hp := net.JoinHostPort(host, fmt.Sprint(s.addr.Port()))
	return "stun:" + hp, "turn:" + hp + "?transport=udp"
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
	return Stats{PacketsIn: s.conn.packetsIn.Load(), PacketsOut: s.conn.packetsOut.Load(),
		BytesIn: s.conn.bytesIn.Load(), BytesOut: s.conn.bytesOut.Load(),
		AllocationsCreated: c.allocsCreated.Load(), AllocationsDeleted: c.allocsDeleted.Load(),
		RefusedBadMAC: c.badMAC.Load(), RefusedExpired: c.expired.Load(),
		RefusedMatchGone: c.matchGone.Load(), RefusedSeatLeft: c.seatLeft.Load(),
		RefusedUnscoped: c.unscoped.Load(), RefusedUsername: c.username.Load(),
		RefusedQuota: c.quota.Load(), RefusedCapacity: c.capacity.Load(),
		RefusedPermissions: c.permissions.Load(),
		DroppedPeer:        c.droppedPeer.Load(), DroppedSeat: c.droppedSeat.Load(), DroppedBandwidth: c.droppedBandwidth.Load(),
	}
}

// Allocations is how many allocations exist now.
func (s *Server) Allocations() int {
	if srv := s.srv.Load(); srv != nil {
		return srv.AllocationCount()
	}
	return 0
}

// Close stops the server and closes its sockets.
func (s *Server) Close() error { return s.srv.Load().Close() }
