package relay_test

import (
	"bytes"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/logging"
	"github.com/pion/turn/v4"

	"github.com/rewindgg/rewind/cmd/rendezvous/internal/nettest"
	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
)

// clock is a relay's clock in tests: it moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// quiet is a pion logger factory that writes nothing.
func quiet() logging.LoggerFactory {
	lf := logging.NewDefaultLoggerFactory()
	lf.DefaultLogLevel = logging.LogLevelDisabled
	return lf
}

// client is a pion/turn client of srv on its own loopback socket.
func client(t testing.TB, srv *relay.Server, user, pass string) *turn.Client {
	t.Helper()
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()
	c, err := turn.NewClient(&turn.ClientConfig{STUNServerAddr: addr, TURNServerAddr: addr, Conn: conn,
		Username: user, Password: pass, Realm: relay.Realm, LoggerFactory: quiet()})
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		conn.Close()
	})
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	return c
}

// allocate makes an allocation with the credential, or fails the test.
func allocate(t testing.TB, srv *relay.Server, user, pass string) net.PacketConn {
	t.Helper()
	rc, err := client(t, srv, user, pass).Allocate()
	if err != nil {
		t.Fatalf("allocating as %q: %v", user, err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}

// pair makes two allocations with the credential, each with a
// permission for the other: peers at the relay's own address.
func pair(t testing.TB, srv *relay.Server, user, pass string) (a, b net.PacketConn) {
	t.Helper()
	ca, cb := client(t, srv, user, pass), client(t, srv, user, pass)
	for _, c := range []*turn.Client{ca, cb} {
		rc, err := c.Allocate()
		if err != nil {
			t.Fatalf("allocating as %q: %v", user, err)
		}
		t.Cleanup(func() { rc.Close() })
		if a == nil {
			a = rc
		} else {
			b = rc
		}
	}
	if err := ca.CreatePermission(b.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if err := cb.CreatePermission(a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// read reads a datagram from rc within 5 s.
func read(t testing.TB, rc net.PacketConn) (string, net.Addr) {
	t.Helper()
	rc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, from, err := rc.ReadFrom(buf)
	if err != nil {
		t.Fatalf("reading through the relay: %v", err)
	}
	return string(buf[:n]), from
}

// The host attack: a client of the relay sends to a service on the
// host's loopback. At another loopback address than the relay's own it
// gets no permission; at the relay's own address (in this test it is on
// loopback, as relay-relay needs) the datagram is dropped, since the
// port is no allocation's. Nothing reaches the service. With the
// allow-list naming 127.0.0.0/8 both are relayed.
func TestRelayRefusesTheHost(t *testing.T) {
	for _, allow := range []bool{false, true} {
		name := "default"
		if allow {
			name = "allow-listed"
		}
		t.Run(name, func(t *testing.T) {
			c := relay.Config{Logger: quiet()}
			if allow {
				c.AllowPeers = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			}
			srv := listen(t, c)
			user, pass, _ := srv.Credentials(time.Hour)
			rc := allocate(t, srv, user, pass)
			own, other := nettest.NewEcho(t, "127.0.0.1"), nettest.NewEcho(t, "127.0.0.2")

			_, err := rc.WriteTo([]byte("to another loopback address"), other.Conn.LocalAddr())
			if allow {
				if err != nil {
					t.Fatal(err)
				}
				if got, from := read(t, rc); got != "to another loopback address" || from.String() != other.Conn.LocalAddr().String() {
					t.Fatalf("read %q from %v", got, from)
				}
			} else {
				if err == nil {
					t.Fatal("a permission for 127.0.0.2")
				}
				if st := srv.Stats(); st.RefusedPermissions < 1 {
					t.Fatalf("%d permissions refused, want 1", st.RefusedPermissions)
				}
			}

			if _, err := rc.WriteTo([]byte("to the relay's own address"), own.Conn.LocalAddr()); err != nil {
				t.Fatal(err)
			}
			if allow {
				if got, _ := read(t, rc); got != "to the relay's own address" {
					t.Fatalf("read %q", got)
				}
				if own.Got.Load() != 1 || other.Got.Load() != 1 {
					t.Fatalf("the services got %d and %d datagrams, want 1 each", own.Got.Load(), other.Got.Load())
				}
				return
			}
			nettest.WaitFor(t, "the datagram to a port of the relay's own address to be dropped",
				func() bool { return srv.Stats().DroppedPeer == 1 })
			if own.Got.Load() != 0 || other.Got.Load() != 0 {
				t.Fatalf("the services on loopback got %d and %d datagrams through the relay", own.Got.Load(), other.Got.Load())
			}
		})
	}
}

// Relay-relay: two allocations are each other's peers at the relay's own
// address, in both directions, while a port of that address that is no
// allocation's is refused both ways (sending to it, and taking datagrams
// from it), and so is the relay's own listening port.
func TestRelayOwnAddressPorts(t *testing.T) {
	srv := listen(t, relay.Config{Logger: quiet()})
	user, pass, _ := srv.Credentials(time.Hour)
	a, b := pair(t, srv, user, pass)
	if _, err := b.WriteTo([]byte("b"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if got, from := read(t, a); got != "b" || from.String() != b.LocalAddr().String() {
		t.Fatalf("a read %q from %v", got, from)
	}
	if _, err := a.WriteTo([]byte("a"), b.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if got, from := read(t, b); got != "a" || from.String() != a.LocalAddr().String() {
		t.Fatalf("b read %q from %v", got, from)
	}

	victim := nettest.NewEcho(t, "127.0.0.1")
	if _, err := a.WriteTo([]byte("x"), victim.Conn.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	nettest.WaitFor(t, "a datagram to a port that is no allocation's to be dropped", func() bool { return srv.Stats().DroppedPeer == 1 })
	// From that port to a, which has a permission for the address.
	if _, err := victim.Conn.WriteTo([]byte("from a port that is no allocation's"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	nettest.WaitFor(t, "a datagram from it to be dropped", func() bool { return srv.Stats().DroppedPeer == 2 })
	if n := victim.Got.Load(); n != 0 {
		t.Fatalf("the service got %d datagrams", n)
	}
	// Nor the relay's own listening port.
	if _, err := a.WriteTo([]byte("TURN to itself"), net.UDPAddrFromAddrPort(srv.Addr())); err != nil {
		t.Fatal(err)
	}
	nettest.WaitFor(t, "a datagram to the relay's listening port to be dropped", func() bool { return srv.Stats().DroppedPeer == 3 })
	// Still relay-relay.
	if _, err := a.WriteTo([]byte("again"), b.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if got, _ := read(t, b); got != "again" {
		t.Fatalf("b read %q", got)
	}
}

// A burst over an allocation's bandwidth is cut: with 10,000 bytes a
// second and a stopped clock, 20 datagrams of 500 bytes pass of 40, the
// rest are dropped and counted; a second later, 20 more pass.
func TestRelayBandwidth(t *testing.T) {
	clk := newClock()
	srv := listen(t, relay.Config{Logger: quiet(), Bandwidth: 10000, Now: clk.Now})
	user, pass, _ := srv.Credentials(time.Hour)
	a, b := pair(t, srv, user, pass)
	var received atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := b.ReadFrom(buf); err != nil {
				return
			}
			received.Add(1)
		}
	}()
	payload := bytes.Repeat([]byte{1}, 500)
	burst := func(sent int64) {
		t.Helper()
		for range 40 {
			if _, err := a.WriteTo(payload, b.LocalAddr()); err != nil {
				t.Fatal(err)
			}
		}
		nettest.WaitFor(t, "every datagram received or dropped", func() bool {
			return received.Load()+srv.Stats().DroppedBandwidth == sent
		})
	}
	burst(40)
	if n, d := received.Load(), srv.Stats().DroppedBandwidth; n != 20 || d != 20 {
		t.Fatalf("%d datagrams of 500 bytes received, %d dropped, want 20 and 20", n, d)
	}
	clk.Advance(time.Second)
	burst(80)
	if n := received.Load(); n != 40 {
		t.Fatalf("%d received after a second more, want 40", n)
	}
}

// Each credential's allocations are bounded (MaxPerCredential), the
// server's too (MaxAllocations); another credential still allocates.
func TestRelayQuota(t *testing.T) {
	srv := listen(t, relay.Config{Logger: quiet(), MaxPerCredential: 3, MaxAllocations: 5})
	u1, p1, _ := srv.Credentials(time.Hour)
	u2, p2, _ := srv.Credentials(2 * time.Hour)
	for range 3 {
		allocate(t, srv, u1, p1)
	}
	if _, err := client(t, srv, u1, p1).Allocate(); err == nil || !strings.Contains(err.Error(), "486") {
		t.Fatalf("a 4th allocation of one credential: %v, want error 486", err)
	}
	allocate(t, srv, u2, p2)
	allocate(t, srv, u2, p2)
	if _, err := client(t, srv, u2, p2).Allocate(); err == nil {
		t.Fatal("a 6th allocation on a server of 5")
	}
	if st := srv.Stats(); st.RefusedQuota < 1 || st.RefusedCapacity < 1 || st.AllocationsCreated != 5 {
		t.Fatalf("stats %+v, want 1 refused by quota, 1 by capacity, 5 created", st)
	}
}

// Rotation: a credential signed by a secret verifies while the secret is
// in the list, whether first or not; once it is removed, it is refused
// (bad MAC). Credentials are signed by the first.
func TestRelaySecrets(t *testing.T) {
	srv := listen(t, relay.Config{Logger: quiet(), Secrets: []string{"old secret"}})
	oldUser, oldPass, _ := srv.Credentials(time.Hour)
	allocate(t, srv, oldUser, oldPass)
	if err := srv.SetSecrets([]string{"new secret", "old secret"}); err != nil {
		t.Fatal(err)
	}
	newUser, newPass, _ := srv.Credentials(time.Hour + time.Second)
	expiry, _ := strconv.ParseInt(newUser, 10, 64)
	if _, want, _ := relay.Credentials("new secret", time.Unix(expiry, 0), "", 0); newPass != want {
		t.Fatal("the new credential is not signed by the new secret")
	}
	allocate(t, srv, oldUser, oldPass)
	allocate(t, srv, newUser, newPass)
	if err := srv.SetSecrets([]string{"new secret"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client(t, srv, oldUser, oldPass).Allocate(); err == nil {
		t.Fatal("allocated with a removed secret's credential")
	}
	allocate(t, srv, newUser, newPass)
	if st := srv.Stats(); st.RefusedBadMAC < 1 {
		t.Fatalf("%d refused for a bad MAC, want 1", st.RefusedBadMAC)
	}
	if srv.SetSecrets(nil) == nil || srv.SetSecrets([]string{""}) == nil {
		t.Fatal("SetSecrets took no secret, or an empty one")
	}
}

// A flood of refusals writes a line per kind per 10 s, and counts them all
// (at least 21 here: a request the client sends again is refused again).
func TestRelayRefusalLog(t *testing.T) {
	var out nettest.SyncBuffer
	clk := newClock()
	srv := listen(t, relay.Config{Logger: quiet(), Now: clk.Now, Log: slog.New(slog.NewTextHandler(&out, nil))})
	user, pass, _ := srv.Credentials(time.Hour)
	c := client(t, srv, user, pass)
	if _, err := c.Allocate(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if c.CreatePermission(&net.UDPAddr{IP: net.IPv4(10, 0, 0, byte(i+1)), Port: 9}) == nil {
			t.Fatal("a permission for 10.0.0.x")
		}
	}
	clk.Advance(10 * time.Second)
	if c.CreatePermission(&net.UDPAddr{IP: net.IPv4(192, 168, 1, 1), Port: 9}) == nil {
		t.Fatal("a permission for 192.168.1.1")
	}
	if n := srv.Stats().RefusedPermissions; n < 21 {
		t.Fatalf("%d permissions refused, want 21 or more", n)
	}
	lines := strings.Count(out.String(), "TURN permission for a refused peer refused")
	if lines != 2 || !strings.Contains(out.String(), "not_logged_since_last=") {
		t.Fatalf("%d lines for 21 refusals, want 2 (the second counting those not logged):\n%s", lines, out.String())
	}
	if !strings.Contains(out.String(), "TURN allocation created") {
		t.Fatalf("the allocation was not logged:\n%s", out.String())
	}
}
