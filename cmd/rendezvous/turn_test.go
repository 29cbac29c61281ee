package main

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pion/turn/v4"

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
	// A peer gets a datagram sent through the relay, from the relay's address.
	peer, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if _, err := relayConn.WriteTo([]byte("hello"), peer.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, from, err := peer.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "hello" || from.(*net.UDPAddr).Port != relayConn.LocalAddr().(*net.UDPAddr).Port {
		t.Fatalf("the peer got %q from %s", buf[:n], from)
	}

	for _, bad := range []struct{ user, pass string }{
		{ice.Username, "wrong"},
		{"1", ice.Credential},                      // expired in 1970
		{"not-a-time", ice.Credential},             // not a time-windowed user
		{ice.Username + "0", ice.Credential + "x"}, // a later expiry needs its own HMAC
	} {
		if _, err := tryAllocate(t, addr, bad.user, bad.pass); err == nil {
			t.Fatalf("allocated with user %q password %q", bad.user, bad.pass)
		}
	}
}

// TURN allocations are capped.
func TestTURNAllocationCap(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.TURNAddr = "127.0.0.1:0"
	cfg.TURNAllocs = 1
	s, _ := start(t, cfg)
	ice, err := s.relay.iceServers()
	if err != nil {
		t.Fatal(err)
	}
	addr := s.relay.addr().String()
	allocate(t, addr, ice[1].Username, ice[1].Credential)
	if _, err := tryAllocate(t, addr, ice[1].Username, ice[1].Credential); err == nil {
		t.Fatal("a second allocation beyond the cap of 1")
	}
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
