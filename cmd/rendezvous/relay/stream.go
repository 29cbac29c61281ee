package relay

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/pion/stun/v3"
)

// TURN over TCP and TLS (RFC 5766 §2.1): a client's requests come over a
// connection, one TURN message after another (STUN messages, and
// ChannelData padded to 4 bytes). Each connection is a front with a pion
// server of its own, so its handlers see that connection's request, as
// the UDP socket's do; the relayed side is UDP all the same.

// streamListener is a TCP listener of the relay, and its TLS
// configuration when it takes TLS.
type streamListener struct {
	net.Listener
	tls *tls.Config
}

// tlsConfig is c for ListenTLS: TLS 1.2 at least.
func tlsConfig(c *tls.Config) *tls.Config {
	c = c.Clone()
	c.MinVersion = max(c.MinVersion, tls.VersionTLS12)
	return c
}

// acceptBackoff is how long the accept loop waits after an error other
// than its listener being closed (out of file descriptors, say).
const acceptBackoff = 50 * time.Millisecond

// accept takes ln's connections until it is closed.
func (s *Server) accept(ln *streamListener) {
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("TURN listener", "err", err)
			t := time.NewTimer(acceptBackoff)
			<-t.C
			continue
		}
		s.admit(conn, ln.tls)
	}
}

// admit serves conn unless the connection caps refuse it.
func (s *Server) admit(conn net.Conn, tlsConf *tls.Config) {
	ta, ok := conn.RemoteAddr().(*net.TCPAddr)
	if !ok {
		_ = conn.Close()
		return
	}
	ap := ta.AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	c := &streamConn{srv: s, raw: conn, conn: conn, remote: net.TCPAddrFromAddrPort(ap),
		tls: tlsConf != nil, firstBy: time.Now().Add(s.cfg.FirstMessageTimeout), done: make(chan struct{})}
	c.req.stream = c
	if why := s.conns.add(c, ap); why != "" {
		_ = conn.Close()
		s.stats.refusedConns.Add(1)
		s.refusals.note("connections", "TURN connection refused", "client", ap.String(), "why", why)
		return
	}
	s.stats.accepted.Add(1)
	if tlsConf != nil {
		c.conn = tls.Server(conn, tlsConf)
	}
	_ = c.conn.SetDeadline(c.firstBy)
	c.r = bufio.NewReaderSize(c.conn, streamBuffer)
	s.wg.Add(1)
	go s.serveStream(c)
}

// streamBuffer is the size of a connection's read buffer.
const streamBuffer = 4096

// serveStream runs c's pion server until c's requests end (the client
// closed it, a timeout, a stream that is not TURN, or Close), then
// forgets its allocation: pion closes it without telling.
func (s *Server) serveStream(c *streamConn) {
	defer s.wg.Done()
	srv, err := s.newTURN(c)
	if err != nil {
		s.log.Warn("TURN connection not served", "client", c.remote.String(), "err", err)
		_ = c.Close()
		return
	}
	<-c.done
	_ = srv.Close() // closes c
	if cred, ok := s.allocs.deleted(c.remote); ok {
		s.stats.allocsDeleted.Add(1)
		s.log.Info("TURN allocation deleted", "client", c.remote.String(), "match", cred.match, "seat", cred.seat,
			"why", "connection closed")
	}
}

// streamConn is a TCP or TLS connection of a client: a front whose
// ReadFrom returns one TURN message at a time (as pion's STUNConn does,
// but keeping it for the handlers), and which closes the connection when
// the client is too slow: FirstMessageTimeout for the TLS handshake and
// the first message, IdleTimeout between messages while it holds no
// allocation, WriteTimeout for what the relay writes to it.
type streamConn struct {
	srv     *Server
	raw     net.Conn // the TCP connection
	conn    net.Conn // raw, or TLS over it
	r       *bufio.Reader
	remote  *net.TCPAddr // the client's address, IPv4 unmapped
	key     connKey
	tls     bool
	firstBy time.Time
	req     request // only the read loop's goroutine uses it

	mu      sync.Mutex
	started bool // a whole message was read
	held    bool // the client holds an allocation
	idle    bool // the deadline set is IdleTimeout's

	done      chan struct{} // closed when ReadFrom fails: pion reads no more
	doneOnce  sync.Once
	closeOnce sync.Once
}

func (c *streamConn) request() *request { return &c.req }

// errNotTURN ends a connection whose bytes are not TURN messages.
var errNotTURN = errors.New("relay: not a TURN message")

// ReadFrom returns the next TURN message. A message that does not fit b
// (pion's buffer, 1600 bytes) is skipped, as pion skips what fills it.
func (c *streamConn) ReadFrom(b []byte) (int, net.Addr, error) {
	c.req.set(c.srv, nil, nil)
	for {
		c.setReadDeadline()
		n, err := c.next(b)
		if err != nil {
			c.fail(err)
			return 0, nil, err
		}
		c.mu.Lock()
		c.started = true
		c.mu.Unlock()
		if n < 0 {
			continue
		}
		c.srv.stats.packetsIn.Add(1)
		c.srv.stats.bytesIn.Add(int64(n))
		c.req.set(c.srv, b[:n], c.remote)
		return n, c.remote, nil
	}
}

// next reads a message into b: its size, or -1 when it did not fit.
func (c *streamConn) next(b []byte) (int, error) {
	head, err := c.r.Peek(4)
	if err != nil {
		return 0, err
	}
	var size int
	switch ch := binary.BigEndian.Uint16(head); {
	case head[0]&0xc0 == 0: // a STUN message (with the magic cookie): its length leaves out its 20-byte header
		h, err := c.r.Peek(20)
		if err != nil {
			return 0, err
		}
		if !stun.IsMessage(h) {
			return 0, errNotTURN
		}
		size = 20 + int(binary.BigEndian.Uint16(h[2:4]))
	case ch >= 0x4000 && ch <= 0x7fff && c.begun(): // ChannelData: 4 bytes of header, data padded to 4
		// Not first: a channel is bound by a request before. (Text such
		// as an HTTP request would look like ChannelData.)
		size = 4 + (int(binary.BigEndian.Uint16(head[2:4]))+3)&^3
	default:
		return 0, errNotTURN
	}
	if size >= len(b) {
		if _, err := c.r.Discard(size); err != nil {
			return 0, err
		}
		return -1, nil
	}
	if _, err := io.ReadFull(c.r, b[:size]); err != nil {
		return 0, err
	}
	return size, nil
}

// begun says whether a whole message was read.
func (c *streamConn) begun() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

// setReadDeadline sets the deadline of the next message: the first
// one's, IdleTimeout from now, or none while the client holds an
// allocation (its lifetime bounds it: pion deletes it unless refreshed).
func (c *streamConn) setReadDeadline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	var d time.Time
	switch {
	case !c.started:
		d = c.firstBy
	case !c.held:
		d = time.Now().Add(c.srv.cfg.IdleTimeout)
	}
	c.idle = c.started && !c.held
	_ = c.conn.SetReadDeadline(d)
}

// holding tells c that its client holds an allocation now, or not any
// more: then the idle timeout runs from now, even in a read under way.
func (c *streamConn) holding(held bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = held
	if !held && c.started && !c.idle {
		c.idle = true
		_ = c.conn.SetReadDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
	}
}

// fail ends the read loop on err, counting timeouts and streams that
// are not TURN.
func (c *streamConn) fail(err error) {
	var ne net.Error
	var tlsErr tls.AlertError
	var recErr tls.RecordHeaderError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		c.srv.stats.timeouts.Add(1)
		c.mu.Lock()
		started := c.started
		c.mu.Unlock()
		why := "idle"
		if !started {
			why = "first message"
		}
		c.srv.refusals.note("timeout", "TURN connection closed for its timeout", "client", c.remote.String(), "why", why)
	case errors.Is(err, errNotTURN) || errors.As(err, &tlsErr) || errors.As(err, &recErr):
		c.srv.stats.badStreams.Add(1)
		c.srv.refusals.note("stream", "TURN connection closed for what it sent", "client", c.remote.String(), "err", err.Error())
	}
	c.doneOnce.Do(func() { close(c.done) })
}

// WriteTo writes b, a whole message, to the client (whatever a). A
// client that does not take it within WriteTimeout loses the connection.
func (c *streamConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	_ = c.conn.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout))
	n, err := c.conn.Write(b)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.srv.stats.timeouts.Add(1)
			c.srv.refusals.note("timeout", "TURN connection closed for its timeout", "client", c.remote.String(), "why", "write")
		}
		_ = c.Close()
		return n, err
	}
	c.srv.stats.packetsOut.Add(1)
	c.srv.stats.bytesOut.Add(int64(n))
	return n, nil
}

// Close closes the connection (pion's read loop then ends) and frees its
// place under the caps.
func (c *streamConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.srv.conns.remove(c) // first: once the client sees it closed, its place is free
		err = c.raw.Close()
	})
	return err
}

func (c *streamConn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *streamConn) SetDeadline(t time.Time) error      { return c.conn.SetDeadline(t) }
func (c *streamConn) SetReadDeadline(t time.Time) error  { return c.conn.SetReadDeadline(t) }
func (c *streamConn) SetWriteDeadline(t time.Time) error { return c.conn.SetWriteDeadline(t) }

// connKey is what MaxConnectionsPerAddr counts per: an IPv4 address, or
// an IPv6 /64 (what one subscriber usually gets).
type connKey = netip.Prefix

func keyOf(a netip.Addr) connKey {
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// connTable holds the open connections, within the caps.
type connTable struct {
	max, perKey int

	mu     sync.Mutex
	closed bool
	open   map[netip.AddrPort]*streamConn
	per    map[connKey]int
}

func newConnTable(max, perKey int) *connTable {
	return &connTable{max: max, perKey: perKey, open: make(map[netip.AddrPort]*streamConn), per: make(map[connKey]int)}
}

// add records c from ap, or says why not.
func (t *connTable) add(c *streamConn, ap netip.AddrPort) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := keyOf(ap.Addr())
	switch {
	case t.closed:
		return "closed"
	case len(t.open) >= t.max:
		return "the server's cap"
	case t.per[k] >= t.perKey:
		return "the address's cap"
	case t.open[ap] != nil:
		// Its TURN requests would be taken for the open one's (pion
		// names a client by its address and port).
		return "another connection from the same address and port"
	}
	c.key = k
	t.open[ap] = c
	t.per[k]++
	return ""
}

func (t *connTable) remove(c *streamConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ap := c.remote.AddrPort()
	if t.open[ap] != c {
		return
	}
	delete(t.open, ap)
	if t.per[c.key] > 1 {
		t.per[c.key]--
	} else {
		delete(t.per, c.key)
	}
}

func (t *connTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open)
}

// closeAll closes every connection and refuses new ones.
func (t *connTable) closeAll() {
	t.mu.Lock()
	t.closed = true
	open := make([]*streamConn, 0, len(t.open))
	for _, c := range t.open {
		open = append(open, c)
	}
	t.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
}
