package udp

import (
	"sync"
	"time"

	"github.com/rewindgg/rewind/internal/pqueue"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// Shaper delays, drops and duplicates a transport's outgoing datagrams by
// a netsim profile, on the real clock: the network impairments of a soak on
// loopback, where the kernel offers no netem. Each directed link gets its
// own seeded impairment stream; a goroutine sends every datagram when it is
// due. Use it through [Transport.Shape].
type Shaper struct {
	t     *Transport
	imps  []*netsim.Impairer
	start time.Time // the impairers' time origin

	mu    sync.Mutex
	heap  pqueue.Queue[shaped] // by (due, seq)
	seq   uint64
	pool  [][]byte
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	stats netsim.LinkStats
}

type shaped struct {
	due  time.Time
	seq  uint64
	peer int
	buf  []byte
}

// Shape puts a Shaper with profile p in front of t's sends. seed and node
// seed the impairment streams (use the node's index so that two nodes of a
// soak get different streams). Call it before the first Send.
func (t *Transport) Shape(p netsim.Profile, seed uint64, node int) (*Shaper, error) {
	sh := &Shaper{t: t, start: time.Now(), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	sh.heap.Less = shapedBefore
	for i := range t.peers {
		imp, err := netsim.NewImpairer(p, seed, uint64(node*64+i))
		if err != nil {
			return nil, err
		}
		sh.imps = append(sh.imps, imp)
	}
	t.send = sh.send
	go sh.run()
	return sh, nil
}

// Stats returns what the shaper did to the datagrams it was given.
func (sh *Shaper) Stats() netsim.LinkStats {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.stats
}

func (sh *Shaper) send(peer int, b []byte) error {
	now := time.Now()
	sh.mu.Lock()
	sh.stats.Sent++
	sh.stats.Bytes += len(b)
	f := sh.imps[peer].Next(now.Sub(sh.start))
	if f.Lost {
		sh.stats.Lost++
		sh.mu.Unlock()
		return nil
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
		now := time.Now()
		for sh.heap.Len() > 0 && !sh.heap.Items[0].due.After(now) {
			d := sh.heap.Pop()
			sh.mu.Unlock()
			_ = sh.t.write(d.peer, d.buf)
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

// Close stops the shaper; datagrams still waiting are dropped.
func (sh *Shaper) Close() {
	close(sh.stop)
	<-sh.done
}
