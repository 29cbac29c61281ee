// Package fakepeer is the rollback package's scripted remote machines, for
// tests: a Transport (and Clock) that completes the handshake with the
// session under test the way an honest peer would, then delivers whatever
// datagrams the test scripts, honest or not — or that sits in front of a
// real transport and slips scripted datagrams in before the real ones.
//
// It imports only the wire format, not package rollback, so the rollback
// package's internal tests can use it too.
package fakepeer

import (
	"errors"
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// Transport is what a session sends through (rollback.Transport).
type Transport interface {
	Send(peer int, packet []byte) error
	Receive(buf []byte) (n, peer int, ok bool)
}

// Peers is one or more fake remote machines, indexed as Config.Peers. It
// is a rollback.Transport and a rollback.Clock; it is not safe for
// concurrent use.
type Peers struct {
	inner   Transport // nil: the fake peers are the whole network
	session uint64
	nonces  []uint32   // each fake peer's nonce; learned from the traffic when wrapping
	ours    uint32     // the session's nonce, from its handshake; 0 until seen
	tags    []uint16   // each peer's session tag, kept with the nonces (hashing per packet would weigh on the benchmarks)
	queue   []datagram // queue[head:] waits; reused once empty, so scripting allocates nothing in steady state
	head    int
	now     time.Duration

	// Next, if set, is asked for a datagram whenever the queue is empty:
	// it returns the datagram, the peer it comes from, and false when it
	// has none now.
	Next func() ([]byte, int, bool)
	// Sent counts the datagrams the session sent to each peer.
	Sent []int
}

type datagram struct {
	b    []byte
	peer int
}

// New returns fake peers with the given handshake nonces (non-zero), one
// per entry of Config.Peers. Each answers the session's first handshake
// with its own, echoing the session's nonce: after the session's second
// Advance every peer is verified.
func New(nonces ...uint32) *Peers {
	return &Peers{nonces: nonces, tags: make([]uint16, len(nonces)), Sent: make([]int, len(nonces))}
}

// Wrap returns a Peers in front of a real transport to peers peers: sends
// go through, and scripted datagrams are received before the real ones.
// The nonces are learned from the handshakes going by, so Tag gives the
// real session tag once both sides have said hello.
func Wrap(inner Transport, peers int) *Peers {
	return &Peers{inner: inner, nonces: make([]uint32, peers), tags: make([]uint16, peers), Sent: make([]int, peers)}
}

// ErrPeer is returned by Send for a peer index that does not exist.
var ErrPeer = errors.New("fakepeer: no such peer")

// Send takes a datagram from the session: a handshake teaches the session
// id and nonce and, without an inner transport, queues each fake peer's
// reply.
func (p *Peers) Send(peer int, b []byte) error {
	if peer < 0 || peer >= len(p.nonces) {
		return ErrPeer
	}
	p.Sent[peer]++
	if len(b) > 0 && wire.Kind(b[0]) == wire.KindHandshake {
		var h wire.Handshake
		if _, err := wire.ParseControl(b, &h); err == nil {
			p.session, p.ours = h.SessionID, h.Nonce
			p.retag()
			if p.inner == nil && h.Echo != p.nonces[peer] {
				p.Deliver(peer, p.Hello(peer))
			}
		}
	}
	if p.inner != nil {
		return p.inner.Send(peer, b)
	}
	return nil
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
	n, peer, ok := p.inner.Receive(buf)
	if ok && n > 0 && peer >= 0 && peer < len(p.nonces) && wire.Kind(buf[0]) == wire.KindHandshake {
		var h wire.Handshake
		if _, err := wire.ParseControl(buf[:n], &h); err == nil {
			p.nonces[peer] = h.Nonce
			p.retag()
		}
	}
	return n, peer, ok
}

// Deliver queues datagrams from peer, to be received in order.
func (p *Peers) Deliver(peer int, b ...[]byte) {
	for _, d := range b {
		p.queue = append(p.queue, datagram{b: d, peer: peer})
	}
}

// Hello returns peer's handshake: its nonce, echoing the session's.
func (p *Peers) Hello(peer int) []byte {
	b, _ := wire.AppendControl(nil, 0, &wire.Handshake{SessionID: p.session, Nonce: p.nonces[peer], Echo: p.ours}) // a Handshake always encodes
	return b
}

// Tag returns the session tag between the session and peer: 0 until both
// nonces are known.
func (p *Peers) Tag(peer int) uint16 { return p.tags[peer] }

// retag recomputes the session tags after a nonce or the session id changed.
func (p *Peers) retag() {
	for i, n := range p.nonces {
		p.tags[i] = 0
		if p.ours != 0 && n != 0 {
			p.tags[i] = wire.SessionTag(p.session, p.ours, n)
		}
	}
}

// Input returns an input packet from peer, tagged with its session tag.
func (p *Peers) Input(peer int, pkt wire.InputPacket, l wire.Layout) ([]byte, error) {
	pkt.Tag = p.Tag(peer)
	return wire.AppendInput(nil, &pkt, l)
}

// Now is the fake peers' clock (a rollback.Clock): it moves only by Advance.
func (p *Peers) Now() time.Duration { return p.now }

// Advance moves the clock on by d.
func (p *Peers) Advance(d time.Duration) { p.now += d }
