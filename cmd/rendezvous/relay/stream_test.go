package relay_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v3"
	"github.com/pion/turn/v4"

	"github.com/rewindgg/rewind/cmd/rendezvous/internal/nettest"
	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
)

// The transports a client reaches the relay over.
var transports = []string{"udp", "tcp", "tls"}

// streams is a relay configuration's TCP and TLS listeners on loopback,
// and the pool that trusts the TLS certificate.
func streams(t testing.TB, c relay.Config) (relay.Config, *x509.CertPool) {
	t.Helper()
	cert, pool := nettest.SelfSigned(t, "localhost")
	c.ListenTCP, c.ListenTLS = "127.0.0.1:0", "127.0.0.1:0"
	c.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	return c, pool
}

// dialTransport connects to srv over transport (TLS trusting pool):
// the socket a pion/turn client talks through, and the server address
// it names.
func dialTransport(t testing.TB, srv *relay.Server, transport string, pool *x509.CertPool) (net.PacketConn, string) {
	t.Helper()
	switch transport {
	case "tcp", "tls":
		addr := srv.TCPAddr().String()
		var conn net.Conn
		var err error
		if transport == "tls" {
			// From another loopback address than TCP's: the kernel may
			// give a TCP and a TLS connection the same source port (their
			// destinations differ), and the relay refuses a second
			// connection from one address and port.
			addr = srv.TLSAddr().String()
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3)}}
			conn, err = tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "localhost"})
		} else {
			conn, err = net.Dial("tcp", addr)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return turn.NewSTUNConn(conn), addr
	}
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, srv.Addr().String()
}

// clientOver is a pion/turn client of srv over transport.
func clientOver(t testing.TB, srv *relay.Server, transport string, pool *x509.CertPool, user, pass string) *turn.Client {
	t.Helper()
	conn, addr := dialTransport(t, srv, transport, pool)
	c, err := turn.NewClient(&turn.ClientConfig{STUNServerAddr: addr, TURNServerAddr: addr, Conn: conn,
		Username: user, Password: pass, Realm: relay.Realm, LoggerFactory: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	return c
}

// seats is a Config.Seat: the seats of match "M" listed are held, the
// others left; other matches are gone.
func seats(held ...int) func(string, int) relay.SeatState {
	return func(match string, seat int) relay.SeatState {
		if match != "M" {
			return relay.MatchGone
		}
		for _, h := range held {
			if h == seat {
				return relay.SeatHeld
			}
		}
		return relay.SeatLeft
	}
}

// Over UDP, TCP and TLS alike: a seat's credentials (signed by the
// second of two secrets) allocate, and relay a datagram to a loopback
// peer the allow-list names and back; a peer it does not name gets no
// permission; a wrong MAC, a left seat and the seat's quota are refused
// and counted; closing the client (over TCP and TLS, its connection)
// deletes the allocations.
func TestRelayTransports(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			c, pool := streams(t, relay.Config{Logger: quiet(), Secrets: []string{"new", "old"}, Seat: seats(0),
				MaxPerCredential: 2, AllowPeers: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}})
			srv := listen(t, c)
			expires := time.Now().Add(time.Hour)
			user, pass, _ := relay.Credentials("old", expires, "M", 0)
			cl := clientOver(t, srv, tr, pool, user, pass)
			rc, err := cl.Allocate()
			if err != nil {
				t.Fatalf("allocating: %v", err)
			}
			allowed, refused := nettest.NewEcho(t, "127.0.0.2"), nettest.NewEcho(t, "127.0.0.3")
			if _, err := rc.WriteTo([]byte("over "+tr), allowed.Conn.LocalAddr()); err != nil {
				t.Fatal(err)
			}
			if got, from := read(t, rc); got != "over "+tr || from.String() != allowed.Conn.LocalAddr().String() {
				t.Fatalf("read %q from %v", got, from)
			}
			if _, err := rc.WriteTo([]byte("x"), refused.Conn.LocalAddr()); err == nil {
				t.Fatal("a permission for 127.0.0.3")
			}

			type refusal struct {
				what       string
				user, pass string
				count      func(relay.Stats) int64
				code       string
			}
			left, leftPass, _ := relay.Credentials("new", expires, "M", 1)
			second, secondPass, _ := relay.Credentials("new", expires.Add(time.Second), "M", 0)
			third, thirdPass, _ := relay.Credentials("new", expires.Add(2*time.Second), "M", 0)
			if _, err := clientOver(t, srv, tr, pool, second, secondPass).Allocate(); err != nil {
				t.Fatalf("the seat's second allocation: %v", err)
			}
			for _, r := range []refusal{
				{"wrong MAC", user, "wrong", func(st relay.Stats) int64 { return st.RefusedBadMAC }, ""},
				{"seat left", left, leftPass, func(st relay.Stats) int64 { return st.RefusedSeatLeft }, ""},
				{"quota", third, thirdPass, func(st relay.Stats) int64 { return st.RefusedQuota }, "486"},
			} {
				before := r.count(srv.Stats())
				_, err := clientOver(t, srv, tr, pool, r.user, r.pass).Allocate()
				if err == nil || !strings.Contains(err.Error(), r.code) {
					t.Fatalf("%s: allocated, or not error %q: %v", r.what, r.code, err)
				}
				if r.count(srv.Stats())-before < 1 {
					t.Fatalf("%s: not counted", r.what)
				}
			}
			st := srv.Stats()
			if st.RefusedPermissions < 1 || st.AllocationsCreated != 2 || srv.Allocations() != 2 {
				t.Fatalf("stats %+v, %d allocations", st, srv.Allocations())
			}
			if tr != "udp" && st.ConnectionsAccepted != 5 {
				t.Fatalf("%d connections, want 5", st.ConnectionsAccepted)
			}
			rc.Close()
			cl.Close()
			if tr == "udp" {
				return // the second client's allocation is deleted when it expires
			}
			// Closing the connections deletes their allocations.
			srv.Close()
			if n, st := srv.Allocations(), srv.Stats(); n != 0 || st.AllocationsDeleted != 2 || srv.Connections() != 0 {
				t.Fatalf("after Close: %d allocations, %d deleted, %d connections", n, st.AllocationsDeleted, srv.Connections())
			}
		})
	}
}

// Over many TCP connections at once, each request is checked with its
// own connection's message: those with the right password allocate,
// those with a wrong one are refused.
func TestRelayConcurrentConnections(t *testing.T) {
	c, pool := streams(t, relay.Config{Logger: quiet(), MaxPerCredential: 100})
	srv := listen(t, c)
	user, pass, _ := srv.Credentials(time.Hour)
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		p := pass
		if i%2 == 1 {
			p = "wrong"
		}
		cl := clientOver(t, srv, transports[1+i%4/2], pool, user, p)
		wg.Go(func() {
			rc, err := cl.Allocate()
			if err == nil {
				rc.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (err == nil) != (i%2 == 0) {
			t.Errorf("client %d (right password: %v): %v", i, i%2 == 0, err)
		}
	}
	if st := srv.Stats(); st.AllocationsCreated != n/2 || st.RefusedBadMAC < n/2 {
		t.Fatalf("stats %+v", st)
	}
}

// dialFrom opens a TCP connection to addr from the loopback address ip.
func dialFrom(t *testing.T, ip string, addr netip.AddrPort) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	conn, err := d.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closed waits (5 s at most) for the server to close conn, and says how
// long after since.
func closed(t *testing.T, conn net.Conn, since time.Time) time.Duration {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection from %s is still open", conn.LocalAddr())
	}
	return time.Since(since)
}

// The connection caps, and the timeouts: connections beyond the
// server's cap or the address's are closed at once; connections that
// send nothing are closed after FirstMessageTimeout, and those that sent
// a request but hold no allocation after IdleTimeout; one that holds an
// allocation is not. A stream that is not TURN is closed.
func TestRelayConnectionLimits(t *testing.T) {
	const first, idle = 400 * time.Millisecond, 300 * time.Millisecond
	c := relay.Config{Logger: quiet(), ListenTCP: "127.0.0.1:0", MaxConnections: 3, MaxConnectionsPerAddr: 2,
		FirstMessageTimeout: first, IdleTimeout: idle, AllowPeers: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
	srv := listen(t, c)
	addr := srv.TCPAddr()
	stats := func(f func(relay.Stats) int64) func() int64 { return func() int64 { return f(srv.Stats()) } }
	accepted := stats(func(st relay.Stats) int64 { return st.ConnectionsAccepted })
	refused := stats(func(st relay.Stats) int64 { return st.RefusedConnections })
	wait := func(what string, f func() int64, want int64) {
		t.Helper()
		nettest.WaitFor(t, what, func() bool { return f() == want })
	}

	start := time.Now()
	a1, a2 := dialFrom(t, "127.0.0.1", addr), dialFrom(t, "127.0.0.1", addr)
	wait("2 connections accepted", accepted, 2)
	a3 := dialFrom(t, "127.0.0.1", addr)
	wait("a third from 127.0.0.1 refused", refused, 1)
	closed(t, a3, start)
	b := dialFrom(t, "127.0.0.2", addr)
	wait("one from 127.0.0.2 accepted", accepted, 3)
	dialFrom(t, "127.0.0.3", addr)
	wait("a fourth refused", refused, 2)
	if n := srv.Connections(); n != 3 {
		t.Fatalf("%d connections open, want 3", n)
	}
	for _, conn := range []net.Conn{a1, a2, b} {
		if d := closed(t, conn, start); d < first {
			t.Fatalf("a silent connection was closed after %v, before its first message's timeout %v", d, first)
		}
	}
	wait("3 timeouts", stats(func(st relay.Stats) int64 { return st.ConnectionTimeouts }), 3)
	nettest.WaitFor(t, "no connection open", func() bool { return srv.Connections() == 0 })

	// An allocation over TCP, then a connection that asks one binding and
	// stays idle: once it is closed, the allocation's, idle as long, is
	// still open.
	user, pass, _ := srv.Credentials(time.Hour)
	rc, err := clientOver(t, srv, "tcp", nil, user, pass).Allocate()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	idler := dialFrom(t, "127.0.0.1", addr)
	msg := stun.MustBuild(stun.TransactionID, stun.BindingRequest)
	sent := time.Now() // before the server reads it, and sets the idle deadline
	if _, err := idler.Write(msg.Raw); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	idler.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := idler.Read(buf)
	if err != nil || !stun.IsMessage(buf[:n]) {
		t.Fatalf("no binding response: %v", err)
	}
	if d := closed(t, idler, sent); d < idle {
		t.Fatalf("an idle connection was closed after %v, before IdleTimeout %v", d, idle)
	}
	peer := nettest.NewEcho(t, "127.0.0.2")
	if _, err := rc.WriteTo([]byte("still here"), peer.Conn.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if got, _ := read(t, rc); got != "still here" {
		t.Fatalf("read %q", got)
	}

	// Not TURN.
	http := dialFrom(t, "127.0.0.1", addr)
	if _, err := http.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	closed(t, http, time.Now())
	wait("the stream that is not TURN counted", stats(func(st relay.Stats) int64 { return st.BadStreams }), 1)
}
