package main

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/udp"
)

// TestRelayedMatch: three machines play a match through the command on
// loopback, each with a relay.Client over a socket whose one peer is the
// relay; the match verifies and the relay logs its counts when stopped.
func TestRelayedMatch(t *testing.T) {
	const machines = 3
	conns, list := machineConns(t, machines, net.IPv4(127, 0, 0, 1))
	p := startRelay(t, []string{"-listen", "127.0.0.1:0", "-machines", strings.Join(list, ","), "-stats", "0"}, noEnv)
	addr := p.at.UDP
	trs := make([]rollback.Transport, machines)
	for i, c := range conns {
		link, err := udp.New(c, []netip.AddrPort{addr})
		require.NoError(t, err)
		defer link.Close()
		if trs[i], err = relay.NewClient(link, 0, i, machines); err != nil {
			t.Fatal(err)
		}
	}
	r := match.RunLive(match.Config{Players: machines, Frames: 240, Seed: 21, Relay: true}, match.UDPOptions{}, trs)
	code := p.stop()
	require.NoError(t, r.Err)
	require.True(t, r.Completed)
	require.True(t, r.Verified, r.Desync)
	require.Equal(t, 0, code)
	logs := p.logs.String()
	require.Contains(t, logs, "msg=stopped")
	require.NotContains(t, logs, "forwarded=0 ")
	t.Log(logs)
}

// machineConns opens n UDP sockets on ip, closed when the test ends, and
// gives their addresses.
func machineConns(t *testing.T, n int, ip net.IP) ([]*net.UDPConn, []string) {
	conns := make([]*net.UDPConn, n)
	var list []string
	for i := range conns {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		conns[i] = c
		list = append(list, c.LocalAddr().String())
	}
	return conns, list
}

// relayProcess is the command, run by a goroutine of the test.
type relayProcess struct {
	at     bound
	logs   syncBuffer
	cancel context.CancelFunc
	wg     sync.WaitGroup
	code   int
}

// startRelay runs the command with args and env, and returns once it
// listens; stop ends it (so does the test's end).
func startRelay(t *testing.T, args []string, env func(string) (string, bool)) *relayProcess {
	p := &relayProcess{code: -1}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	ready := make(chan bound, 1)
	p.wg.Go(func() { p.code = run(ctx, args, &p.logs, env, func(b bound) { ready <- b }) })
	t.Cleanup(func() { p.stop() })
	select {
	case p.at = <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not start")
	}
	return p
}

// stop ends the command and gives its exit status.
func (p *relayProcess) stop() int {
	p.cancel()
	p.wg.Wait()
	return p.code
}

// syncBuffer is a bytes.Buffer safe for the command's goroutines.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed at the next Write (waitFor)
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// waitFor reports whether the buffer holds sub within d, waking at each
// Write.
func (s *syncBuffer) waitFor(sub string, d time.Duration) bool {
	timeout := time.After(d)
	for {
		s.mu.Lock()
		if strings.Contains(s.b.String(), sub) {
			s.mu.Unlock()
			return true
		}
		if s.written == nil {
			s.written = make(chan struct{})
		}
		w := s.written
		s.mu.Unlock()
		select {
		case <-w:
		case <-timeout:
			return false
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-machines", "127.0.0.1:1"},
		{"-machines", "127.0.0.1:1,nowhere"},
		{"-machines", "127.0.0.1:1,127.0.0.1:2", "-tick", "0s"},
		{"-machines", "127.0.0.1:1,127.0.0.1:2", "extra"},
		{"-bogus"},
		{},
		{"-admin", "127.0.0.1:0"},
		{"-machines", "127.0.0.1:1,127.0.0.1:2", "-idle", "0s"},
		{"-machines", "127.0.0.1:1,127.0.0.1:2", "-batch", "0"},
		{"-machines", "127.0.0.1:1,127.0.0.1:2", "-writers", "-1"},
		{"-machines", "127.0.0.1:1,127.0.0.1:1"},
		{"-machines", "[::1]:1,[::1]:2"},
		{"-machines", "127.0.0.1:1,127.0.0.1:2", "-announce", "http://127.0.0.1:8080"}, // -announce needs -admin
		{"-machines", "127.0.0.1:1,127.0.0.1:2", "-webrtc-allow", "10.0.0.0"},
	} {
		var out bytes.Buffer
		require.Equal(t, 2, run(context.Background(), args, &out, noEnv, nil), "%v", args)
		require.NotEmpty(t, out.String())
	}
}

func noEnv(string) (string, bool) { return "", false }
