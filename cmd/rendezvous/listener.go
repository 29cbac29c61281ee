package main

import (
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// connLimiter is a net.Listener that keeps at most max connections open
// at once, and at most perIP from one client address (its addrKey; a
// trusted proxy's connections count only towards max). A connection
// beyond either is closed as soon as it is accepted, before net/http
// spends a goroutine or a buffer on it. A connection's slot is freed when
// it is closed (by net/http, or by whoever hijacked it).
type connLimiter struct {
	net.Listener
	max, perIP int
	prefix     int
	trusted    []netip.Prefix

	mu      sync.Mutex
	open    int
	byIP    map[string]int
	refused atomic.Int64 // connections closed at once, so far
}

func newConnLimiter(ln net.Listener, cfg *config) *connLimiter {
	return &connLimiter{
		Listener: ln,
		max:      cfg.MaxConns,
		perIP:    cfg.MaxConnsPerIP,
		prefix:   cfg.IPv6Prefix,
		trusted:  cfg.TrustedProxies,
		byIP:     make(map[string]int),
	}
}

// Accept returns the next connection within the caps.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, capped := l.key(c.RemoteAddr())
		if l.take(key, capped) {
			return &limitedConn{Conn: c, l: l, key: key, capped: capped}, nil
		}
		l.refused.Add(1)
		c.Close()
	}
}

// key is the client address's key, and whether the per-address cap
// applies to it (not to a trusted proxy, behind which are many clients).
func (l *connLimiter) key(addr net.Addr) (string, bool) {
	host := remoteHost(addr.String())
	if a, err := netip.ParseAddr(host); err == nil {
		for _, p := range l.trusted {
			if p.Contains(a.Unmap()) {
				return "", false
			}
		}
	}
	return addrKey(host, l.prefix), true
}

func (l *connLimiter) take(key string, capped bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max || (capped && l.byIP[key] >= l.perIP) {
		return false
	}
	l.open++
	if capped {
		l.byIP[key]++
	}
	return true
}

func (l *connLimiter) release(key string, capped bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if !capped {
		return
	}
	if l.byIP[key]--; l.byIP[key] <= 0 {
		delete(l.byIP, key)
	}
}

// limitedConn is an accepted connection that frees its slot when closed.
type limitedConn struct {
	net.Conn
	l      *connLimiter
	key    string
	capped bool
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.release(c.key, c.capped)
	}
	return err
}

// ReadFrom lets net/http send a file with sendfile(2) through the
// wrapper, as it does on a bare TCP connection.
func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(c.Conn, r)
}

// CloseWrite lets net/http half-close the connection before closing it
// (so that the client reads the last answer rather than a reset).
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
