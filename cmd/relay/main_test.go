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
	conns := make([]*net.UDPConn, machines)
	var list []string
	for i := range conns {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		conns[i] = c
		list = append(list, c.LocalAddr().String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var logs bytes.Buffer
	ready := make(chan bound, 1)
	var wg sync.WaitGroup
	code := -1
	wg.Go(func() {
		code = run(ctx, []string{"-listen", "127.0.0.1:0", "-machines", strings.Join(list, ","), "-stats", "0"}, &logs,
			noEnv, func(b bound) { ready <- b })
	})
	var addr netip.AddrPort
	select {
	case b := <-ready:
		addr = b.UDP
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not start")
	}
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
	cancel()
	wg.Wait()
	require.NoError(t, r.Err)
	require.True(t, r.Completed)
	require.True(t, r.Verified, r.Desync)
	require.Equal(t, 0, code)
	require.Contains(t, logs.String(), "msg=stopped")
	require.NotContains(t, logs.String(), "forwarded=0 ")
	t.Log(logs.String())
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
		{"-machines", "127.0.0.1:1,127.0.0.1:1"},
		{"-machines", "[::1]:1,[::1]:2"},
	} {
		var out bytes.Buffer
		require.Equal(t, 2, run(context.Background(), args, &out, noEnv, nil), "%v", args)
		require.NotEmpty(t, out.String())
	}
}

func noEnv(string) (string, bool) { return "", false }
