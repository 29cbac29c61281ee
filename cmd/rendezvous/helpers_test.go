package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// fakeClock is the server's clock in tests: it moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testConfig is a server without TURN or rate limit, on a fake clock,
// logging nowhere, whose long polls last 2 s at most (every test waits
// for events, so no test waits that long unless it fails). Every client
// of a test is on loopback, one address: its quotas per address are the
// server's whole caps, and its failed guesses are many (the tests of
// those limits set their own).
func testConfig(clock *fakeClock) config {
	cfg := defaultConfig()
	cfg.TURNAddr = ""
	cfg.Rate = 0
	cfg.MaxMatchesPerIP, cfg.MaxQueuedPerIP = cfg.MaxMatches, cfg.MaxQueuedBytes
	cfg.GuessBurst = 1000
	cfg.MaxWait = 2 * time.Second
	cfg.Now = clock.Now
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Store = testStore()
	if os.Getenv("REWIND_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return cfg
}

// testStore is the store the tests' servers use: REWIND_STORE=nats runs
// them on NATS (a server embedded in each), memory otherwise.
func testStore() string {
	if os.Getenv("REWIND_STORE") == storeNATS {
		return storeNATS
	}
	return storeMemory
}

// onNATS reports whether s keeps its state in NATS: a few figures differ
// (the queued bytes count NATS's own bytes, Seqs are the stream's).
func onNATS(s *server) bool {
	_, ok := s.reg.(*natsStore)
	return ok
}

// start runs a server built from cfg behind an httptest server.
func start(t testing.TB, cfg config) (*server, string) {
	t.Helper()
	s, err := newServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close() // ends the long polls, which hs.Close waits for
		hs.Close()
	})
	return s, hs.URL
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// answer is one raw HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// errorBody decodes the answer as an error body; it fails the test if it
// is not one.
func (a answer) errorBody(t testing.TB) lobby.ErrorBody {
	t.Helper()
	var e lobby.ErrorBody
	if err := json.Unmarshal(a.body, &e); err != nil || e.Error == "" || e.Code == "" {
		t.Fatalf("answer %d %q is not an error body: %v", a.status, a.body, err)
	}
	return e
}

// call sends one raw request (token empty: no Authorization header).
func call(t testing.TB, base, method, path, token string, body []byte) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return roundTrip(t, http.DefaultClient, req)
}

// roundTrip sends req with client and reads the whole answer.
func roundTrip(t testing.TB, client *http.Client, req *http.Request) answer {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// fullMatch creates a match of n seats and fills it, on the server at base.
func fullMatch(t testing.TB, ctx context.Context, base string, n int) []*lobby.Client {
	t.Helper()
	return fullMatchWith(t, ctx, base, n, nil)
}

// fullMatchWith is fullMatch of a match created with opts.
func fullMatchWith(t testing.TB, ctx context.Context, base string, n int, opts *lobby.Options) []*lobby.Client {
	t.Helper()
	c, err := lobby.Create(ctx, base, n, opts)
	if err != nil {
		t.Fatal(err)
	}
	cs := []*lobby.Client{c}
	for len(cs) < n {
		j, err := lobby.Join(ctx, base, c.Code(), nil)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, j)
	}
	return cs
}

// storeStats is what a store tells the tests of its quotas and sweeps.
type storeStats interface {
	used(addr string) usage // what addr holds now
	charged() int           // addresses that hold something
	walks() int             // sweeps of every match so far
}

func usedBy(t testing.TB, s *server, addr string) usage {
	t.Helper()
	return s.reg.(storeStats).used(addr)
}

func addressesCharged(s *server) int { return s.reg.(storeStats).charged() }

func sweeps(s *server) int { return s.reg.(storeStats).walks() }

// queuedCost is what a signal of n bytes of data from seat 0 to seat 1
// counts in the queued bytes of a server built from cfg: n in memory; on
// NATS, what the stream stores (measured on a server of its own).
func queuedCost(t testing.TB, cfg config) func(n int) int {
	t.Helper()
	if cfg.Store != storeNATS {
		return func(n int) int { return n }
	}
	ctx := testCtx(t, 5*time.Second)
	s, base := start(t, cfg)
	cs := fullMatch(t, ctx, base, 2)
	if err := cs[0].Send(ctx, 1, lobby.KindCandidate, "x"); err != nil {
		t.Fatal(err)
	}
	_, _, q := s.reg.counts()
	return func(n int) int { return q - 1 + n }
}
