package relay

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/turn/v4"
	"golang.org/x/time/rate"
)

// listenConn is the listening socket: it counts the datagrams, and keeps
// the last one read for the AuthHandler, which pion calls from the same
// goroutine while it handles that datagram (its read loop reads one
// datagram, handles it, then reads the next).
type listenConn struct {
	net.PacketConn
	packetsIn, packetsOut, bytesIn, bytesOut atomic.Int64

	last     []byte // pion's buffer: valid until the next ReadFrom
	lastFrom net.Addr
}

func (c *listenConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := c.PacketConn.ReadFrom(b)
	if err == nil {
		c.packetsIn.Add(1)
		c.bytesIn.Add(int64(n))
		c.last, c.lastFrom = b[:n], a
	}
	return n, a, err
}

func (c *listenConn) WriteTo(b []byte, a net.Addr) (int, error) {
	n, err := c.PacketConn.WriteTo(b, a)
	if err == nil {
		c.packetsOut.Add(1)
		c.bytesOut.Add(int64(n))
	}
	return n, err
}

// datagramFrom returns the datagram being handled if it came from a.
func (c *listenConn) datagramFrom(a net.Addr) []byte {
	if c.lastFrom == nil || a == nil || c.lastFrom.String() != a.String() {
		return nil
	}
	return c.last
}

// generator makes the allocations' sockets (as pion's static generator
// does) and wraps each in a relayConn.
type generator struct {
	turn.RelayAddressGeneratorStatic
	srv *Server
}

func (g *generator) AllocatePacketConn(network string, port int) (net.PacketConn, net.Addr, error) {
	conn, addr, err := g.RelayAddressGeneratorStatic.AllocatePacketConn(network, port)
	if err != nil {
		return nil, nil, err
	}
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		_ = conn.Close()
		return nil, nil, net.UnknownNetworkError(network)
	}
	rc := &relayConn{PacketConn: conn, srv: g.srv, port: uint16(ua.Port),
		limit: rate.NewLimiter(rate.Limit(g.srv.cfg.Bandwidth), max(g.srv.cfg.Bandwidth, minBurst))}
	g.srv.policy.addPort(rc.port)
	g.srv.allocs.addConn(rc)
	return rc, addr, nil
}

// minBurst lets a datagram of the largest size pion reads through a cap
// smaller than it.
const minBurst = 1600

// seatRecheck is how often an allocation's sends ask again whether its
// seat is held.
const seatRecheck = time.Second

// relayConn is an allocation's socket. Its sends go only where the policy
// allows, within the allocation's bandwidth, and while its seat is held;
// it takes datagrams only from where it could send. What it drops it
// counts, and reports as sent (a network drops datagrams too).
type relayConn struct {
	net.PacketConn
	srv   *Server
	port  uint16
	limit *rate.Limiter

	mu        sync.Mutex
	cred      credential // set when the allocation is made
	bound     bool
	checkedAt time.Time
	held      bool
	closeOnce sync.Once
}

// bind ties the socket to the credential its allocation was made with.
func (c *relayConn) bind(cred credential) {
	c.mu.Lock()
	c.cred, c.bound, c.held = cred, true, true
	c.checkedAt = c.srv.now()
	c.mu.Unlock()
}

// seatHeld says whether the allocation's seat is still held, asking the
// Seat callback at most every seatRecheck.
func (c *relayConn) seatHeld(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.bound || !c.cred.scoped() || c.srv.cfg.Seat == nil {
		return true
	}
	if now.Sub(c.checkedAt) >= seatRecheck || now.Before(c.checkedAt) {
		c.held = c.srv.cfg.Seat(c.cred.match, c.cred.seat) == SeatHeld
		c.checkedAt = now
	}
	return c.held
}

func (c *relayConn) WriteTo(b []byte, a net.Addr) (int, error) {
	ap, ok := addrPort(a)
	if !ok {
		return len(b), nil
	}
	if ok, why := c.srv.policy.send(ap); !ok {
		c.srv.stats.droppedPeer.Add(1)
		c.srv.refusals.note("peer", "TURN datagram to a refused peer dropped", "why", why, "peer", ap.String(), "relay_port", c.port)
		return len(b), nil
	}
	now := c.srv.now()
	if !c.seatHeld(now) {
		c.srv.stats.droppedSeat.Add(1)
		c.srv.refusals.note("seat", "TURN datagram of a seat no longer held dropped", "relay_port", c.port)
		return len(b), nil
	}
	if !c.limit.AllowN(now, len(b)) {
		c.srv.stats.droppedBandwidth.Add(1)
		c.srv.refusals.note("bandwidth", "TURN datagram over the allocation's bandwidth dropped", "relay_port", c.port,
			"bytes_per_second", c.srv.cfg.Bandwidth)
		return len(b), nil
	}
	return c.PacketConn.WriteTo(b, a)
}

func (c *relayConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, a, err := c.PacketConn.ReadFrom(b)
		if err != nil {
			return n, a, err
		}
		if ap, ok := addrPort(a); ok {
			if ok, _ := c.srv.policy.send(ap); ok {
				return n, a, nil
			}
		}
		c.srv.stats.droppedPeer.Add(1)
	}
}

func (c *relayConn) Close() error {
	c.closeOnce.Do(func() {
		c.srv.policy.removePort(c.port)
		c.srv.allocs.removeConn(c)
	})
	return c.PacketConn.Close()
}

func addrPort(a net.Addr) (netip.AddrPort, bool) {
	ua, ok := a.(*net.UDPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	ap := ua.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), ap.IsValid()
}
