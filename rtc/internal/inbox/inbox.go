// Package inbox holds the datagrams a transport has received until the
// session asks for them: one bounded queue of pooled buffers per peer,
// taken in turn, so that a peer that floods fills only its own queue and
// never delays or drops another peer's datagrams. The udp and WebRTC
// transports share it.
package inbox

import (
	"sync"
	"sync/atomic"
)

// Depth bounds the datagrams waiting from one peer; a peer's datagram
// beyond it drops that peer's oldest waiting one (a flood cannot grow
// memory, and the newest inputs, which carry the most, are kept). At 60
// datagrams a second it is a second of backlog.
const Depth = 64

type datagram struct {
	buf []byte
	n   int
}

// queue is one peer's waiting datagrams, oldest first.
type queue struct {
	d     [Depth]datagram
	head  int
	count int
}

func (q *queue) push(d datagram) {
	q.d[(q.head+q.count)%Depth] = d
	q.count++
}

func (q *queue) pop() datagram {
	d := q.d[q.head]
	q.d[q.head] = datagram{}
	q.head = (q.head + 1) % Depth
	q.count--
	return d
}

// Inbox is safe for one writer and one reader at a time (and for more:
// every method takes its lock).
type Inbox struct {
	mu     sync.Mutex
	queues []queue
	turn   int // the index whose queue Take looks at first
	free   [][]byte
	size   int // every buffer's length: the largest datagram + 1
	full   atomic.Int64
	ready  chan struct{} // a token once a datagram arrives; see Ready
}

// New returns an inbox for peers peers whose datagrams are at most max
// bytes (Put refuses larger ones).
func New(peers, max int) *Inbox {
	b := &Inbox{queues: make([]queue, peers), size: max + 1, ready: make(chan struct{}, 1)}
	for range 64 {
		b.free = append(b.free, make([]byte, b.size))
	}
	return b
}

// Put copies p into peer's queue, over its oldest datagram when the
// queue is full (counted by Full). It returns false, keeping nothing, when
// p is larger than the inbox's max or peer is out of range.
func (b *Inbox) Put(peer int, p []byte) bool {
	if len(p) >= b.size {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if peer < 0 || peer >= len(b.queues) {
		return false
	}
	q := &b.queues[peer]
	if q.count == Depth {
		b.full.Add(1)
		b.free = append(b.free, q.pop().buf)
	}
	var buf []byte
	if k := len(b.free); k > 0 {
		buf = b.free[k-1]
		b.free = b.free[:k-1]
	} else {
		buf = make([]byte, b.size)
	}
	q.push(datagram{buf: buf, n: copy(buf, p)})
	select {
	case b.ready <- struct{}{}:
	default:
	}
	return true
}

// Ready receives a token after a datagram arrives (one token for any
// number of them): a loop with nothing to do can wait on it, with its own
// deadline, instead of polling Take.
func (b *Inbox) Ready() <-chan struct{} { return b.ready }

// Take copies a waiting datagram into buf, taking the peers' queues in
// turn (each oldest first); ok is false when none is waiting.
func (b *Inbox) Take(buf []byte) (n, peer int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.queues {
		i := (b.turn + k) % len(b.queues)
		if q := &b.queues[i]; q.count > 0 {
			d := q.pop()
			b.turn = i + 1
			n = copy(buf, d.buf[:d.n])
			b.free = append(b.free, d.buf)
			return n, i, true
		}
	}
	return 0, 0, false
}

// Resize makes room for peers peers, keeping the queues below it and
// dropping the datagrams of the rest.
func (b *Inbox) Resize(peers int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := peers; i < len(b.queues); i++ {
		b.clear(i)
	}
	queues := make([]queue, peers)
	copy(queues, b.queues)
	b.queues = queues
	b.turn = 0
}

// Clear drops peer's waiting datagrams.
func (b *Inbox) Clear(peer int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if peer >= 0 && peer < len(b.queues) {
		b.clear(peer)
	}
}

func (b *Inbox) clear(peer int) {
	q := &b.queues[peer]
	for q.count > 0 {
		b.free = append(b.free, q.pop().buf)
	}
	q.head = 0
}

// Waiting is how many datagrams wait now.
func (b *Inbox) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for i := range b.queues {
		n += b.queues[i].count
	}
	return n
}

// Full is how many datagrams were dropped because their peer's queue was
// full (a flood, or a session that fell behind).
func (b *Inbox) Full() int64 { return b.full.Load() }
