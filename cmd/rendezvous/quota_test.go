package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// serveFrom sends one request to s's handler as if from client address
// addr (no network: the quota tests need many addresses).
func serveFrom(t testing.TB, s *server, addr, method, path, token, body string) answer {
	t.Helper()
	req := httptest.NewRequest(method, "http://rendezvous.test"+path, strings.NewReader(body))
	req.RemoteAddr = net.JoinHostPort(addr, "40000")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return answer{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// ticketFrom decodes a 201 answer's ticket; it fails the test on any other.
func ticketFrom(t testing.TB, what string, a answer) lobby.Ticket {
	t.Helper()
	var tk lobby.Ticket
	if a.status != http.StatusCreated || json.Unmarshal(a.body, &tk) != nil {
		t.Fatalf("%s: %d %s", what, a.status, a.body)
	}
	return tk
}

// wantError fails the test unless a is an error answer of that status
// and code, with that Retry-After ("" for none).
func wantError(t testing.TB, what string, a answer, status int, code, retryAfter string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: %d %s, want %d %s", what, a.status, a.body, status, code)
	}
	if e := a.errorBody(t); e.Code != code {
		t.Fatalf("%s: code %q (%s), want %q", what, e.Code, e.Error, code)
	}
	if got := a.header.Get("Retry-After"); got != retryAfter {
		t.Fatalf("%s: Retry-After %q, want %q", what, got, retryAfter)
	}
}

func newTestServer(t testing.TB, cfg config) *server {
	t.Helper()
	s, err := newServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const create2 = `{"seats":2}`

// One address holds at most MaxMatchesPerIP matches (429 "quota" beyond)
// while others still create; an IPv6 client is its /64; a match removed
// or expired frees its slot. On the old code the fourth create of one
// address was 201 (one address could hold every match of the server).
func TestMatchQuotaPerAddress(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.MaxMatchesPerIP = 3
	s := newTestServer(t, cfg)
	const a = "198.51.100.7"
	var held []lobby.Ticket
	for i := range 3 {
		held = append(held, ticketFrom(t, fmt.Sprint("create ", i), serveFrom(t, s, a, "POST", "/v1/matches", "", create2)))
	}
	wantError(t, "a fourth match", serveFrom(t, s, a, "POST", "/v1/matches", "", create2), 429, lobby.CodeQuota, "")
	ticketFrom(t, "another address", serveFrom(t, s, "198.51.100.8", "POST", "/v1/matches", "", create2))
	for i := range 3 {
		ticketFrom(t, fmt.Sprint("IPv6 create ", i), serveFrom(t, s, fmt.Sprintf("2001:db8::%d", i+1), "POST", "/v1/matches", "", create2))
	}
	wantError(t, "a fourth match from the same /64", serveFrom(t, s, "2001:db8::ffff:1", "POST", "/v1/matches", "", create2), 429, lobby.CodeQuota, "")
	ticketFrom(t, "another /64", serveFrom(t, s, "2001:db8:0:1::1", "POST", "/v1/matches", "", create2))
	ticketFrom(t, "an IPv4-mapped address", serveFrom(t, s, "::ffff:198.51.100.8", "POST", "/v1/matches", "", create2))
	if u := usedBy(t, s, "198.51.100.8"); u.matches != 2 {
		t.Fatalf("an IPv4-mapped address is charged apart from its IPv4 one: %+v", u)
	}

	// A match its creator leaves before anyone joined is removed: its slot
	// is back.
	first := held[0]
	if ans := serveFrom(t, s, a, "DELETE", "/v1/matches/"+first.Code+"/seats/0", first.Token, ""); ans.status != http.StatusNoContent {
		t.Fatalf("leave: %d %s", ans.status, ans.body)
	}
	ticketFrom(t, "a create after a leave", serveFrom(t, s, a, "POST", "/v1/matches", "", create2))
	wantError(t, "the quota again", serveFrom(t, s, a, "POST", "/v1/matches", "", create2), 429, lobby.CodeQuota, "")

	// A full match counts until it is removed; expired matches free their
	// slots at the sweep.
	ticketFrom(t, "join", serveFrom(t, s, "203.0.113.1", "POST", "/v1/matches/"+held[1].Code+"/seats", "", ""))
	clock.Advance(cfg.OpenTTL)
	s.sweep()
	if u := usedBy(t, s, a); u.matches != 1 {
		t.Fatalf("after the open ones expired, %s holds %+v, want the full match only", a, u)
	}
	for i := range 2 {
		ticketFrom(t, fmt.Sprint("a create after the sweep ", i), serveFrom(t, s, a, "POST", "/v1/matches", "", create2))
	}
	wantError(t, "the quota after the sweep", serveFrom(t, s, a, "POST", "/v1/matches", "", create2), 429, lobby.CodeQuota, "")
	clock.Advance(cfg.FullTTL)
	s.sweep()
	if n, _, _ := s.reg.counts(); n != 0 || addressesCharged(s) != 0 {
		t.Fatalf("after every match expired: %d matches, %d addresses charged", n, addressesCharged(s))
	}
}

// The signal bytes one address sent and that still wait for their
// recipients are at most MaxQueuedPerIP (429 "quota", Retry-After 1 s);
// another address still sends; what the recipient acknowledges is
// uncharged. On the old code the third signal was 202 (one address could
// fill the server's queues).
func TestQueuedBytesQuotaPerAddress(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.MaxQueuedPerIP = 20000
	s := newTestServer(t, cfg)
	fullFrom := func(addr string) (lobby.Ticket, lobby.Ticket) {
		t0 := ticketFrom(t, "create", serveFrom(t, s, addr, "POST", "/v1/matches", "", create2))
		t1 := ticketFrom(t, "join", serveFrom(t, s, addr, "POST", "/v1/matches/"+t0.Code+"/seats", "", ""))
		return t0, t1
	}
	sig := `{"to":1,"kind":"offer","data":"` + strings.Repeat("s", 8000) + `"}`
	const a, b = "198.51.100.7", "2001:db8::7"
	a0, a1 := fullFrom(a)
	for i := range 2 {
		if ans := serveFrom(t, s, a, "POST", "/v1/matches/"+a0.Code+"/signals", a0.Token, sig); ans.status != http.StatusAccepted {
			t.Fatalf("signal %d: %d %s", i, ans.status, ans.body)
		}
	}
	wantError(t, "a signal beyond the quota", serveFrom(t, s, a, "POST", "/v1/matches/"+a0.Code+"/signals", a0.Token, sig), 429, lobby.CodeQuota, "1")
	if u := usedBy(t, s, a); u.bytes != 16000 {
		t.Fatalf("%s is charged %d bytes, want 16000", a, u.bytes)
	}
	b0, _ := fullFrom(b)
	for i := range 2 {
		if ans := serveFrom(t, s, b, "POST", "/v1/matches/"+b0.Code+"/signals", b0.Token, sig); ans.status != http.StatusAccepted {
			t.Fatalf("another address's signal %d: %d %s", i, ans.status, ans.body)
		}
	}
	// The recipient takes both and acknowledges them: the sender's bytes
	// are uncharged, whoever polls.
	if ans := serveFrom(t, s, "203.0.113.5", "GET", "/v1/matches/"+a0.Code+"/signals?after=0", a1.Token, ""); ans.status != 200 || strings.Count(string(ans.body), `"seq"`) != 2 {
		t.Fatalf("poll: %d %.100s", ans.status, ans.body)
	}
	if u := usedBy(t, s, a); u.bytes != 16000 {
		t.Fatalf("answered but not acknowledged: %s is charged %d bytes, want 16000", a, u.bytes)
	}
	serveFrom(t, s, "203.0.113.5", "GET", "/v1/matches/"+a0.Code+"/signals?after=2", a1.Token, "")
	if u := usedBy(t, s, a); u.bytes != 0 {
		t.Fatalf("acknowledged: %s is charged %d bytes, want 0", a, u.bytes)
	}
	if ans := serveFrom(t, s, a, "POST", "/v1/matches/"+a0.Code+"/signals", a0.Token, sig); ans.status != http.StatusAccepted {
		t.Fatalf("a signal after the recipient drained: %d %s", ans.status, ans.body)
	}
	// A seat that leaves uncharges what was queued for it.
	if ans := serveFrom(t, s, a, "DELETE", "/v1/matches/"+a0.Code+"/seats/1", a1.Token, ""); ans.status != http.StatusNoContent {
		t.Fatalf("leave: %d %s", ans.status, ans.body)
	}
	if u := usedBy(t, s, a); u.bytes != 0 {
		t.Fatalf("after the recipient left: %s is charged %d bytes", a, u.bytes)
	}
}

// Joins of codes that do not exist and wrong tokens are failed guesses:
// each address has GuessBurst of them, refilled at GuessRate a minute;
// then its joins are refused before the code is looked at (429, even for
// a code that exists) and its wrong tokens get 429, while a right token
// still passes and other addresses are not slowed. On the old code the
// fourth wrong join was a 404 like the first (10,800 of them in 9
// minutes, none refused).
func TestFailedGuessesLimited(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.GuessRate, cfg.GuessBurst, cfg.LockAfter = 1, 3, 0
	s := newTestServer(t, cfg)
	open := ticketFrom(t, "create", serveFrom(t, s, "198.51.100.1", "POST", "/v1/matches", "", `{"seats":3}`))
	const a = "203.0.113.66"
	unknown := "/v1/matches/" + strings.Repeat("Z", codeLen) + "/seats"
	for i := range 3 {
		wantError(t, fmt.Sprint("wrong join ", i), serveFrom(t, s, a, "POST", unknown, "", ""), 404, lobby.CodeNotFound, "")
	}
	wantError(t, "a wrong join beyond the budget", serveFrom(t, s, a, "POST", unknown, "", ""), 429, lobby.CodeRateLimited, "60")
	wantError(t, "a right join beyond the budget", serveFrom(t, s, a, "POST", "/v1/matches/"+open.Code+"/seats", "", ""), 429, lobby.CodeRateLimited, "60")
	ticketFrom(t, "another address's join", serveFrom(t, s, "203.0.113.67", "POST", "/v1/matches/"+open.Code+"/seats", "", ""))
	clock.Advance(time.Minute) // one guess back
	wantError(t, "a wrong join a minute later", serveFrom(t, s, a, "POST", unknown, "", ""), 404, lobby.CodeNotFound, "")
	wantError(t, "and the next", serveFrom(t, s, a, "POST", unknown, "", ""), 429, lobby.CodeRateLimited, "60")

	// Wrong tokens (and tokens for codes that do not exist) are guesses too.
	const c = "2001:db8:1::c"
	state := "/v1/matches/" + open.Code
	wantError(t, "a wrong token", serveFrom(t, s, c, "GET", state, strings.Repeat("0", 32), ""), 401, lobby.CodeUnauthorized, "")
	wantError(t, "no token", serveFrom(t, s, c, "GET", state, "", ""), 401, lobby.CodeUnauthorized, "")
	wantError(t, "a token for no match", serveFrom(t, s, c, "GET", "/v1/matches/"+strings.Repeat("Z", codeLen), open.Token, ""), 401, lobby.CodeUnauthorized, "")
	wantError(t, "a wrong token beyond the budget", serveFrom(t, s, "2001:db8:1::d", "GET", state, strings.Repeat("0", 32), ""), 429, lobby.CodeRateLimited, "60")
	if ans := serveFrom(t, s, c, "GET", state, open.Token, ""); ans.status != 200 {
		t.Fatalf("the right token from an address out of guesses: %d %s", ans.status, ans.body)
	}
	// Codes that do not exist are not remembered: the server holds what it
	// held before.
	if n, _, _ := s.reg.counts(); n != 1 || addressesCharged(s) != 1 {
		t.Fatalf("after the guesses: %d matches, %d addresses charged", n, addressesCharged(s))
	}
}

// A match against which LockAfter wrong tokens were tried (from any
// addresses, none more than LockFor after the one before) refuses joins
// for LockFor (429 "locked"); its seat holders carry on. On the old code
// the join after three wrong tokens took the seat.
func TestCodeLocksAfterWrongTokens(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.LockAfter, cfg.LockFor = 3, time.Minute
	s := newTestServer(t, cfg)
	open := ticketFrom(t, "create", serveFrom(t, s, "198.51.100.1", "POST", "/v1/matches", "", `{"seats":3}`))
	state, seats := "/v1/matches/"+open.Code, "/v1/matches/"+open.Code+"/seats"
	wrong := strings.Repeat("0", 32)
	for i := range 3 {
		wantError(t, fmt.Sprint("wrong token ", i), serveFrom(t, s, fmt.Sprintf("192.0.2.%d", 10+i), "GET", state, wrong, ""), 401, lobby.CodeUnauthorized, "")
	}
	wantError(t, "a join of the locked match", serveFrom(t, s, "192.0.2.20", "POST", seats, "", ""), 429, lobby.CodeLocked, "60")
	if ans := serveFrom(t, s, "198.51.100.1", "GET", state, open.Token, ""); ans.status != 200 {
		t.Fatalf("the seat holder of a locked match: %d %s", ans.status, ans.body)
	}
	clock.Advance(59 * time.Second)
	wantError(t, "a join a second before the lock ends", serveFrom(t, s, "192.0.2.20", "POST", seats, "", ""), 429, lobby.CodeLocked, "1")
	clock.Advance(time.Second)
	ticketFrom(t, "a join once the lock is over", serveFrom(t, s, "192.0.2.20", "POST", seats, "", ""))

	// Wrong tokens further apart than LockFor do not add up; a missing
	// token is no guess at the match.
	for range 2 {
		serveFrom(t, s, "192.0.2.30", "GET", state, wrong, "")
		serveFrom(t, s, "192.0.2.30", "GET", state, "", "")
		clock.Advance(time.Minute)
	}
	serveFrom(t, s, "192.0.2.30", "GET", state, wrong, "")
	ticketFrom(t, "a join after wrong tokens a minute apart", serveFrom(t, s, "192.0.2.21", "POST", seats, "", ""))
}

// Codes are 10 symbols of the 32-letter alphabet (2⁵⁰ codes); a join
// accepts one in any case, grouped with dashes or spaces. On the old code
// codes were 6 symbols (2³⁰).
func TestMatchCodes(t *testing.T) {
	s := newTestServer(t, testConfig(newFakeClock()))
	seen := map[string]bool{}
	for range 50 {
		tk := ticketFrom(t, "create", serveFrom(t, s, "198.51.100.1", "POST", "/v1/matches", "", `{"seats":8}`))
		if len(tk.Code) != 10 || strings.Trim(tk.Code, codeAlphabet) != "" || seen[tk.Code] {
			t.Fatalf("code %q: want 10 new symbols of %s", tk.Code, codeAlphabet)
		}
		seen[tk.Code] = true
	}
	for code := range seen {
		for _, typed := range []string{
			strings.ToLower(code),
			code[:5] + "-" + code[5:],
			strings.ToLower(code[:5]) + "%20" + code[5:],
		} {
			ticketFrom(t, "join "+typed, serveFrom(t, s, "198.51.100.2", "POST", "/v1/matches/"+typed+"/seats", "", ""))
		}
		wantError(t, "a join of the code's first 6 symbols", serveFrom(t, s, "198.51.100.2", "POST", "/v1/matches/"+code[:6]+"/seats", "", ""), 404, lobby.CodeNotFound, "")
		break
	}
}

// A create refused at the match cap sweeps the registry (a walk of every
// match under its lock) at most once a capSweepInterval, not every time.
// On the old code each of the 100 refused creates swept.
func TestRefusedCreatesSweepSeldom(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.MaxMatches = 5
	s := newTestServer(t, cfg)
	for i := range 5 {
		ticketFrom(t, fmt.Sprint("create ", i), serveFrom(t, s, "198.51.100.1", "POST", "/v1/matches", "", create2))
	}
	walks := sweeps(s)
	for range 100 {
		if ans := serveFrom(t, s, "198.51.100.2", "POST", "/v1/matches", "", create2); ans.status != 503 {
			t.Fatalf("a create beyond the cap: %d %s", ans.status, ans.body)
		}
	}
	if n := sweeps(s) - walks; n > 1 {
		t.Fatalf("100 refused creates walked the registry %d times", n)
	}
	wantError(t, "a create beyond the cap", serveFrom(t, s, "198.51.100.2", "POST", "/v1/matches", "", create2), 503, lobby.CodeUnavailable, "1")
	clock.Advance(cfg.OpenTTL) // all 5 expire: the next create sweeps and succeeds
	ticketFrom(t, "a create after they expired", serveFrom(t, s, "198.51.100.2", "POST", "/v1/matches", "", create2))
	if n, _, _ := s.reg.counts(); n != 1 {
		t.Fatalf("%d matches after the sweep, want 1", n)
	}
}

// /healthz counts against the rate limit, and its figures are counters
// kept as the registry changes (no walk): right through create, join,
// signals, leave and expiry. On the old code /healthz was not limited.
func TestHealthLimitedAndCounted(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(clock)
	cfg.Rate, cfg.Burst = 1, 2
	s := newTestServer(t, cfg)
	for i := range 2 {
		if ans := serveFrom(t, s, "198.51.100.1", "GET", "/healthz", "", ""); ans.status != 200 {
			t.Fatalf("healthz %d: %d", i, ans.status)
		}
	}
	wantError(t, "healthz beyond the burst", serveFrom(t, s, "198.51.100.1", "GET", "/healthz", "", ""), 429, lobby.CodeRateLimited, "1")

	cfg.Rate = 0
	s = newTestServer(t, cfg)
	type health struct {
		Matches int `json:"matches"`
		Full    int `json:"full"`
		Queued  int `json:"queued_bytes"`
	}
	check := func(what string, want health) {
		t.Helper()
		walks := sweeps(s)
		ans := serveFrom(t, s, "198.51.100.9", "GET", "/healthz", "", "")
		var h health
		err := json.Unmarshal(ans.body, &h)
		if onNATS(s) && (h.Queued > 0) == (want.Queued > 0) {
			want.Queued = h.Queued // NATS's bytes: the signal's and its overhead
		}
		if err != nil || ans.status != 200 || h != want {
			t.Fatalf("%s: healthz %d %s, want %+v", what, ans.status, ans.body, want)
		}
		if sweeps(s) != walks {
			t.Fatalf("%s: healthz walked the registry", what)
		}
	}
	check("empty", health{})
	a := ticketFrom(t, "create", serveFrom(t, s, "198.51.100.1", "POST", "/v1/matches", "", create2))
	b := ticketFrom(t, "create", serveFrom(t, s, "198.51.100.1", "POST", "/v1/matches", "", `{"seats":3}`))
	check("two open", health{Matches: 2})
	a1 := ticketFrom(t, "join", serveFrom(t, s, "198.51.100.2", "POST", "/v1/matches/"+a.Code+"/seats", "", ""))
	ticketFrom(t, "join", serveFrom(t, s, "198.51.100.2", "POST", "/v1/matches/"+b.Code+"/seats", "", ""))
	check("one full", health{Matches: 2, Full: 1})
	serveFrom(t, s, "198.51.100.1", "POST", "/v1/matches/"+a.Code+"/signals", a.Token, `{"to":1,"kind":"offer","data":"12345"}`)
	check("a signal queued", health{Matches: 2, Full: 1, Queued: 5})
	serveFrom(t, s, "198.51.100.1", "DELETE", "/v1/matches/"+a.Code+"/seats/0", a.Token, "")
	check("one seat of the full match left", health{Matches: 2, Full: 1, Queued: 5})
	serveFrom(t, s, "198.51.100.2", "DELETE", "/v1/matches/"+a.Code+"/seats/1", a1.Token, "")
	check("both left: removed", health{Matches: 1})
	clock.Advance(cfg.OpenTTL)
	s.sweep()
	check("the open one expired", health{})
}

// BenchmarkHealth: /healthz at 10,000 matches, half of them full.
func BenchmarkHealth(b *testing.B) {
	cfg := testConfig(newFakeClock())
	s := newTestServer(b, cfg)
	for i := range 10000 {
		t0, err := s.reg.create(2, fmt.Sprint(i), false)
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := s.reg.join(t0.Code); err != nil {
				b.Fatal(err)
			}
		}
	}
	req := httptest.NewRequest("GET", "/healthz", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
