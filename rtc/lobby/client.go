package lobby

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Answer size limits: a batch of signals is at most a seat's queue of
// escaped data; an error body is short.
const (
	maxAnswer      = 8 << 20
	maxErrorAnswer = 64 << 10
)

// Options configures a [Client]. The zero value is usable.
type Options struct {
	// HTTPClient makes the requests; nil means http.DefaultClient. Its
	// Timeout, if any, must exceed MaxWait or long polls fail.
	HTTPClient *http.Client
	// Relayed makes Create ask for a relayed match (Match.Relayed); Join
	// ignores it.
	Relayed bool
}

// Client is one seat's connection to a rendezvous server. Its methods are
// safe for concurrent use; concurrent Receives take turns, and so do
// concurrent Sends (they are numbered in the order they are sent).
type Client struct {
	base   string // the server's URL, without a trailing slash
	http   *http.Client
	ticket Ticket
	match  string // the match's path, /v1/matches/{code}

	recv    chan struct{} // a token: held by the Receive that polls
	pending []Signal      // signals fetched and not yet returned; held with recv
	got     uint64        // the newest Seq fetched, acknowledged by the next poll; held with recv

	send sync.Mutex // held by the Send that sends
	sent uint64     // the ID of the last signal sent; held with send

	mu   sync.Mutex
	left bool
}

// Create creates a match of seats seats (MinSeats..MaxSeats) on the server
// at base (such as "https://example.com") and returns the client of its
// seat 0. A "store_down" answer (503: the server's store is out of reach
// for a moment, as while a NATS cluster elects a leader) is tried again
// after its Retry-After until ctx ends; other errors, the server's
// "unavailable" (it holds as many matches as it may) included, are
// returned at once.
func Create(ctx context.Context, base string, seats int, o *Options) (*Client, error) {
	c := newClient(base, o)
	req := CreateRequest{Seats: seats, Relayed: o != nil && o.Relayed}
	var t Ticket
	err := c.retryOn(ctx, false, unavailable, func() error {
		return c.do(ctx, http.MethodPost, "/v1/matches", false, req, &t)
	})
	if err != nil {
		return nil, fmt.Errorf("lobby: create a match: %w", err)
	}
	if err := c.setTicket(t); err != nil {
		return nil, err
	}
	return c, nil
}

// Join takes the lowest free seat of the match with the given code (in
// any case, with or without spaces and dashes between its groups).
// Errors match ErrNotFound when there is no such match, ErrFull when
// every seat is taken, ErrLocked when the match refuses joins for a while
// (wrong tokens were tried against it), and ErrRateLimited when this
// address has used up its failed guesses for now (the error's RetryAfter
// says for how long). A "store_down" answer is tried again, as Create's.
func Join(ctx context.Context, base, code string, o *Options) (*Client, error) {
	c := newClient(base, o)
	code = NormalizeCode(code)
	if code == "" {
		return nil, fmt.Errorf("lobby: join: empty match code: %w", ErrBadRequest)
	}
	var t Ticket
	err := c.retryOn(ctx, false, unavailable, func() error {
		return c.do(ctx, http.MethodPost, "/v1/matches/"+url.PathEscape(code)+"/seats", false, nil, &t)
	})
	if err != nil {
		return nil, fmt.Errorf("lobby: join match %q: %w", code, err)
	}
	if err := c.setTicket(t); err != nil {
		return nil, err
	}
	return c, nil
}

func newClient(base string, o *Options) *Client {
	c := &Client{
		base: strings.TrimRight(base, "/"),
		http: http.DefaultClient,
		recv: make(chan struct{}, 1),
	}
	if o != nil && o.HTTPClient != nil {
		c.http = o.HTTPClient
	}
	return c
}

func (c *Client) setTicket(t Ticket) error {
	if t.Code == "" || t.Token == "" || t.Seat < 0 || t.Seat >= MaxSeats {
		return fmt.Errorf("lobby: the server sent an invalid ticket (code %q, seat %d)", t.Code, t.Seat)
	}
	c.ticket = t
	c.match = "/v1/matches/" + url.PathEscape(t.Code)
	return nil
}

// Seat is this client's seat: its machine index in the match.
func (c *Client) Seat() int { return c.ticket.Seat }

// Code is the match's code, which the other players join with.
func (c *Client) Code() string { return c.ticket.Code }

// Ticket is this client's seat and its bearer token.
func (c *Client) Ticket() Ticket { return c.ticket }

// Wait long-polls the server until every seat of the match is taken and
// returns the match with its session id, secret and ICE servers. It rides
// out the server's "slow down" answers and dropped connections (retrying
// with a pause of up to 5 s); it returns ctx.Err() once ctx ends.
func (c *Client) Wait(ctx context.Context) (Match, error) {
	for {
		if err := c.usable(ctx); err != nil {
			return Match{}, err
		}
		var m Match
		err := c.retry(ctx, true, func() error {
			return c.do(ctx, http.MethodGet, c.match+"?wait=1", true, nil, &m)
		})
		if err != nil {
			return Match{}, c.ctxErr(ctx, fmt.Errorf("lobby: wait for match %s: %w", c.ticket.Code, err))
		}
		if m.Full {
			if m.SessionID == 0 || len(m.Secret) == 0 {
				return Match{}, fmt.Errorf("lobby: the server sent a full match %s without session id or secret", m.Code)
			}
			return m, nil
		}
	}
}

// State fetches the match's state now, without waiting.
func (c *Client) State(ctx context.Context) (Match, error) {
	if err := c.usable(ctx); err != nil {
		return Match{}, err
	}
	var m Match
	if err := c.do(ctx, http.MethodGet, c.match, true, nil, &m); err != nil {
		return Match{}, fmt.Errorf("lobby: match %s: %w", c.ticket.Code, err)
	}
	return m, nil
}

// Send relays one signal to seat to. kind is KindOffer, KindAnswer or
// KindCandidate; data is at most MaxSignalData bytes. When the server
// answers "slow down" (rate limited, the recipient's queue full, this
// address's queued signal bytes at their quota, the server at its limits)
// Send tries again after the server's Retry-After, until ctx ends; so it
// does when the request got no answer, or a proxy's 502 or 504 (the
// server behind it went away): the signal is numbered (Signal.ID), and
// the server takes it once however often it arrives.
func (c *Client) Send(ctx context.Context, to int, kind, data string) error {
	if err := c.usable(ctx); err != nil {
		return err
	}
	if !ValidKind(kind) {
		return fmt.Errorf("lobby: send: unknown signal kind %q: %w", kind, ErrBadRequest)
	}
	if len(data) > MaxSignalData {
		return fmt.Errorf("lobby: send: %d bytes of signal data, more than %d: %w", len(data), MaxSignalData, ErrBadRequest)
	}
	c.send.Lock()
	defer c.send.Unlock()
	c.sent++
	sig := Signal{From: c.ticket.Seat, To: to, Kind: kind, Data: data, ID: c.sent}
	err := c.retry(ctx, true, func() error {
		return c.do(ctx, http.MethodPost, c.match+"/signals", true, sig, nil)
	})
	if err != nil {
		return fmt.Errorf("lobby: send %s to seat %d: %w", kind, to, err)
	}
	return nil
}

// Receive returns the next signal sent to this seat, in the order the
// server took them. It blocks, long-polling the server, until one arrives
// or ctx ends (then it returns ctx.Err()). One answer can carry several
// signals: the others wait in the client for the next calls. Like Wait it
// rides out "slow down" answers and dropped connections; other errors
// (the match expired: ErrGone or ErrUnauthorized) end it. Each poll
// acknowledges the signals the last one fetched, so an answer lost on the
// wire, or to a Receive whose ctx ended, is answered again (to a Receive
// within a minute of it): no signal is lost or returned twice.
func (c *Client) Receive(ctx context.Context) (from int, kind, data string, err error) {
	select {
	case c.recv <- struct{}{}:
	case <-ctx.Done():
		return 0, "", "", ctx.Err()
	}
	defer func() { <-c.recv }()
	for len(c.pending) == 0 {
		if err := c.usable(ctx); err != nil {
			return 0, "", "", err
		}
		var batch []Signal
		q := "/signals?wait=" + strconv.Itoa(int(MaxWait/time.Second)) + "&after=" + strconv.FormatUint(c.got, 10)
		err := c.retry(ctx, true, func() error {
			return c.do(ctx, http.MethodGet, c.match+q, true, nil, &batch)
		})
		if err != nil {
			return 0, "", "", c.ctxErr(ctx, fmt.Errorf("lobby: receive: %w", err))
		}
		c.take(batch)
	}
	s := c.pending[0]
	c.pending[0] = Signal{}
	c.pending = c.pending[1:]
	return s.From, s.Kind, s.Data, nil
}

// take queues a fetched batch: the signals after the newest one fetched
// (a server of the first version numbers none, and forgets what it
// answered: those are all taken). The caller holds recv.
func (c *Client) take(batch []Signal) {
	for _, s := range batch {
		if s.Seq == 0 || s.Seq > c.got {
			c.pending = append(c.pending, s)
			c.got = max(c.got, s.Seq)
		}
	}
}

// Leave gives up the seat. Before the match is full the seat is freed for
// another joiner; after, the other seats' signals to it are refused
// (ErrGone). The client is unusable afterwards (ErrLeft).
func (c *Client) Leave(ctx context.Context) error {
	if err := c.usable(ctx); err != nil {
		return err
	}
	path := c.match + "/seats/" + strconv.Itoa(c.ticket.Seat)
	if err := c.do(ctx, http.MethodDelete, path, true, nil, nil); err != nil {
		return fmt.Errorf("lobby: leave match %s: %w", c.ticket.Code, err)
	}
	c.mu.Lock()
	c.left = true
	c.mu.Unlock()
	return nil
}

// Retries: the longest pause between two attempts, and the first pause
// after a transport error.
const (
	maxBackoff   = 5 * time.Second
	firstBackoff = 250 * time.Millisecond
)

// transportError is a request that got no answer.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// retry calls f until it succeeds, ctx ends, or it fails with an error
// that is not worth another attempt. The server's "slow down" answers
// (rate limited, the recipient's queue full, a quota reached, the server
// at its limits) are retried after their Retry-After; with network true, so are requests
// that got no answer (with a doubling pause), which only requests that
// can be repeated (the long polls) ask for, and so are a proxy's 502
// and 504 to them (the instance behind it died mid-request).
func (c *Client) retry(ctx context.Context, network bool, f func() error) error {
	return c.retryOn(ctx, network, slowDown, f)
}

// The answers worth another attempt: every "slow down" for the requests
// of a seat; for Create and Join only "store_down" (the server's store
// is out of reach for a moment), since their rate limits, quotas and the
// server's being full are the caller's to hear at once.
var (
	slowDown    = []string{CodeRateLimited, CodeQueueFull, CodeUnavailable, CodeQuota, CodeStoreDown}
	unavailable = []string{CodeStoreDown}
)

// retryOn is retry for the answers whose codes are listed.
func (c *Client) retryOn(ctx context.Context, network bool, codes []string, f func() error) error {
	backoff := firstBackoff
	for {
		err := f()
		if err == nil || ctx.Err() != nil {
			return err
		}
		var wait time.Duration
		var se *StatusError
		var te *transportError
		switch {
		case errors.As(err, &se) && slices.Contains(codes, se.Code):
			wait = se.RetryAfter
		case network && errors.As(err, &te):
		case network && errors.As(err, &se) && (se.Status == http.StatusBadGateway || se.Status == http.StatusGatewayTimeout):
			// A proxy's word that the server behind it went away
			// mid-request (a rendezvous instance that died): the same
			// as no answer.
		default:
			return err
		}
		if wait <= 0 {
			wait = backoff
			backoff = min(2*backoff, maxBackoff)
		}
		t := time.NewTimer(min(wait, maxBackoff))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// usable returns ErrLeft after Leave, and ctx's error once it has ended.
func (c *Client) usable(ctx context.Context) error {
	c.mu.Lock()
	left := c.left
	c.mu.Unlock()
	if left {
		return ErrLeft
	}
	return ctx.Err()
}

// ctxErr returns ctx.Err() in place of err once ctx has ended, as
// Receive's and Wait's contract says.
func (c *Client) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// do sends one request with body (if not nil) as JSON and decodes a 2xx
// answer into out (if not nil); any other answer is a *StatusError.
func (c *Client) do(ctx context.Context, method, path string, auth bool, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if auth {
		req.Header.Set("Authorization", "Bearer "+c.ticket.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &transportError{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorAnswer))
		return nil
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer))
	if err := dec.Decode(out); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &syntax) || errors.As(err, &typ):
			return fmt.Errorf("decode the server's answer: %w", err)
		default: // the answer was cut short: the connection broke
			return &transportError{fmt.Errorf("read the server's answer: %w", err)}
		}
	}
	return nil
}

// statusError reads an error answer.
func statusError(resp *http.Response) error {
	e := &StatusError{Status: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorAnswer))
	var body ErrorBody
	if json.Unmarshal(b, &body) == nil {
		e.Code, e.Message = body.Code, body.Error
	} else {
		e.Message = strings.TrimSpace(string(b))
	}
	if _, ok := sentinels[e.Code]; !ok {
		e.Code = codeOfStatus[resp.StatusCode]
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

var _ interface {
	Send(ctx context.Context, to int, kind, data string) error
	Receive(ctx context.Context) (from int, kind, data string, err error)
} = (*Client)(nil)
