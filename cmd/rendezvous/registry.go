package main

import (
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

// registry is the store of one process (store.go): it holds the matches,
// their seats and tokens, the signals waiting for each seat, the bounds
// (how many matches, how many bytes of queued signals, in all and per
// client address) and the expiry, in memory. One mutex guards all of it:
// every operation under it is a few map and slice accesses (but the
// sweep, at most once per capSweepInterval, or when main calls it); the
// long polls wait outside it.
type registry struct {
	now        func() time.Time
	maxMatches int
	maxQueued  int           // bytes of signal data queued over all seats
	perAddr    usage         // most matches held and bytes queued per client address
	openTTL    time.Duration // a match that is not full expires this long after its creation
	fullTTL    time.Duration // a full match expires this long after it filled
	lockAfter  int           // wrong tokens against a match before it refuses joins (0: never)
	lockFor    time.Duration // how long it refuses them

	mu        sync.Mutex
	matches   map[string]*match
	queued    int               // bytes of signal data queued
	full      int               // matches that are full
	usage     map[string]*usage // by client address (addrKey); an address that holds nothing has no entry
	lastSweep time.Time
	swept     int                  // sweeps of every match so far (tests)
	relays    map[string]relayInfo // the match relays' announcements, by id
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
	changed   chan struct{} // closed (and replaced) when a signal arrives, a seat is taken or left, or the match is removed
	relayed   bool          // its seats signal only the match relay (placement.go)
	placed    placement     // the relay it is placed on; zero until then
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
	bytes      int // len(Data) summed over queue
	// The ID of the newest numbered signal taken from this seat's
	// holder (lobby.Signal.ID): one sent again is not taken twice.
	sentID uint64
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
		matches:    make(map[string]*match),
		usage:      make(map[string]*usage),
	}
}

// close does nothing: the registry holds nothing outside the process.
func (r *registry) close() error { return nil }

// healthy is nil: the registry is always there.
func (r *registry) healthy() error { return nil }

// watch is the match's changed channel, or a closed one when there is no
// such match (the look it guards says why).
func (r *registry) watch(code string) wake {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.matches[code]; m != nil {
		return wake{C: m.changed}
	}
	return wake{C: closedChan}
}

// get is the match of a seatRef, nil when it was removed (or has
// expired: it is removed now). The caller holds r.mu.
func (r *registry) get(ref seatRef) *match {
	m := r.matches[ref.code]
	if m != nil && r.expired(m, r.now()) {
		r.remove(m)
		return nil
	}
	return m
}

// create makes a match of n seats and gives its creator, from client
// address owner (an addrKey), seat 0.
func (r *registry) create(n int, owner string, relayed bool) (lobby.Ticket, error) {
	if n < lobby.MinSeats || n > lobby.MaxSeats {
		return lobby.Ticket{}, errorf(http.StatusBadRequest, lobby.CodeBadRequest,
			"seats must be from 2 to 8")
	}
	m := &match{
		seats:     make([]seat, n),
		sessionID: randomSessionID(),
		secret:    make([]byte, secretBytes),
		changed:   make(chan struct{}),
		relayed:   relayed,
	}
	rand.Read(m.secret)
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
			return lobby.Ticket{}, errServerFull
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
	}
	m.wakeUp()
	return lobby.Ticket{Code: m.code, Seat: i, Token: m.seats[i].token}
}

// authorize returns the seat whose token it is. Whether the code exists
// is not told apart from a wrong token. A wrong token (not a missing one)
// counts against the match: after lockAfter of them, none more than
// lockFor after the one before, it refuses joins for lockFor.
func (r *registry) authorize(code, token string) (seatRef, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	m := r.lookup(code, now)
	if m == nil || token == "" {
		return seatRef{}, errUnauthorized
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
		return seatRef{}, errUnauthorized
	}
	return seatRef{code: m.code, seat: found, token: token}, nil
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
func (r *registry) state(ref seatRef) (lobby.Match, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.get(ref)
	if m == nil {
		return lobby.Match{}, errExpired
	}
	return matchState(m.code, len(m.seats), m.taken, m.sessionID, m.secret, m.relayed), nil
}

// matchState is what a seat holder is told of a match: its session id
// and secret once it is full.
func matchState(code string, seats, taken int, sessionID uint64, secret []byte, relayed bool) lobby.Match {
	st := lobby.Match{Code: code, Seats: seats, Taken: taken, Full: taken == seats, Relayed: relayed}
	if st.Full {
		st.SessionID = sessionID
		st.Secret = append([]byte(nil), secret...)
	}
	return st
}

// send queues sig (its From already set from the token) for its recipient,
// charging its bytes to the sender's address (an addrKey).
func (r *registry) send(ref seatRef, sig lobby.Signal, sender string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.get(ref)
	if m == nil {
		return errExpired
	}
	if err := checkRelayed(sig, len(m.seats), m.relayed); err != nil {
		return err
	}
	if err := checkSignal(sig, len(m.seats)); err != nil {
		return err
	}
	if !m.isFull() {
		return errorf(http.StatusConflict, lobby.CodeNotFull, "the match is not full yet")
	}
	from := &m.seats[sig.From]
	if sig.ID != 0 && sig.ID <= from.sentID {
		return nil // taken already: sent again after its answer was lost
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
	from.sentID = max(from.sentID, sig.ID)
	s.seq++
	sig.Seq, sig.ID = s.seq, 0
	s.queue = append(s.queue, queued{Signal: sig, by: sender})
	s.bytes += len(sig.Data)
	r.queued += len(sig.Data)
	r.charge(sender).bytes += len(sig.Data)
	m.wakeUp()
	return nil
}

// checkSignal refuses a signal that is not one a seat of a match of
// seats seats may send.
func checkSignal(sig lobby.Signal, seats int) error {
	switch {
	case sig.To < 0 || sig.To >= seats:
		return errorf(http.StatusBadRequest, lobby.CodeBadRequest, "to is not a seat of this match")
	case sig.To == sig.From:
		return errorf(http.StatusBadRequest, lobby.CodeBadRequest, "a seat cannot signal itself")
	case !lobby.ValidKind(sig.Kind):
		return errorf(http.StatusBadRequest, lobby.CodeBadRequest, `kind must be "offer", "answer" or "candidate"`)
	case len(sig.Data) > lobby.MaxSignalData:
		return errorf(http.StatusBadRequest, lobby.CodeBadRequest, "data is longer than 8192 bytes")
	}
	return nil
}

// take is one look at the seat's queue (store.take).
func (r *registry) take(ref seatRef, ack bool, after uint64, deliver bool) ([]lobby.Signal, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.get(ref)
	if m == nil {
		return nil, errExpired
	}
	s := &m.seats[ref.seat]
	if s.token != ref.token { // the holder left meanwhile (with another request)
		return nil, errUnauthorized
	}
	if ack {
		r.forget(s, after)
	}
	if len(s.queue) == 0 || !deliver {
		return nil, nil
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
	return batch, nil
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

// charged is the number of addresses that hold something (tests).
func (r *registry) charged() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.usage)
}

// walks is the number of sweeps of every match so far (tests).
func (r *registry) walks() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.swept
}

// leave gives up the seat (store.leave).
func (r *registry) leave(ref seatRef) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.get(ref)
	if m == nil {
		return errExpired
	}
	s := &m.seats[ref.seat]
	if s.token != ref.token {
		return errUnauthorized
	}
	r.drop(s, len(s.queue))
	s.token = ""
	m.wakeUp()
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
	r.swept++
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
	m.wakeUp()
}

func (m *match) isFull() bool { return m.taken == len(m.seats) }

func (m *match) wakeUp() {
	close(m.changed)
	m.changed = make(chan struct{})
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

// placement is the relay the match with code is placed on (store.placement).
func (r *registry) placement(code string) (placement, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.matches[code]
	if m == nil || r.expired(m, r.now()) {
		return placement{}, errExpired
	}
	return m.placed, nil
}

// place records p unless the match has a placement (store.place).
func (r *registry) place(code string, p placement) (placement, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.matches[code]
	if m == nil || r.expired(m, r.now()) {
		return placement{}, errExpired
	}
	if m.placed.Match == "" {
		m.placed = p
	}
	return m.placed, nil
}

// fromRelay queues a signal of the match's relay for a seat (store.fromRelay).
func (r *registry) fromRelay(code string, sig lobby.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.matches[code]
	if m == nil || r.expired(m, r.now()) {
		return errExpired
	}
	if err := checkFromRelay(sig, len(m.seats), m.relayed); err != nil {
		return err
	}
	s := &m.seats[sig.To]
	if len(s.queue) >= queueLen {
		return &apiError{status: http.StatusTooManyRequests, code: lobby.CodeQueueFull,
			msg: "the recipient's signal queue is full", retryAfter: time.Second}
	}
	if r.queued+len(sig.Data) > r.maxQueued {
		return errorf(http.StatusServiceUnavailable, lobby.CodeUnavailable, "the server's signal queues are full; try again later")
	}
	s.seq++
	sig.Seq, sig.ID = s.seq, 0
	s.queue = append(s.queue, queued{Signal: sig, by: relaySender})
	s.bytes += len(sig.Data)
	r.queued += len(sig.Data)
	r.charge(relaySender).bytes += len(sig.Data)
	m.wakeUp()
	return nil
}

// announce records a relay's announcement (store.announce).
func (r *registry) announce(a relayInfo) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.relays == nil {
		r.relays = map[string]relayInfo{}
	}
	now := r.now()
	for id, old := range r.relays {
		if now.After(old.Expires) {
			delete(r.relays, id)
		}
	}
	if _, ok := r.relays[a.ID]; !ok && len(r.relays) >= maxRelays {
		return errorf(http.StatusServiceUnavailable, lobby.CodeUnavailable, "the server knows as many relays as it may")
	}
	r.relays[a.ID] = a
	return nil
}

// liveRelays returns the relays whose announcements have not expired,
// in no order (store.liveRelays).
func (r *registry) liveRelays() ([]relayInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var out []relayInfo
	for _, a := range r.relays {
		if !now.After(a.Expires) {
			out = append(out, a)
		}
	}
	return out, nil
}
