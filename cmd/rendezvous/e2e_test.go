package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// The lobby client against the real handler: create, join, wait until
// full, signals to the right seat in order, another match's token refused,
// leave.
func TestLobbyEndToEnd(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	_, base := start(t, testConfig(newFakeClock()))

	host, err := lobby.Create(ctx, base, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host.Seat() != 0 || len(host.Code()) != codeLen {
		t.Fatalf("creator: seat %d, code %q", host.Seat(), host.Code())
	}
	// The creator waits before anyone joins; the match fills meanwhile.
	type waited struct {
		m   lobby.Match
		err error
	}
	hostWait := make(chan waited, 1)
	go func() {
		m, err := host.Wait(ctx)
		hostWait <- waited{m, err}
	}()
	a, err := lobby.Join(ctx, base, strings.ToLower(host.Code()), nil) // codes are read in any case
	if err != nil {
		t.Fatal(err)
	}
	b, err := lobby.Join(ctx, base, host.Code(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Seat() != 1 || b.Seat() != 2 {
		t.Fatalf("joiners got seats %d and %d, want 1 and 2", a.Seat(), b.Seat())
	}
	if _, err := lobby.Join(ctx, base, host.Code(), nil); !errors.Is(err, lobby.ErrFull) {
		t.Fatalf("a fourth joiner: %v, want ErrFull", err)
	}
	var hw waited
	select {
	case hw = <-hostWait:
	case <-ctx.Done():
		t.Fatal("the creator's Wait did not return when the match filled")
	}
	if hw.err != nil {
		t.Fatal(hw.err)
	}
	for _, c := range []*lobby.Client{a, b} {
		m, err := c.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.SessionID != hw.m.SessionID || !bytes.Equal(m.Secret, hw.m.Secret) {
			t.Fatalf("seat %d sees session %d, the creator %d (or another secret)", c.Seat(), m.SessionID, hw.m.SessionID)
		}
	}
	if m := hw.m; !m.Full || m.Seats != 3 || m.Taken != 3 || m.SessionID == 0 || len(m.Secret) != secretBytes {
		t.Fatalf("full match: %+v", m)
	}

	// Seat 1 gets seat 0's and seat 2's signals, each sender's in order;
	// seat 2 gets only what was sent to it.
	for i := range 5 {
		if err := host.Send(ctx, 1, lobby.KindCandidate, fmt.Sprint("h", i)); err != nil {
			t.Fatal(err)
		}
		if err := b.Send(ctx, 1, lobby.KindCandidate, fmt.Sprint("b", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := host.Send(ctx, 2, lobby.KindOffer, "offer to 2"); err != nil {
		t.Fatal(err)
	}
	next := map[int]int{}
	for range 10 {
		from, kind, data, err := a.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprint(map[int]string{0: "h", 2: "b"}[from], next[from])
		if kind != lobby.KindCandidate || data != want {
			t.Fatalf("seat 1 got %s %q from %d, want %q", kind, data, from, want)
		}
		next[from]++
	}
	if from, kind, data, err := b.Receive(ctx); err != nil || from != 0 || kind != lobby.KindOffer || data != "offer to 2" {
		t.Fatalf("seat 2 got %d %s %q %v", from, kind, data, err)
	}
	// Nothing more is waiting for seat 1: its Receive ends with its context.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, _, _, err = a.Receive(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an empty receive: %v, want DeadlineExceeded", err)
	}
	if err := a.Send(ctx, 1, lobby.KindOffer, "me"); !errors.Is(err, lobby.ErrBadRequest) {
		t.Fatalf("a signal to oneself: %v", err)
	}
	if err := a.Send(ctx, 3, lobby.KindOffer, "x"); !errors.Is(err, lobby.ErrBadRequest) {
		t.Fatalf("a signal to seat 3 of 3: %v", err)
	}

	// Another match's token opens nothing of this one.
	other := fullMatch(t, ctx, base, 2)
	tok := other[0].Ticket().Token
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/matches/" + host.Code(), ""},
		{"GET", "/v1/matches/" + host.Code() + "/signals", ""},
		{"POST", "/v1/matches/" + host.Code() + "/signals", `{"to":1,"kind":"offer","data":"x"}`},
		{"DELETE", "/v1/matches/" + host.Code() + "/seats/0", ""},
	} {
		ans := call(t, base, r.method, r.path, tok, []byte(r.body))
		if ans.status != http.StatusUnauthorized || ans.errorBody(t).Code != lobby.CodeUnauthorized {
			t.Fatalf("%s %s with another match's token: %d %s", r.method, r.path, ans.status, ans.body)
		}
	}
	// Nor can a seat leave for another.
	if ans := call(t, base, "DELETE", "/v1/matches/"+host.Code()+"/seats/2", a.Ticket().Token, nil); ans.status != http.StatusForbidden {
		t.Fatalf("seat 1 leaving seat 2: %d %s", ans.status, ans.body)
	}

	// Leaving a full match: the seat is not freed; signals to it are refused.
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := host.Send(ctx, 2, lobby.KindCandidate, "x"); !errors.Is(err, lobby.ErrGone) {
		t.Fatalf("a signal to a seat that left: %v", err)
	}
	if _, err := lobby.Join(ctx, base, host.Code(), nil); !errors.Is(err, lobby.ErrFull) {
		t.Fatalf("joining a full match after a leave: %v", err)
	}
	if ans := call(t, base, "GET", "/v1/matches/"+host.Code(), b.Ticket().Token, nil); ans.status != http.StatusUnauthorized {
		t.Fatalf("the token of a seat that left: %d", ans.status)
	}
	if _, err := b.Wait(ctx); !errors.Is(err, lobby.ErrLeft) {
		t.Fatalf("wait after leave: %v", err)
	}
	if m, err := host.State(ctx); err != nil || !m.Full {
		t.Fatalf("the match after a leave: %+v %v", m, err)
	}
}

// Leaving before the match is full frees the seat for the next joiner;
// when every seat has left, the match is gone.
func TestLeaveBeforeFull(t *testing.T) {
	ctx := testCtx(t, 5*time.Second)
	s, base := start(t, testConfig(newFakeClock()))
	host, err := lobby.Create(ctx, base, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := lobby.Join(ctx, base, host.Code(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if m, err := host.State(ctx); err != nil || m.Taken != 1 || m.Full || m.SessionID != 0 || m.Secret != nil {
		t.Fatalf("after a leave: %+v %v", m, err)
	}
	if err := host.Send(ctx, 1, lobby.KindOffer, "x"); !errors.Is(err, lobby.ErrNotFull) {
		t.Fatalf("a signal before the match is full: %v", err)
	}
	again, err := lobby.Join(ctx, base, host.Code(), nil)
	if err != nil || again.Seat() != 1 {
		t.Fatalf("the freed seat: %v, seat %d", err, again.Seat())
	}
	if ans := call(t, base, "GET", "/v1/matches/"+host.Code(), a.Ticket().Token, nil); ans.status != http.StatusUnauthorized {
		t.Fatalf("the old token of a freed seat: %d", ans.status)
	}
	if err := again.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := host.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.reg.counts(); n != 0 {
		t.Fatalf("%d matches left after everyone left", n)
	}
	if _, err := lobby.Join(ctx, base, host.Code(), nil); !errors.Is(err, lobby.ErrNotFound) {
		t.Fatalf("joining an abandoned match: %v", err)
	}
}

// A leave wakes the holder's own pending poll (another request of the same
// token), which then answers 401, not someone else's signals. (Another
// seat is held: a leave that empties the match removes it, and the poll
// answers 410 then.)
func TestLeaveEndsOwnPoll(t *testing.T) {
	ctx := testCtx(t, 5*time.Second)
	s, base := start(t, testConfig(newFakeClock()))
	polling := pollEvents(s)
	host, err := lobby.Create(ctx, base, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lobby.Join(ctx, base, host.Code(), nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, _, err := host.Receive(ctx)
		done <- err
	}()
	// Leave with a second client of the same seat (the first is blocked).
	waitEvent(t, ctx, polling)
	ans := call(t, base, "DELETE", "/v1/matches/"+host.Code()+"/seats/0", host.Ticket().Token, nil)
	if ans.status != http.StatusNoContent {
		t.Fatalf("leave: %d %s", ans.status, ans.body)
	}
	select {
	case err := <-done:
		if !errors.Is(err, lobby.ErrUnauthorized) {
			t.Fatalf("the poll of a seat that left: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the pending poll did not end when its seat left")
	}
}

// Matches expire on the server's clock: 10 minutes when not full, 30
// after filling; a poll waiting on an expired match ends.
func TestExpiry(t *testing.T) {
	ctx := testCtx(t, 5*time.Second)
	clock := newFakeClock()
	s, base := start(t, testConfig(clock))
	polling := pollEvents(s)
	open, err := lobby.Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	full := fullMatch(t, ctx, base, 2)

	clock.Advance(10*time.Minute - time.Second)
	s.sweep()
	if n, _, _ := s.reg.counts(); n != 2 {
		t.Fatalf("%d matches before any expiry, want 2", n)
	}
	clock.Advance(time.Second)
	s.sweep()
	if n, f, _ := s.reg.counts(); n != 1 || f != 1 {
		t.Fatalf("after 10 minutes: %d matches, %d full; want the full one only", n, f)
	}
	if _, err := lobby.Join(ctx, base, open.Code(), nil); !errors.Is(err, lobby.ErrNotFound) {
		t.Fatalf("joining an expired match: %v", err)
	}
	if _, err := open.State(ctx); !errors.Is(err, lobby.ErrUnauthorized) {
		t.Fatalf("the state of an expired match: %v", err)
	}

	done := make(chan error, 1)
	go func() {
		_, _, _, err := full[1].Receive(ctx)
		done <- err
	}()
	waitEvent(t, ctx, polling)
	clock.Advance(20*time.Minute + time.Second) // 30 minutes after it filled
	s.sweep()
	select {
	case err := <-done:
		if !errors.Is(err, lobby.ErrGone) {
			t.Fatalf("a poll on an expiring match: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the poll did not end when its match expired")
	}
	if n, _, _ := s.reg.counts(); n != 0 {
		t.Fatalf("%d matches after 30 minutes", n)
	}
}

// pollEvents reports each long poll of s that starts to wait.
func pollEvents(s *server) <-chan struct{} {
	ch := make(chan struct{}, 64)
	s.onPoll = func() { ch <- struct{}{} }
	return ch
}

// waitEvent waits for one event, failing the test at ctx's deadline.
func waitEvent(t *testing.T, ctx context.Context, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("no event before the deadline")
	}
}

// Long polls return the current state when their time is up, and at once
// when the server shuts down.
func TestLongPollEnds(t *testing.T) {
	ctx := testCtx(t, 5*time.Second)
	cfg := testConfig(newFakeClock())
	cfg.MaxWait = 100 * time.Millisecond
	_, base := start(t, cfg)
	host, err := lobby.Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := host.Ticket().Token
	if ans := call(t, base, "GET", "/v1/matches/"+host.Code()+"?wait=1", tok, nil); ans.status != 200 || !strings.Contains(string(ans.body), `"full":false`) {
		t.Fatalf("a match poll that timed out: %d %s", ans.status, ans.body)
	}
	if ans := call(t, base, "GET", "/v1/matches/"+host.Code()+"/signals?wait=25", tok, nil); ans.status != 200 || string(ans.body) != "[]\n" {
		t.Fatalf("a signal poll that timed out: %d %q", ans.status, ans.body)
	}

	// Beyond the cap on long polls, a poll is answered at once.
	capped := testConfig(newFakeClock())
	capped.MaxWait, capped.MaxWaiters = time.Hour, 0
	_, base3 := start(t, capped)
	c3, err := lobby.Create(ctx, base3, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ans := call(t, base3, "GET", "/v1/matches/"+c3.Code()+"/signals?wait=25", c3.Ticket().Token, nil); ans.status != 200 || string(ans.body) != "[]\n" {
		t.Fatalf("a signal poll beyond the cap: %d %q", ans.status, ans.body)
	}
	if ans := call(t, base3, "GET", "/v1/matches/"+c3.Code()+"?wait=1", c3.Ticket().Token, nil); ans.status != 200 {
		t.Fatalf("a match poll beyond the cap: %d %q", ans.status, ans.body)
	}

	// Shutdown: a poll that could wait an hour ends now.
	cfg.MaxWait = time.Hour
	s2, base2 := start(t, cfg)
	polling := pollEvents(s2)
	var wg sync.WaitGroup
	c2, err := lobby.Create(ctx, base2, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		ans := call(t, base2, "GET", "/v1/matches/"+c2.Code()+"/signals?wait=25", c2.Ticket().Token, nil)
		if ans.status != 200 || string(ans.body) != "[]\n" {
			t.Errorf("a poll at shutdown: %d %q", ans.status, ans.body)
		}
	})
	waitEvent(t, ctx, polling)
	s2.drain()
	wg.Wait()
}

// cutAnswers is a transport that loses the first n answers to a signal
// poll that carry signals: it reads each whole (the server has sent it)
// and reports a broken connection instead, as a mobile link that drops
// mid-answer, or a Receive whose context ends while the answer is on the
// wire, does.
type cutAnswers struct {
	mu  sync.Mutex
	n   int
	cut []string // the bodies lost
}

func (c *cutAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/signals") || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n > 0 && bytes.Contains(body, []byte(`"kind"`)) {
		c.n--
		c.cut = append(c.cut, string(body))
		return nil, errors.New("connection reset by peer (cutAnswers)")
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// A batch of signals whose answer is lost on the wire comes again: the
// server forgets a signal only once the seat's next poll shows that it
// arrived. Every signal arrives once, in order.
func TestReceiveLosesNoSignalWhenAnAnswerIsCut(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	_, base := start(t, testConfig(newFakeClock()))
	host, err := lobby.Create(ctx, base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	cut := &cutAnswers{n: 2}
	guest, err := lobby.Join(ctx, base, host.Code(), &lobby.Options{HTTPClient: &http.Client{Transport: cut}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := host.Send(ctx, 1, lobby.KindCandidate, fmt.Sprint("c", i)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for range 3 {
		_, _, data, err := guest.Receive(ctx)
		if err != nil {
			t.Fatalf("after %q: %v (answers lost: %q)", got, err, cut.cut)
		}
		got = append(got, data)
	}
	if want := []string{"c0", "c1", "c2"}; !slices.Equal(got, want) {
		t.Fatalf("received %q, want %q", got, want)
	}
	if len(cut.cut) != 2 {
		t.Fatalf("%d answers cut, want 2: the test did not cut what it meant to", len(cut.cut))
	}
	// Nothing comes twice: the next poll finds the queue empty.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, _, data, err := guest.Receive(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a fourth Receive: %q, %v; want the deadline", data, err)
	}
}
