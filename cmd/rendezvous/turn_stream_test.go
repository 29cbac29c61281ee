package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/pion/stun/v3"
	"github.com/pion/turn/v4"

	"github.com/rewindgg/rewind/cmd/rendezvous/internal/nettest"
	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
)

// streamClient is a pion/turn client over conn, a TCP or TLS connection
// to the relay at addr.
func streamClient(t *testing.T, conn net.Conn, addr, user, pass string) *turn.Client {
	t.Helper()
	t.Cleanup(func() { conn.Close() })
	c, err := turn.NewClient(&turn.ClientConfig{STUNServerAddr: addr, TURNServerAddr: addr, Conn: turn.NewSTUNConn(conn),
		Username: user, Password: pass, Realm: relay.Realm, LoggerFactory: slogFactory{log: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TURN over TCP and TLS: a full match's seat is handed the relay's URLs
// over UDP, TCP and TLS at -public-host; over TCP and over TLS (the
// certificate of -turn-cert), a pion/turn client allocates with the
// seat's credentials and relays a datagram to an allow-listed loopback
// peer and back, and a wrong password is refused and counted. A new
// certificate written to the files is served after SIGHUP.
func TestTURNOverTCPAndTLS(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pool := nettest.WriteSelfSigned(t, certPath, keyPath, "first")
	cfg := testConfig(newFakeClock())
	cfg.TURNAddr, cfg.PublicIP, cfg.PublicHost = "127.0.0.1:0", "127.0.0.1", "localhost"
	cfg.TURNTLSAddr, cfg.TURNCertFile, cfg.TURNKeyFile = "127.0.0.1:0", certPath, keyPath
	cfg.TURNAllowPeers = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
	s, base := start(t, cfg)
	r := s.relay
	ice := iceOf(t, ctx, fullMatch(t, ctx, base, 2)[0])
	want := []string{
		"turn:localhost:" + itoa(r.Addr().Port()) + "?transport=udp",
		"turn:localhost:" + itoa(r.TCPAddr().Port()) + "?transport=tcp",
		"turns:localhost:" + itoa(r.TLSAddr().Port()) + "?transport=tcp",
	}
	if len(ice.URLs) != len(want) || ice.URLs[0] != want[0] || ice.URLs[1] != want[1] || ice.URLs[2] != want[2] {
		t.Fatalf("TURN URLs %q, want %q", ice.URLs, want)
	}
	dial := func(transport string, pool *x509.CertPool) (net.Conn, string) {
		t.Helper()
		if transport == "tls" {
			conn, err := tls.Dial("tcp", r.TLSAddr().String(), &tls.Config{RootCAs: pool, ServerName: "localhost"})
			if err != nil {
				t.Fatal(err)
			}
			return conn, r.TLSAddr().String()
		}
		conn, err := net.Dial("tcp", r.TCPAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		return conn, r.TCPAddr().String()
	}
	peer := nettest.NewEcho(t, "127.0.0.2")
	for _, tr := range []string{"tcp", "tls"} {
		conn, addr := dial(tr, pool)
		rc, err := streamClient(t, conn, addr, ice.Username, ice.Credential).Allocate()
		if err != nil {
			t.Fatalf("over %s: %v", tr, err)
		}
		defer rc.Close()
		if _, err := rc.WriteTo([]byte("over "+tr), peer.Conn.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		if got := readRelayed(t, rc); got != "over "+tr {
			t.Fatalf("over %s: read %q", tr, got)
		}
		before := r.Stats().RefusedBadMAC
		conn, addr = dial(tr, pool)
		if _, err := streamClient(t, conn, addr, ice.Username, "wrong").Allocate(); err == nil {
			t.Fatalf("over %s: allocated with a wrong password", tr)
		}
		if r.Stats().RefusedBadMAC == before {
			t.Fatalf("over %s: the wrong password was not counted", tr)
		}
	}

	// The certificate is replaced: SIGHUP serves the new one.
	loaded := make(chan struct{}, 1)
	r.cert.onLoad = func() { loaded <- struct{}{} }
	hup := make(chan os.Signal, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go watch(wctx, r.cert, hup, time.Hour)
	pool2 := nettest.WriteSelfSigned(t, certPath, keyPath, "second")
	hup <- syscall.SIGHUP
	select {
	case <-loaded:
	case <-ctx.Done():
		t.Fatal("the certificate was not reloaded")
	}
	conn, _ := dial("tls", pool2)
	defer conn.Close()
	if cn := conn.(*tls.Conn).ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "second" {
		t.Fatalf("served the certificate %q after SIGHUP, want the new one", cn)
	}
}

func itoa(p uint16) string { return strconv.Itoa(int(p)) }

// -public-ip6: the relay listens on UDP at the IPv6 address, at -turn's
// port, answers STUN there, and the seats get its URL. (Allocations over
// IPv6, and IPv6 relayed addresses, are package relay's TestRelayIPv6.)
func TestTURNIPv6(t *testing.T) {
	probe, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Skipf("IPv6 loopback (::1) unavailable: %v", err)
	}
	probe.Close()
	ctx := testCtx(t, 10*time.Second)
	cfg := testConfig(newFakeClock())
	cfg.TURNAddr, cfg.PublicIP, cfg.PublicIP6 = "127.0.0.1:0", "127.0.0.1", "::1"
	s, base := start(t, cfg)
	a6 := s.relay.Addr6()
	if a6.Addr() != netip.IPv6Loopback() || a6.Port() != s.relay.Addr().Port() {
		t.Fatalf("IPv6 address %v, want [::1] at -turn's port %d", a6, s.relay.Addr().Port())
	}
	ice := iceOf(t, ctx, fullMatch(t, ctx, base, 2)[1])
	found := false
	for _, u := range ice.URLs {
		found = found || u == "turn:"+a6.String()+"?transport=udp"
	}
	if !found {
		t.Fatalf("TURN URLs %q name no [::1]", ice.URLs)
	}
	conn, err := net.Dial("udp6", a6.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(stun.MustBuild(stun.TransactionID, stun.BindingRequest).Raw); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	res := &stun.Message{Raw: buf[:n]}
	var mapped stun.XORMappedAddress
	if err := res.Decode(); err != nil || mapped.GetFrom(res) != nil || !mapped.IP.Equal(net.IPv6loopback) {
		t.Fatalf("STUN over IPv6 answered %v (%v)", res, err)
	}
}
