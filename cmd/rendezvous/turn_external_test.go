package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rewindgg/rewind/cmd/rendezvous/internal/nettest"
	"github.com/rewindgg/rewind/rtc"
	"github.com/rewindgg/rewind/rtc/lobby"
)

func TestExternalTURNURLs(t *testing.T) {
	for _, c := range []struct {
		url, scheme string
	}{
		{"turn:turn.example.com:3478?transport=udp", "turn"},
		{"turn:203.0.113.7", "turn"},
		{"turns:turn.example.com:5349?transport=tcp", "turns"},
		{"stun:turn.example.com:3478", "stun"},
		{"http://turn.example.com", ""},
		{"turn:", ""},
		{"turn://turn.example.com", ""},
		{"turn:user@turn.example.com", ""},
		{"turn:turn.example.com?transport=sctp", ""},
		{"turn:turn.example.com?transport=udp&x=1", ""},
		{"stun:turn.example.com?transport=udp", ""},
	} {
		scheme, err := checkTURNURL(c.url)
		if scheme != c.scheme || (err == nil) != (c.scheme != "") {
			t.Errorf("%q: %q %v, want %q", c.url, scheme, err, c.scheme)
		}
	}
	cfg := testConfig(newFakeClock())
	cfg.TURNExternal = []string{"turn:127.0.0.1:3478"}
	if _, err := newServer(cfg); err == nil || !strings.Contains(err.Error(), "secret") {
		t.Errorf("external TURN without a secret: %v", err)
	}
	cfg.TURNExternal = []string{"stun:127.0.0.1:3478"}
	cfg.TURNSecret = "s"
	if _, err := newServer(cfg); err == nil {
		t.Error("external TURN with no turn: URL started")
	}
}

// coturn runs Debian's coturn (turnserver) on a free loopback port with
// the TURN REST scheme's shared secret, loopback peers allowed (the test
// relays between loopback sockets), until the test ends, and returns its
// address. It skips the test when coturn is not installed (make
// web-test installs it).
func coturn(t *testing.T, secret string) string {
	t.Helper()
	bin, err := exec.LookPath("turnserver")
	if err != nil {
		t.Skip("coturn's turnserver is not installed (apt-get install coturn; make web-test does)")
	}
	probe, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := probe.LocalAddr().(*net.UDPAddr).Port
	probe.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-n", "--no-cli", "--no-tls", "--no-dtls", "--no-tcp",
		"--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1", "--listening-port="+strconv.Itoa(port),
		"--min-port=49152", "--max-port=65535", "--realm=rewind",
		"--use-auth-secret", "--static-auth-secret="+secret, "--allow-loopback-peers",
		"--pidfile="+filepath.Join(dir, "turnserver.pid"), "--userdb="+filepath.Join(dir, "turndb"),
		"--log-file=stdout", "--simple-log")
	var out nettest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("coturn's log:\n%s", out.String())
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// Ready when it answers a STUN binding request.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := newTURNClient(t, addr, "", "")
		if err == nil {
			_, err = c.SendBindingRequest() // retries for a few seconds
			c.Close()
			if err == nil {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("coturn did not answer STUN on %s within 10 s: %v\n%s", addr, err, out.String())
		}
	}
}

// TestExternalTURN: with -turn-external the seats of a full match get the
// operator's coturn with credentials the rendezvous minted for each
// seat; coturn allocates with them and relays, refuses a credential of
// another secret, and two machines play through it (relay only).
func TestExternalTURN(t *testing.T) {
	const secret = "the fleet's secret"
	addr := coturn(t, secret)
	ctx := testCtx(t, 30*time.Second)
	cfg := testConfig(newFakeClock())
	cfg.Now = time.Now // coturn checks the expiry against its own clock
	cfg.TURNSecret = secret
	cfg.TURNExternal = []string{"stun:" + addr, "turn:" + addr + "?transport=udp"}
	s, base := start(t, cfg)
	if s.relay != nil {
		t.Fatal("the embedded relay started beside the external TURN servers")
	}
	cs := fullMatch(t, ctx, base, 2)
	ice := make([]lobby.ICEServer, 2)
	for i, c := range cs {
		m, err := c.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.ICEServers) != 2 || m.ICEServers[0].URLs[0] != "stun:"+addr || m.ICEServers[0].Username != "" ||
			m.ICEServers[1].URLs[0] != "turn:"+addr+"?transport=udp" {
			t.Fatalf("seat %d's ICE servers %+v", i, m.ICEServers)
		}
		ice[i] = m.ICEServers[1]
		if want := ":" + c.Code() + ":" + strconv.Itoa(i); !strings.HasSuffix(ice[i].Username, want) {
			t.Fatalf("seat %d's TURN username %q is not scoped (%s)", i, ice[i].Username, want)
		}
	}

	// coturn takes the minted credential and relays to a peer.
	relayConn, _ := allocate(t, addr, ice[0].Username, ice[0].Credential)
	peer := nettest.NewEcho(t, "127.0.0.1")
	if _, err := relayConn.WriteTo([]byte("through coturn"), peer.Conn.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	relayConn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	if n, _, err := relayConn.ReadFrom(buf); err != nil || string(buf[:n]) != "through coturn" {
		t.Fatalf("the echo through coturn: %q %v", buf[:n], err)
	}
	// A credential of another secret is refused.
	if _, err := tryAllocate(t, addr, ice[1].Username, "d3Jvbmc="); err == nil {
		t.Fatal("coturn allocated with a wrong password")
	}

	// Two machines play through coturn alone.
	sigs := rtc.MemorySignalers(2)
	trs := make([]*rtc.Transport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for m := range 2 {
		wg.Go(func() {
			trs[m], errs[m] = rtc.Dial(ctx, rtc.Config{Machine: m, Machines: 2, ICEServers: []rtc.ICEServer{ice[m]}, Relay: true, Loopback: true}, sigs[m])
		})
	}
	wg.Wait()
	for _, tr := range trs {
		if tr != nil {
			defer tr.Close()
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if r := trs[0].Route(0); r != "relay-relay" {
		t.Errorf("route %q, want relay-relay", r)
	}
	msg := bytes.Repeat([]byte{9}, 100)
	if err := trs[0].Send(0, msg); err != nil {
		t.Fatal(err)
	}
	in := make([]byte, rtc.MaxDatagram)
	for {
		if n, _, ok := trs[1].Receive(in); ok {
			if !bytes.Equal(in[:n], msg) {
				t.Fatalf("received %v", in[:n])
			}
			break
		}
		select {
		case <-trs[1].Arrived():
		case <-ctx.Done():
			t.Fatal("no datagram through coturn")
		}
	}
}
