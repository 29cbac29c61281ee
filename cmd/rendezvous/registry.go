package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// Match codes: 6 letters and digits without the ambiguous ones (0/O, 1/I),
// about 10⁹ codes, read aloud or typed by hand.
const (
	codeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789" // 32 symbols: a random byte&31 is unbiased
	codeLen      = 6
	tokenBytes   = 16 // 128 bits
	secretBytes  = 32
	queueLen     = 64 // signals waiting for one seat
	// ackGrace is how long signals answered to an acknowledging poll wait
	// for the next poll to acknowledge them: a holder that stops polling
	// once connected (or is gone) does not keep them for the match's life.
	// A client whose answer was cut polls again within its retry pause
	// (at most 5 s, lobby.Client).
	ackGrace = time.Minute
)

// registry holds the matches: their seats and tokens, the signals waiting
// for each seat, the bounds (how many matches, how many bytes of queued
// signals) and the expiry. One mutex guards all of it: every operation
// under it is a few map and slice accesses; the long polls wait outside it.
type registry struct {
	now        func() time.Time
	maxMatches int
	maxQueued  int           // bytes of signal data queued over all seats
	openTTL    time.Duration // a match that is not full expires this long after its creation
	fullTTL    time.Duration // a full match expires this long after it filled
	closing    chan struct{} // closed by close: every long poll returns
	closeOnce  sync.Once
	onPoll     func() // tests: called when a long poll starts to wait

	mu      sync.Mutex
	matches map[string]*match
	queued  int // bytes of signal data queued
}

// match is one match's state. Its fields are guarded by the registry's mutex.
type match struct {
	code      string
	seats     []seat
	taken     int // seats held; once it reaches len(seats) the match is full for good (leaving does not free a seat then)
	created   time.Time
	filled    time.Time // zero until full
	sessionID uint64
	secret    []byte
	full      chan struct{} // closed when the last seat is taken
	gone      chan struct{} // closed when the match is removed
}

// seat is one seat of a match and the signals waiting for it.
type seat struct {
	token string         // "" when free, or after its holder left a full match
	left  bool           // its holder left after the match was full
	queue []lobby.Signal // in Seq order; the last one's Seq is seq
	seq   uint64         // the Seq given to the last signal queued; never reset
	// The newest Seq answered to an acknowledging poll, and when: the
	// sweep forgets the signals up to it once ackGrace has passed.
	answered   uint64
	answeredAt time.Time
	bytes      int           // len(Data) summed over queue
	wake       chan struct{} // closed (and replaced) when a signal arrives or the seat is freed
}

// apiError is an error with the HTTP status, code and message a client gets.
type apiError struct {
	status     int
	code       string
	msg        string
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, code, msg string) *apiError {
	return &apiError{status: status, code: code, msg: msg}
}

var (
	errUnauthorized = errorf(http.StatusUnauthorized, lobby.CodeUnauthorized, "missing or wrong token for this match")
	errNoMatch      = errorf(http.StatusNotFound, lobby.CodeNotFound, "no match with this code")
	errMatchFull    = errorf(http.StatusConflict, lobby.CodeFull, "the match is full")
	errExpired      = errorf(http.StatusGone, lobby.CodeGone, "the match has expired")
)

func newRegistry(cfg *config) *registry {
	return &registry{
		now:        cfg.Now,
		maxMatches: cfg.MaxMatches,
		maxQueued:  cfg.MaxQueuedBytes,
		openTTL:    cfg.OpenTTL,
		fullTTL:    cfg.FullTTL,
		closing:    make(chan struct{}),
		matches:    make(map[string]*match),
	}
}

// close ends every long poll now and makes new ones return at once.
func (r *registry) close() { r.closeOnce.Do(func() { close(r.closing) }) }

// create makes a match of n seats and gives its creator seat 0.
func (r *registry) create(n int) (lobby.Ticket, error) {
	if n < lobby.MinSeats || n > lobby.MaxSeats {
		return lobby.Ticket{}, errorf(http.StatusBadRequest, lobby.CodeBadRequest,
			"seats must be from 2 to 8")
	}
	m := &match{
		seats:     make([]seat, n),
		sessionID: randomSessionID(),
		secret:    make([]byte, secretBytes),
		full:      make(chan struct{}),
		gone:      make(chan struct{}),
	}
	rand.Read(m.secret)
	for i := range m.seats {
		m.seats[i].wake = make(chan struct{})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if len(r.matches) >= r.maxMatches {
		r.sweepLocked(now)
		if len(r.matches) >= r.maxMatches {
			return lobby.Ticket{}, errorf(http.StatusServiceUnavailable, lobby.CodeUnavailable,
				"the server holds as many matches as it may; try again later")
		}
	}
	for {
		m.code = randomCode()
		if r.matches[m.code] == nil {
			break
		}
	}
	m.created = now
	r.matches[m.code] = m
	return r.takeSeat(m, 0, now), nil
}

// join gives the caller the lowest free seat of the match with that code.
func (r *registry) join(code string) (lobby.Ticket, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	m := r.lookup(code, now)
	if m == nil {
		return lobby.Ticket{}, errNoMatch
	}
	if m.isFull() {
		return lobby.Ticket{}, errMatchFull
	}
	for i := range m.seats {
		if m.seats[i].token == "" {
			return r.takeSeat(m, i, now), nil
		}
	}
	return lobby.Ticket{}, errMatchFull // unreachable: taken < len(seats)
}

// takeSeat gives seat i a token; the last seat fills the match.
func (r *registry) takeSeat(m *match, i int, now time.Time) lobby.Ticket {
	m.seats[i].token = randomToken()
	m.taken++
	if m.taken == len(m.seats) {
		m.filled = now
		close(m.full)
	}
	return lobby.Ticket{Code: m.code, Seat: i, Token: m.seats[i].token}
}

// authorize returns the match and the seat whose token it is. Whether the
// code exists is not told apart from a wrong token.
func (r *registry) authorize(code, token string) (*match, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.lookup(code, r.now())
	if m == nil || token == "" {
		return nil, 0, errUnauthorized
	}
	found := -1
	for i := range m.seats {
		t := m.seats[i].token
		// Every held seat's token is compared, in constant time.
		if t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil, 0, errUnauthorized
	}
	return m, found, nil
}

// state is the match as seat holders see it (without the ICE servers).
func (r *registry) state(m *match) lobby.Match {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := lobby.Match{Code: m.code, Seats: len(m.seats), Taken: m.taken, Full: m.isFull()}
	if st.Full {
		st.SessionID = m.sessionID
		st.Secret = append([]byte(nil), m.secret...)
	}
	return st
}

// waitFull waits until the match is full, or removed, or d has passed, or
// ctx or the registry ends. It reports whether the match was removed.
func (r *registry) waitFull(ctx context.Context, m *match, d time.Duration) (gone bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	if r.onPoll != nil {
		r.onPoll()
	}
	select {
	case <-m.full:
	case <-m.gone:
		return true
	case <-t.C:
	case <-ctx.Done():
	case <-r.closing:
	}
	return false
}

// send queues sig (its From already set from the token) for its recipient.
func (r *registry) send(m *match, sig lobby.Signal) error {
	if sig.To < 0 || sig.To >= len(m.seats) {
		return errorf(http.StatusBadRequest, lobby.CodeBadRequest, "to is not a seat of this match")
	}
	if sig.To == sig.From {
		return errorf(http.StatusBadRequest, lobby.CodeBadRequest, "a seat cannot signal itself")
	}
	if !lobby.ValidKind(sig.Kind) {
		return errorf(http.StatusBadRequest, lobby.CodeBadRequest, `kind must be "offer", "answer" or "candidate"`)
	}
	if len(sig.Data) > lobby.MaxSignalData {
		return errorf(http.StatusBadRequest, lobby.CodeBadRequest, "data is longer than 8192 bytes")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed(m) {
		return errExpired
	}
	if !m.isFull() {
		return errorf(http.StatusConflict, lobby.CodeNotFull, "the match is not full yet")
	}
	s := &m.seats[sig.To]
	if s.left {
		return errorf(http.StatusGone, lobby.CodeGone, "the recipient has left the match")
	}
	if len(s.queue) >= queueLen {
		return &apiError{status: http.StatusTooManyRequests, code: lobby.CodeQueueFull,
			msg: "the recipient's signal queue is full", retryAfter: time.Second}
	}
	if r.queued+len(sig.Data) > r.maxQueued {
		return errorf(http.StatusServiceUnavailable, lobby.CodeUnavailable,
			"the server's signal queues are full; try again later")
	}
	s.seq++
	sig.Seq = s.seq
	s.queue = append(s.queue, sig)
	s.bytes += len(sig.Data)
	r.queued += len(sig.Data)
	s.wakeUp()
	return nil
}

// receive returns the signals queued for seat i of m, held by token. With
// ack, the seat has every signal up to Seq after: those are forgotten and
// the others are returned and kept until a later receive acknowledges
// them; without, the returned signals are forgotten at once. When there
// are none it waits up to d for some; it returns an empty batch when d
// passes or ctx or the registry ends.
func (r *registry) receive(ctx context.Context, m *match, i int, token string, d time.Duration, ack bool, after uint64) ([]lobby.Signal, error) {
	var timeout <-chan time.Time
	for {
		r.mu.Lock()
		s := &m.seats[i]
		if s.token != token { // the holder left meanwhile (with another request)
			r.mu.Unlock()
			return nil, errUnauthorized
		}
		if r.removed(m) {
			r.mu.Unlock()
			return nil, errExpired
		}
		if ack {
			r.forget(s, after)
		}
		if len(s.queue) > 0 && ctx.Err() == nil {
			batch := s.queue
			if ack {
				batch = slices.Clone(s.queue)
				s.answered, s.answeredAt = batch[len(batch)-1].Seq, r.now()
			} else {
				s.queue, r.queued, s.bytes = nil, r.queued-s.bytes, 0
			}
			r.mu.Unlock()
			return batch, nil
		}
		wake := s.wake
		r.mu.Unlock()
		if d <= 0 {
			return []lobby.Signal{}, nil
		}
		if timeout == nil {
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
			if r.onPoll != nil {
				r.onPoll()
			}
		}
		select {
		case <-wake:
		case <-m.gone:
		case <-timeout:
			return []lobby.Signal{}, nil
		case <-ctx.Done():
			return []lobby.Signal{}, nil
		case <-r.closing:
			return []lobby.Signal{}, nil
		}
	}
}

// forget drops the signals of seat s up to Seq after: its holder has them.
// The caller holds r.mu.
func (r *registry) forget(s *seat, after uint64) {
	n := 0
	for n < len(s.queue) && s.queue[n].Seq <= after {
		s.bytes -= len(s.queue[n].Data)
		r.queued -= len(s.queue[n].Data)
		n++
	}
	if n > 0 {
		s.queue = append(s.queue[:0:0], s.queue[n:]...)
	}
}

// leave gives up seat i of m. Before the match is full the seat is freed;
// after, it is marked left and its token revoked. A match nobody holds a
// seat of is removed.
func (r *registry) leave(m *match, i int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed(m) {
		return errExpired
	}
	s := &m.seats[i]
	r.queued -= s.bytes
	s.queue, s.bytes, s.token = nil, 0, ""
	s.wakeUp()
	if m.isFull() {
		s.left = true
		for j := range m.seats {
			if !m.seats[j].left {
				return nil
			}
		}
	} else if m.taken--; m.taken > 0 {
		return nil
	}
	r.remove(m)
	return nil
}

// sweep removes the expired matches, and forgets the signals answered
// ackGrace ago or longer that no poll acknowledged; it returns how many
// matches it removed.
func (r *registry) sweep() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sweepLocked(r.now())
}

func (r *registry) sweepLocked(now time.Time) int {
	n := 0
	for _, m := range r.matches {
		if r.expired(m, now) {
			r.remove(m)
			n++
			continue
		}
		for i := range m.seats {
			if s := &m.seats[i]; s.answered > 0 && now.Sub(s.answeredAt) >= ackGrace {
				r.forget(s, s.answered)
				s.answered = 0
			}
		}
	}
	return n
}

// counts returns the number of matches, of full ones, and the bytes of
// signal data queued.
func (r *registry) counts() (matches, full, queued int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.matches {
		if m.isFull() {
			full++
		}
	}
	return len(r.matches), full, r.queued
}

// lookup finds a match by code (any case), removing it if it has expired.
func (r *registry) lookup(code string, now time.Time) *match {
	if len(code) != codeLen {
		return nil
	}
	m := r.matches[strings.ToUpper(code)]
	if m != nil && r.expired(m, now) {
		r.remove(m)
		return nil
	}
	return m
}

func (r *registry) expired(m *match, now time.Time) bool {
	if m.isFull() {
		return now.Sub(m.filled) >= r.fullTTL
	}
	return now.Sub(m.created) >= r.openTTL
}

func (r *registry) remove(m *match) {
	if r.matches[m.code] != m {
		return
	}
	delete(r.matches, m.code)
	for i := range m.seats {
		r.queued -= m.seats[i].bytes
		m.seats[i].queue, m.seats[i].bytes = nil, 0
	}
	close(m.gone)
}

// removed reports whether m is no longer in the registry (the caller
// authorized it before it expired).
func (r *registry) removed(m *match) bool {
	select {
	case <-m.gone:
		return true
	default:
		return false
	}
}

func (m *match) isFull() bool { return m.taken == len(m.seats) }

func (s *seat) wakeUp() {
	close(s.wake)
	s.wake = make(chan struct{})
}

func randomCode() string {
	var b [codeLen]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = codeAlphabet[b[i]&31]
	}
	return string(b[:])
}

func randomToken() string {
	var b [tokenBytes]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// randomSessionID is a random non-zero session id.
func randomSessionID() uint64 {
	for {
		var b [8]byte
		rand.Read(b[:])
		if id := binary.LittleEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}

// seatHeld reports whether the match with code exists, and whether its
// seat i is held (taken, and not left): the TURN relay asks it.
func (r *registry) seatHeld(code string, i int) (exists, held bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.lookup(code, r.now())
	if m == nil {
		return false, false
	}
	return true, i >= 0 && i < len(m.seats) && m.seats[i].token != ""
}
