// Package relay is a STUN server and TURN relay (pion/turn) for the
// machines of a match that cannot reach each other directly. It answers
// STUN binding requests (a machine learns the address a NAT gives it) and
// relays for clients holding time-limited credentials derived from a
// shared secret (the "TURN REST API" scheme: the username is the expiry
// time, the password an HMAC of it), so the lobby that hands credentials
// out never shares the secret. The rendezvous server runs one; the soak
// runs one in process for -relay.
package relay

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/pion/logging"
	"github.com/pion/turn/v4"
)

// Realm is the TURN realm.
const Realm = "rewind"

// Config configures Listen. The zero value listens on 127.0.0.1 on a
// free port with a random secret.
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
	// Secret derives the credentials ("" means 32 random bytes): every
	// server and lobby that hands out credentials for it must share it.
	Secret string
	// Logger receives pion's logs; nil discards them.
	Logger logging.LoggerFactory
}

// Stats counts the datagrams between the relay and its clients (the
// listening socket; not the relayed sockets' side).
type Stats struct {
	PacketsIn, PacketsOut int64
	BytesIn, BytesOut     int64
}

// Server is a running STUN and TURN server.
type Server struct {
	srv    *turn.Server
	conn   *countingConn
	addr   netip.AddrPort
	public netip.Addr
	secret string
}

// Listen starts a server.
func Listen(c Config) (*Server, error) {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
	if c.Secret == "" {
		var b [32]byte
		_, _ = rand.Read(b[:])
		c.Secret = hex.EncodeToString(b[:])
	}
	pc, err := net.ListenPacket("udp4", c.Listen)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	addr := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	public := c.PublicIP
	if !public.IsValid() {
		public = addr.Addr().Unmap()
		if public.IsUnspecified() {
			_ = pc.Close()
			return nil, errors.New("relay: listening on every address: give PublicIP")
		}
	}
	logger := c.Logger
	if logger == nil {
		lf := logging.NewDefaultLoggerFactory()
		lf.DefaultLogLevel = logging.LogLevelDisabled
		logger = lf
	}
	if c.MaxAllocations <= 0 {
		c.MaxAllocations = 1000
	}
	counted := &countingConn{PacketConn: pc}
	var running atomic.Pointer[turn.Server] // set once NewServer returns
	srv, err := turn.NewServer(turn.ServerConfig{
		Realm:         Realm,
		AuthHandler:   turn.LongTermTURNRESTAuthHandler(c.Secret, logger.NewLogger("turn")),
		LoggerFactory: logger,
		QuotaHandler: func(string, string, net.Addr) bool {
			srv := running.Load()
			return srv != nil && srv.AllocationCount() < c.MaxAllocations
		},
		PacketConnConfigs: []turn.PacketConnConfig{{
			PacketConn: counted,
			RelayAddressGenerator: &turn.RelayAddressGeneratorStatic{
				RelayAddress: net.IP(public.AsSlice()),
				Address:      addr.Addr().Unmap().String(),
			},
		}},
	})
	if err != nil {
		_ = pc.Close()
		return nil, fmt.Errorf("relay: %w", err)
	}
	running.Store(srv)
	return &Server{srv: srv, conn: counted, addr: addr, public: public, secret: c.Secret}, nil
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
// ttl.
func (s *Server) Credentials(ttl time.Duration) (username, password string, err error) {
	return Credentials(s.secret, ttl)
}

// Credentials derives a username and password valid for ttl from secret,
// as the server with that secret checks them.
func Credentials(secret string, ttl time.Duration) (username, password string, err error) {
	return turn.GenerateLongTermTURNRESTCredentials(secret, "rewind", ttl)
}

// Stats returns the listening socket's counters.
func (s *Server) Stats() Stats {
	return Stats{PacketsIn: s.conn.packetsIn.Load(), PacketsOut: s.conn.packetsOut.Load(),
		BytesIn: s.conn.bytesIn.Load(), BytesOut: s.conn.bytesOut.Load()}
}

// Allocations is how many allocations exist now.
func (s *Server) Allocations() int { return s.srv.AllocationCount() }

// Close stops the server and closes its sockets.
func (s *Server) Close() error { return s.srv.Close() }

type countingConn struct {
	net.PacketConn
	packetsIn, packetsOut, bytesIn, bytesOut atomic.Int64
}

func (c *countingConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := c.PacketConn.ReadFrom(b)
	if err == nil {
		c.packetsIn.Add(1)
		c.bytesIn.Add(int64(n))
	}
	return n, a, err
}

func (c *countingConn) WriteTo(b []byte, a net.Addr) (int, error) {
	n, err := c.PacketConn.WriteTo(b, a)
	if err == nil {
		c.packetsOut.Add(1)
		c.bytesOut.Add(int64(n))
	}
	return n, err
}
