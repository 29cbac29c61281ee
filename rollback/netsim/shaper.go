package netsim

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rewindgg/rewind/internal/pqueue"
)

// ErrClosed is returned by a closed Shaper's Send.
var ErrClosed = errors.New("netsim: shaper closed")

// Transport is what a [Shaper] wraps and what it is itself: a
// rollback.Transport (Send one datagram to peer i; Receive without
// blocking). It is declared here because netsim does not import rollback.
type Transport interface {
	Send(peer int, packet []byte) error
	Receive(buf []byte) (n, peer int, ok bool)
}

// Shaper applies a [Profile] to a real transport's outgoing datagrams, on
// the real clock: it delays, drops and duplicates them with the same
// [Impairer] the simulated network uses, one seeded stream per peer. It is
// the network impairment of tests and soaks over real sockets on loopback,
// where the kernel offers no netem.
//
// Unlike the rest of this package a Shaper runs in real time: it reads
// time.Now and starts a goroutine that sends every datagram through the
// wrapped transport when it is due. That is test and soak tooling, not
// session code; a game never needs a Shaper.
//
// A Shaper is a Transport: give it to the session in place of the wrapped
// one. Receive passes straight through. The wrapped transport's Send is
// called from the shaper's goroutine, concurrently with the caller's
// Receive, so it must allow that (a udp.Transport does; a netsim
// [Endpoint], which is not safe for concurrent use and is impaired by its
// [Network] already, must not be wrapped). Errors of those delayed sends
// are not reported to the caller; the wrapped transport may count them.
type Shaper struct {
	t     Transport
	imps  []*Impairer
	start time.Time // the impairers' time origin

	mu     sync.Mutex
	heap   pqueue.Queue[shaped] // by (due, seq)
	seq    uint64
	pool   [][]byte
	stats  LinkStats
	closed bool
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

type shaped struct {
	due  time.Time
	seq  uint64
	peer int
	buf  []byte
}

// NewShaper returns a Shaper that sends through t, which has peers peers
// (0 to peers-1), with profile p, and starts its goroutine; call Close to
// stop it. seed and node seed the impairment streams: give every node of a
// match its own index so that their streams differ.
func NewShaper(t Transport, peers int, p Profile, seed uint64, node int) (*Shaper, error) {
	if t == nil {
		return nil, errors.New("netsim: NewShaper: nil transport")
	}
	if peers < 1 || peers > 64 {
		return nil, fmt.Errorf("netsim: NewShaper: %d peers (1 to 64)", peers)
	}
	sh := &Shaper{t: t, start: time.Now(), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})} // safe: the real-clock shaper (tests and the UDP soak), never the session core
	sh.heap.Less = shapedBefore
	for i := range peers {
		imp, err := NewImpairer(p, seed, uint64(node*64+i))
		if err != nil {
			return nil, err
		}
		sh.imps = append(sh.imps, imp)
	}
	go sh.run()
	return sh, nil
}

// Send decides the fate of b and queues the copies that survive for
// delivery through the wrapped transport when they are due. It does not
// retain b. It returns [ErrPeer] for a peer out of range and [ErrClosed]
// once the shaper is closed; otherwise nil.
func (sh *Shaper) Send(peer int, b []byte) error {
	if peer < 0 || peer >= len(sh.imps) {
		return ErrPeer
	}
	now := time.Now() // safe: the shaper delays real datagrams on the real clock
	sh.mu.Lock()
	if sh.closed {
		sh.mu.Unlock()
		return ErrClosed
	}
	sh.stats.Sent++
	sh.stats.Bytes += len(b)
	f := sh.imps[peer].Next(now.Sub(sh.start))
	if f.Lost {
		sh.stats.Lost++
		sh.mu.Unlock()
		return nil
	}
	if f.Reordered {
		sh.stats.Reordered++
	}
	sh.push(now.Add(f.Delay), peer, b)
	if f.Duplicate {
		sh.stats.Duplicated++
		sh.push(now.Add(f.DupDelay), peer, b)
	}
	sh.mu.Unlock()
	select {
	case sh.wake <- struct{}{}:
	default:
	}
	return nil
}

// Release forwards to the wrapped transport's Release, when it has one
// (a udp.Transport's guest slots), so that a session can free a
// spectator's slot through the shaper.
func (sh *Shaper) Release(peer int) {
	if r, ok := sh.t.(interface{ Release(peer int) }); ok {
		r.Release(peer)
	}
}

// Admit forwards to the wrapped transport's Admit, when it has one
// (udp.Transport's guest slots).
func (sh *Shaper) Admit(peer int) {
	if a, ok := sh.t.(interface{ Admit(peer int) }); ok {
		a.Admit(peer)
	}
}

// Receive is the wrapped transport's Receive.
func (sh *Shaper) Receive(buf []byte) (n, peer int, ok bool) { return sh.t.Receive(buf) }

// Stats returns what the shaper did to the datagrams it was given, all
// peers together.
func (sh *Shaper) Stats() LinkStats {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.stats
}

// push adds a datagram to the heap; sh.mu is held.
func (sh *Shaper) push(due time.Time, peer int, b []byte) {
	var buf []byte
	if k := len(sh.pool); k > 0 {
		buf, sh.pool = sh.pool[k-1][:0], sh.pool[:k-1]
	}
	sh.seq++
	sh.heap.Push(shaped{due: due, seq: sh.seq, peer: peer, buf: append(buf, b...)})
}

func shapedBefore(a, b *shaped) bool {
	return a.due.Before(b.due) || (a.due.Equal(b.due) && a.seq < b.seq)
}

func (sh *Shaper) run() {
	defer close(sh.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		sh.mu.Lock()
		now := time.Now() // safe: the shaper delays real datagrams on the real clock
		for sh.heap.Len() > 0 && !sh.heap.Items[0].due.After(now) {
			d := sh.heap.Pop()
			sh.mu.Unlock()
			_ = sh.t.Send(d.peer, d.buf)
			sh.mu.Lock()
			sh.pool = append(sh.pool, d.buf)
			sh.stats.Delivered++
		}
		wait := time.Hour
		if sh.heap.Len() > 0 {
			wait = time.Until(sh.heap.Items[0].due)
		}
		sh.mu.Unlock()
		timer.Reset(max(wait, 0))
		select {
		case <-timer.C:
		case <-sh.wake:
		case <-sh.stop:
			return
		}
	}
}

// Close stops the shaper and waits for its goroutine; datagrams still
// waiting are dropped. It does not close the wrapped transport. Calling it
// again does nothing.
func (sh *Shaper) Close() {
	sh.mu.Lock()
	already := sh.closed
	sh.closed = true
	sh.mu.Unlock()
	if !already {
		close(sh.stop)
	}
	<-sh.done
}
