package main

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/rewindgg/rewind/relay"
)

// batchConn is a UDP socket's batched I/O (recvmmsg and sendmmsg on
// Linux): ipv4.PacketConn and ipv6.PacketConn. ipv4.Message and
// ipv6.Message are the same type.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// socket is the server's UDP socket: read batch datagrams a system call
// (1: one, with ReadFromUDPAddrPort and WriteToUDPAddrPort).
type socket struct {
	conn    *net.UDPConn
	bc      batchConn // nil when batch is 1
	batch   int
	sendErr atomic.Int64     // datagrams the socket would not send
	wms     [][]ipv4.Message // by writer
	wbufs   [][][]byte
}

func newSocket(conn *net.UDPConn, ipv4Socket bool, batch, writers int) *socket {
	k := &socket{conn: conn, batch: max(batch, 1)}
	if k.batch > 1 {
		if ipv4Socket {
			k.bc = ipv4.NewPacketConn(conn)
		} else {
			k.bc = ipv6.NewPacketConn(conn)
		}
		for range max(writers, 1) {
			k.wms = append(k.wms, make([]ipv4.Message, k.batch))
			k.wbufs = append(k.wbufs, make([][]byte, k.batch))
		}
	}
	return k
}

// readLoop hands s every datagram the socket receives until it fails
// (closed). It never writes: what a relay sends on receiving (the first
// datagram of a match, an envelope past relay.MaxDatagram) waits for the
// next tick's writers.
func (k *socket) readLoop(s *server) error {
	bufs := make([][]byte, k.batch)
	for i := range bufs {
		bufs[i] = make([]byte, relay.MaxDatagram+1) // one more: a longer datagram is malformed
	}
	b := make([][]byte, k.batch)
	from := make([]netip.AddrPort, k.batch)
	if k.bc == nil {
		for {
			n, a, err := k.conn.ReadFromUDPAddrPort(bufs[0])
			if err != nil {
				return err
			}
			b[0], from[0] = bufs[0][:n], a
			s.receive(b[:1], from[:1])
		}
	}
	ms := make([]ipv4.Message, k.batch)
	for i := range ms {
		ms[i].Buffers = bufs[i : i+1]
	}
	for {
		n, err := k.bc.ReadBatch(ms, 0)
		if err != nil {
			return err
		}
		for i := range n {
			b[i] = bufs[i][:ms[i].N]
			if ua, ok := ms[i].Addr.(*net.UDPAddr); ok {
				from[i] = ua.AddrPort()
			} else {
				from[i] = netip.AddrPort{}
			}
		}
		s.receive(b[:n], from[:n])
	}
}

// write sends ps, batch datagrams a system call, as writer w: the server
// calls it from several goroutines, one call at a time for each w.
func (k *socket) write(w int, ps []packet) {
	if k.bc == nil {
		for _, p := range ps {
			if _, err := k.conn.WriteToUDPAddrPort(p.b, p.to); err != nil {
				k.sendErr.Add(1)
			}
		}
		return
	}
	wms, wbufs := k.wms[w], k.wbufs[w]
	for len(ps) > 0 {
		n := min(len(ps), k.batch)
		for i := range n {
			wbufs[i] = ps[i].b
			wms[i].Buffers, wms[i].Addr = wbufs[i:i+1], ps[i].ua
		}
		sent, err := k.bc.WriteBatch(wms[:n], 0)
		if err != nil {
			// The first not sent is lost (a refused address, a full
			// buffer): the sessions resend what matters.
			k.sendErr.Add(1)
			sent++
		}
		ps = ps[min(max(sent, 1), len(ps)):]
	}
}

// tickLoop ticks s at every multiple of its tick since the Unix epoch
// (the moments its relays flush at) until ctx is done, observing each
// tick's duration.
func tickLoop(ctx context.Context, s *server, observe func(time.Duration)) {
	tick := int64(s.cfg.Tick)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		s.tick(now)
		observe(time.Since(now))
		next := time.Unix(0, (now.UnixNano()/tick+1)*tick)
		t.Reset(time.Until(next))
	}
}
