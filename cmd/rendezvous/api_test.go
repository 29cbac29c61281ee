package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// Malformed, oversized, wrong-method and unknown requests get their 4xx
// and an error body, never a 5xx.
func TestBadRequests(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	_, base := start(t, testConfig(newFakeClock()))
	cs := fullMatch(t, ctx, base, 2)
	code, tok := cs[0].Code(), cs[0].Ticket().Token
	open, err := lobby.Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := "/v1/matches/" + code
	big := `{"to":1,"kind":"offer","data":"` + strings.Repeat("x", 20000) + `"}`
	cases := []struct {
		name, method, path, token, body string
		status                          int
		code                            string
	}{
		{"create without body", "POST", "/v1/matches", "", "", 400, lobby.CodeBadRequest},
		{"create bad JSON", "POST", "/v1/matches", "", `{"seats":`, 400, lobby.CodeBadRequest},
		{"create wrong type", "POST", "/v1/matches", "", `{"seats":"2"}`, 400, lobby.CodeBadRequest},
		{"create unknown field", "POST", "/v1/matches", "", `{"seats":2,"players":4}`, 400, lobby.CodeBadRequest},
		{"create trailing data", "POST", "/v1/matches", "", `{"seats":2}{"seats":2}`, 400, lobby.CodeBadRequest},
		{"create 1 seat", "POST", "/v1/matches", "", `{"seats":1}`, 400, lobby.CodeBadRequest},
		{"create 9 seats", "POST", "/v1/matches", "", `{"seats":9}`, 400, lobby.CodeBadRequest},
		{"create huge seats", "POST", "/v1/matches", "", `{"seats":1e300}`, 400, lobby.CodeBadRequest},
		{"create oversized", "POST", "/v1/matches", "", `{"seats":2,"x":"` + strings.Repeat("y", 17000) + `"}`, 413, lobby.CodeTooLarge},
		{"create with GET", "GET", "/v1/matches", "", "", 405, lobby.CodeMethodNotAllowed},
		{"join unknown", "POST", "/v1/matches/ZZZZZZ/seats", "", "", 404, lobby.CodeNotFound},
		{"join odd code", "POST", "/v1/matches/%00%ff/seats", "", "", 404, lobby.CodeNotFound},
		{"join full", "POST", m + "/seats", "", "", 409, lobby.CodeFull},
		{"join with PUT", "PUT", m + "/seats", "", "", 405, lobby.CodeMethodNotAllowed},
		{"state without token", "GET", m, "", "", 401, lobby.CodeUnauthorized},
		{"state with wrong token", "GET", m, strings.Repeat("0", 32), "", 401, lobby.CodeUnauthorized},
		{"state of unknown match", "GET", "/v1/matches/ZZZZZZ", tok, "", 401, lobby.CodeUnauthorized},
		{"state with bad wait", "GET", m + "?wait=soon", tok, "", 400, lobby.CodeBadRequest},
		{"state with DELETE", "DELETE", m, tok, "", 405, lobby.CodeMethodNotAllowed},
		{"signal without token", "POST", m + "/signals", "", `{"to":1,"kind":"offer","data":"x"}`, 401, lobby.CodeUnauthorized},
		{"signal bad JSON", "POST", m + "/signals", tok, `{"to":1,`, 400, lobby.CodeBadRequest},
		{"signal empty", "POST", m + "/signals", tok, ``, 400, lobby.CodeBadRequest},
		{"signal bad kind", "POST", m + "/signals", tok, `{"to":1,"kind":"hello","data":"x"}`, 400, lobby.CodeBadRequest},
		{"signal bad seat", "POST", m + "/signals", tok, `{"to":7,"kind":"offer","data":"x"}`, 400, lobby.CodeBadRequest},
		{"signal negative seat", "POST", m + "/signals", tok, `{"to":-1,"kind":"offer","data":"x"}`, 400, lobby.CodeBadRequest},
		{"signal to self", "POST", m + "/signals", tok, `{"to":0,"kind":"offer","data":"x"}`, 400, lobby.CodeBadRequest},
		{"signal long data", "POST", m + "/signals", tok, `{"to":1,"kind":"offer","data":"` + strings.Repeat("x", lobby.MaxSignalData+1) + `"}`, 400, lobby.CodeBadRequest},
		{"signal oversized body", "POST", m + "/signals", tok, big, 413, lobby.CodeTooLarge},
		{"signal before full", "POST", "/v1/matches/" + open.Code() + "/signals", open.Ticket().Token, `{"to":1,"kind":"offer","data":"x"}`, 409, lobby.CodeNotFull},
		{"signals bad wait", "GET", m + "/signals?wait=-1", tok, "", 400, lobby.CodeBadRequest},
		{"signals huge wait", "GET", m + "/signals?wait=99999999999999999999", tok, "", 400, lobby.CodeBadRequest},
		{"signals bad after", "GET", m + "/signals?after=-1", tok, "", 400, lobby.CodeBadRequest},
		{"signals empty after", "GET", m + "/signals?after=", tok, "", 400, lobby.CodeBadRequest},
		{"signals with PUT", "PUT", m + "/signals", tok, "", 405, lobby.CodeMethodNotAllowed},
		{"leave another seat", "DELETE", m + "/seats/1", tok, "", 403, lobby.CodeForbidden},
		{"leave a non-number", "DELETE", m + "/seats/zero", tok, "", 403, lobby.CodeForbidden},
		{"leave without token", "DELETE", m + "/seats/0", "", "", 401, lobby.CodeUnauthorized},
		{"leave with GET", "GET", m + "/seats/0", tok, "", 405, lobby.CodeMethodNotAllowed},
		{"unknown API path", "GET", "/v1/players", "", "", 404, lobby.CodeNotFound},
		{"API root", "GET", "/v1", "", "", 404, lobby.CodeNotFound},
		{"too deep", "GET", m + "/seats/0/x", tok, "", 404, lobby.CodeNotFound},
		{"empty segment", "GET", "/v1/matches//signals", tok, "", 404, lobby.CodeNotFound},
		{"trailing slash", "POST", "/v1/matches/", "", `{"seats":2}`, 404, lobby.CodeNotFound},
		{"unknown file", "GET", "/nothing.js", "", "", 404, lobby.CodeNotFound},
		{"dot dot", "GET", "/../../etc/passwd", "", "", 404, lobby.CodeNotFound},
		{"POST a file", "POST", "/index.html", "", "", 405, lobby.CodeMethodNotAllowed},
		{"health with POST", "POST", "/healthz", "", "", 405, lobby.CodeMethodNotAllowed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ans := call(t, base, c.method, c.path, c.token, []byte(c.body))
			if ans.status != c.status {
				t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, ans.status, ans.body, c.status)
			}
			if e := ans.errorBody(t); e.Code != c.code {
				t.Fatalf("code %q, want %q (%s)", e.Code, c.code, e.Error)
			}
			if ct := ans.header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if c.status == 405 && ans.header.Get("Allow") == "" {
				t.Fatal("a 405 without Allow")
			}
			if c.status == 401 && ans.header.Get("WWW-Authenticate") == "" {
				t.Fatal("a 401 without WWW-Authenticate")
			}
		})
	}
	// None of them disturbed the match.
	if st, err := cs[1].State(ctx); err != nil || !st.Full {
		t.Fatalf("the match after the bad requests: %+v %v", st, err)
	}
}

// Each client IP has a token bucket; beyond it, 429 with Retry-After.
// /healthz is limited too.
func TestRateLimit(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.Rate, cfg.Burst = 2, 3
	s, base := start(t, cfg)
	for i := range 3 {
		if ans := call(t, base, "POST", "/v1/matches", "", []byte(`{"seats":2}`)); ans.status != 201 {
			t.Fatalf("request %d within the burst: %d %s", i, ans.status, ans.body)
		}
	}
	ans := call(t, base, "POST", "/v1/matches", "", []byte(`{"seats":2}`))
	if ans.status != http.StatusTooManyRequests || ans.errorBody(t).Code != lobby.CodeRateLimited || ans.header.Get("Retry-After") != "1" {
		t.Fatalf("beyond the burst: %d %s Retry-After %q", ans.status, ans.body, ans.header.Get("Retry-After"))
	}
	if n, _, _ := s.reg.counts(); n != 3 {
		t.Fatalf("%d matches: the refused request made one", n)
	}
	if ans := call(t, base, "GET", "/healthz", "", nil); ans.status != 429 {
		t.Fatalf("healthz when limited: %d", ans.status)
	}
	if ans := call(t, base, "GET", "/", "", nil); ans.status != 429 {
		t.Fatalf("a static file when limited: %d", ans.status)
	}
	clock.Advance(500 * time.Millisecond) // one token back at 2 a second
	if ans := call(t, base, "GET", "/", "", nil); ans.status != 200 {
		t.Fatalf("after the bucket refilled a token: %d", ans.status)
	}
	if ans := call(t, base, "GET", "/", "", nil); ans.status != 429 {
		t.Fatalf("the token was spent: %d", ans.status)
	}
	clock.Advance(time.Minute)
	s.sweep()
	if n := s.limit.tracked(); n != 0 {
		t.Fatalf("%d idle buckets kept after a sweep", n)
	}
}

// The limiter's memory is bounded: beyond maxIPs addresses, new ones share
// one bucket.
func TestRateLimitIPCap(t *testing.T) {
	clock := newFakeClock()
	l := newIPLimiter(1, 2, 3, clock.Now)
	for _, ip := range []string{"a", "b", "c"} {
		if ok, _ := l.allow(ip); !ok {
			t.Fatalf("%s refused", ip)
		}
	}
	// d, e and f share the overflow bucket of 2.
	ok1, _ := l.allow("d")
	ok2, _ := l.allow("e")
	ok3, wait := l.allow("f")
	if !ok1 || !ok2 || ok3 || wait != time.Second {
		t.Fatalf("overflow bucket: %v %v %v (wait %v)", ok1, ok2, ok3, wait)
	}
	if l.tracked() != 3 {
		t.Fatalf("%d addresses tracked, cap 3", l.tracked())
	}
	clock.Advance(3 * time.Second) // a, b, c are full again: the next new address replaces them
	if ok, _ := l.allow("g"); !ok || l.tracked() != 1 {
		t.Fatalf("after the idle ones were swept: %v, %d tracked", ok, l.tracked())
	}
}

// At the match cap, creating answers 503 until a match expires.
func TestMatchCap(t *testing.T) {
	ctx := testCtx(t, 5*time.Second)
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.MaxMatches = 2
	_, base := start(t, cfg)
	first, err := lobby.Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if _, err := lobby.Create(ctx, base, 2, nil); err != nil {
		t.Fatal(err)
	}
	_, err = lobby.Create(ctx, base, 2, nil)
	var se *lobby.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable || !errors.Is(err, lobby.ErrUnavailable) {
		t.Fatalf("a match beyond the cap: %v", err)
	}
	// Joining is not creating: still fine.
	if _, err := lobby.Join(ctx, base, first.Code(), nil); err != nil {
		t.Fatal(err)
	}
	// The other (not full) one expires 10 minutes after its creation; the
	// create that finds the cap reached sweeps.
	clock.Advance(10 * time.Minute) // 11 minutes after its creation
	if _, err := lobby.Create(ctx, base, 2, nil); err != nil {
		t.Fatalf("a match after one expired: %v", err)
	}
}

// A seat's queue holds 64 signals (429 beyond); all queues together hold
// MaxQueuedBytes of data (503 beyond); draining frees both. (On NATS the
// bytes are what the stream stores, a signal's data and its overhead:
// queuedCost measures it.)
func TestQueueBounds(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	cfg := testConfig(newFakeClock())
	cost := queuedCost(t, cfg)
	cfg.MaxQueuedBytes = cost(100)*queueLen + cost(50)
	s, base := start(t, cfg)
	a := fullMatch(t, ctx, base, 2)
	data := strings.Repeat("c", 100)
	for i := range queueLen {
		if err := a[0].Send(ctx, 1, lobby.KindCandidate, data); err != nil {
			t.Fatalf("signal %d: %v", i, err)
		}
	}
	tok := a[0].Ticket().Token
	sig := `{"to":1,"kind":"candidate","data":"x"}`
	ans := call(t, base, "POST", "/v1/matches/"+a[0].Code()+"/signals", tok, []byte(sig))
	if ans.status != http.StatusTooManyRequests || ans.errorBody(t).Code != lobby.CodeQueueFull {
		t.Fatalf("signal 65: %d %s", ans.status, ans.body)
	}
	b := fullMatch(t, ctx, base, 2)
	if err := b[0].Send(ctx, 1, lobby.KindCandidate, strings.Repeat("d", 50)); err != nil {
		t.Fatal(err)
	}
	ans = call(t, base, "POST", "/v1/matches/"+b[0].Code()+"/signals", b[0].Ticket().Token, []byte(sig))
	if ans.status != http.StatusServiceUnavailable || ans.errorBody(t).Code != lobby.CodeUnavailable {
		t.Fatalf("a signal beyond the server's bytes: %d %s", ans.status, ans.body)
	}
	// Seat 1 drains its queue in one answer.
	ans = call(t, base, "GET", "/v1/matches/"+a[1].Code()+"/signals", a[1].Ticket().Token, nil)
	var batch []lobby.Signal
	if err := json.Unmarshal(ans.body, &batch); err != nil || len(batch) != queueLen {
		t.Fatalf("drain: %d signals, %v", len(batch), err)
	}
	if _, _, q := s.reg.counts(); q != cost(50) {
		t.Fatalf("%d bytes queued after the drain, want %d", q, cost(50))
	}
	if err := b[0].Send(ctx, 1, lobby.KindCandidate, "x"); err != nil {
		t.Fatalf("a signal after the drain: %v", err)
	}
}

func TestStaticFiles(t *testing.T) {
	cfg := testConfig(newFakeClock())
	_, base := start(t, cfg) // the embedded files
	ans := call(t, base, "GET", "/", "", nil)
	if ans.status != 200 || !strings.Contains(string(ans.body), filesMarker[:40]) || !strings.HasPrefix(ans.header.Get("Content-Type"), "text/html") {
		t.Fatalf("/: %d %s %q", ans.status, ans.header.Get("Content-Type"), ans.body)
	}
	if ans := call(t, base, "HEAD", "/index.html", "", nil); ans.status != 301 && ans.status != 200 {
		t.Fatalf("HEAD /index.html: %d", ans.status)
	}

	cfg.Web = fstest.MapFS{
		"index.html":       {Data: []byte("<p>game</p>")},
		"arena.wasm":       {Data: []byte("\x00asm\x01\x00\x00\x00")},
		"wasm_exec.js":     {Data: []byte("// go")},
		"empty/readme.txt": {Data: []byte("x")},
	}
	_, base = start(t, cfg)
	for path, ct := range map[string]string{
		"/":             "text/html",
		"/arena.wasm":   "application/wasm",
		"/wasm_exec.js": "text/javascript",
	} {
		ans := call(t, base, "GET", path, "", nil)
		if ans.status != 200 || !strings.HasPrefix(ans.header.Get("Content-Type"), ct) {
			t.Fatalf("%s: %d %q, want %s", path, ans.status, ans.header.Get("Content-Type"), ct)
		}
	}
	if ans := call(t, base, "GET", "/empty/", "", nil); ans.status != 404 {
		t.Fatalf("a directory without index.html: %d %s (no listings)", ans.status, ans.body)
	}
}

func TestHealth(t *testing.T) {
	ctx := testCtx(t, 5*time.Second)
	_, base := start(t, testConfig(newFakeClock()))
	fullMatch(t, ctx, base, 2)
	if _, err := lobby.Create(ctx, base, 3, nil); err != nil {
		t.Fatal(err)
	}
	ans := call(t, base, "GET", "/healthz", "", nil)
	var h struct {
		Status  string `json:"status"`
		Store   string `json:"store"`
		Matches int    `json:"matches"`
		Full    int    `json:"full"`
	}
	store := map[string]string{storeMemory: "memory", storeNATS: "nats-embedded"}[testStore()]
	if err := json.Unmarshal(ans.body, &h); err != nil || ans.status != 200 || h.Status != "ok" || h.Store != store || h.Matches != 2 || h.Full != 1 {
		t.Fatalf("healthz: %d %s (%v)", ans.status, ans.body, err)
	}
}

func TestRunFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-no-such-flag"},
		{"-public-ip", "example.com", "-turn", ""},
		{"-max-matches", "0", "-turn", ""},
		{"-max-matches-per-ip", "0", "-turn", ""},
		{"-max-queued-per-ip", "100", "-turn", ""},
		{"-guess-rate", "0", "-turn", ""},
		{"-lock-after", "-1", "-turn", ""},
		{"-ipv6-prefix", "129", "-turn", ""},
		{"-max-conns", "0", "-turn", ""},
		{"-read-header-timeout", "0s", "-turn", ""},
		{"-web", "/no/such/dir"},
		{"extra"},
	} {
		if err := run(args, noEnv); err == nil {
			t.Fatalf("run %q: no error", args)
		}
	}
}

// TestClientIPBehindAProxy: the rate limit's client address is the
// connection's unless that is a trusted proxy's; then the rightmost
// untrusted X-Forwarded-For entry (entries left of it are the client's
// own claims, which it could forge).
func TestClientIPBehindAProxy(t *testing.T) {
	s := &server{cfg: config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}}
	for _, c := range []struct {
		remote, xff, want string
	}{
		{"192.0.2.1:5", "", "192.0.2.1"},
		{"192.0.2.1:5", "198.51.100.7", "192.0.2.1"},                // not a proxy: its header is ignored
		{"10.0.0.1:5", "198.51.100.7", "198.51.100.7"},              // the proxy names the client
		{"10.0.0.1:5", "203.0.113.9, 198.51.100.7", "198.51.100.7"}, // a forged entry left of the real one
		{"10.0.0.1:5", "198.51.100.7, 10.0.0.2", "198.51.100.7"},    // two proxies
		{"10.0.0.1:5", "", "10.0.0.1"},                              // no header
		{"10.0.0.1:5", "junk", "10.0.0.1"},                          // the proxy wrote no address
		{"[::ffff:10.0.0.1]:5", "198.51.100.7", "198.51.100.7"},     // IPv4-mapped
	} {
		r := httptest.NewRequest("GET", "/healthz", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := s.clientIP(r); got != c.want {
			t.Errorf("remote %s, X-Forwarded-For %q: client %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
}

// answerLost forwards every request to the server, and answers the
// first POST of a signal with a proxy's 502 once the server has taken it:
// the answer lost, as when the instance behind a load balancer dies
// between taking a signal and answering.
type answerLost struct{ lost atomic.Bool }

func (a *answerLost) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/signals") || a.lost.Swap(true) {
		return resp, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return &http.Response{StatusCode: http.StatusBadGateway, Status: "502 Bad Gateway", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

// A signal whose answer is lost is sent again, and taken once: Send
// succeeds and the recipient gets it once, then the next one.
func TestSendAnswerLost(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	_, base := start(t, testConfig(newFakeClock()))
	lossy := &answerLost{}
	host, err := lobby.Create(ctx, base, 2, &lobby.Options{HTTPClient: &http.Client{Transport: lossy}})
	if err != nil {
		t.Fatal(err)
	}
	guest, err := lobby.Join(ctx, base, host.Code(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{"first", "second"} {
		if err := host.Send(ctx, 1, lobby.KindCandidate, data); err != nil {
			t.Fatalf("sending %q: %v", data, err)
		}
	}
	if !lossy.lost.Load() {
		t.Fatal("no answer was lost")
	}
	receiveAll(t, ctx, guest, 0, "first", "second")
}
