package scaletest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	harness "github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rtc"
	"github.com/rewindgg/rewind/rtc/lobby"
)

// The TURN REST secret the instances and coturn share.
const turnSecret = "scale-test secret"

// deployment is the cluster the tests share: three NATS nodes, three
// instances on 127.0.0.11 to .13 (TURN through coturn on 127.0.0.5),
// and a balancer in front of them.
type deployment struct {
	nats      []*natsNode
	instances []*instance
	balancer  string
}

func deploy(t *testing.T) *deployment {
	t.Helper()
	d := &deployment{nats: natsCluster(t, 3)}
	turn := coturn(t, "127.0.0.5", turnSecret)
	var bases []string
	for i := range 3 {
		in := rendezvous(t, fmt.Sprintf("rendezvous-%d", i), fmt.Sprintf("127.0.0.%d", 11+i),
			"-nats", natsURLs(d.nats), "-nats-replicas", "3", "-turn-external", turn, "-turn-secret", turnSecret)
		d.instances = append(d.instances, in)
		bases = append(bases, in.base)
	}
	d.balancer = newBalancer(t, bases...)
	return d
}

// signaler wraps a lobby client: after its first Send it calls once
// (the test kills an instance then: mid-signaling).
type signaler struct {
	rtc.Signaler
	once  sync.Once
	after func()
}

func (s *signaler) Send(ctx context.Context, to int, kind, data string) error {
	err := s.Signaler.Send(ctx, to, kind, data)
	if s.after != nil {
		s.once.Do(s.after)
	}
	return err
}

// transcript records what a machine's signaler sent and received, and
// the errors: a match that does not connect says which signal was lost.
type transcript struct {
	rtc.Signaler
	machine int
	mu      sync.Mutex
	lines   []string
	start   time.Time
}

func (tr *transcript) log(format string, args ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.lines = append(tr.lines, fmt.Sprintf("%7.3fs machine %d ", time.Since(tr.start).Seconds(), tr.machine)+fmt.Sprintf(format, args...))
}

func (tr *transcript) Send(ctx context.Context, to int, kind, data string) error {
	err := tr.Signaler.Send(ctx, to, kind, data)
	tr.log("sent %s (%d bytes) to %d: err %v", kind, len(data), to, err)
	return err
}

func (tr *transcript) Receive(ctx context.Context) (int, string, string, error) {
	from, kind, data, err := tr.Signaler.Receive(ctx)
	tr.log("received %s (%d bytes) from %d: err %v", kind, len(data), from, err)
	return from, kind, data, err
}

// dialBound bounds a test match's signaling: a lost signal fails the
// test with its transcript rather than hanging until the test's end.
const dialBound = 2 * time.Minute

// play connects the match's clients over WebRTC (through the TURN server
// alone with relay) and plays a verified match; sigs wrap clients.
func play(t *testing.T, ctx context.Context, clients []*lobby.Client, sigs []rtc.Signaler, relay bool) {
	t.Helper()
	n := len(clients)
	trs := make([]rollback.Transport, n)
	rtcs := make([]*rtc.Transport, n)
	errs := make([]error, n)
	ctx, cancel := context.WithTimeout(ctx, dialBound)
	defer cancel()
	start := time.Now()
	logs := make([]*transcript, n)
	var wg sync.WaitGroup
	for m, c := range clients {
		logs[m] = &transcript{Signaler: sigs[m], machine: m, start: start}
		wg.Go(func() {
			mt, err := c.Wait(ctx)
			if err != nil {
				errs[m] = err
				return
			}
			rtcs[m], errs[m] = rtc.Dial(ctx, rtc.Config{Machine: c.Seat(), Machines: mt.Seats, ICEServers: mt.ICEServers,
				Relay: relay, Loopback: true}, logs[m])
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
		for _, l := range logs {
			l.mu.Lock()
			t.Logf("signals:\n%s", strings.Join(l.lines, "\n"))
			l.mu.Unlock()
		}
		t.Fatal(err)
	}
	if relay {
		for m, tr := range rtcs {
			if r := tr.Route(0); r != "relay-relay" {
				t.Errorf("machine %d's route %q, want relay-relay (through coturn)", m, r)
			}
		}
	}
	r := harness.RunLive(harness.Config{Players: n, Frames: 240, Seed: 11}, harness.UDPOptions{}, trs)
	if r.Err != nil || !r.Verified {
		t.Fatalf("match: err %v, verified %v (%s)", r.Err, r.Verified, r.Desync)
	}
}

// TestScale runs the deployment's scenarios in order on one cluster.
func TestScale(t *testing.T) {
	d := deploy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	t.Run("load", func(t *testing.T) {
		r := load(t, ctx, d, 2000)
		t.Logf("%d matches in %.1f s: create p50 %.2f ms p99 %.2f ms, join p50 %.2f p99 %.2f, signal round trip p50 %.2f p99 %.2f; memory per match: NATS %.0f B, instances %.0f B; per long poll %.0f B",
			r.Matches, r.Seconds, r.CreateP50, r.CreateP99, r.JoinP50, r.JoinP99, r.SignalP50, r.SignalP99,
			r.NATSBytesPerMatch, r.InstanceBytesPerMatch, r.InstanceBytesPerLongPoll)
	})

	t.Run("instances", func(t *testing.T) {
		// Created on one instance, joined on another; each machine
		// signals through its own instance; they play.
		host, err := lobby.Create(ctx, d.instances[0].base, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		guest, err := lobby.Join(ctx, d.instances[1].base, host.Code(), nil)
		if err != nil {
			t.Fatal(err)
		}
		play(t, ctx, []*lobby.Client{host, guest}, []rtc.Signaler{host, guest}, false)
	})

	t.Run("coturn", func(t *testing.T) {
		// The media forced through coturn, with credentials the
		// instances minted.
		host, err := lobby.Create(ctx, d.instances[2].base, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		guest, err := lobby.Join(ctx, d.instances[0].base, host.Code(), nil)
		if err != nil {
			t.Fatal(err)
		}
		play(t, ctx, []*lobby.Client{host, guest}, []rtc.Signaler{host, guest}, true)
	})

	t.Run("nats-node-dies", func(t *testing.T) {
		// A match made, a NATS node killed, the match still joined and
		// played.
		host, err := lobby.Create(ctx, d.balancer, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		d.nats[2].kill()
		guest, err := lobby.Join(ctx, d.balancer, host.Code(), nil)
		if err != nil {
			t.Fatalf("joining after a NATS node died: %v", err)
		}
		play(t, ctx, []*lobby.Client{host, guest}, []rtc.Signaler{host, guest}, false)
	})

	t.Run("instance-dies", func(t *testing.T) {
		// Through the balancer; the first instance is killed once the
		// host has sent its first signal: the machines finish signaling
		// through the others and lose nothing.
		host, err := lobby.Create(ctx, d.balancer, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		guest, err := lobby.Join(ctx, d.balancer, host.Code(), nil)
		if err != nil {
			t.Fatal(err)
		}
		killed := &signaler{Signaler: host, after: d.instances[0].kill}
		play(t, ctx, []*lobby.Client{host, guest}, []rtc.Signaler{killed, guest}, false)
	})
}
