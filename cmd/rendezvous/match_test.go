package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	harness "github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rtc"
	"github.com/rewindgg/rewind/rtc/lobby"
)

// TestMatchThroughTheRendezvous: two native machines meet in the lobby,
// connect over WebRTC with the rendezvous's signaling (directly, and
// forced through its TURN relay), and play a match that verifies against
// the offline re-simulation. Through the relay, every route must be
// relay-relay and the relay's socket must carry the match.
func TestMatchThroughTheRendezvous(t *testing.T) {
	for _, viaRelay := range []bool{false, true} {
		name := "direct"
		if viaRelay {
			name = "relay"
		}
		t.Run(name, func(t *testing.T) {
			cfg := defaultConfig()
			cfg.TURNAddr, cfg.PublicIP, cfg.Rate = "127.0.0.1:0", "127.0.0.1", 0
			cfg.Logger = slog.New(slog.DiscardHandler)
			s, base := start(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			host, err := lobby.Create(ctx, base, 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			guest, err := lobby.Join(ctx, base, host.Code(), nil)
			if err != nil {
				t.Fatal(err)
			}
			clients := []*lobby.Client{host, guest}
			trs := make([]rollback.Transport, 2)
			rtcs := make([]*rtc.Transport, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for m, c := range clients {
				wg.Go(func() {
					mt, err := c.Wait(ctx)
					if err != nil {
						errs[m] = err
						return
					}
					rtcs[m], errs[m] = rtc.Dial(ctx, rtc.Config{Machine: c.Seat(), Machines: mt.Seats, ICEServers: mt.ICEServers,
						Relay: viaRelay, Loopback: true}, c)
					trs[m] = rtcs[m]
				})
			}
			wg.Wait()
			for _, tr := range rtcs {
				if tr != nil {
					defer tr.Close()
				}
			}
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			want := "host-host"
			if viaRelay {
				want = "relay-relay"
			}
			for m, tr := range rtcs {
				if r := tr.Route(0); r != want {
					t.Errorf("machine %d's route %q, want %q", m, r, want)
				}
			}
			before := s.relay.Stats()
			r := harness.RunLive(harness.Config{Players: 2, Frames: 240, Seed: 7}, harness.UDPOptions{}, trs)
			if r.Err != nil || !r.Verified {
				t.Fatalf("match: err %v, verified %v (%s)", r.Err, r.Verified, r.Desync)
			}
			after := s.relay.Stats()
			moved := after.BytesIn + after.BytesOut - before.BytesIn - before.BytesOut
			t.Logf("%s: %d session packets, %d bytes; the relay's socket moved %d bytes in %d datagrams",
				name, r.PacketsSent, r.BytesSent, moved, after.PacketsIn+after.PacketsOut-before.PacketsIn-before.PacketsOut)
			if viaRelay && moved < r.BytesSent*2 {
				t.Errorf("through the relay, its socket moved %d bytes for %d session bytes (each crosses it twice)", moved, r.BytesSent)
			}
			if !viaRelay && moved > r.BytesSent/10 {
				t.Errorf("a direct match moved %d bytes through the relay", moved)
			}
		})
	}
}
