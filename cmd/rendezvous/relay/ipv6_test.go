package relay_test

import (
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/stun/v3"
	turn5 "github.com/pion/turn/v5"

	"github.com/rewindgg/rewind/cmd/rendezvous/internal/nettest"
	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
)

// needIPv6 skips the test where ::1 cannot be bound (no IPv6, or the
// loopback interface of the namespace is down).
func needIPv6(t *testing.T) {
	t.Helper()
	conn, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Skipf("IPv6 loopback (::1) unavailable: %v", err)
	}
	conn.Close()
}

// echoOn is a UDP echo service on ip (IPv4 or IPv6) that counts what it
// gets.
func echoOn(t *testing.T, ip string) (net.PacketConn, *atomic.Int64) {
	t.Helper()
	conn, err := net.ListenPacket("udp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var got atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			got.Add(1)
			conn.WriteTo(buf[:n], from)
		}
	}()
	return conn, &got
}

// allocate5 allocates at server from a UDP socket on local with
// pion/turn v5's client (the one pion's ICE uses: it asks for the
// family of its socket unless told, RFC 6156).
func allocate5(t *testing.T, local, server, user, pass string, family turn5.RequestedAddressFamily) (net.PacketConn, error) {
	t.Helper()
	conn, err := net.ListenPacket("udp", net.JoinHostPort(local, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c, err := turn5.NewClient(&turn5.ClientConfig{STUNServerAddr: server, TURNServerAddr: server, Conn: conn,
		Username: user, Password: pass, Realm: relay.Realm, LoggerFactory: quiet(), RequestedAddressFamily: family})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	rc, err := c.Allocate()
	if err == nil {
		t.Cleanup(func() { rc.Close() })
	}
	return rc, err
}

// IPv6: a client reaching the relay over IPv6 (Listen6) gets an IPv6
// relayed address when it asks (pion's v5 client asks for its socket's
// family), an IPv4 one when it asks for IPv4, and relays through either;
// two IPv6 allocations are each other's peers at the relay's IPv6
// address, where a port that is no allocation's is refused. A relay
// without an IPv6 address refuses an IPv6 allocation (error 508).
func TestRelayIPv6(t *testing.T) {
	needIPv6(t)
	loopbacks := []netip.Prefix{netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("127.0.0.0/8")}
	srv := listen(t, relay.Config{Logger: quiet(), Listen6: "[::1]:0", AllowPeers: loopbacks})
	if a6 := srv.Addr6(); a6.Addr() != netip.IPv6Loopback() || a6.Port() != srv.Addr().Port() {
		t.Fatalf("IPv6 address %v, want [::1] at the IPv4 port %d", a6, srv.Addr().Port())
	}
	if urls := srv.TURNURLs(""); len(urls) != 2 || urls[1] != "turn:"+srv.Addr6().String()+"?transport=udp" {
		t.Fatalf("TURN URLs %q", urls)
	}
	user, pass, _ := srv.Credentials(time.Hour)
	server6 := srv.Addr6().String()
	for _, c := range []struct {
		name   string
		family turn5.RequestedAddressFamily
		peer   string
	}{
		{"IPv6 relayed", 0, "::1"},
		{"IPv4 relayed", turn5.RequestedAddressFamilyIPv4, "127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc, err := allocate5(t, "::1", server6, user, pass, c.family)
			if err != nil {
				t.Fatal(err)
			}
			relayed := rc.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
			if want := netip.MustParseAddr(c.peer); relayed != want {
				t.Fatalf("relayed address %v, want %v", rc.LocalAddr(), want)
			}
			peer, got := echoOn(t, c.peer)
			if _, err := rc.WriteTo([]byte("hello "+c.peer), peer.LocalAddr()); err != nil {
				t.Fatal(err)
			}
			if msg, from := read(t, rc); msg != "hello "+c.peer || from.String() != peer.LocalAddr().String() {
				t.Fatalf("read %q from %v", msg, from)
			}
			if got.Load() != 1 {
				t.Fatalf("the peer got %d datagrams", got.Load())
			}
		})
	}

	t.Run("own address", func(t *testing.T) {
		srv := listen(t, relay.Config{Logger: quiet(), Listen6: "[::1]:0"})
		user, pass, _ := srv.Credentials(time.Hour)
		a, err := allocate5(t, "::1", srv.Addr6().String(), user, pass, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := allocate5(t, "::1", srv.Addr6().String(), user, pass, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.WriteTo([]byte("to b"), b.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		// b needs a permission for a's address (the same: ::1) to take it.
		if _, err := b.WriteTo([]byte("to a"), a.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		if msg, _ := read(t, a); msg != "to a" {
			t.Fatalf("a read %q", msg)
		}
		victim, got := echoOn(t, "::1")
		if _, err := a.WriteTo([]byte("to a service"), victim.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		nettest.WaitFor(t, "the datagram to a port of ::1 that is no allocation's to be dropped",
			func() bool { return srv.Stats().DroppedPeer >= 1 })
		if got.Load() != 0 {
			t.Fatalf("the service on ::1 got %d datagrams", got.Load())
		}
	})

	t.Run("no IPv6 address", func(t *testing.T) {
		srv := listen(t, relay.Config{Logger: quiet()})
		user, pass, _ := srv.Credentials(time.Hour)
		res := rawAllocate(t, srv.Addr().String(), user, pass, 0x02)
		var code stun.ErrorCodeAttribute
		if res.Type.Class != stun.ClassErrorResponse || code.GetFrom(res) != nil || code.Code != stun.CodeInsufficientCapacity {
			t.Fatalf("an IPv6 allocation from a relay without an IPv6 address: %v, want error 508", res)
		}
		if srv.Allocations() != 0 {
			t.Fatal("allocated")
		}
	})
}

// rawAllocate sends server an Allocate asking for family (RFC 6156:
// 0x01 IPv4, 0x02 IPv6) with the credential, by hand: pion/turn v5's
// client, which asks for a family, ignores error responses without
// MESSAGE-INTEGRITY but 401 and 438, and pion/turn v4's server sends
// none. It returns the response to the authenticated request.
func rawAllocate(t *testing.T, server, user, pass string, family byte) *stun.Message {
	t.Helper()
	conn, err := net.Dial("udp", server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exchange := func(setters ...stun.Setter) *stun.Message {
		t.Helper()
		setters = append([]stun.Setter{stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest),
			stun.RawAttribute{Type: stun.AttrRequestedTransport, Value: []byte{17, 0, 0, 0}},
			stun.RawAttribute{Type: stun.AttrRequestedAddressFamily, Value: []byte{family, 0, 0, 0}}}, setters...)
		req := stun.MustBuild(setters...)
		if _, err := conn.Write(req.Raw); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 1500)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("no answer to the Allocate: %v", err)
			}
			res := &stun.Message{Raw: append([]byte(nil), buf[:n]...)}
			if res.Decode() == nil && res.TransactionID == req.TransactionID {
				return res
			}
		}
	}
	challenge := exchange()
	var nonce stun.Nonce
	if err := nonce.GetFrom(challenge); err != nil {
		t.Fatalf("no nonce in %v", challenge)
	}
	return exchange(stun.NewUsername(user), stun.NewRealm(relay.Realm), nonce,
		stun.NewLongTermIntegrity(user, relay.Realm, pass), stun.Fingerprint)
}
