package match_test

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/udp"
)

// flooded is what the flooding goroutine of TestFloodFromOnePeerAddress did.
type flooded struct {
	started     bool // the match was running and the flood began
	sent, fails int64
	ticks       int
	took        time.Duration
}

// TestFloodFromOnePeerAddress (issue 15): in a 3-machine match over real
// sockets, machine 2's own socket sends machine 0 twice the transport's
// per-peer queue (udp.PeerQueue) every 1/60 s tick, from the moment the
// match is running to its end: junk shaped like sealed input packets (kind
// byte 0x10) that fails the MAC. Each peer has its own queue, so the flood
// only overflows machine 2's queue at machine 0 (the transport drops the
// oldest); the honest machine 1's datagrams still arrive, and the match
// completes and verifies with all three machines.
//
// It runs only without the race detector (make test): under
// it, with a cold build competing for both cores, the transport's reader
// fell behind, the kernel's socket buffer (shared by every peer) overflowed
// with the flood, and machine 0 went 5 s without the honest peer's
// datagrams and disconnected it. The per-peer queues cannot help below the
// kernel; docs/security.md says so. For the same reason the flood is twice
// the queue, not more: at ten times (38,000 datagrams a second) a CI machine
// with the plain pass's other tests running overflowed the kernel's buffer
// too, and the test measured the kernel, not the queues. Twice the queue
// still overflows machine 2's queue at machine 0 at every tick.
func TestFloodFromOnePeerAddress(t *testing.T) {
	if match.RaceEnabled {
		t.Skip("a real-time flood: run without the race detector (make test)")
	}
	t.Parallel()
	const perTick = 2 * udp.PeerQueue
	p, err := netsim.ParseProfile("lan")
	require.NoError(t, err)
	type sockets struct {
		addrs []netip.AddrPort
		conns []*net.UDPConn
	}
	bound := make(chan sockets, 1)
	running := make(chan struct{})
	stop := make(chan struct{})
	result := make(chan flooded, 1)
	go func() {
		var f flooded
		defer func() { result <- f }()
		var s sockets
		select {
		case s = <-bound:
		case <-stop:
			return
		}
		select {
		case <-running:
		case <-stop:
			return
		case <-time.After(10 * time.Second):
			return
		}
		f.started = true
		rng := rand.New(rand.NewPCG(15, 2))
		b := make([]byte, 40)
		tick := time.NewTicker(match.Tick)
		defer tick.Stop()
		began := time.Now()
		defer func() { f.took = time.Since(began) }()
		for {
			for range perTick {
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				b[0] = 0x10 // a sealed input packet's kind byte
				if _, err := s.conns[2].WriteToUDPAddrPort(b, s.addrs[0]); err != nil {
					f.fails++
				} else {
					f.sent++
				}
			}
			f.ticks++
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	r := match.RunUDP(match.Config{Players: 3, Frames: 300, Seed: 15, Profile: p}, match.UDPOptions{
		OnStart: func(addrs []netip.AddrPort, conns []*net.UDPConn) {
			bound <- sockets{addrs, conns}
		},
		OnRunning: func() { close(running) },
	})
	wall := time.Since(start)
	close(stop)
	f := <-result
	t.Logf("%d flood datagrams sent (%d failed) over %d ticks in %v; %d dropped by the transports, %d invalid packets; %d stall frames; %d ticks, wall time %v",
		f.sent, f.fails, f.ticks, f.took.Round(time.Millisecond), r.TransportDrops, r.PacketsInvalid, r.StallFrames, r.Ticks, wall.Round(time.Millisecond))
	require.True(t, f.started, "the match was not running within 10 s: nothing was sent")
	require.NoError(t, r.Err, "a session failed, or disconnected a peer")
	assert.True(t, r.Completed, "the match did not complete")
	assert.True(t, r.Verified, r.Desync)
	assert.Positive(t, r.TransportDrops, "the flood never overflowed machine 2's queue at machine 0")
}
