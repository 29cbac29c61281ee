package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/rewindgg/rewind/rtc/lobby"
)

// Match codes: 10 letters and digits without the ambiguous ones (0/O,
// 1/I), 2⁵⁰ codes, read aloud or typed by hand (in any case, with dashes
// or spaces between groups if the player likes: lobby.NormalizeCode).
// docs/security.md says why 10: guessing one of 10,000 open matches takes
// years at the failed-guess budget.
const (
	codeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789" // 32 symbols: a random byte&31 is unbiased
	codeLen      = 10
	tokenBytes   = 16 // 128 bits
	secretBytes  = 32
	queueLen     = 64 // signals waiting for one seat
	// ackGrace is how long signals answered to an acknowledging poll wait
	// for the next poll to acknowledge them: a holder that stops polling
	// once connected (or is gone) does not keep them for the match's life.
	// A client whose answer was cut polls again within its retry pause
	// (at most 5 s, lobby.Client).
	ackGrace = time.Minute
	// capSweepInterval is how often at most a create that finds the
	// registry at its match cap sweeps it for expired matches (a walk of
	// every match under the lock); between, such creates are refused at
	// once. main's periodic sweep runs besides.
	capSweepInterval = time.Second
)

// registry holds the matches: their seats and tokens, the signals waiting
// for each seat, the bounds (how many matches, how many bytes of queued
// signals, in all and per client address) and the expiry. One mutex
// guards all of it: every operation under it is a few map and slice
// accesses (but the sweep, at most once per capSweepInterval, or when
// main calls it); the long polls wait outside it.
type registry struct {
	now        func() time.Time
	maxMatches int
	maxQueued  int           // bytes of signal data queued over all seats
	perAddr    usage         // most matches held and bytes queued per client address
	openTTL    time.Duration // a match that is not full expires this long after its creation
	fullTTL    time.Duration // a full match expires this long after it filled
	lockAfter  int           // wrong tokens against a match before it refuses joins (0: never)
	lockFor    time.Duration // how long it refuses them
	closing    chan struct{} // closed by close: every long poll returns
	closeOnce  sync.Once
	onPoll     func() // tests: called when a long poll starts to wait

	mu        sync.Mutex
	matches   map[string]*match
	queued    int               // bytes of signal data queued
	full      int               // matches that are full
	usage     map[string]*usage // by client address (addrKey); an address that holds nothing has no entry
	lastSweep time.Time
	walks     int // sweeps of every match so far (tests)
}

// usage is what one client address holds: the matches it created that
// are not removed yet, and the bytes of the signals it sent that are
// still queued.
type usage struct {
	matches int
	bytes   int
}

// match is one match's state. Its fields are guarded by the registry's mutex.
type match struct {
	code      string
	owner     string // the creator's address (addrKey), charged for the match
	seats     []seat
	taken     int // seats held; once it reaches len(seats) the match is full for good (leaving does not free a seat then)
	created   time.Time
	filled    time.Time // zero until full
	sessionID uint64
	secret    []byte
	full      chan struct{} // closed when the last seat is taken
	gone      chan struct{} // closed when the match is removed
	// Wrong tokens tried against the match: how many since the last one
	// lockFor ago or longer, and until when it refuses joins.
	fails       int
	failedAt    time.Time
	lockedUntil time.Time
}

// seat is one seat of a match and the signals waiting for it.
type seat struct {
	token string   // "" when free, or after its holder left a full match
	left  bool     // its holder left after the match was full
	queue []queued // in Seq order; the last one's Seq is seq
	seq   uint64   // the Seq given to the last signal queued; never reset
	// The newest Seq answered to an acknowledging poll, and when: the
	// sweep forgets the signals up to it once ackGrace has passed.
	answered   uint64
	answeredAt time.Time
	bytes      int           // len(Data) summed over queue
	wake       chan struct{} // closed (and replaced) when a signal arrives or the seat is freed
}

// queued is a signal waiting for its recipient, and who sent it: the
// sender's address is charged its bytes until it is forgotten.
type queued struct {
	lobby.Signal
	by string // addrKey of the request that sent it
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

// isGuess reports whether err answers a request that guessed wrong: a
// join of a code that does not exist, a token that is not the match's.
func isGuess(err error) bool { return err == errNoMatch || err == errUnauthorized }

func newRegistry(cfg *config) *registry {
	return &registry{
		now:        cfg.Now,
		maxMatches: cfg.MaxMatches,
		maxQueued:  cfg.MaxQueuedBytes,
		perAddr:    usage{matches: cfg.MaxMatchesPerIP, bytes: cfg.MaxQueuedPerIP},
		openTTL:    cfg.OpenTTL,
		fullTTL:    cfg.FullTTL,
		lockAfter:  cfg.LockAfter,
		lockFor:    cfg.LockFor,
		closing:    make(chan struct{}),
		matches:    make(map[string]*match),
		usage:      make(map[string]*usage),
	}
}

// close ends every long poll now and makes new ones return at once.
func (r *registry) close() { r.closeOnce.Do(func() { close(r.closing) }) }

// create makes a match of n seats and gives its creator, from client
// address owner (an addrKey), seat 0.
func (r *registry) create(n int, owner string) (lobby.Ticket, error) {
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
	if u := r.usage[owner]; u != nil && u.matches >= r.perAddr.matches {
		return lobby.Ticket{}, errorf(http.StatusTooManyRequests, lobby.CodeQuota,
			fmt.Sprintf("this address holds %d matches, as many as one address may; leave one (or let it expire) first", u.matches))
	}
	if len(r.matches) >= r.maxMatches {
		if now.Sub(r.lastSweep) >= capSweepInterval {
			r.sweepLocked(now)
		}
		if len(r.matches) >= r.maxMatches {
			return lobby.Ticket{}, &apiError{status: http.StatusServiceUnavailable, code: lobby.CodeUnavailable,
				msg: "the server holds as many matches as it may; try again later", retryAfter: capSweepInterval}
		}
	}
	for {
		m.code = randomCode()
		if r.matches[m.code] == nil {
			break
		}
	}
	m.created = now
	m.owner = owner
	r.matches[m.code] = m
	r.charge(owner).matches++
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
	if now.Before(m.lockedUntil) {
		return lobby.Ticket{}, &apiError{status: http.StatusTooManyRequests, code: lobby.CodeLocked,
			msg:        "this match refuses joins for a while: wrong tokens were tried against it",
			retryAfter: m.lockedUntil.Sub(now)}
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
		r.full++
		close(m.full)
	}
	return lobby.Ticket{Code: m.code, Seat: i, Token: m.seats[i].token}
}

// authorize returns the match and the seat whose token it is. Whether the
// code exists is not told apart from a wrong token. A wrong token (not a
// missing one) counts against the match: after lockAfter of them, none
// more than lockFor after the one before, it refuses joins for lockFor.
func (r *registry) authorize(code, token string) (*match, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	m := r.lookup(code, now)
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
		r.failed(m, now)
		return nil, 0, errUnauthorized
	}
	return m, found, nil
}

// failed counts a wrong token against m, and locks it once there were
// lockAfter of them. The caller holds r.mu.
func (r *registry) failed(m *match, now time.Time) {
	if r.lockAfter <= 0 {
		return
	}
	if now.Sub(m.failedAt) >= r.lockFor {
		m.fails = 0
	}
	m.fails++
	m.failedAt = now
	if m.fails >= r.lockAfter {
		m.lockedUntil = now.Add(r.lockFor)
		m.fails = 0
	}
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

// send queues sig (its From already set from the token) for its recipient,
// charging its bytes to the sender's address (an addrKey).
func (r *registry) send(m *match, sig lobby.Signal, sender string) error {
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
	if u := r.usage[sender]; u != nil && u.bytes+len(sig.Data) > r.perAddr.bytes {
		return &apiError{status: http.StatusTooManyRequests, code: lobby.CodeQuota,
			msg:        fmt.Sprintf("this address has %d bytes of signals waiting for their recipients, as many as one address may", u.bytes),
			retryAfter: time.Second}
	}
	if r.queued+len(sig.Data) > r.maxQueued {
		return errorf(http.StatusServiceUnavailable, lobby.CodeUnavailable,
			"the server's signal queues are full; try again later")
	}
	s.seq++
	sig.Seq = s.seq
	s.queue = append(s.queue, queued{Signal: sig, by: sender})
	s.bytes += len(sig.Data)
	r.queued += len(sig.Data)
	r.charge(sender).bytes += len(sig.Data)
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
		batch, wake, err := r.take(m, i, token, ack, after, ctx.Err() == nil)
		if err != nil || len(batch) > 0 {
			return batch, err
		}
		if d <= 0 || ctx.Err() != nil {
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

// take is one look at seat i's queue for receive, without waiting: the
// checks and the acknowledgement, then the batch to answer if there is
// one (and deliver is true: the poll's client is still there), or the
// channel that is closed when the seat's queue changes.
func (r *registry) take(m *match, i int, token string, ack bool, after uint64, deliver bool) ([]lobby.Signal, <-chan struct{}, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &m.seats[i]
	if s.token != token { // the holder left meanwhile (with another request)
		return nil, nil, errUnauthorized
	}
	if r.removed(m) {
		return nil, nil, errExpired
	}
	if ack {
		r.forget(s, after)
	}
	if len(s.queue) == 0 || !deliver {
		return nil, s.wake, nil
	}
	batch := make([]lobby.Signal, len(s.queue))
	for k := range s.queue {
		batch[k] = s.queue[k].Signal
	}
	if ack {
		s.answered, s.answeredAt = batch[len(batch)-1].Seq, r.now()
	} else {
		r.drop(s, len(s.queue))
	}
	return batch, nil, nil
}

// forget drops the signals of seat s up to Seq after: its holder has them.
// The caller holds r.mu.
func (r *registry) forget(s *seat, after uint64) {
	n := 0
	for n < len(s.queue) && s.queue[n].Seq <= after {
		n++
	}
	r.drop(s, n)
}

// drop forgets the first n signals queued for seat s, and uncharges
// their senders. The caller holds r.mu.
func (r *registry) drop(s *seat, n int) {
	if n == 0 {
		return
	}
	for _, q := range s.queue[:n] {
		s.bytes -= len(q.Data)
		r.queued -= len(q.Data)
		r.uncharge(q.by, 0, len(q.Data))
	}
	if n == len(s.queue) {
		s.queue = nil
	} else {
		s.queue = append(s.queue[:0:0], s.queue[n:]...)
	}
}

// charge is addr's usage, made if it has none. The caller holds r.mu.
func (r *registry) charge(addr string) *usage {
	u := r.usage[addr]
	if u == nil {
		u = &usage{}
		r.usage[addr] = u
	}
	return u
}

// uncharge takes matches and bytes off addr's usage, and forgets an
// address that holds nothing. The caller holds r.mu.
func (r *registry) uncharge(addr string, matches, bytes int) {
	u := r.usage[addr]
	if u == nil {
		return
	}
	u.matches -= matches
	u.bytes -= bytes
	if u.matches <= 0 && u.bytes <= 0 {
		delete(r.usage, addr)
	}
}

// used is what addr holds now (tests).
func (r *registry) used(addr string) usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u := r.usage[addr]; u != nil {
		return *u
	}
	return usage{}
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
	r.drop(s, len(s.queue))
	s.token = ""
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
	r.lastSweep = now
	r.walks++
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
// signal data queued: counters kept as they change, so it costs the
// same whatever the number of matches.
func (r *registry) counts() (matches, full, queued int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.matches), r.full, r.queued
}

// lookup finds a match by code (any case, dashes and spaces ignored),
// removing it if it has expired.
func (r *registry) lookup(code string, now time.Time) *match {
	if len(code) > 2*codeLen { // not worth normalizing
		return nil
	}
	code = lobby.NormalizeCode(code)
	if len(code) != codeLen {
		return nil
	}
	m := r.matches[code]
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
	if m.isFull() {
		r.full--
	}
	r.uncharge(m.owner, 1, 0)
	for i := range m.seats {
		r.drop(&m.seats[i], len(m.seats[i].queue))
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
