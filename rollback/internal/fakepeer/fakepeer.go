// Package fakepeer is the rollback package's scripted remote machines, for
// tests: a Transport (and a clock, Peers.Now) that completes the
// handshake with the session under test the way an honest peer would,
// then delivers whatever datagrams the test scripts, honest or not — or
// that sits in front of a real transport and slips scripted datagrams in
// before the real ones.
//
// It imports only the wire format, not package rollback, so the rollback
// package's internal tests can use it too.
package fakepeer

import (
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// Transport is what a session sends through (rollback.Transport).
type Transport interface {
	Send(peer int, packet []byte) error
	Receive(buf []byte) (n, peer int, ok bool)
}

// Peers is one or more fake remote machines, indexed as Config.Peers. It
// is a rollback.Transport, and its Now a Config.Clock; it is not safe for
// concurrent use.
type Peers struct {
	inner Transport // nil: the fake peers are the whole network
	peers []fake
	queue []datagram // queue[head:] waits; reused once empty, so scripting allocates nothing in steady state
	head  int
	now   time.Duration
	hs    wire.Handshake // the session's, as last seen
	err   error          // from New: every Send returns it

	// Next, if set, is asked for a datagram whenever the queue is empty:
	// it returns the datagram, the peer it comes from, and false when it
	// has none now.
	Next func() ([]byte, int, bool)
	// Sent counts the datagrams the session sent to each peer.
	Sent []int
	// Answer, if set, has each fake peer answer the session's pings as an
	// honest machine does, with Answer(peer) as its frame. Unset, the
	// fake peers answer none (the session names such a peer, after 8 s,
	// for withholding them).
	Answer func(peer int) int32
}

// fake is one fake machine: its handshake and its end of the link.
type fake struct {
	nonce uint64
	share *wire.KeyShare
	seal  *wire.Sealer // nil until the session's handshake arrived
	open  *wire.Opener
}

type datagram struct {
	b    []byte
	peer int
}

// New returns fake peers with the given handshake nonces (non-zero), one
// per entry of Config.Peers, which must list the fake machines in
// ascending order of their lowest player (each learns its players from the
// session's handshake). Each answers the session's first handshake
// with its own, echoing the session's nonce, and a sealed ping: after the
// session's second Advance every peer is verified.
func New(nonces ...uint64) *Peers {
	p := &Peers{Sent: make([]int, len(nonces))}
	for _, n := range nonces {
		share, err := wire.NewKeyShare(rand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)}))
		if err != nil && p.err == nil {
			p.err = err // Send reports it
		}
		p.peers = append(p.peers, fake{nonce: n, share: share})
	}
	return p
}

// Wrap returns a Peers in front of a real transport to peers peers: sends
// go through, and scripted datagrams are received before the real ones.
// The wrapper has no keys: what it scripts is a stranger's.
func Wrap(inner Transport, peers int) *Peers {
	return &Peers{inner: inner, peers: make([]fake, peers), Sent: make([]int, peers)}
}

// ErrPeer is returned by Send for a peer index that does not exist.
var ErrPeer = errors.New("fakepeer: no such peer")

// Send takes a datagram from the session. Without an inner transport, a
// handshake gives each fake peer the link's keys and, unless it already
// echoes the fake peer's nonce, queues the fake peer's reply.
func (p *Peers) Send(peer int, b []byte) error {
	if peer < 0 || peer >= len(p.peers) {
		return ErrPeer
	}
	if p.err != nil {
		return p.err
	}
	p.Sent[peer]++
	if p.inner != nil {
		return p.inner.Send(peer, b)
	}
	if len(b) > 0 && wire.Kind(b[0]) != wire.KindHandshake {
		p.answer(peer, b)
		return nil
	}
	if len(b) == 0 || wire.ParseHandshake(b, &p.hs, nil) != nil {
		return nil
	}
	f := &p.peers[peer]
	if f.seal == nil {
		send, recv, err := f.share.Keys(wire.Link{Session: p.hs.SessionID, Ours: f.nonce, Theirs: p.hs.Nonce,
			TheirKey: p.hs.Key, Digest: p.hs.Terms.Digest()})
		if err != nil {
			return nil
		}
		f.seal, f.open = wire.NewSealer(send), wire.NewOpener(recv)
	}
	if p.hs.Echo != f.nonce {
		p.Deliver(peer, p.Hello(peer), p.Control(peer, &wire.Quality{}))
	}
	return nil
}

// answer queues peer's reply to a ping in b, when Answer is set.
func (p *Peers) answer(peer int, b []byte) {
	f := &p.peers[peer]
	if p.Answer == nil || f.open == nil || wire.SealedKind(b) != wire.KindQuality {
		return
	}
	body, err := f.open.Open(b)
	var q wire.Quality
	if err != nil {
		return
	}
	if _, err := wire.ParseControlPrefix(body, &q); err == nil {
		p.Deliver(peer, p.Control(peer, &wire.QualityReply{Echo: q.Sent, Frame: p.Answer(peer)}))
	}
}

// Receive hands the session the next scripted datagram, then (when
// wrapping) the real ones.
func (p *Peers) Receive(buf []byte) (int, int, bool) {
	if p.head < len(p.queue) {
		d := p.queue[p.head]
		p.queue[p.head] = datagram{}
		if p.head++; p.head == len(p.queue) {
			p.queue, p.head = p.queue[:0], 0
		}
		return copy(buf, d.b), d.peer, true
	}
	if p.Next != nil {
		if b, peer, ok := p.Next(); ok {
			return copy(buf, b), peer, true
		}
	}
	if p.inner == nil {
		return 0, 0, false
	}
	return p.inner.Receive(buf)
}

// Deliver queues datagrams from peer, to be received in order.
func (p *Peers) Deliver(peer int, b ...[]byte) {
	for _, d := range b {
		p.queue = append(p.queue, datagram{b: d, peer: peer})
	}
}

// Hello returns peer's handshake: its nonce and key, echoing the
// session's nonce, with the session's own terms.
func (p *Peers) Hello(peer int) []byte {
	f := &p.peers[peer]
	if f.share == nil {
		return nil // New failed: Send says why
	}
	h := wire.Handshake{Version: wire.Version, SessionID: p.hs.SessionID, Nonce: f.nonce, Echo: p.hs.Nonce,
		Key: f.share.Public(), Terms: p.hs.Terms, Local: p.players(peer)}
	b, _ := wire.AppendHandshake(nil, &h, nil) // the session's own terms always encode
	return b
}

// players returns fake peer i's players: the i-th machine, by lowest
// player, of the session's terms other than the session's own.
func (p *Peers) players(i int) []uint8 {
	var lowest []uint8
	for _, o := range p.hs.Terms.Owners {
		if !slices.Contains(lowest, o) && !slices.Contains(p.hs.Local, o) {
			lowest = append(lowest, o)
		}
	}
	slices.Sort(lowest)
	if i >= len(lowest) {
		return nil
	}
	var ps []uint8
	for pl, o := range p.hs.Terms.Owners {
		if o == lowest[i] {
			ps = append(ps, uint8(pl))
		}
	}
	return ps
}

// Keyed reports whether peer has the link's keys: the session's handshake
// reached it.
func (p *Peers) Keyed(peer int) bool { return p.peers[peer].seal != nil }

// Seal returns a datagram of kind k carrying body, sealed by peer as an
// honest machine would (nil before Keyed). Each call takes the next packet
// number.
func (p *Peers) Seal(peer int, k wire.Kind, body []byte) []byte {
	return p.SealTo(nil, peer, k, body)
}

// SealTo is Seal appending to buf (which it reuses).
func (p *Peers) SealTo(buf []byte, peer int, k wire.Kind, body []byte) []byte {
	s := p.peers[peer].seal
	if s == nil {
		return nil
	}
	return s.Seal(append(s.Begin(buf[:0], k), body...))
}

// Control returns a sealed control datagram from peer.
func (p *Peers) Control(peer int, m wire.Control) []byte {
	body, err := wire.AppendControl(nil, m)
	if err != nil {
		return nil
	}
	return p.Seal(peer, m.Kind(), body)
}

// Input returns a sealed input packet from peer.
func (p *Peers) Input(peer int, pkt wire.InputPacket, l wire.Layout) ([]byte, error) {
	body, err := wire.AppendInput(nil, &pkt, l)
	if err != nil {
		return nil, err
	}
	return p.Seal(peer, wire.KindInput, body), nil
}

// Now is the fake peers' clock (for Config.Clock): it moves only by
// Advance.
func (p *Peers) Now() time.Duration { return p.now }

// Advance moves the clock on by d.
func (p *Peers) Advance(d time.Duration) { p.now += d }

// Tap is a Transport that keeps a copy of the last datagram sent through
// it that Keep accepts (tests take real datagrams from it to replay or
// mangle).
type Tap struct {
	Transport
	Keep func(b []byte) bool
	Last []byte
}

// Send keeps a copy of b when Keep accepts it, and sends it on.
func (t *Tap) Send(peer int, b []byte) error {
	if t.Keep(b) {
		t.Last = append(t.Last[:0], b...)
	}
	return t.Transport.Send(peer, b)
}

// Sealed returns a Keep for the sealed datagrams of kind k.
func Sealed(k wire.Kind) func(b []byte) bool {
	return func(b []byte) bool { return len(b) > 0 && b[0]>>4 == byte(k) }
}
