package main

import (
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// timing is an http.RoundTripper that records how long each request that
// is not a long poll took, to its answer's headers.
type timing struct {
	next http.RoundTripper
	mu   sync.Mutex
	took []time.Duration
}

func (t *timing) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	if !strings.Contains(r.URL.RawQuery, "wait=") {
		t.mu.Lock()
		t.took = append(t.took, time.Since(start))
		t.mu.Unlock()
	}
	return resp, err
}

func (t *timing) percentile(p float64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := slices.Clone(t.took)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// TestLoad: 200 lobby clients (100 matches of 2) over loopback, then 50
// concurrent signaling exchanges (an offer, an answer and 5 candidates
// each way), all within a deadline.
func TestLoad(t *testing.T) {
	const matches, exchanges, candidates = 100, 50, 5
	ctx := testCtx(t, 20*time.Second)
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.MaxWait = time.Minute // no poll times out: each must end by its event, before ctx's deadline
	s, base := start(t, cfg)
	tr := &http.Transport{MaxIdleConnsPerHost: 4 * matches, IdleConnTimeout: time.Minute}
	t.Cleanup(tr.CloseIdleConnections)
	rt := &timing{next: tr}
	opts := &lobby.Options{HTTPClient: &http.Client{Transport: rt}}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	began := time.Now()

	// The lobby: 100 creators, each joined by one client; all 200 wait.
	pairs := make([][2]*lobby.Client, matches)
	sessions := make([][2]uint64, matches)
	var wg sync.WaitGroup
	for i := range matches {
		wg.Go(func() {
			c, err := lobby.Create(ctx, base, 2, opts)
			if err != nil {
				t.Error(err)
				return
			}
			waited := make(chan lobby.Match, 1)
			go func() {
				m, err := c.Wait(ctx)
				if err != nil {
					t.Error(err)
				}
				waited <- m
			}()
			j, err := lobby.Join(ctx, base, c.Code(), opts)
			if err != nil {
				t.Error(err)
				return
			}
			m, err := j.Wait(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			pairs[i] = [2]*lobby.Client{c, j}
			sessions[i] = [2]uint64{(<-waited).SessionID, m.SessionID}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	lobbyDone := time.Since(began)
	for i, s := range sessions {
		if s[0] == 0 || s[0] != s[1] {
			t.Fatalf("match %d: the seats see sessions %d and %d", i, s[0], s[1])
		}
	}

	// Signaling: seat 0 offers and trickles candidates, seat 1 answers and
	// trickles its own; each checks it got the other's in order.
	expect := func(c *lobby.Client, from int, want ...string) error {
		for _, w := range want {
			f, kind, data, err := c.Receive(ctx)
			if err != nil {
				return err
			}
			if got := kind + " " + data; f != from || got != w {
				return fmt.Errorf("seat %d got %q from %d, want %q from %d", c.Seat(), got, f, w, from)
			}
		}
		return nil
	}
	sendAll := func(c *lobby.Client, to int, msgs ...string) error {
		for _, m := range msgs {
			kind, data, _ := strings.Cut(m, " ")
			if err := c.Send(ctx, to, kind, data); err != nil {
				return err
			}
		}
		return nil
	}
	sdp := strings.Repeat("a=candidate:1 1 udp 2122260223 192.0.2.1 54321 typ host\r\n", 40) // ~2.5 KB, an SDP's size
	signalStart := time.Now()
	for i := range exchanges {
		c0, c1 := pairs[i][0], pairs[i][1]
		var cand0, cand1 []string
		for k := range candidates {
			cand0 = append(cand0, fmt.Sprintf("candidate m%d-0-%d", i, k))
			cand1 = append(cand1, fmt.Sprintf("candidate m%d-1-%d", i, k))
		}
		offer, answer := "offer "+sdp+fmt.Sprint(i), "answer "+sdp+fmt.Sprint(i)
		wg.Go(func() {
			if err := sendAll(c0, 1, append([]string{offer}, cand0...)...); err != nil {
				t.Error(err)
				return
			}
			if err := expect(c0, 1, append([]string{answer}, cand1...)...); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := expect(c1, 0, offer); err != nil {
				t.Error(err)
				return
			}
			if err := sendAll(c1, 0, append([]string{answer}, cand1...)...); err != nil {
				t.Error(err)
				return
			}
			if err := expect(c1, 0, cand0...); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	signalDone := time.Since(signalStart)
	wall := time.Since(began)

	runtime.GC()
	runtime.ReadMemStats(&after)
	// Each seat's last batch waits for a poll to acknowledge it; none
	// comes, and the sweep forgets them after ackGrace.
	n, full, queued := s.reg.counts()
	if n != matches || full != matches || queued == 0 {
		t.Fatalf("after the load: %d matches, %d full, %d bytes queued (the last batches, unacknowledged)", n, full, queued)
	}
	clock.Advance(ackGrace - time.Second)
	if s.reg.sweep(); !held(s) {
		t.Fatalf("the last batches were forgotten before ackGrace")
	}
	clock.Advance(time.Second)
	if s.reg.sweep(); held(s) {
		t.Fatalf("the last batches are held ackGrace after they were answered")
	}
	if n, full, _ = s.reg.counts(); n != matches || full != matches {
		t.Fatalf("after the sweep: %d matches, %d full", n, full)
	}
	rt.mu.Lock()
	requests := len(rt.took)
	rt.mu.Unlock()
	t.Logf("%d clients in %d matches: lobby %v; %d signaling exchanges (%d signals) %v; wall %v",
		2*matches, matches, lobbyDone.Round(time.Millisecond), exchanges, exchanges*2*(1+candidates),
		signalDone.Round(time.Millisecond), wall.Round(time.Millisecond))
	t.Logf("%d requests that are not long polls: p50 %v, p99 %v",
		requests, rt.percentile(0.50).Round(10*time.Microsecond), rt.percentile(0.99).Round(10*time.Microsecond))
	t.Logf("heap after GC: %.1f MiB before, %.1f MiB after (%+.1f MiB, server and clients in one process)",
		mib(before.HeapAlloc), mib(after.HeapAlloc), mib(after.HeapAlloc)-mib(before.HeapAlloc))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// held reports whether server s holds queued signal data.
func held(s *server) bool {
	_, _, queued := s.reg.counts()
	return queued > 0
}

// TestLoadFigures measures, when REWIND_LOAD gives a number of matches
// (it is skipped otherwise): that many matches of 2 created, then
// joined, 32 requests at a time, then a signal round trip in each (seat
// 1's poll waits, seat 0 sends, seat 1's poll answers; then the other
// way), with the p50 and p99 of each step, and the memory each full
// match holds (heap and stacks after a collection, with its signals
// answered; clients and, with REWIND_STORE=nats, the embedded NATS server
// in the same process), and how long a sweep of them takes. Each match's clients come from an address of
// their own (X-Forwarded-For from a trusted proxy), so that the quotas
// per address are the default ones. docs/deployment.md has the figures.
func TestLoadFigures(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("REWIND_LOAD"))
	if n <= 0 {
		t.Skip("REWIND_LOAD=<matches> runs it")
	}
	const parallel = 32
	ctx := testCtx(t, 10*time.Minute)
	cfg := testConfig(newFakeClock())
	cfg.MaxWait = time.Minute
	cfg.MaxMatches = 2 * n
	def := defaultConfig()
	cfg.MaxMatchesPerIP, cfg.MaxQueuedPerIP = def.MaxMatchesPerIP, def.MaxQueuedPerIP
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	s, base := start(t, cfg)
	tr := &http.Transport{MaxIdleConnsPerHost: 4 * parallel, IdleConnTimeout: time.Minute}
	t.Cleanup(tr.CloseIdleConnections)
	optsOf := func(i int) *lobby.Options {
		addr := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		return &lobby.Options{HTTPClient: &http.Client{Transport: forwarded{addr.String(), tr}}}
	}
	h0, s0, _ := memFootprint()

	// each runs f for every match, parallel at a time, and returns the
	// times f reports.
	each := func(f func(i int) (time.Duration, error)) []time.Duration {
		took := make([]time.Duration, n)
		next := atomic.Int64{}
		var wg sync.WaitGroup
		for range parallel {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
					d, err := f(i)
					if err != nil {
						t.Error(err)
						return
					}
					took[i] = d
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		return took
	}
	timed := func(f func() error) (time.Duration, error) {
		start := time.Now()
		err := f()
		return time.Since(start), err
	}
	pairs := make([][2]*lobby.Client, n)
	creates := each(func(i int) (d time.Duration, err error) {
		return timed(func() error {
			pairs[i][0], err = lobby.Create(ctx, base, 2, optsOf(i))
			return err
		})
	})
	joins := each(func(i int) (d time.Duration, err error) {
		return timed(func() error {
			pairs[i][1], err = lobby.Join(ctx, base, pairs[i][0].Code(), optsOf(i))
			return err
		})
	})
	roundTrip := func(from, to *lobby.Client, data string) (time.Duration, error) {
		got := make(chan error, 1)
		polling := make(chan struct{})
		go func() {
			close(polling)
			_, _, d, err := to.Receive(ctx)
			if err == nil && d != data {
				err = fmt.Errorf("got %q, want %q", d, data)
			}
			got <- err
		}()
		<-polling
		return timed(func() error {
			if err := from.Send(ctx, to.Seat(), lobby.KindOffer, data); err != nil {
				return err
			}
			return <-got
		})
	}
	signals := each(func(i int) (time.Duration, error) {
		d0, err := roundTrip(pairs[i][0], pairs[i][1], fmt.Sprint("offer ", i))
		if err != nil {
			return 0, err
		}
		d1, err := roundTrip(pairs[i][1], pairs[i][0], fmt.Sprint("answer ", i))
		return (d0 + d1) / 2, err
	})
	h1, s1, _ := memFootprint()
	if m, full, _ := s.reg.counts(); m != n || full != n {
		t.Fatalf("%d matches, %d full; want %d", m, full, n)
	}
	pct := func(ds []time.Duration, p float64) time.Duration {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[min(len(ds)-1, int(float64(len(ds))*p))].Round(10 * time.Microsecond)
	}
	t.Logf("store %s, %d matches of 2, %d requests at a time:", cfg.Store, n, parallel)
	for _, f := range []struct {
		what string
		ds   []time.Duration
	}{{"create", creates}, {"join", joins}, {"signal round trip", signals}} {
		t.Logf("  %s: p50 %v, p99 %v", f.what, pct(f.ds, .5), pct(f.ds, .99))
	}
	t.Logf("  memory per full match (heap and stacks, clients included): %.0f bytes", float64(int64(h1+s1)-int64(h0+s0))/float64(n))
	sweep, _ := timed(func() error {
		s.sweep()
		return nil
	})
	t.Logf("  a sweep of the %d matches (none expired): %v", n, sweep.Round(10*time.Microsecond))
}

// forwarded is a transport whose requests say they come from addr, as a
// trusted proxy's X-Forwarded-For would.
type forwarded struct {
	addr string
	next http.RoundTripper
}

func (f forwarded) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.addr)
	return f.next.RoundTrip(r)
}
