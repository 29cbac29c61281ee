package udp_test

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/udp"
)

func listen(t *testing.T, network, ip string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP(network, &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Skipf("cannot listen on %s %s: %v", network, ip, err)
	}
	return c
}

func addrOf(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// watched is a net.PacketConn that signals each time the transport's reader
// begins a read: the datagram it read before is queued (or dropped) by
// then, so a test can wait on that event instead of polling. Wrapping a
// *net.UDPConn keeps real sockets but takes the transport's generic path.
type watched struct {
	net.PacketConn
	begun  atomic.Int64
	notify chan struct{} // a token after each begun read (at most one pending)
}

func watch(c net.PacketConn) *watched { return &watched{PacketConn: c, notify: make(chan struct{}, 1)} }

func (w *watched) ReadFrom(p []byte) (int, net.Addr, error) {
	w.begun.Add(1)
	select {
	case w.notify <- struct{}{}:
	default: // a token is pending already: the waiter will look again
	}
	return w.PacketConn.ReadFrom(p)
}

// until returns once cond holds, checking it again after every read the
// transport's reader begins; it fails the test after 10 s.
func (w *watched) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-w.notify:
		case <-deadline.C:
			t.Fatalf("after 10 s: %s", what)
		}
	}
}

// newWatched returns a transport on c, watched.
func newWatched(t *testing.T, c net.PacketConn, peers ...netip.AddrPort) (*udp.Transport, *watched) {
	t.Helper()
	w := watch(c)
	tr, err := udp.New(w, peers)
	require.NoError(t, err)
	return tr, w
}

// recv waits for a datagram and receives it.
func recv(t *testing.T, tr *udp.Transport, w *watched, buf []byte) (n, peer int) {
	t.Helper()
	w.until(t, "nothing received", func() bool {
		var ok bool
		n, peer, ok = tr.Receive(buf)
		return ok
	})
	return n, peer
}

func TestSendReceive(t *testing.T) {
	for _, nw := range []struct{ network, ip string }{{"udp4", "127.0.0.1"}, {"udp6", "::1"}} {
		t.Run(nw.network, func(t *testing.T) {
			a, b, c := listen(t, nw.network, nw.ip), listen(t, nw.network, nw.ip), listen(t, nw.network, nw.ip)
			ta, err := udp.New(a, []netip.AddrPort{addrOf(b), addrOf(c)})
			require.NoError(t, err)
			tb, wb := newWatched(t, b, addrOf(a), addrOf(c))
			defer ta.Close()
			defer tb.Close()

			buf := make([]byte, udp.MaxDatagram)
			_, ok := func() (int, bool) { _, _, ok := ta.Receive(buf); return 0, ok }()
			assert.False(t, ok, "Receive does not block when nothing is waiting")

			require.NoError(t, ta.Send(0, []byte("hello")))
			n, peer := recv(t, tb, wb, buf)
			assert.Equal(t, "hello", string(buf[:n]))
			assert.Equal(t, 0, peer, "a is b's peer 0")

			assert.ErrorIs(t, ta.Send(2, nil), udp.ErrPeer)
			assert.ErrorIs(t, ta.Send(-1, nil), udp.ErrPeer)
		})
	}
}

func TestDropsStrangersAndOversized(t *testing.T) {
	a, b, stranger := listen(t, "udp4", "127.0.0.1"), listen(t, "udp4", "127.0.0.1"), listen(t, "udp4", "127.0.0.1")
	defer stranger.Close()
	ta, wa := newWatched(t, a, addrOf(b))
	defer ta.Close()
	_, err := stranger.WriteToUDPAddrPort([]byte("let me in"), addrOf(a))
	require.NoError(t, err)
	_, err = b.WriteToUDPAddrPort(make([]byte, udp.MaxDatagram+1), addrOf(a))
	require.NoError(t, err)
	_, err = b.WriteToUDPAddrPort([]byte("ok"), addrOf(a))
	require.NoError(t, err)
	buf := make([]byte, udp.MaxDatagram)
	n, _ := recv(t, ta, wa, buf)
	assert.Equal(t, "ok", string(buf[:n]), "only the peer's datagram of legal size gets through")
	st := ta.Stats()
	assert.Equal(t, int64(1), st.UnknownAddress)
	assert.Equal(t, int64(1), st.Oversized)
}

func TestMappedAddressesAreTheSamePeer(t *testing.T) {
	a := listen(t, "udp", "::") // dual stack, if the machine has it
	b := listen(t, "udp4", "127.0.0.1")
	mapped := netip.AddrPortFrom(netip.AddrFrom16(addrOf(b).Addr().As16()), addrOf(b).Port())
	require.True(t, mapped.Addr().Is4In6())
	ta, wa := newWatched(t, a, mapped)
	defer ta.Close()
	_, err := b.WriteToUDPAddrPort([]byte("v4"), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), addrOf(a).Port()))
	require.NoError(t, err)
	buf := make([]byte, 16)
	n, peer := recv(t, ta, wa, buf)
	assert.Equal(t, "v4", string(buf[:n]))
	assert.Equal(t, 0, peer)
	_, err = udp.New(listen(t, "udp4", "127.0.0.1"), []netip.AddrPort{addrOf(b), mapped})
	assert.Error(t, err, "the same peer twice")
}

func TestNoAllocationPerPacket(t *testing.T) {
	a, b := listen(t, "udp4", "127.0.0.1"), listen(t, "udp4", "127.0.0.1")
	ta, err := udp.New(a, []netip.AddrPort{addrOf(b)})
	require.NoError(t, err)
	tb, err := udp.New(b, []netip.AddrPort{addrOf(a)})
	require.NoError(t, err)
	defer ta.Close()
	defer tb.Close()
	payload, buf := make([]byte, 40), make([]byte, udp.MaxDatagram)
	// Poll every 100 µs, blocked on a reused timer: AllocsPerRun runs with
	// GOMAXPROCS=1, and a goroutine that only yields (runtime.Gosched) keeps
	// the scheduler from polling the network, so the reader goroutine would
	// wake only when sysmon polls it, every 10 ms.
	deadline := time.Now().Add(10 * time.Second) // for all 120 round trips
	poll := time.NewTimer(time.Hour)
	defer poll.Stop()
	roundTrip := func() {
		if err := ta.Send(0, payload); err != nil {
			t.Fatal(err)
		}
		for {
			if _, _, ok := tb.Receive(buf); ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the round trips on loopback took more than 10 s")
			}
			poll.Reset(100 * time.Microsecond)
			<-poll.C
		}
	}
	for range 20 {
		roundTrip()
	}
	assert.Zero(t, testing.AllocsPerRun(100, roundTrip))
}

func TestClose(t *testing.T) {
	a := listen(t, "udp4", "127.0.0.1")
	ta, err := udp.New(a, []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9")})
	require.NoError(t, err)
	require.NoError(t, ta.Close())
	assert.ErrorIs(t, ta.Close(), udp.ErrClosed)
	assert.ErrorIs(t, ta.Send(0, []byte("x")), udp.ErrClosed)
	_, err = udp.New(a, []netip.AddrPort{{}})
	assert.Error(t, err)
}

func TestNewRejectsNilConn(t *testing.T) {
	peers := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9")}
	tr, err := udp.New(nil, peers)
	require.ErrorIs(t, err, udp.ErrNilConn, "a nil conn is refused, not read by a goroutine that crashes the process")
	assert.Nil(t, tr)
	tr, err = udp.New((*net.UDPConn)(nil), peers)
	require.ErrorIs(t, err, udp.ErrNilConn, "a nil *net.UDPConn too (it would spin on EINVAL)")
	assert.Nil(t, tr)
}

// The matches below run in real time over loopback sockets, with the wifi
// profile applied by shapers: a few seconds each, in parallel.

func TestRealMatches(t *testing.T) {
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	for _, players := range []int{2, 4} {
		t.Run(fmt.Sprintf("%dp", players), func(t *testing.T) {
			t.Parallel()
			r := match.RunUDP(match.Config{Players: players, Frames: 300, Seed: uint64(players), Profile: p}, match.UDPOptions{})
			require.NoError(t, r.Err)
			require.True(t, r.Completed)
			assert.True(t, r.Verified, r.Desync)
			assert.Positive(t, r.Rollbacks)
			assert.Zero(t, r.PacketsInvalid)
		})
	}
	t.Run("ipv6", func(t *testing.T) {
		t.Parallel()
		if c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
			t.Skipf("no IPv6 loopback: %v", err)
		} else {
			c.Close()
		}
		r := match.RunUDP(match.Config{Players: 2, Frames: 180, Seed: 6, Profile: p}, match.UDPOptions{Network: "udp6"})
		require.NoError(t, r.Err)
		assert.True(t, r.Verified, r.Desync)
	})
	t.Run("peer-crashes", func(t *testing.T) {
		t.Parallel()
		r := match.RunUDP(match.Config{Players: 3, Frames: 300, Seed: 7, Profile: p,
			DropAt: 120, DropMachine: 2, DisconnectTimeout: time.Second}, match.UDPOptions{})
		require.NoError(t, r.Err)
		require.True(t, r.Completed)
		assert.True(t, r.Verified, r.Desync)
		assert.Len(t, r.Checksums, 2)
		assert.InDelta(t, 120, int(r.DisconnectFrame), 20+2) // MaxRollback's default, 20
	})
	t.Run("peer-comes-back-after-2s", func(t *testing.T) {
		t.Parallel()
		r := match.RunUDP(match.Config{Players: 2, Frames: 300, Seed: 8, Profile: p},
			match.UDPOptions{PauseAt: 100, PauseMachine: 1, Pause: 2 * time.Second})
		require.NoError(t, r.Err)
		require.True(t, r.Completed)
		assert.True(t, r.Verified, r.Desync)
		assert.Equal(t, rollback.Frame(-1), r.DisconnectFrame, "2 s of silence is an interruption, not a disconnect")
		assert.Positive(t, r.StallFrames)
	})
}

// TestHostilePacketsOnRealSockets sends every class of bad datagram at a
// live match: from a stranger's socket, and from a peer's own socket
// (datagrams sealed with keys not the link's, a handshake of an earlier
// match, a handshake with a nonce the peer never chose, truncated and
// oversized datagrams, junk). Each is dropped and counted, and the match
// still verifies.
func TestHostilePacketsOnRealSockets(t *testing.T) {
	p, err := netsim.ParseProfile("lan")
	require.NoError(t, err)
	const seed = 11
	share, err := wire.NewKeyShare(match.SeededRand(99, 0))
	require.NoError(t, err)
	handshake := func(session, nonce uint64) []byte {
		b, err := wire.AppendHandshake(nil, &wire.Handshake{Version: wire.Version, SessionID: session, Nonce: nonce, Echo: 5,
			Key: share.Public(), Local: []uint8{1}, Terms: wire.Terms{Players: 2, Owners: []uint8{0, 1}, Layout: []uint8{3, 8, 8}, Mode: 1, TickRate: 60, ChecksumEvery: 500, StartDelay: true}}, nil)
		require.NoError(t, err)
		return b
	}
	body, err := wire.AppendInput(nil, &wire.InputPacket{Ack: 0, First: 0, Count: 3, Players: 1,
		Inputs: []uint64{1, 2, 3}}, wire.Layout{3, 8, 8})
	require.NoError(t, err)
	sealed := append(append([]byte{byte(wire.KindInput) << 4, 0}, body...), 0xde, 0xad, 0xbe, 0xef) // a guessed MAC
	fromPeer := [][]byte{
		sealed,               // not sealed with the link's key
		handshake(seed-1, 4), // a handshake from an earlier match
		handshake(seed, 4),   // this session, a nonce the peer never chose
		sealed[:5],           // truncated
		{0x7f, 1, 2, 3},      // junk
		{},                   // empty
		{byte(wire.KindQuality) << 4, 0x00, 0x91, 0x01, 0xde, 0xad, 0xbe, 0xef}, // a ping with a guessed MAC
	}
	oversized := make([]byte, udp.MaxDatagram+100)
	stranger := listen(t, "udp4", "127.0.0.1")
	defer stranger.Close()
	running := make(chan struct{})
	sent := make(chan bool, 1)
	// The datagrams go once every machine has simulated a frame (the
	// handshake is done); the match then has 2 s left to judge them.
	r := match.RunUDP(match.Config{Players: 2, Frames: 120, Seed: seed, Profile: p}, match.UDPOptions{
		OnStart: func(addrs []netip.AddrPort, conns []*net.UDPConn) {
			go func() {
				select {
				case <-running:
				case <-time.After(10 * time.Second):
					sent <- false
					return
				}
				for _, b := range fromPeer {
					_, _ = conns[1].WriteToUDPAddrPort(b, addrs[0])
				}
				_, _ = conns[1].WriteToUDPAddrPort(oversized, addrs[0])
				_, _ = stranger.WriteToUDPAddrPort(sealed, addrs[0])
				sent <- true
			}()
		},
		OnRunning: func() { close(running) },
	})
	require.True(t, <-sent, "the match was not running within 10 s: nothing was sent")
	require.NoError(t, r.Err)
	require.True(t, r.Completed)
	assert.True(t, r.Verified, r.Desync)
	assert.Equal(t, int64(len(fromPeer)), r.PacketsInvalid, "each bad datagram from the peer's address is dropped and counted")
	assert.Equal(t, int64(2), r.TransportDrops, "the stranger's and the oversized datagram are dropped by the transport")
}

// TestFloodDoesNotStarveAnotherPeer: one peer's address floods the
// transport with far more datagrams than it queues, while the session
// reads nothing; the other peer's datagrams sent after the flood are still
// all delivered. (Before, one queue of 1024 shared by every peer was full
// of the flood and all five were dropped.)
func TestFloodDoesNotStarveAnotherPeer(t *testing.T) {
	a, b, c := listen(t, "udp4", "127.0.0.1"), listen(t, "udp4", "127.0.0.1"), listen(t, "udp4", "127.0.0.1")
	defer b.Close()
	defer c.Close()
	ta, wa := newWatched(t, a, addrOf(b), addrOf(c))
	defer ta.Close()
	// The flood goes in chunks small enough for the kernel's socket buffer,
	// each once the transport has taken the last (queued or dropped by it):
	// what is measured is the transport's queueing, not the kernel's.
	for i := 0; i < 1100; {
		for end := i + 50; i < end; i++ {
			_, err := b.WriteToUDPAddrPort([]byte{byte(i), byte(i >> 8), 0}, addrOf(a))
			require.NoError(t, err)
		}
		wa.until(t, "the transport did not take the flood", func() bool {
			st := ta.Stats()
			return st.QueueFull+st.Waiting == int64(i)
		})
	}
	require.Equal(t, int64(1100-udp.PeerQueue), ta.Stats().QueueFull)
	for i := range 5 {
		_, err := c.WriteToUDPAddrPort([]byte{'c', byte(i)}, addrOf(a))
		require.NoError(t, err)
	}
	buf := make([]byte, udp.MaxDatagram)
	var fromC []string
	wa.until(t, "the honest peer's datagrams did not all arrive", func() bool {
		for {
			n, peer, ok := ta.Receive(buf)
			if !ok {
				return false
			}
			if peer == 1 {
				fromC = append(fromC, string(buf[:n]))
			}
			if len(fromC) == 5 {
				return true
			}
		}
	})
	assert.Equal(t, []string{"c\x00", "c\x01", "c\x02", "c\x03", "c\x04"}, fromC, "every datagram of the honest peer, in order")
}

// scriptConn is a net.PacketConn whose reads return scripted datagrams,
// then block until it is closed.
type scriptConn struct {
	net.PacketConn // nil: only the methods below are used
	script         []scripted
	reads          int // only the transport's reader goroutine reads
	closed         chan struct{}
}

type scripted struct {
	b    []byte
	from netip.AddrPort
}

func (c *scriptConn) ReadFrom(p []byte) (int, net.Addr, error) {
	if k := c.reads; k < len(c.script) {
		c.reads++
		d := c.script[k]
		return copy(p, d.b), net.UDPAddrFromAddrPort(d.from), nil
	}
	<-c.closed
	return 0, nil, net.ErrClosed
}

func (c *scriptConn) Close() error        { close(c.closed); return nil }
func (c *scriptConn) LocalAddr() net.Addr { return &net.UDPAddr{} }

// TestFloodFillsOnlyItsOwnQueue: 1,100 datagrams from peer 0's address,
// then 5 from peer 1's, all read before the session reads any. Every one of
// peer 1's is delivered, and of peer 0's flood its newest PeerQueue. Before,
// the flood filled the single 1,024-datagram queue that every peer shared
// and peer 1's five were dropped.
func TestFloodFillsOnlyItsOwnQueue(t *testing.T) {
	p0, p1 := netip.MustParseAddrPort("10.0.0.1:9"), netip.MustParseAddrPort("10.0.0.2:9")
	conn := &scriptConn{closed: make(chan struct{})}
	for i := range 1100 {
		conn.script = append(conn.script, scripted{[]byte{'a', byte(i), byte(i >> 8)}, p0})
	}
	for i := range 5 {
		conn.script = append(conn.script, scripted{[]byte{'b', byte(i)}, p1})
	}
	tr, w := newWatched(t, conn, p0, p1)
	defer tr.Close()
	// The reader has queued every datagram once it asks for one more.
	w.until(t, "the reader stopped", func() bool { return w.begun.Load() > int64(len(conn.script)) })
	buf := make([]byte, udp.MaxDatagram)
	var from [2][]string
	for {
		n, peer, ok := tr.Receive(buf)
		if !ok {
			break
		}
		from[peer] = append(from[peer], string(buf[:n]))
	}
	assert.Equal(t, []string{"b\x00", "b\x01", "b\x02", "b\x03", "b\x04"}, from[1], "every datagram of the other peer, in order")
	assert.Equal(t, int64(1100-len(from[0])), tr.Stats().QueueFull)
	if assert.NotEmpty(t, from[0]) {
		assert.Equal(t, string([]byte{'a', byte(1099 % 256), byte(1099 >> 8)}), from[0][len(from[0])-1], "the flood's newest kept")
	}
}

// guests is a transport that accepts n guests, with one peer, and sends
// datagrams to it from sockets, waiting each time until its reader has
// taken the datagram (queued or dropped it).
type guests struct {
	t    *testing.T
	tr   *udp.Transport
	w    *watched
	addr netip.AddrPort // the transport's
	peer *net.UDPConn
	sent int64
}

func newGuests(t *testing.T, n int) *guests {
	t.Helper()
	a, b := listen(t, "udp4", "127.0.0.1"), listen(t, "udp4", "127.0.0.1")
	t.Cleanup(func() { b.Close() })
	tr, w := newWatched(t, a, addrOf(b))
	t.Cleanup(func() { tr.Close() })
	require.NoError(t, tr.AcceptGuests(n))
	return &guests{t: t, tr: tr, w: w, addr: addrOf(a), peer: b}
}

// socket returns a new loopback socket, closed when the test ends.
func (g *guests) socket() *net.UDPConn {
	c := listen(g.t, "udp4", "127.0.0.1")
	g.t.Cleanup(func() { c.Close() })
	return c
}

// send sends b from c and waits until the transport's reader has taken it:
// it has begun a read after every datagram sent.
func (g *guests) send(c *net.UDPConn, b []byte) {
	g.t.Helper()
	_, err := c.WriteToUDPAddrPort(b, g.addr)
	require.NoError(g.t, err)
	g.sent++
	g.w.until(g.t, "the transport did not take a datagram", func() bool { return g.w.begun.Load() > g.sent })
}

// receive returns the datagrams waiting, as "index:payload".
func (g *guests) receive() []string {
	var got []string
	buf := make([]byte, udp.MaxDatagram)
	for {
		n, peer, ok := g.tr.Receive(buf)
		if !ok {
			return got
		}
		got = append(got, fmt.Sprintf("%d:%s", peer, buf[:n]))
	}
}

// answer sends b to idx and returns what c read, from the transport's
// address.
func (g *guests) answer(idx int, b string, c *net.UDPConn) string {
	g.t.Helper()
	require.NoError(g.t, g.tr.Send(idx, []byte(b)))
	require.NoError(g.t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	buf := make([]byte, udp.MaxDatagram)
	n, from, err := c.ReadFromUDPAddrPort(buf)
	require.NoError(g.t, err)
	assert.Equal(g.t, g.addr, from)
	return string(buf[:n])
}

func TestGuestsTakeIndexesAfterThePeers(t *testing.T) {
	g := newGuests(t, 2)
	g1, g2 := g.socket(), g.socket()
	g.send(g1, []byte("one"))
	assert.Equal(t, []string{"1:one"}, g.receive(), "the first guest is index len(peers)")
	assert.Equal(t, "to one", g.answer(1, "to one", g1))
	g.send(g2, []byte("two"))
	assert.Equal(t, []string{"2:two"}, g.receive(), "a second address takes the next index")
	assert.Equal(t, "to two", g.answer(2, "to two", g2))
	g.send(g1, []byte("again"))
	g.send(g.peer, []byte("peer"))
	assert.ElementsMatch(t, []string{"1:again", "0:peer"}, g.receive(), "an address keeps its slot; a peer is a peer")
	assert.Equal(t, "to one", g.answer(1, "to one", g1))
	st := g.tr.Stats()
	assert.Equal(t, int64(2), st.Guests)
	assert.Zero(t, st.UnknownAddress)
}

func TestGuestSlotsFull(t *testing.T) {
	g := newGuests(t, 1)
	g1, g2 := g.socket(), g.socket()
	g.send(g1, []byte("a"))
	g.tr.Admit(1)
	g.send(g2, []byte("b"))
	g.send(g2, make([]byte, udp.MaxDatagram+1))
	g.send(g1, []byte("c"))
	assert.Equal(t, []string{"1:a", "1:c"}, g.receive(), "only the guest holding the slot")
	st := g.tr.Stats()
	assert.Equal(t, int64(2), st.UnknownAddress, "a further address is dropped and counted, oversized or not")
	assert.Zero(t, st.Oversized)
	assert.Equal(t, int64(1), st.Guests)
}

func TestOversizedDatagramTakesNoGuestSlot(t *testing.T) {
	g := newGuests(t, 1)
	g1, g2 := g.socket(), g.socket()
	g.send(g1, make([]byte, udp.MaxDatagram+1))
	assert.Equal(t, udp.Stats{Oversized: 1}, g.tr.Stats())
	g.send(g2, []byte("b"))
	g.send(g2, make([]byte, udp.MaxDatagram+1))
	assert.Equal(t, []string{"1:b"}, g.receive())
	assert.Equal(t, udp.Stats{Oversized: 2, Guests: 1}, g.tr.Stats())
}

func TestReleaseFreesAGuestSlot(t *testing.T) {
	g := newGuests(t, 1)
	g1, g2 := g.socket(), g.socket()
	g.send(g1, []byte("a"))
	g.send(g.peer, []byte("p"))
	require.Equal(t, udp.Stats{Waiting: 2, Guests: 1}, g.tr.Stats())
	g.tr.Release(1)
	assert.Equal(t, udp.Stats{Waiting: 1}, g.tr.Stats(), "the slot is free and its datagrams dropped")
	assert.ErrorIs(t, g.tr.Send(1, []byte("x")), udp.ErrPeer)
	for _, idx := range []int{-1, 0, 1, 2} {
		g.tr.Release(idx) // a peer, a free slot, out of range: nothing
	}
	g.send(g2, []byte("b"))
	assert.Equal(t, []string{"0:p", "1:b"}, g.receive(), "the peer's datagram stays; a new address takes the slot")
	assert.Equal(t, "to b", g.answer(1, "to b", g2))
	g.tr.Admit(1)
	g.send(g1, []byte("c"))
	assert.Equal(t, udp.Stats{UnknownAddress: 1, Guests: 1}, g.tr.Stats(), "the released address is a stranger again")
}

func TestAcceptGuestsAndSendErrors(t *testing.T) {
	a := listen(t, "udp4", "127.0.0.1")
	tr, err := udp.New(a, []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9")})
	require.NoError(t, err)
	defer tr.Close()
	assert.Error(t, tr.AcceptGuests(-1))
	assert.Error(t, tr.AcceptGuests(udp.MaxGuests+1))
	assert.ErrorIs(t, tr.Send(1, nil), udp.ErrPeer, "no guest slots")
	require.NoError(t, tr.AcceptGuests(udp.MaxGuests))
	for _, idx := range []int{1, udp.MaxGuests, udp.MaxGuests + 1} {
		assert.ErrorIs(t, tr.Send(idx, nil), udp.ErrPeer, "guest index %d: a free slot or none", idx)
	}
	require.NoError(t, tr.AcceptGuests(0))
	assert.Equal(t, udp.Stats{}, tr.Stats())
}

// TestGuestIdleTakeover: with every slot taken, a new address takes the
// slot silent longest once it has been silent for GuestIdle, and that
// slot's waiting datagrams from the old address are dropped. The
// transport's clock is the test's.
func TestGuestIdleTakeover(t *testing.T) {
	g := newGuests(t, 2)
	var clock atomic.Int64
	base := time.Now()
	udp.SetClock(g.tr, func() time.Time { return base.Add(time.Duration(clock.Load())) })
	at := func(d time.Duration) { clock.Store(int64(d)) }
	g1, g2, g3 := g.socket(), g.socket(), g.socket()

	g.send(g1, []byte("1a")) // slot 0 (index 1), heard at 0
	at(time.Second)
	g.send(g2, []byte("2a")) // slot 1 (index 2), heard at 1 s
	g.tr.Admit(1)
	g.tr.Admit(2)
	at(2 * time.Second)
	g.send(g1, []byte("1b")) // slot 0 heard at 2 s: slot 1 is the oldest
	at(time.Second + udp.GuestIdle - 1)
	g.send(g3, []byte("3a"))
	assert.Equal(t, udp.Stats{UnknownAddress: 1, Waiting: 3, Guests: 2}, g.tr.Stats(), "no slot silent for GuestIdle yet")
	at(time.Second + udp.GuestIdle)
	g.send(g3, []byte("3b"))
	assert.Equal(t, udp.Stats{UnknownAddress: 1, Waiting: 3, Guests: 2}, g.tr.Stats())
	assert.ElementsMatch(t, []string{"1:1a", "1:1b", "2:3b"}, g.receive(), "the oldest slot taken over; its old datagram dropped")
	assert.Equal(t, "to 3", g.answer(2, "to 3", g3), "the index answers its new address")
	g.tr.Admit(2)

	g.send(g2, []byte("2b")) // slot 0 silent 9 s, slot 1 just heard
	assert.Equal(t, int64(2), g.tr.Stats().UnknownAddress)
	at(2*time.Second + udp.GuestIdle)
	g.send(g2, []byte("2c"))
	assert.Equal(t, []string{"1:2c"}, g.receive(), "now slot 0 is silent for GuestIdle and the oldest")
	assert.Equal(t, "to 2", g.answer(1, "to 2", g2))
	g.tr.Admit(1)
	g.send(g1, []byte("1c"))
	assert.Equal(t, udp.Stats{UnknownAddress: 3, Guests: 2}, g.tr.Stats(), "the address that lost its slot is a stranger")
}

// TestStrangersCannotHoldGuestSlots: strangers that send a junk byte
// from each of their addresses every 2 s hold every guest slot; a
// spectator's address still gets one (the slot held longest without being
// admitted), and once the session admits it, no stranger takes it. (Before,
// a slot went to a new address only after 10 s of silence, so the junk
// kept every spectator out.)
func TestStrangersCannotHoldGuestSlots(t *testing.T) {
	g := newGuests(t, 2)
	var clock atomic.Int64
	base := time.Now()
	udp.SetClock(g.tr, func() time.Time { return base.Add(time.Duration(clock.Load())) })
	junk1, junk2, spectator, junk3 := g.socket(), g.socket(), g.socket(), g.socket()
	for s := range 5 {
		clock.Store(int64(2 * time.Duration(s) * time.Second))
		g.send(junk1, []byte("x"))
		g.send(junk2, []byte("y"))
	}
	g.receive()
	g.send(spectator, []byte("hello"))
	assert.Equal(t, []string{"1:hello"}, g.receive(), "the spectator takes the slot held longest by an address not admitted")
	assert.Equal(t, "answer", g.answer(1, "answer", spectator))
	g.tr.Admit(1)
	for _, c := range []*net.UDPConn{junk1, junk3, junk2, junk1} {
		g.send(c, []byte("z"))
	}
	g.send(spectator, []byte("watch"))
	got := g.receive()
	assert.Contains(t, got, "1:watch", "the admitted spectator keeps its slot")
	for _, d := range got {
		assert.True(t, d == "1:watch" || strings.HasPrefix(d, "2:"), "strangers share the slot not admitted: %s", d)
	}
	assert.Equal(t, int64(2), g.tr.Stats().Guests)
}

// TestGuestNoAllocationPerPacket: a round trip between a guest and the
// transport that holds its slot allocates nothing.
func TestGuestNoAllocationPerPacket(t *testing.T) {
	a, b, c := listen(t, "udp4", "127.0.0.1"), listen(t, "udp4", "127.0.0.1"), listen(t, "udp4", "127.0.0.1")
	defer a.Close()
	tb, err := udp.New(b, []netip.AddrPort{addrOf(a)})
	require.NoError(t, err)
	require.NoError(t, tb.AcceptGuests(4))
	tc, err := udp.New(c, []netip.AddrPort{addrOf(b)})
	require.NoError(t, err)
	defer tb.Close()
	defer tc.Close()
	payload, buf := make([]byte, 40), make([]byte, udp.MaxDatagram)
	deadline := time.Now().Add(10 * time.Second) // for all 120 round trips
	poll := time.NewTimer(time.Hour)
	defer poll.Stop()
	wait := func(tr *udp.Transport, want int) {
		for {
			if _, peer, ok := tr.Receive(buf); ok {
				if peer != want {
					t.Fatalf("from index %d, want %d", peer, want)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the round trips on loopback took more than 10 s")
			}
			poll.Reset(100 * time.Microsecond) // see TestNoAllocationPerPacket
			<-poll.C
		}
	}
	roundTrip := func() {
		if err := tc.Send(0, payload); err != nil {
			t.Fatal(err)
		}
		wait(tb, 1)
		if err := tb.Send(1, payload); err != nil {
			t.Fatal(err)
		}
		wait(tc, 0)
	}
	for range 20 {
		roundTrip()
	}
	assert.Zero(t, testing.AllocsPerRun(100, roundTrip))
}
