package scaletest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// loadReport is what the load measured (docs/deployment.md quotes it).
type loadReport struct {
	Matches                  int
	Seconds                  float64
	CreateP50, CreateP99     float64 // milliseconds
	JoinP50, JoinP99         float64
	SignalP50, SignalP99     float64 // a signal to the guest and one back, each through another instance
	NATSBytesPerMatch        float64 // the three nodes' resident memory, grown, per match held
	InstanceBytesPerMatch    float64 // the three instances'
	LongPolls                int
	InstanceBytesPerLongPoll float64
}

func quantile(d []time.Duration, q float64) float64 {
	slices.Sort(d)
	return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000
}

// load creates, joins and signals n matches across the instances, n
// given by REWIND_SCALE_MATCHES (20,000 by default), with 64 at once
// from 64 client addresses; then holds polls long polls on one
// instance.
func load(t *testing.T, ctx context.Context, d *deployment, polls int) loadReport {
	n := 20000
	if v := os.Getenv("REWIND_SCALE_MATCHES"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	// Each worker is a client address of its own (127.1.0.1 to
	// 127.1.0.64), as players are: the per-address quotas and counters
	// are not one hot key.
	from := func(w int) *lobby.Options {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 1, 0, byte(w+1))}}
		return &lobby.Options{HTTPClient: &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}}}
	}
	opts := from(100)
	memory := func() (nats, instances int64) {
		for _, node := range d.nats {
			nats += node.rss(t)
		}
		for _, in := range d.instances {
			instances += in.rss(t)
		}
		return nats, instances
	}
	nats0, inst0 := memory()
	var create, join, signal []time.Duration
	var mu sync.Mutex
	var failed atomic.Int64
	var firstErr atomic.Value
	work := make(chan int)
	var wg sync.WaitGroup
	begin := time.Now()
	for w := range 64 {
		opts := from(w)
		wg.Go(func() {
			for i := range work {
				a, b := d.instances[i%3].base, d.instances[(i+1)%3].base
				t0 := time.Now()
				host, err := lobby.Create(ctx, a, 2, opts)
				t1 := time.Now()
				var guest *lobby.Client
				if err == nil {
					guest, err = lobby.Join(ctx, b, host.Code(), opts)
				}
				t2 := time.Now()
				if err == nil {
					err = host.Send(ctx, 1, lobby.KindOffer, "offer")
				}
				if err == nil {
					_, _, _, err = guest.Receive(ctx)
				}
				if err == nil {
					err = guest.Send(ctx, 0, lobby.KindAnswer, "answer")
				}
				if err == nil {
					_, _, _, err = host.Receive(ctx)
				}
				t3 := time.Now()
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Errorf("match %d: %w", i, err))
					continue
				}
				mu.Lock()
				create, join, signal = append(create, t1.Sub(t0)), append(join, t2.Sub(t1)), append(signal, t3.Sub(t2))
				mu.Unlock()
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	took := time.Since(begin)
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d of %d matches failed; the first: %v", f, n, firstErr.Load())
	}
	nats1, inst1 := memory()
	r := loadReport{
		Matches: n, Seconds: took.Seconds(),
		CreateP50: quantile(create, .5), CreateP99: quantile(create, .99),
		JoinP50: quantile(join, .5), JoinP99: quantile(join, .99),
		SignalP50: quantile(signal, .5), SignalP99: quantile(signal, .99),
		NATSBytesPerMatch:     float64(nats1-nats0) / float64(n),
		InstanceBytesPerMatch: float64(inst1-inst0) / float64(n),
	}

	// Long polls held on one instance: guests of fresh matches waiting
	// for a signal that does not come.
	in := d.instances[1]
	var guests []*lobby.Client
	for range polls {
		host, err := lobby.Create(ctx, in.base, 2, opts)
		if err != nil {
			t.Fatal(err)
		}
		g, err := lobby.Join(ctx, in.base, host.Code(), opts)
		if err != nil {
			t.Fatal(err)
		}
		guests = append(guests, g)
	}
	before := in.rss(t)
	pctx, stop := context.WithCancel(ctx)
	var held sync.WaitGroup
	for _, g := range guests {
		held.Go(func() { g.Receive(pctx) })
	}
	waitPolls(t, ctx, in, polls)
	r.LongPolls = polls
	r.InstanceBytesPerLongPoll = float64(in.rss(t)-before) / float64(polls)
	stop()
	held.Wait()
	if out := os.Getenv("REWIND_SCALE_OUT"); out != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			t.Error(err)
		}
	}
	return r
}

// waitPolls waits until the instance holds at least n long polls
// (/healthz's long_polls).
func waitPolls(t *testing.T, ctx context.Context, in *instance, n int) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(in.base + "/healthz")
		if err == nil {
			var h struct {
				LongPolls int `json:"long_polls"`
			}
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if h.LongPolls >= n {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the instance never held %d long polls", n)
		case <-tick.C:
		}
	}
}
