package lobby

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// These tests run the client against small stand-ins for the server; the
// real server's end-to-end tests are in cmd/rendezvous.

// fake is a scripted server: each request goes to handle.
type fake struct {
	mu       sync.Mutex
	requests []string // "METHOD /path?query auth"
	handle   func(w http.ResponseWriter, r *http.Request)
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
	f.mu.Unlock()
	f.handle(w, r)
}

func (f *fake) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func serve(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) (*fake, string) {
	t.Helper()
	f := &fake{handle: h}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// ticketServer answers create and join with a ticket, and hands every
// other request to rest.
func ticketServer(t *testing.T, rest func(w http.ResponseWriter, r *http.Request)) (*fake, string) {
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/matches":
			var req CreateRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Seats != 2 {
				reply(w, 400, ErrorBody{Error: "bad seats", Code: CodeBadRequest})
				return
			}
			reply(w, 201, Ticket{Code: "ABCDEF", Seat: 0, Token: "t0"})
		case r.Method == http.MethodPost && r.URL.Path == "/v1/matches/ABCDEF/seats":
			reply(w, 201, Ticket{Code: "ABCDEF", Seat: 1, Token: "t1"})
		default:
			rest(w, r)
		}
	})
}

func TestCreateJoinAndErrors(t *testing.T) {
	ctx := testCtx(t)
	f, base := ticketServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/matches/FULLFU/seats":
			reply(w, 409, ErrorBody{Error: "the match is full", Code: CodeFull})
		case "/v1/matches/PROXYY/seats": // an answer without our body, as a proxy's
			w.Header().Set("Retry-After", "7")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		default:
			reply(w, 404, ErrorBody{Error: "no match with this code", Code: CodeNotFound})
		}
	})
	c, err := Create(ctx, base+"/", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Seat() != 0 || c.Code() != "ABCDEF" {
		t.Fatalf("creator: seat %d code %q", c.Seat(), c.Code())
	}
	j, err := Join(ctx, base, " abc-def ", &Options{HTTPClient: &http.Client{}}) // typed as a player may
	if err != nil {
		t.Fatal(err)
	}
	if j.Seat() != 1 || j.Ticket().Token != "t1" {
		t.Fatalf("joiner: %+v", j.Ticket())
	}

	_, err = Create(ctx, base, 3, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 400 || !errors.Is(err, ErrBadRequest) || se.Message != "bad seats" {
		t.Fatalf("create 3 seats: %v", err)
	}
	if _, err := Join(ctx, base, "FULLFU", nil); !errors.Is(err, ErrFull) || errors.Is(err, ErrNotFound) {
		t.Fatalf("join a full match: %v", err)
	}
	if _, err := Join(ctx, base, "NOSUCH", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("join an unknown match: %v", err)
	}
	_, err = Join(ctx, base, "PROXYY", nil)
	if !errors.As(err, &se) || !errors.Is(err, ErrRateLimited) || se.RetryAfter != 7*time.Second || se.Message != "slow down" {
		t.Fatalf("a proxy's 429: %v (%+v)", err, se)
	}
	if _, err := Join(ctx, base, "  ", nil); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("join with an empty code: %v", err)
	}
	for _, r := range f.log() {
		if strings.HasPrefix(r, "POST /v1/matches") && strings.HasSuffix(r, "t0") {
			t.Fatalf("create or join sent a token: %s", r)
		}
	}
}

func TestSendReceiveWaitLeave(t *testing.T) {
	ctx := testCtx(t)
	var polls atomic.Int32
	f, base := ticketServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0" {
			reply(w, 401, ErrorBody{Error: "no", Code: CodeUnauthorized})
			return
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/matches/ABCDEF":
			if polls.Add(1) < 3 { // not full twice, then full
				reply(w, 200, Match{Code: "ABCDEF", Seats: 2, Taken: 1})
				return
			}
			reply(w, 200, Match{Code: "ABCDEF", Seats: 2, Taken: 2, Full: true, SessionID: 42, Secret: []byte("s"),
				ICEServers: []ICEServer{{URLs: []string{"stun:127.0.0.1:3478"}}}})
		case r.Method == http.MethodPost && r.URL.Path == "/v1/matches/ABCDEF/signals":
			var s Signal
			if err := json.NewDecoder(r.Body).Decode(&s); err != nil || s.To != 1 || s.From != 0 {
				reply(w, 400, ErrorBody{Error: "bad signal", Code: CodeBadRequest})
				return
			}
			w.WriteHeader(202)
		case r.Method == http.MethodGet && r.URL.Path == "/v1/matches/ABCDEF/signals":
			if r.URL.Query().Get("wait") != "25" {
				reply(w, 400, ErrorBody{Error: "wait", Code: CodeBadRequest})
				return
			}
			reply(w, 200, []Signal{{From: 1, To: 0, Kind: KindOffer, Data: "o"}, {From: 1, To: 0, Kind: KindCandidate, Data: "c1"}})
		case r.Method == http.MethodDelete && r.URL.Path == "/v1/matches/ABCDEF/seats/0":
			w.WriteHeader(204)
		default:
			reply(w, 404, ErrorBody{Error: "?", Code: CodeNotFound})
		}
	})
	c, err := Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Full || m.SessionID != 42 || string(m.Secret) != "s" || len(m.ICEServers) != 1 || polls.Load() != 3 {
		t.Fatalf("wait: %+v after %d polls", m, polls.Load())
	}
	if err := c.Send(ctx, 1, KindOffer, "sdp"); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, 1, "shout", "x"); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("bad kind: %v", err)
	}
	if err := c.Send(ctx, 1, KindCandidate, strings.Repeat("x", MaxSignalData+1)); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("oversized data: %v", err)
	}
	// One poll answers two signals: both come out, in order, from one request.
	before := len(f.log())
	for _, want := range []string{"offer o", "candidate c1"} {
		from, kind, data, err := c.Receive(ctx)
		if err != nil || from != 1 || kind+" "+data != want {
			t.Fatalf("receive: %d %q %q %v, want %s", from, kind, data, err, want)
		}
	}
	if n := len(f.log()) - before; n != 1 {
		t.Fatalf("two buffered signals took %d requests", n)
	}
	if err := c.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, 1, KindOffer, "x"); !errors.Is(err, ErrLeft) {
		t.Fatalf("send after leave: %v", err)
	}
	if _, _, _, err := c.Receive(ctx); !errors.Is(err, ErrLeft) {
		t.Fatalf("receive after leave: %v", err)
	}
	if _, err := c.Wait(ctx); !errors.Is(err, ErrLeft) {
		t.Fatalf("wait after leave: %v", err)
	}
}

// A Receive blocked in a long poll returns ctx.Err() when its context
// ends, and a later one still works.
func TestReceiveEndsWithContext(t *testing.T) {
	ctx := testCtx(t)
	arrived := make(chan struct{}, 4)
	var answer atomic.Bool
	_, base := ticketServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		if answer.Load() {
			reply(w, 200, []Signal{{From: 1, Kind: KindAnswer, Data: "a"}})
			return
		}
		<-r.Context().Done() // a long poll that never answers
	})
	c, err := Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, _, _, err := c.Receive(rctx)
		done <- err
	}()
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatal("the long poll never reached the server")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("receive: %v, want context.Canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("receive did not return when its context ended")
	}
	answer.Store(true)
	if _, kind, _, err := c.Receive(ctx); err != nil || kind != KindAnswer {
		t.Fatalf("receive after a cancelled one: %q %v", kind, err)
	}
}

// Receive waits out a rate limit (Retry-After), a dropped connection and
// a proxy's 502 and 504 (the instance behind it died), and returns at
// once on an error that another attempt cannot fix.
func TestReceiveRetries(t *testing.T) {
	ctx := testCtx(t)
	var n atomic.Int32
	_, base := ticketServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "0") // absent in effect: the client's own backoff
			reply(w, 429, ErrorBody{Error: "slow down", Code: CodeRateLimited})
		case 2:
			panic(http.ErrAbortHandler) // the connection drops without an answer
		case 3:
			http.Error(w, "upstream reset", http.StatusBadGateway) // as a proxy says it
		case 4:
			http.Error(w, "upstream timed out", http.StatusGatewayTimeout)
		case 5:
			reply(w, 200, []Signal{{From: 1, Kind: KindOffer, Data: "o"}})
		default:
			reply(w, 401, ErrorBody{Error: "expired", Code: CodeUnauthorized})
		}
	})
	c, err := Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, kind, _, err := c.Receive(ctx); err != nil || kind != KindOffer {
		t.Fatalf("receive: %q %v", kind, err)
	}
	if n.Load() != 5 {
		t.Fatalf("%d requests, want 5", n.Load())
	}
	if _, _, _, err := c.Receive(ctx); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("receive with a dead token: %v", err)
	}
}

// Concurrent Receives take turns: each signal goes to exactly one.
func TestConcurrentReceives(t *testing.T) {
	ctx := testCtx(t)
	var next atomic.Int32
	_, base := ticketServer(t, func(w http.ResponseWriter, r *http.Request) {
		i := next.Add(1)
		reply(w, 200, []Signal{{From: 1, Kind: KindCandidate, Data: string(rune('a' + 2*i - 2))},
			{From: 1, Kind: KindCandidate, Data: string(rune('a' + 2*i - 1))}})
	})
	c, err := Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				_, _, data, err := c.Receive(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[data]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 20 {
		t.Fatalf("20 receives saw %d distinct signals: %v", len(seen), seen)
	}
}

func TestNormalizeCode(t *testing.T) {
	for in, want := range map[string]string{
		"K7QX2MPL4Z":    "K7QX2MPL4Z",
		"k7qx2-mpl4z":   "K7QX2MPL4Z",
		" K7QX2 MPL4Z ": "K7QX2MPL4Z",
		"k7qx2--mpl4z":  "K7QX2MPL4Z",
		"":              "",
		"é":             "é", // not a code: left for the server to refuse
	} {
		if got := NormalizeCode(in); got != want {
			t.Errorf("NormalizeCode(%q) = %q, want %q", in, got, want)
		}
	}
}

// Send waits out a quota on this address's queued bytes (the recipient
// drains them), as it does a rate limit.
func TestSendRetriesQuota(t *testing.T) {
	ctx := testCtx(t)
	var n atomic.Int32
	_, base := ticketServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			reply(w, 429, ErrorBody{Error: "queued bytes quota", Code: CodeQuota})
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	c, err := Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, 1, KindOffer, "o"); err != nil || n.Load() != 2 {
		t.Fatalf("send after a quota answer: %v, %d requests", err, n.Load())
	}
	e := &StatusError{Status: 429, Code: CodeLocked}
	if !errors.Is(e, ErrLocked) || errors.Is(e, ErrRateLimited) || !errors.Is(&StatusError{Status: 429, Code: CodeQuota}, ErrQuota) {
		t.Fatal("Is does not follow the quota and locked codes")
	}
}

func TestStatusErrorText(t *testing.T) {
	e := &StatusError{Status: 409, Code: CodeFull, Message: "the match is full"}
	if got := e.Error(); got != "lobby: server answered 409: the match is full" {
		t.Fatal(got)
	}
	if !errors.Is(e, ErrFull) || errors.Is(e, ErrNotFull) {
		t.Fatal("Is does not follow the code")
	}
	e = &StatusError{Status: 502}
	if got := e.Error(); !strings.Contains(got, "Bad Gateway") {
		t.Fatal(got)
	}
}

// Each poll acknowledges the newest signal fetched (after=N); a signal
// answered again (Seq not after N) is not returned twice; a server of the
// first version (no Seq) has every signal it answers taken; an answer cut
// mid-body is a dropped connection, polled for again.
func TestReceiveAcknowledges(t *testing.T) {
	ctx := testCtx(t)
	var n atomic.Int32
	f, base := ticketServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			reply(w, 200, []Signal{{From: 1, Kind: KindOffer, Data: "a", Seq: 1}, {From: 1, Kind: KindCandidate, Data: "b", Seq: 2}})
		case 2:
			reply(w, 200, []Signal{{From: 1, Kind: KindCandidate, Data: "b", Seq: 2}, {From: 1, Kind: KindCandidate, Data: "c", Seq: 3}})
		case 3:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "200")
			w.Write([]byte(`[{"from":1,"kind":"candidate","data":"d","seq":4},`)) // then the connection drops
		case 4:
			reply(w, 200, []Signal{{From: 1, Kind: KindCandidate, Data: "d", Seq: 4}})
		default:
			reply(w, 200, []Signal{{From: 1, Kind: KindCandidate, Data: "e"}})
		}
	})
	c, err := Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 5 {
		_, _, data, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, data)
	}
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Fatalf("received %q, want %q", got, want)
	}
	var afters []string
	for _, req := range f.log()[1:] {
		_, q, _ := strings.Cut(req, "after=")
		afters = append(afters, strings.Fields(q)[0])
	}
	if want := []string{"0", "2", "3", "3", "4"}; !slices.Equal(afters, want) {
		t.Fatalf("the polls acknowledged %q, want %q", afters, want)
	}
}

// TestCreateJoinWaitOutStoreDown: Create and Join try again after a 503
// "store_down" (a scaled-out server whose store elects a new leader);
// the ctx bounds them; a 503 "unavailable" (the server is full) is
// returned at once.
func TestCreateJoinWaitOutStoreDown(t *testing.T) {
	ctx := testCtx(t)
	var refused atomic.Int32
	_, base := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if refused.Add(1)%3 != 0 { // two of three answers
			w.Header().Set("Retry-After", "0")
			reply(w, 503, ErrorBody{Error: "the server's store is unavailable", Code: CodeStoreDown})
			return
		}
		if r.URL.Path == "/v1/matches" {
			reply(w, 201, Ticket{Code: "ABCDEF", Seat: 0, Token: "t0"})
			return
		}
		reply(w, 201, Ticket{Code: "ABCDEF", Seat: 1, Token: "t1"})
	})
	if c, err := Create(ctx, base, 2, nil); err != nil || c.Seat() != 0 {
		t.Fatalf("create through two 503s: %v", err)
	}
	if j, err := Join(ctx, base, "ABCDEF", nil); err != nil || j.Seat() != 1 {
		t.Fatalf("join through two 503s: %v", err)
	}
	if got := refused.Load(); got != 6 {
		t.Errorf("%d requests, want 6", got)
	}
	_, always := serve(t, func(w http.ResponseWriter, r *http.Request) {
		reply(w, 503, ErrorBody{Error: "the server's store is unavailable", Code: CodeStoreDown})
	})
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := Create(short, always, 2, nil); !errors.Is(err, ErrStoreDown) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("create against a server whose store stays down: %v", err)
	}
	var full atomic.Int32
	_, fullServer := serve(t, func(w http.ResponseWriter, r *http.Request) {
		full.Add(1)
		w.Header().Set("Retry-After", "1")
		reply(w, 503, ErrorBody{Error: "the server holds as many matches as it may", Code: CodeUnavailable})
	})
	if _, err := Create(ctx, fullServer, 2, nil); !errors.Is(err, ErrUnavailable) || full.Load() != 1 {
		t.Fatalf("create on a full server: %v after %d requests, want ErrUnavailable after 1", err, full.Load())
	}
}
