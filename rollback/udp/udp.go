// Package udp is a rollback.Transport over a real UDP socket.
//
// [New] takes a net.PacketConn (IPv4 or IPv6, usually from net.ListenUDP)
// and the address of every peer, in the order of the session's
// Config.Peers. A reader goroutine moves arriving datagrams into bounded
// queues of pooled buffers, one per peer, so [Transport.Receive] never
// blocks and steady traffic allocates nothing. Datagrams from addresses
// that are not peers (without guest slots, below), and oversized ones, are
// dropped and counted here, before they cost anything more than a map
// lookup (and a look at the guest slots); everything else is for the
// session to judge. Each peer's queue holds its newest
// [PeerQueue] datagrams (a full queue drops its oldest), and Receive takes
// from the peers' queues in turn: an address that floods us fills only its
// own queue and never delays or drops another peer's datagrams.
//
// Guests are the machines a session serves that are not its peers:
// spectators, which the session authenticates with its handshake. After
// [Transport.AcceptGuests](n), a datagram from an address that is neither
// a peer nor a guest takes the lowest free of n guest slots, whose index
// is len(peers)+k: Receive returns its datagrams with that index, from a
// queue of its own like a peer's, and Send to the index answers that
// address. The transport does not judge guests (anyone can send from any
// address): the session does. It admits a guest with [Transport.Admit]
// once the guest has shown it receives at its address (its handshake
// echoed the session's answer), and gives back a slot it has dropped with
// [Transport.Release]. When every slot is taken, a new address takes the
// slot that has waited longest without being admitted — an address that
// has proved nothing holds nothing, so a stranger's junk cannot keep a
// spectator out — or, when every slot is admitted, the slot silent
// longest once it has been silent for [GuestIdle]; until then new
// addresses are dropped and counted as unknown.
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
	"time"

	"github.com/rewindgg/rewind/internal/inbox"
)

// MaxDatagram is the largest datagram accepted; larger ones are dropped.
const MaxDatagram = 1400

// PeerQueue bounds the datagrams waiting for Receive from one peer; a
// peer's datagram beyond it drops that peer's oldest waiting one (a flood
// cannot grow memory, and the newest inputs, which carry the most, are
// kept). At 60 datagrams a second it is a second of backlog.
const PeerQueue = inbox.Depth

// MaxGuests bounds AcceptGuests.
const MaxGuests = 64

// GuestIdle is how long a guest slot must have been silent before a new
// address may take it when every slot is taken.
const GuestIdle = 10 * time.Second

// Errors.
var (
	ErrPeer    = errors.New("udp: no such peer")
	ErrClosed  = errors.New("udp: transport closed")
	ErrNilConn = errors.New("udp: nil conn")
)

// Stats counts what the transport dropped before the session saw it.
type Stats struct {
	UnknownAddress int64 // datagrams from addresses that are not peers, and had no guest slot
	Oversized      int64 // datagrams larger than MaxDatagram
	QueueFull      int64 // datagrams dropped because their peer's queue was full (a flood, or a session that fell behind)
	ReadErrors     int64 // transient socket errors (for example ICMP port unreachable)
	SendErrors     int64
	Waiting        int64 // datagrams queued for Receive now
	Guests         int64 // guest slots in use now
}

// slot is one guest slot.
type slot struct {
	addr     netip.AddrPort // the guest's (unmapped) address, while used
	since    time.Time      // when the address took the slot
	last     time.Time      // when its newest datagram was queued
	used     bool
	admitted bool // the session vouched for the address (Admit)
}

// Transport implements rollback.Transport over a net.PacketConn.
type Transport struct {
	conn  net.PacketConn
	udp   *net.UDPConn // conn, when it is one: the allocation-free calls
	peers []netip.AddrPort
	index map[netip.AddrPort]int // the peers; read-only after New

	in *inbox.Inbox // one queue per peer, then one per guest slot

	mu    sync.Mutex       // the slots
	slots []slot           // guest slot k is index len(peers)+k
	now   func() time.Time // time.Now; a test's clock

	nslots atomic.Int32 // len(slots), for the reader to skip the lock without guests

	unknown, oversized, readErrs, sendErrs atomic.Int64
	closed                                 atomic.Bool
	done                                   chan struct{}
}

// New returns a transport on conn whose peer i is at peers[i], and starts
// its reader goroutine. IPv4 addresses and IPv4-mapped IPv6 addresses are
// the same peer. A nil conn (or a nil pointer in it) is an error.
func New(conn net.PacketConn, peers []netip.AddrPort) (*Transport, error) {
	if v := reflect.ValueOf(conn); conn == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, ErrNilConn
	}
	t := &Transport{conn: conn, index: make(map[netip.AddrPort]int, len(peers)), now: time.Now, done: make(chan struct{})}
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
	t.in = inbox.New(len(peers), MaxDatagram)
	go t.read()
	return t, nil
}

func unmap(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }

// LocalAddr returns the socket's address.
func (t *Transport) LocalAddr() net.Addr { return t.conn.LocalAddr() }

// AcceptGuests gives the transport n guest slots (0 to [MaxGuests]; 0,
// the default, accepts none): from then on a datagram from an address that
// is not a peer takes a free slot, index len(peers)+k for the lowest free
// k, and Receive returns its datagrams with that index. Call it before the
// session's first Receive. Called again, it keeps the slots below n and
// frees the rest, dropping their datagrams.
func (t *Transport) AcceptGuests(n int) error {
	if n < 0 || n > MaxGuests {
		return fmt.Errorf("udp: %d guests: want 0 to %d", n, MaxGuests)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := n; k < len(t.slots); k++ {
		t.release(k)
	}
	t.in.Resize(len(t.peers) + n)
	slots := make([]slot, n)
	copy(slots, t.slots)
	t.slots = slots
	t.nslots.Store(int32(n))
	return nil
}

// Release frees guest slot peer (an index from len(peers) on), dropping
// its waiting datagrams: the next new address may take it. It does
// nothing for a peer's index or a free slot. A session calls it when it
// drops the guest.
func (t *Transport) Release(peer int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k := peer - len(t.peers); k >= 0 && k < len(t.slots) {
		t.release(k)
	}
}

// Admit marks guest slot peer (an index from len(peers) on) as the
// session's: the address has shown it receives there. A slot not admitted
// goes to the next new address when every slot is taken; an admitted one
// only after GuestIdle of silence. It does nothing for a peer's index or
// a free slot.
func (t *Transport) Admit(peer int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k := peer - len(t.peers); k >= 0 && k < len(t.slots) && t.slots[k].used {
		t.slots[k].admitted = true
	}
}

// release frees guest slot k; t.mu is held.
func (t *Transport) release(k int) {
	t.in.Clear(len(t.peers) + k)
	t.slots[k] = slot{}
}

// Send sends b to peer: a peer's index, or a guest slot's in use (the
// address now holding it). It does not retain b.
func (t *Transport) Send(peer int, b []byte) error {
	if peer < 0 {
		return ErrPeer
	}
	var to netip.AddrPort
	if peer < len(t.peers) {
		to = t.peers[peer]
	} else {
		t.mu.Lock()
		if k := peer - len(t.peers); k < len(t.slots) && t.slots[k].used {
			to = t.slots[k].addr
		}
		t.mu.Unlock()
		if !to.IsValid() {
			return ErrPeer
		}
	}
	if t.closed.Load() {
		return ErrClosed
	}
	err := t.write(to, b)
	if err != nil {
		t.sendErrs.Add(1)
	}
	return err
}

func (t *Transport) write(to netip.AddrPort, b []byte) error {
	if t.udp != nil {
		_, err := t.udp.WriteToUDPAddrPort(b, to)
		return err
	}
	_, err := t.conn.WriteTo(b, net.UDPAddrFromAddrPort(to))
	return err
}

// Receive copies a waiting datagram into buf, taking the queues of the
// peers and guests in turn (each queue oldest first); ok is false when
// none is waiting. It never blocks.
func (t *Transport) Receive(buf []byte) (n, peer int, ok bool) {
	return t.in.Take(buf)
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
		addr = unmap(addr)
		peer, known := t.index[addr]
		switch {
		case !known:
			t.guest(buf[:n], addr)
		case n > MaxDatagram:
			t.oversized.Add(1)
		default:
			t.in.Put(peer, buf[:n])
		}
	}
}

// guest queues a datagram from addr, which is not a peer's, in the guest
// slot addr holds, or in one it takes: the lowest free slot; when none is
// free, the slot not admitted that the longest-standing address holds;
// when all are admitted, the slot silent longest if that has been silent
// for GuestIdle. Otherwise it drops it as from an unknown address. An
// oversized datagram takes no slot.
func (t *Transport) guest(b []byte, addr netip.AddrPort) {
	if t.nslots.Load() == 0 {
		t.unknown.Add(1)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.slots) == 0 { // AcceptGuests(0) since the look
		t.unknown.Add(1)
		return
	}
	now := t.now()
	held, free, oldest, unproved := -1, -1, -1, -1
	for k := range t.slots {
		s := &t.slots[k]
		switch {
		case !s.used:
			if free < 0 {
				free = k
			}
		case s.addr == addr:
			held = k
		case !s.admitted:
			if unproved < 0 || s.since.Before(t.slots[unproved].since) {
				unproved = k
			}
		case oldest < 0 || s.last.Before(t.slots[oldest].last):
			oldest = k
		}
		if held >= 0 {
			break
		}
	}
	k := held
	switch {
	case k >= 0:
	case free >= 0:
		k = free
	case unproved >= 0:
		k = unproved
	case now.Sub(t.slots[oldest].last) >= GuestIdle:
		k = oldest
	default:
		t.unknown.Add(1)
		return
	}
	if len(b) > MaxDatagram {
		t.oversized.Add(1)
		return
	}
	if k != held {
		t.release(k) // a slot taken over: the old address's datagrams go
		t.slots[k] = slot{addr: addr, used: true, since: now}
	}
	t.slots[k].last = now
	t.in.Put(len(t.peers)+k, b)
}

// Stats returns the transport's drop counters, how many datagrams wait and
// how many guest slots are in use.
func (t *Transport) Stats() Stats {
	t.mu.Lock()
	guests := 0
	for k := range t.slots {
		if t.slots[k].used {
			guests++
		}
	}
	t.mu.Unlock()
	return Stats{UnknownAddress: t.unknown.Load(), Oversized: t.oversized.Load(), QueueFull: t.in.Full(),
		ReadErrors: t.readErrs.Load(), SendErrors: t.sendErrs.Load(), Waiting: int64(t.in.Waiting()), Guests: int64(guests)}
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
