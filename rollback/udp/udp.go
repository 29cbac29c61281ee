// Package udp is a rollback.Transport over a real UDP socket.
//
// [New] takes a net.PacketConn (IPv4 or IPv6, usually from net.ListenUDP)
// and the address of every peer, in the order of the session's
// Config.Peers. A reader goroutine moves arriving datagrams into bounded
// queues of pooled buffers, one per peer, so [Transport.Receive] never
// blocks and steady traffic allocates nothing. Datagrams from addresses
// that are not peers, and oversized ones, are dropped and counted here,
// before they cost anything more than a map lookup; everything else is for
// the session to judge. Each peer's queue holds its newest
// [PeerQueue] datagrams (a full queue drops its oldest), and Receive takes
// from the peers' queues in turn: an address that floods us fills only its
// own queue and never delays or drops another peer's datagrams.
//
// To impair the traffic of a test or soak on loopback, wrap the transport
// in a netsim.Shaper.
package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"sync"
	"sync/atomic"
)

// MaxDatagram is the largest datagram accepted; larger ones are dropped.
const MaxDatagram = 1400

// PeerQueue bounds the datagrams waiting for Receive from one peer; a
// peer's datagram beyond it drops that peer's oldest waiting one (a flood
// cannot grow memory, and the newest inputs, which carry the most, are
// kept). At 60 datagrams a second it is a second of backlog.
const PeerQueue = 64

// Errors.
var (
	ErrPeer    = errors.New("udp: no such peer")
	ErrClosed  = errors.New("udp: transport closed")
	ErrNilConn = errors.New("udp: nil conn")
)

// Stats counts what the transport dropped before the session saw it.
type Stats struct {
	UnknownAddress int64 // datagrams from addresses that are not peers
	Oversized      int64 // datagrams larger than MaxDatagram
	QueueFull      int64 // datagrams dropped because their peer's queue was full (a flood, or a session that fell behind)
	ReadErrors     int64 // transient socket errors (for example ICMP port unreachable)
	SendErrors     int64
	Waiting        int64 // datagrams queued for Receive now
}

type datagram struct {
	buf []byte
	n   int
}

// queue is one peer's waiting datagrams, oldest first.
type queue struct {
	d     [PeerQueue]datagram
	head  int
	count int
}

func (q *queue) push(d datagram) {
	q.d[(q.head+q.count)%PeerQueue] = d
	q.count++
}

func (q *queue) pop() datagram {
	d := q.d[q.head]
	q.d[q.head] = datagram{}
	q.head = (q.head + 1) % PeerQueue
	q.count--
	return d
}

// Transport implements rollback.Transport over a net.PacketConn.
type Transport struct {
	conn  net.PacketConn
	udp   *net.UDPConn // conn, when it is one: the allocation-free calls
	peers []netip.AddrPort
	index map[netip.AddrPort]int

	mu     sync.Mutex
	queues []queue // one per peer
	turn   int     // the peer whose queue Receive looks at first
	free   [][]byte

	unknown, oversized, full, readErrs, sendErrs atomic.Int64
	closed                                       atomic.Bool
	done                                         chan struct{}
}

// New returns a transport on conn whose peer i is at peers[i], and starts
// its reader goroutine. IPv4 addresses and IPv4-mapped IPv6 addresses are
// the same peer. A nil conn (or a nil pointer in it) is an error.
func New(conn net.PacketConn, peers []netip.AddrPort) (*Transport, error) {
	if v := reflect.ValueOf(conn); conn == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, ErrNilConn
	}
	t := &Transport{conn: conn, index: make(map[netip.AddrPort]int, len(peers)), done: make(chan struct{})}
	t.udp, _ = conn.(*net.UDPConn)
	for i, a := range peers {
		if !a.IsValid() {
			return nil, fmt.Errorf("udp: peer %d: invalid address %v", i, a)
		}
		a = unmap(a)
		if _, dup := t.index[a]; dup {
			return nil, fmt.Errorf("udp: peer %d: address %v listed twice", i, a)
		}
		t.index[a] = i
		t.peers = append(t.peers, a)
	}
	t.queues = make([]queue, len(peers))
	for range 64 {
		t.free = append(t.free, make([]byte, MaxDatagram+1))
	}
	go t.read()
	return t, nil
}

func unmap(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }

// LocalAddr returns the socket's address.
func (t *Transport) LocalAddr() net.Addr { return t.conn.LocalAddr() }

// Send sends b to peer. It does not retain b.
func (t *Transport) Send(peer int, b []byte) error {
	if peer < 0 || peer >= len(t.peers) {
		return ErrPeer
	}
	if t.closed.Load() {
		return ErrClosed
	}
	err := t.write(peer, b)
	if err != nil {
		t.sendErrs.Add(1)
	}
	return err
}

func (t *Transport) write(peer int, b []byte) error {
	if t.udp != nil {
		_, err := t.udp.WriteToUDPAddrPort(b, t.peers[peer])
		return err
	}
	_, err := t.conn.WriteTo(b, net.UDPAddrFromAddrPort(t.peers[peer]))
	return err
}

// Receive copies a waiting datagram into buf, taking the peers' queues in
// turn (each queue oldest first); ok is false when none is waiting. It
// never blocks.
func (t *Transport) Receive(buf []byte) (n, peer int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.queues {
		i := (t.turn + k) % len(t.queues)
		if q := &t.queues[i]; q.count > 0 {
			d := q.pop()
			t.turn = i + 1
			n = copy(buf, d.buf[:d.n])
			t.free = append(t.free, d.buf)
			return n, i, true
		}
	}
	return 0, 0, false
}

func (t *Transport) read() {
	defer close(t.done)
	buf := make([]byte, MaxDatagram+1)
	for {
		var (
			n    int
			addr netip.AddrPort
			err  error
		)
		if t.udp != nil {
			n, addr, err = t.udp.ReadFromUDPAddrPort(buf)
		} else {
			var a net.Addr
			n, a, err = t.conn.ReadFrom(buf)
			if ua, ok := a.(*net.UDPAddr); ok {
				addr = ua.AddrPort()
			}
		}
		if err != nil {
			if t.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			t.readErrs.Add(1)
			continue
		}
		peer, known := t.index[unmap(addr)]
		switch {
		case !known:
			t.unknown.Add(1)
		case n > MaxDatagram:
			t.oversized.Add(1)
		default:
			buf = t.enqueue(buf, n, peer)
		}
	}
}

// enqueue queues buf in peer's queue (over its oldest datagram when the
// queue is full) and returns a free buffer for the next read.
func (t *Transport) enqueue(buf []byte, n, peer int) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := &t.queues[peer]
	if q.count == PeerQueue {
		t.full.Add(1)
		t.free = append(t.free, q.pop().buf)
	}
	q.push(datagram{buf: buf, n: n})
	if k := len(t.free); k > 0 {
		next := t.free[k-1]
		t.free = t.free[:k-1]
		return next
	}
	return make([]byte, MaxDatagram+1)
}

// Stats returns the transport's drop counters and how many datagrams wait.
func (t *Transport) Stats() Stats {
	t.mu.Lock()
	waiting := 0
	for i := range t.queues {
		waiting += t.queues[i].count
	}
	t.mu.Unlock()
	return Stats{UnknownAddress: t.unknown.Load(), Oversized: t.oversized.Load(), QueueFull: t.full.Load(),
		ReadErrors: t.readErrs.Load(), SendErrors: t.sendErrs.Load(), Waiting: int64(waiting)}
}

// Close closes the socket and waits for the reader goroutine to stop.
func (t *Transport) Close() error {
	if t.closed.Swap(true) {
		return ErrClosed
	}
	err := t.conn.Close()
	<-t.done
	return err
}
