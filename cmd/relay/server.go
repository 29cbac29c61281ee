package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rewindgg/rewind/relay"
)

// serverConfig bounds a server. Every field must be positive.
type serverConfig struct {
	Tick       time.Duration // how often each machine is sent what was gathered for it
	Idle       time.Duration // a match none of whose machines sent anything this long is closed
	MaxLife    time.Duration // a match is closed this long after it opened, whatever it does
	MaxMatches int           // matches held at once
	MaxPerIP   int           // machines of the live matches behind one IP address (IPv6: one /64)
	IPv4       bool          // the socket is IPv4, and so must the machines' addresses be (else IPv6)
	Writers    int           // goroutines that flush the matches and write, each tick
}

func defaultServerConfig() serverConfig {
	return serverConfig{Tick: time.Second / 60, Idle: 30 * time.Second, MaxLife: 3 * time.Hour,
		MaxMatches: 5000, MaxPerIP: 16, IPv4: true, Writers: 2}
}

// A refusal is why the server would not open a match: the admin call
// answers with its HTTP status, and the metrics count it by reason.
type refusal struct {
	status int
	reason string
	msg    string
}

func (r *refusal) Error() string { return "relay: " + r.msg }

// The refusals of open. A bad request is a *refusal with reason
// bad_request and its own message (badRequest).
var (
	errUnauthorized = &refusal{401, "unauthorized", "a missing or wrong bearer token"}
	errCapacity     = &refusal{503, "capacity", "the relay holds its maximum of matches (-max-matches)"}
	errAddressInUse = &refusal{409, "address_in_use", "an address is a machine of another live match"}
	errAddressQuota = &refusal{429, "address_quota", "an IP address has its maximum of machines in live matches (-max-per-ip)"}
)

func badRequest(format string, a ...any) error {
	return &refusal{400, "bad_request", fmt.Sprintf(format, a...)}
}

// refusalReasons are the reasons a refusal can have, for the metrics.
var refusalReasons = []string{"bad_request", "unauthorized", "capacity", "address_in_use", "address_quota", "seat_offered"}

// Why a match is closed.
const (
	closedIdle     = "idle"     // no datagram from any machine for serverConfig.Idle
	closedLifetime = "lifetime" // open serverConfig.MaxLife
	closedDeleted  = "deleted"  // by the admin call
	closedStopped  = "stopped"  // the server stopped
)

var closeReasons = []string{closedIdle, closedLifetime, closedDeleted, closedStopped}

// server relays many matches over one UDP socket: one relay.Relay each,
// whose Link is the match's machines' addresses on that socket. It starts
// no goroutine of its own but tick's writers; its owner calls receive with
// the datagrams that arrive, and tick once a tick (serve.go does, with one
// goroutine reading and one ticking, however many matches). Its methods
// are safe for concurrent use.
type server struct {
	cfg   serverConfig
	log   *slog.Logger
	clock func() time.Time
	write func(w int, batch []packet) // writes a batch: writer w's, one call per w at a time

	rtc     *rtcHost // nil: no WebRTC seats (-webrtc)
	mu      sync.Mutex
	byAddr  map[netip.AddrPort]seat
	byID    map[string]*hosted
	list    []*hosted            // the live matches, in no order (swap-removed)
	perIP   map[netip.Prefix]int // machines of the live matches per IP (IPv6: /64)
	at      time.Duration        // the time given the relays: the last tick's, in whole ticks since the Unix epoch
	now     time.Time            // the last tick's time
	pending []packet             // what the relays sent, waiting for a writer
	writing [][]packet           // by writer: what it writes, swapped with pending
	counts  counts
}

// counts are the server's figures beyond the live relays' own Stats.
type counts struct {
	closed   relay.Stats // the closed matches' Stats, summed
	unknown  int64       // datagrams from no live match's machine
	opened   int64
	closedBy map[string]int64
	refused  map[string]int64
}

// A seat is one machine of a match.
type seat struct {
	m    *hosted
	slot int
}

// hosted is one match the server relays: its machines are UDP addresses,
// or WebRTC seats (webrtc.go).
type hosted struct {
	id       string
	machines []netip.AddrPort // by slot; nil for WebRTC seats
	udp      []*net.UDPAddr   // the same, for batched writes
	seats    []*rtcSeat       // by slot, WebRTC seats; nil for UDP machines
	static   bool             // opened by -machines: never expires
	opened   time.Time
	heard    time.Time // the tick of its latest datagram (opened until one comes)
	relay    *relay.Relay
	link     matchLink
	index    int // in server.list
}

// matchLink is a match's relay.Link: Receive hands over the one datagram
// the server is routing to it, Send queues a datagram for a machine.
type matchLink struct {
	s       *server
	m       *hosted
	pending []byte
	from    int
}

func (l *matchLink) Receive(buf []byte) (n, peer int, ok bool) {
	if l.pending == nil {
		return 0, 0, false
	}
	n = copy(buf, l.pending)
	l.pending = nil
	return n, l.from, true
}

func (l *matchLink) Send(peer int, b []byte) error {
	if l.m.seats != nil {
		if ch := l.m.seats[peer].ch.Load(); ch != nil {
			l.s.queue(netip.AddrPort{}, nil, *ch, b)
		}
		return nil // a seat whose channel is not open yet: lost
	}
	l.s.queue(l.m.machines[peer], l.m.udp[peer], nil, b)
	return nil
}

// A packet is a datagram to write: to a UDP address, or on a WebRTC
// seat's channel.
type packet struct {
	to netip.AddrPort
	ua *net.UDPAddr // to, as the batched writes take it
	ch io.Writer    // not nil: the seat's channel, and to and ua are unset
	b  []byte
}

func newServer(cfg serverConfig, log *slog.Logger, write func(int, []packet)) *server {
	cfg.Writers = max(cfg.Writers, 1)
	return &server{cfg: cfg, log: log, clock: time.Now, write: write, writing: make([][]packet, cfg.Writers),
		byAddr: map[netip.AddrPort]seat{}, byID: map[string]*hosted{}, perIP: map[netip.Prefix]int{},
		counts: counts{closedBy: map[string]int64{}, refused: map[string]int64{}}}
}

// ipKey is what the per-address quota counts by: an IPv4 address, or an
// IPv6 address's /64.
func ipKey(a netip.Addr) netip.Prefix {
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// open opens a match between machines, in slot order; static ones never
// expire. It returns the match's id, or a *refusal.
func (s *server) open(machines []netip.AddrPort, static bool) (string, error) {
	if len(machines) < 2 || len(machines) > relay.MaxSlots {
		return "", s.refuse(badRequest("%d machines (want 2 to %d)", len(machines), relay.MaxSlots))
	}
	for i, a := range machines {
		a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
		if !a.IsValid() || a.Port() == 0 || a.Addr().IsUnspecified() || a.Addr().Zone() != "" {
			return "", s.refuse(badRequest("machine %d: %v is not an address a machine can have", i, a))
		}
		if a.Addr().Is4() != s.cfg.IPv4 {
			return "", s.refuse(badRequest("machine %d: %v is not of the relay socket's address family", i, a))
		}
		for _, b := range machines[:i] {
			if a == b {
				return "", s.refuse(badRequest("machine %d: %v twice", i, a))
			}
		}
		machines[i] = a
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.list) >= s.cfg.MaxMatches {
		return "", s.refuseLocked(errCapacity)
	}
	add := map[netip.Prefix]int{}
	for _, a := range machines {
		if _, ok := s.byAddr[a]; ok {
			return "", s.refuseLocked(errAddressInUse)
		}
		add[ipKey(a.Addr())]++
	}
	for k, n := range add {
		if s.perIP[k]+n > s.cfg.MaxPerIP {
			return "", s.refuseLocked(errAddressQuota)
		}
	}
	m := &hosted{id: id, machines: machines, static: static}
	for _, a := range machines {
		m.udp = append(m.udp, net.UDPAddrFromAddrPort(a))
	}
	if err := s.addLocked(m, len(machines)); err != nil {
		return "", err
	}
	for slot, a := range machines {
		s.byAddr[a] = seat{m, slot}
		s.perIP[ipKey(a.Addr())]++
	}
	return id, nil
}

// addLocked gives m (its machines or seats set) a relay for n machines and
// an id unless it has one, and makes it live; the server's lock is held.
func (s *server) addLocked(m *hosted, n int) error {
	if len(s.list) >= s.cfg.MaxMatches {
		return s.refuseLocked(errCapacity)
	}
	if m.id == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		m.id = hex.EncodeToString(b[:])
	}
	m.link = matchLink{s: s, m: m}
	r, err := relay.New(relay.Config{Machines: n, Link: &m.link, Tick: s.cfg.Tick})
	if err != nil {
		return s.refuseLocked(badRequest("%v", err))
	}
	m.relay, m.index = r, len(s.list)
	m.opened = s.clock()
	m.heard = m.opened
	s.byID[m.id] = m
	s.list = append(s.list, m)
	s.counts.opened++
	s.log.Info("match opened", "id", m.id, "machines", n, "webrtc", m.seats != nil, "static", m.static, "open", len(s.list))
	return nil
}

func (s *server) refuse(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refuseLocked(err)
}

func (s *server) refuseLocked(err error) error {
	var r *refusal
	if errors.As(err, &r) {
		s.counts.refused[r.reason]++
	}
	return err
}

// errNoMatch: close of an id no live match has.
var errNoMatch = errors.New("relay: no such match")

// close closes the match id (the admin call).
func (s *server) close(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.byID[id]
	if !ok {
		return errNoMatch
	}
	s.closeLocked(m, closedDeleted)
	return nil
}

// closeLocked forgets m, whatever its relay still holds.
func (s *server) closeLocked(m *hosted, reason string) {
	last := s.list[len(s.list)-1]
	s.list[m.index], last.index = last, m.index
	s.list = s.list[:len(s.list)-1]
	delete(s.byID, m.id)
	s.closeSeatsLocked(m)
	for _, a := range m.machines {
		delete(s.byAddr, a)
		k := ipKey(a.Addr())
		if s.perIP[k]--; s.perIP[k] <= 0 {
			delete(s.perIP, k)
		}
	}
	st := m.relay.Stats()
	addStats(&s.counts.closed, st)
	s.counts.closedBy[reason]++
	s.log.Info("match closed", "id", m.id, "reason", reason, "age", s.now.Sub(m.opened).Round(time.Millisecond),
		"envelopes_in", st.EnvelopesIn, "envelopes_out", st.EnvelopesOut, "bytes_in", st.BytesIn,
		"bytes_out", st.BytesOut, "malformed", st.Malformed, "open", len(s.list))
}

// receive routes datagrams that arrived: each to the relay of the match
// whose machine sent it, which gathers its records for their destinations.
// b[i] came from from[i]; receive does not keep them.
func (s *server) receive(b [][]byte, from []netip.AddrPort) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range b {
		a := from[i]
		st, ok := s.byAddr[netip.AddrPortFrom(a.Addr().Unmap(), a.Port())]
		if !ok {
			s.counts.unknown++
			continue
		}
		s.deliverLocked(st.m, st.slot, d)
	}
}

// deliverLocked hands m's relay datagram d from its machine in slot; the
// server's lock is held.
func (s *server) deliverLocked(m *hosted, slot int, d []byte) {
	if s.now.After(m.heard) { // not before its opening: before the first tick, s.now is zero
		m.heard = s.now
	}
	m.link.pending, m.link.from = d, slot
	// s.at is the last tick's time, before the relay's next flush:
	// it only gathers (ticks flush), bar the first datagram of a
	// match, which it flushes at once.
	m.relay.Poll(s.at)
	m.link.pending = nil
}

// tickChunk is how many matches a writer flushes before it lets receive in
// and writes what they sent.
const tickChunk = 64

// tick sends every match's machines what was gathered for them, then
// closes the matches past their idle window or lifetime. now is the time;
// the relays are given it in whole ticks since the Unix epoch, so that
// every match flushes at the same moments, which a load generator on the
// same clock can tell. serverConfig.Writers goroutines share the work,
// tickChunk matches at a time: the system calls that write the datagrams
// are most of it.
func (s *server) tick(now time.Time) {
	s.mu.Lock()
	if now.After(s.now) {
		s.now = now
		s.at = time.Duration(now.UnixNano()/int64(s.cfg.Tick)) * s.cfg.Tick
	}
	s.mu.Unlock()
	var next atomic.Int64
	if s.cfg.Writers == 1 {
		s.flush(0, &next)
	} else {
		var wg sync.WaitGroup
		for w := range s.cfg.Writers {
			wg.Go(func() { s.flush(w, &next) })
		}
		wg.Wait()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < len(s.list); {
		m := s.list[i]
		switch {
		case m.static:
		case s.now.Sub(m.opened) >= s.cfg.MaxLife:
			s.closeLocked(m, closedLifetime)
			continue
		case s.now.Sub(m.heard) >= s.cfg.Idle:
			s.closeLocked(m, closedIdle)
			continue
		}
		i++
	}
}

// openCount is the number of live matches.
func (s *server) openCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.list)
}

// stop closes every match.
func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.list) > 0 {
		s.closeLocked(s.list[len(s.list)-1], closedStopped)
	}
}

// queue copies b, to a, into the datagrams a writer writes next; the server's
// lock is held (a relay sends from Poll).
func (s *server) queue(to netip.AddrPort, ua *net.UDPAddr, ch io.Writer, b []byte) {
	if len(s.pending) < cap(s.pending) {
		s.pending = s.pending[:len(s.pending)+1]
	} else {
		s.pending = append(s.pending, packet{})
	}
	p := &s.pending[len(s.pending)-1]
	p.to, p.ua, p.ch, p.b = to, ua, ch, append(p.b[:0], b...)
}

// flush has the matches of the chunks it takes from next send what was
// gathered for their machines, and writes it, as writer w, until no chunk
// is left. It takes what receive queued too.
func (s *server) flush(w int, next *atomic.Int64) {
	for {
		i := int(next.Add(1)-1) * tickChunk
		s.mu.Lock()
		if i >= len(s.list) && (i > 0 || len(s.pending) == 0) {
			s.mu.Unlock()
			return
		}
		for _, m := range s.list[min(i, len(s.list)):min(i+tickChunk, len(s.list))] {
			m.relay.Poll(s.at)
		}
		s.pending, s.writing[w] = s.writing[w][:0], s.pending
		batch := s.writing[w]
		s.mu.Unlock()
		batch = writeChannels(batch)
		if len(batch) > 0 {
			s.write(w, batch)
		}
	}
}

// writeChannels writes the packets of batch that go on WebRTC seats'
// channels, and returns the others (the UDP ones, moved to its front: the
// packets are swapped, never copied, since each holds a buffer of its own
// that queue reuses).
func writeChannels(batch []packet) []packet {
	j := 0
	for i := range batch {
		if batch[i].ch == nil {
			batch[i], batch[j] = batch[j], batch[i]
			j++
			continue
		}
		// A write that fails is a datagram lost: the sessions resend
		// what matters. An unreliable channel does not block.
		_, _ = batch[i].ch.Write(batch[i].b)
	}
	return batch[:j]
}

// snapshot is the server's figures at one moment, for the metrics.
type snapshot struct {
	open, opened      int64
	closedBy, refused map[string]int64
	stats             relay.Stats // every match's, live or closed
	unknown           int64
}

func (s *server) snapshot() snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := snapshot{open: int64(len(s.list)), opened: s.counts.opened, stats: s.counts.closed,
		unknown: s.counts.unknown, closedBy: map[string]int64{}, refused: map[string]int64{}}
	for k, v := range s.counts.closedBy {
		sn.closedBy[k] = v
	}
	for k, v := range s.counts.refused {
		sn.refused[k] = v
	}
	for _, m := range s.list {
		addStats(&sn.stats, m.relay.Stats())
	}
	return sn
}

func addStats(sum *relay.Stats, st relay.Stats) {
	sum.EnvelopesIn += st.EnvelopesIn
	sum.EnvelopesOut += st.EnvelopesOut
	sum.BytesIn += st.BytesIn
	sum.BytesOut += st.BytesOut
	sum.Forwarded += st.Forwarded
	sum.Rebuilt += st.Rebuilt
	sum.Malformed += st.Malformed
}
