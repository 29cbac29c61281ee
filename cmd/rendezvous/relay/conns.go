package relay

import (
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/pion/stun/v3"
	"golang.org/x/time/rate"
)

// listenConn is a UDP listening socket: a front whose requests are
// datagrams. Its pion server's read loop reads one, handles it, then
// reads the next.
type listenConn struct {
	net.PacketConn
	srv *Server
	req request
}

func (c *listenConn) request() *request { return &c.req }

func (c *listenConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := c.PacketConn.ReadFrom(b)
	if err != nil {
		c.req.set(c.srv, nil, nil)
		return n, a, err
	}
	c.srv.stats.packetsIn.Add(1)
	c.srv.stats.bytesIn.Add(int64(n))
	c.req.set(c.srv, b[:n], a)
	return n, a, err
}

func (c *listenConn) WriteTo(b []byte, a net.Addr) (int, error) {
	n, err := c.PacketConn.WriteTo(b, a)
	if err == nil {
		c.srv.stats.packetsOut.Add(1)
		c.srv.stats.bytesOut.Add(int64(n))
	}
	return n, err
}

// generator makes the allocations' sockets, IPv4 or IPv6 as the request
// asks (REQUESTED-ADDRESS-FAMILY, RFC 6156; IPv4 when it does not), bound
// to the listening host of that family and advertised at the public
// address, and wraps each in a relayConn. pion calls it while it handles
// the Allocate its front keeps (req).
type generator struct {
	srv *Server
	req *request
}

// errFamily is the generator's answer to a request for an address
// family the relay has no address of; pion answers it with error 508.
var errFamily = errors.New("relay: no relayed address of the requested family")

func (g *generator) Validate() error { return nil }

// AllocateConn would make a TCP allocation (RFC 6062), which the relay
// does not make.
func (g *generator) AllocateConn(string, int) (net.Conn, net.Addr, error) {
	return nil, nil, errors.New("relay: TCP allocations are not supported")
}

// AllocatePacketConn ignores network: pion asks for "udp4" whatever the
// request says.
func (g *generator) AllocatePacketConn(_ string, port int) (net.PacketConn, net.Addr, error) {
	six, err := requestsIPv6(g.req.raw)
	if err != nil {
		return nil, nil, err
	}
	network, bind, public := "udp4", g.srv.bind4, g.srv.public
	if six {
		if !g.srv.public6.IsValid() {
			return nil, nil, errFamily
		}
		network, bind, public = "udp6", g.srv.bind6, g.srv.public6
	}
	conn, err := net.ListenPacket(network, net.JoinHostPort(bind, strconv.Itoa(port)))
	if err != nil {
		return nil, nil, err
	}
	ua, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok {
		_ = conn.Close()
		return nil, nil, net.UnknownNetworkError(network)
	}
	addr := netip.AddrPortFrom(public, uint16(ua.Port))
	rc := &relayConn{PacketConn: conn, srv: g.srv, addr: addr,
		limit: rate.NewLimiter(rate.Limit(g.srv.cfg.Bandwidth), max(g.srv.cfg.Bandwidth, minBurst))}
	g.srv.policy.addPort(addr)
	g.srv.allocs.addConn(rc)
	return rc, net.UDPAddrFromAddrPort(addr), nil
}

// requestsIPv6 says whether the Allocate raw asks for an IPv6 relayed
// address; an error when it asks for a family that is neither.
func requestsIPv6(raw []byte) (bool, error) {
	msg := &stun.Message{Raw: append([]byte(nil), raw...)}
	if msg.Decode() != nil {
		return false, nil // pion decoded it; this does not happen
	}
	v, err := msg.Get(stun.AttrRequestedAddressFamily)
	if err != nil {
		return false, nil
	}
	if len(v) != 4 {
		return false, errFamily
	}
	switch v[0] {
	case 0x01:
		return false, nil
	case 0x02:
		return true, nil
	}
	return false, errFamily
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
	addr  netip.AddrPort // the relayed address: public, and the socket's port
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
		c.srv.refusals.note("peer", "TURN datagram to a refused peer dropped", "why", why, "peer", ap.String(), "relay", c.addr.String())
		return len(b), nil
	}
	now := c.srv.now()
	if !c.seatHeld(now) {
		c.srv.stats.droppedSeat.Add(1)
		c.srv.refusals.note("seat", "TURN datagram of a seat no longer held dropped", "relay", c.addr.String())
		return len(b), nil
	}
	if !c.limit.AllowN(now, len(b)) {
		c.srv.stats.droppedBandwidth.Add(1)
		c.srv.refusals.note("bandwidth", "TURN datagram over the allocation's bandwidth dropped", "relay", c.addr.String(),
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
		c.srv.policy.removePort(c.addr)
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
