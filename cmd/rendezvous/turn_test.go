package main

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pion/turn/v4"

	"github.com/rewindgg/rewind/cmd/rendezvous/internal/nettest"
	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
	"github.com/rewindgg/rewind/rtc/lobby"
)

// A full match's ICE servers name the relay; a pion/turn client on
// loopback gets STUN answers and a relay with the match's credentials,
// relays a datagram through it, and is refused with wrong ones.
func TestTURN(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	cfg := testConfig(newFakeClock())
	cfg.TURNAddr = "127.0.0.1:0"
	cfg.PublicIP = "127.0.0.1"
	s, base := start(t, cfg)
	cs := fullMatch(t, ctx, base, 2)
	m, err := cs[1].Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addr := s.relay.addr().String()
	if len(m.ICEServers) != 2 || m.ICEServers[0].URLs[0] != "stun:"+addr ||
		m.ICEServers[1].URLs[0] != "turn:"+addr+"?transport=udp" {
		t.Fatalf("ICE servers %+v, want stun and turn at %s", m.ICEServers, addr)
	}
	ice := m.ICEServers[1]
	if ice.Username == "" || ice.Credential == "" {
		t.Fatalf("TURN server without credentials: %+v", ice)
	}
	// Only a full match's seats get them.
	open, err := lobby.Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := open.State(ctx); err != nil || st.ICEServers != nil {
		t.Fatalf("a match that is not full: %+v %v", st, err)
	}

	relayConn, client := allocate(t, addr, ice.Username, ice.Credential)
	mapped, err := client.SendBindingRequest()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mapped.String(), "127.0.0.1:") {
		t.Fatalf("STUN mapped address %s", mapped)
	}
	if ip := relayConn.LocalAddr().(*net.UDPAddr).IP; !ip.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("relayed address %s, want -public-ip", relayConn.LocalAddr())
	}
	if n := s.relay.allocations(); n != 1 {
		t.Fatalf("%d allocations, want 1", n)
	}
	// Another seat's allocation gets a datagram sent through the relay,
	// from the relay's address (relay-relay, at its own address).
	ice1, err := cs[0].Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	peerConn, peer := allocate(t, addr, ice1.ICEServers[1].Username, ice1.ICEServers[1].Credential)
	if err := peer.CreatePermission(relayConn.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if _, err := relayConn.WriteTo([]byte("hello"), peerConn.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	peerConn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, from, err := peerConn.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "hello" || from.String() != relayConn.LocalAddr().String() {
		t.Fatalf("the peer got %q from %s", buf[:n], from)
	}

	for _, bad := range []struct{ user, pass string }{
		{ice.Username, "wrong"},
		{"1", ice.Credential},          // expired in 1970
		{"not-a-time", ice.Credential}, // not a time-windowed user
		{strings.Replace(ice.Username, ":"+cs[1].Code()+":", ":ZZZZZZ:", 1), ice.Credential}, // another match's needs its own HMAC
		{ice.Username + "0", ice.Credential + "x"},                                           // a later expiry needs its own HMAC
	} {
		if _, err := tryAllocate(t, addr, bad.user, bad.pass); err == nil {
			t.Fatalf("allocated with user %q password %q", bad.user, bad.pass)
		}
	}
}

// TURN allocations are capped, server-wide.
func TestTURNAllocationCap(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	cfg := testConfig(newFakeClock())
	cfg.TURNAddr = "127.0.0.1:0"
	cfg.TURNAllocs = 1
	s, base := start(t, cfg)
	cs := fullMatch(t, ctx, base, 2)
	ice := iceOf(t, ctx, cs[0])
	addr := s.relay.addr().String()
	allocate(t, addr, ice.Username, ice.Credential)
	if _, err := tryAllocate(t, addr, ice.Username, ice.Credential); err == nil {
		t.Fatal("a second allocation beyond the cap of 1")
	}
	if st := s.relay.Stats(); st.RefusedCapacity < 1 {
		t.Fatalf("%d refused for the cap, want 1", st.RefusedCapacity)
	}
}

// The host attack, with a full match's credentials: a service on the
// server's loopback is not reachable through the relay. At the relay's
// own address (here 127.0.0.1, which relay-relay needs) the datagram is
// dropped, since its port is no allocation's; at another loopback
// address the permission is refused. With -turn-allow-peers naming
// 127.0.0.0/8, the service answers (the test can pass a datagram).
// Before the policy, the service on 127.0.0.1 answered.
func TestTURNRefusesTheHost(t *testing.T) {
	for _, allow := range []bool{false, true} {
		name := "default"
		if allow {
			name = "allow-listed"
		}
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t, 10*time.Second)
			cfg := testConfig(newFakeClock())
			cfg.TURNAddr, cfg.PublicIP = "127.0.0.1:0", "127.0.0.1"
			if allow {
				cfg.TURNAllowPeers = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			}
			s, base := start(t, cfg)
			ice := iceOf(t, ctx, fullMatch(t, ctx, base, 2)[1])
			own, other := nettest.NewEcho(t, "127.0.0.1"), nettest.NewEcho(t, "127.0.0.2")
			rc, _ := allocate(t, s.relay.addr().String(), ice.Username, ice.Credential)

			if _, err := rc.WriteTo([]byte("attack"), own.Conn.LocalAddr()); err != nil {
				t.Fatal(err)
			}
			_, errOther := rc.WriteTo([]byte("attack"), other.Conn.LocalAddr())
			if allow {
				if errOther != nil {
					t.Fatal(errOther)
				}
				for range 2 {
					if got := readRelayed(t, rc); got != "attack" {
						t.Fatalf("read %q", got)
					}
				}
				if own.Got.Load() != 1 || other.Got.Load() != 1 {
					t.Fatalf("the services got %d and %d datagrams, want 1 each", own.Got.Load(), other.Got.Load())
				}
				return
			}
			if errOther == nil {
				t.Fatal("a permission for 127.0.0.2")
			}
			nettest.WaitFor(t, "the datagram to 127.0.0.1 to be dropped", func() bool { return s.relay.Stats().DroppedPeer == 1 })
			if st := s.relay.Stats(); st.RefusedPermissions < 1 {
				t.Fatalf("%d permissions refused, want 1", st.RefusedPermissions)
			}
			if own.Got.Load() != 0 || other.Got.Load() != 0 {
				t.Fatalf("the services on loopback got %d and %d datagrams through the relay", own.Got.Load(), other.Got.Load())
			}
		})
	}
}

// A seat's credentials: refused when expired (for a new allocation; an
// allocation made in time goes on), for a seat that was left, for a match
// that is gone, and when they name no seat; every GET of the match
// mints fresh ones. Before scoping, an allocation succeeded after both
// seats had left and the match was gone.
func TestTURNCredentials(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.TURNAddr, cfg.PublicIP = "127.0.0.1:0", "127.0.0.1"
	s, base := start(t, cfg)
	addr := s.relay.addr().String()
	cs := fullMatch(t, ctx, base, 2)
	ice0, ice1 := iceOf(t, ctx, cs[0]), iceOf(t, ctx, cs[1])
	refused := func(what string, user, pass string, count func(relay.Stats) int64) {
		t.Helper()
		before := count(s.relay.Stats())
		if _, err := tryAllocate(t, addr, user, pass); err == nil {
			t.Fatalf("%s: allocated", what)
		}
		// At least once: a client's own requests (a channel binding
		// begun before) may be refused for the same reason meanwhile.
		if n := count(s.relay.Stats()) - before; n < 1 {
			t.Fatalf("%s: not counted", what)
		}
	}
	refused("wrong MAC", ice0.Username, "wrong", func(st relay.Stats) int64 { return st.RefusedBadMAC })
	gone, pass, _ := s.relay.SeatCredentials("ZZZZZZ", 0)
	refused("no such match", gone, pass, func(st relay.Stats) int64 { return st.RefusedMatchGone })
	plain, pass, _ := s.relay.Credentials(time.Hour)
	refused("no seat", plain, pass, func(st relay.Stats) int64 { return st.RefusedUnscoped })
	text := scrape(t, s)
	for _, reason := range []string{"bad_mac", "match_gone", "unscoped"} {
		if !regexp.MustCompile(`(?m)^rendezvous_turn_refusals_total\{reason="` + reason + `"\} [1-9]`).MatchString(text) {
			t.Errorf("the metrics count no %s refusal:\n%s", reason, text)
		}
	}
	for _, want := range []string{"rendezvous_turn_connections ", `rendezvous_turn_connection_events_total{event="accepted"} `, `rendezvous_turn_allocations_total{event="created"} `} {
		if !strings.Contains(text, want) {
			t.Errorf("the metrics lack %q", want)
		}
	}

	// Made in time, seat 0's allocation outlives its credential.
	conn0, c0 := allocate(t, addr, ice0.Username, ice0.Credential)
	conn1, c1 := allocate(t, addr, ice1.Username, ice1.Credential)
	clock.Advance(relay.DefaultCredentialTTL)
	refused("expired", ice0.Username, ice0.Credential, func(st relay.Stats) int64 { return st.RefusedExpired })
	if err := c0.CreatePermission(conn1.LocalAddr()); err != nil {
		t.Fatalf("an allocation past its credential's expiry, seat held: %v", err)
	}
	if err := c1.CreatePermission(conn0.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	fresh := iceOf(t, ctx, cs[0])
	if fresh.Username == ice0.Username {
		t.Fatal("a GET of the match did not mint a fresh credential")
	}
	allocate(t, addr, fresh.Username, fresh.Credential)

	// Seat 1 leaves: its credentials are refused, its allocation's
	// requests too, and within a second its datagrams are dropped.
	fresh1 := iceOf(t, ctx, cs[1])
	if _, err := conn1.WriteTo([]byte("seat 1 sends"), conn0.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if got := readRelayed(t, conn0); got != "seat 1 sends" {
		t.Fatalf("read %q", got)
	}
	if err := cs[1].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	refused("seat left", fresh1.Username, fresh1.Credential, func(st relay.Stats) int64 { return st.RefusedSeatLeft })
	clock.Advance(time.Second)
	if _, err := conn1.WriteTo([]byte("from a left seat"), conn0.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	nettest.WaitFor(t, "the left seat's datagram to be dropped", func() bool { return s.relay.Stats().DroppedSeat == 1 })
	if err := c1.CreatePermission(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}); err == nil {
		t.Fatal("a left seat's allocation made a permission")
	}
	if _, err := conn0.WriteTo([]byte("seat 0 still sends"), conn1.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if got := readRelayed(t, conn1); got != "seat 0 still sends" {
		t.Fatalf("read %q", got)
	}

	// Seat 0 leaves too: the match is gone.
	fresh0 := iceOf(t, ctx, cs[0])
	if err := cs[0].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.reg.counts(); n != 0 {
		t.Fatalf("%d matches, want none", n)
	}
	refused("match gone", fresh0.Username, fresh0.Credential, func(st relay.Stats) int64 { return st.RefusedMatchGone })
	if err := c0.CreatePermission(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}); err == nil {
		t.Fatal("a gone match's allocation made a permission")
	}
}

// One seat's credentials (whatever their expiry: each GET mints new ones)
// hold at most TURNSeatAllocs allocations (by default 8 for each TURN URL); another seat's, and another
// match's, still allocate. Before, one match's credentials took all 50
// allocations of the server and another match got error 486.
func TestTURNSeatQuota(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.TURNAddr, cfg.PublicIP, cfg.TURNAllocs = "127.0.0.1:0", "127.0.0.1", 50
	s, base := start(t, cfg)
	addr := s.relay.addr().String()
	a, b := fullMatch(t, ctx, base, 2), fullMatch(t, ctx, base, 2)
	// 8 for each TURN URL handed out: UDP, and TCP (on by default).
	urls := iceOf(t, ctx, a[0]).URLs
	quota := relay.DefaultMaxPerCredential * len(urls)
	if len(urls) != 2 || !strings.HasSuffix(urls[1], "?transport=tcp") {
		t.Fatalf("TURN URLs %q, want UDP and TCP", urls)
	}
	for range quota {
		ice := iceOf(t, ctx, a[0])
		allocate(t, addr, ice.Username, ice.Credential)
		clock.Advance(time.Second) // the next GET's credential has another username
	}
	ice := iceOf(t, ctx, a[0])
	if _, err := tryAllocate(t, addr, ice.Username, ice.Credential); err == nil || !strings.Contains(err.Error(), "486") {
		t.Fatalf("allocation %d of one seat: %v, want error 486", quota+1, err)
	}
	for _, c := range []*lobby.Client{a[1], b[0]} {
		ice := iceOf(t, ctx, c)
		allocate(t, addr, ice.Username, ice.Credential)
	}
	if st := s.relay.Stats(); st.RefusedQuota < 1 || st.AllocationsCreated != int64(quota)+2 {
		t.Fatalf("stats %+v", st)
	}
}

// Rotation through -turn-secret-file: a secret added first signs the
// credentials handed out, and the old one still verifies; once removed,
// its credentials are refused. The file is re-read when it changes
// (looked at every few milliseconds here) and on SIGHUP; a file without
// a secret keeps the ones in use.
func TestTURNSecretFile(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	path := filepath.Join(t.TempDir(), "secrets")
	// write replaces the file at once, its content and time together (a
	// rename): written in place, then dated, the watcher could see both
	// and reload twice, and the second reload's signal answered the next
	// wait before its change was read (the test failed once in CI).
	write := func(content string, mod time.Time) {
		t.Helper()
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(tmp, mod, mod); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	mod := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write("secret-one\n", mod)
	cfg := testConfig(newFakeClock())
	cfg.TURNAddr, cfg.PublicIP, cfg.TURNSecretFile = "127.0.0.1:0", "127.0.0.1", path
	s, base := start(t, cfg)
	addr := s.relay.addr().String()
	loaded := make(chan struct{}, 1)
	s.secrets.onLoad = func() { loaded <- struct{}{} }
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go watch(wctx, s.secrets, hup, 5*time.Millisecond)
	reloaded := func(how string) {
		t.Helper()
		select {
		case <-loaded:
		case <-ctx.Done():
			t.Fatalf("the secret file was not reloaded (%s)", how)
		}
	}
	signedBy := func(ice lobby.ICEServer, secret string) bool {
		exp, _ := strconv.ParseInt(strings.Split(ice.Username, ":")[0], 10, 64)
		parts := strings.Split(ice.Username, ":")
		seat, _ := strconv.Atoi(parts[2])
		_, pass, _ := relay.Credentials(secret, time.Unix(exp, 0), parts[1], seat)
		return pass == ice.Credential
	}

	cs := fullMatch(t, ctx, base, 2)
	one := iceOf(t, ctx, cs[0])
	if !signedBy(one, "secret-one") {
		t.Fatal("not signed by the file's secret")
	}
	allocate(t, addr, one.Username, one.Credential)

	write("secret-two\nsecret-one\n", mod.Add(time.Hour))
	reloaded("modified")
	two := iceOf(t, ctx, cs[1])
	if !signedBy(two, "secret-two") {
		t.Fatal("not signed by the new first secret")
	}
	allocate(t, addr, two.Username, two.Credential)
	allocate(t, addr, one.Username, one.Credential)

	// Same size and time: only SIGHUP tells.
	write("secret-two\n#ecret-one\n", mod.Add(time.Hour))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	reloaded("SIGHUP")
	before := s.relay.Stats().RefusedBadMAC
	if _, err := tryAllocate(t, addr, one.Username, one.Credential); err == nil {
		t.Fatal("allocated with a removed secret's credential")
	}
	if n := s.relay.Stats().RefusedBadMAC - before; n < 1 {
		t.Fatalf("%d refused for a bad MAC, want 1", n)
	}
	allocate(t, addr, two.Username, two.Credential)

	write("# nothing\n", mod.Add(2*time.Hour))
	reloaded("emptied")
	allocate(t, addr, two.Username, two.Credential)
}

// The TURN flags' mistakes stop the server before it listens.
func TestTURNFlags(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-turn-allow-peers", "10.0.0.1", "-http", "127.0.0.1:0"},
		{"-turn-secret", "a", "-turn-secret-file", empty, "-http", "127.0.0.1:0"},
		{"-turn-secret-file", empty, "-turn", "127.0.0.1:0", "-http", "127.0.0.1:0"},
		{"-turn-secret-file", "/no/such/file", "-turn", "127.0.0.1:0", "-http", "127.0.0.1:0"},
		{"-turn-bandwidth", "-1", "-http", "127.0.0.1:0"},
		{"-turn-tls", "127.0.0.1:0", "-turn", "127.0.0.1:0", "-http", "127.0.0.1:0"},
		{"-turn-cert", empty, "-turn-key", empty, "-turn", "127.0.0.1:0", "-http", "127.0.0.1:0"},
		{"-turn-tls", "127.0.0.1:0", "-turn-cert", empty, "-turn-key", empty, "-turn", "127.0.0.1:0", "-http", "127.0.0.1:0"},
		{"-public-ip6", "192.0.2.1", "-turn", "127.0.0.1:0", "-http", "127.0.0.1:0"},
		{"-turn-conns", "-1", "-http", "127.0.0.1:0"},
	} {
		if err := run(args, noEnv); err == nil {
			t.Fatalf("run %q: no error", args)
		}
	}
}

// iceOf is the TURN server of the match as c's seat gets it now.
func iceOf(t *testing.T, ctx context.Context, c *lobby.Client) lobby.ICEServer {
	t.Helper()
	m, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.ICEServers) != 2 {
		t.Fatalf("ICE servers %+v", m.ICEServers)
	}
	return m.ICEServers[1]
}

// readRelayed reads a datagram from rc within 5 s.
func readRelayed(t *testing.T, rc net.PacketConn) string {
	t.Helper()
	rc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, _, err := rc.ReadFrom(buf)
	if err != nil {
		t.Fatalf("reading through the relay: %v", err)
	}
	return string(buf[:n])
}

func allocate(t *testing.T, addr, user, pass string) (net.PacketConn, *turn.Client) {
	t.Helper()
	c, err := newTURNClient(t, addr, user, pass)
	if err != nil {
		t.Fatal(err)
	}
	relayConn, err := c.Allocate()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relayConn.Close() })
	return relayConn, c
}

func tryAllocate(t *testing.T, addr, user, pass string) (net.PacketConn, error) {
	t.Helper()
	c, err := newTURNClient(t, addr, user, pass)
	if err != nil {
		return nil, err
	}
	relayConn, err := c.Allocate()
	if err == nil {
		relayConn.Close()
	}
	return relayConn, err
}

// newTURNClient is a pion/turn client on its own loopback socket.
func newTURNClient(t *testing.T, addr, user, pass string) (*turn.Client, error) {
	t.Helper()
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := turn.NewClient(&turn.ClientConfig{
		STUNServerAddr: addr,
		TURNServerAddr: addr,
		Conn:           conn,
		Username:       user,
		Password:       pass,
		Realm:          relay.Realm,
		LoggerFactory:  slogFactory{log: slog.New(slog.DiscardHandler)},
	})
	if err != nil {
		conn.Close()
		return nil, err
	}
	t.Cleanup(func() {
		c.Close()
		conn.Close()
	})
	if err := c.Listen(); err != nil {
		return nil, err
	}
	return c, nil
}

// TestPionLogsAtDebug: pion's lines, whatever their level, are written at
// Debug: an Info log shows none of them, a Debug log shows each with
// pion's level.
func TestPionLogsAtDebug(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf strings.Builder
		l := slogFactory{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))}.NewLogger("turn")
		l.Info("allocation made")
		l.Warnf("refresh %d", 2)
		l.Error("wrong credential")
		got := buf.String()
		if level == slog.LevelInfo && got != "" {
			t.Errorf("at Info, pion wrote %q", got)
		}
		if level == slog.LevelDebug && (strings.Count(got, "level=DEBUG") != 3 || !strings.Contains(got, `msg="wrong credential" scope=turn pion_level=error`)) {
			t.Errorf("at Debug, pion wrote %q", got)
		}
	}
}
