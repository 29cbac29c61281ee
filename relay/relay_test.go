package relay_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// star is n machines and a relay, node n, on a perfect netsim network.
type star struct {
	nw      *netsim.Network
	r       *relay.Relay
	clients []*relay.Client
	from    [][]int // by machine: the netsim node of every datagram it received
}

func newStar(t testing.TB, n int) *star {
	t.Helper()
	nw, err := netsim.New(n+1, 1, netsim.Profile{})
	require.NoError(t, err)
	s := &star{nw: nw, from: make([][]int, n)}
	s.r, err = relay.New(relay.Config{Machines: n, Link: nw.Endpoint(n)})
	require.NoError(t, err)
	for i := range n {
		c, err := relay.NewClient(spy{nw.Endpoint(i), &s.from[i], i}, n-1, i, n)
		require.NoError(t, err)
		s.clients = append(s.clients, c)
	}
	return s
}

// spy records the node each datagram a machine receives comes from.
type spy struct {
	ep   *netsim.Endpoint
	from *[]int
	self int
}

func (s spy) Send(peer int, b []byte) error { return s.ep.Send(peer, b) }

func (s spy) Receive(buf []byte) (n, peer int, ok bool) {
	n, peer, ok = s.ep.Receive(buf)
	if ok {
		node := peer
		if node >= s.self {
			node++
		}
		*s.from = append(*s.from, node)
	}
	return n, peer, ok
}

// step flushes the clients, lets a tick pass and polls the relay, then
// lets the relay's envelopes arrive.
func (s *star) step() {
	for _, c := range s.clients {
		_ = c.Flush()
	}
	s.nw.Advance(time.Second / 60)
	s.r.Poll(s.nw.Now())
	s.nw.Advance(time.Millisecond)
}

type got struct {
	peer int
	b    string
}

func drain(c *relay.Client) []got {
	var out []got
	buf := make([]byte, 2048)
	for {
		n, peer, ok := c.Receive(buf)
		if !ok {
			return out
		}
		out = append(out, got{peer, string(buf[:n])})
	}
}

func TestRelayForwardsNamingTheSender(t *testing.T) {
	s := newStar(t, 3)
	// Machine 1's peers are slots 0 and 2; machine 0's are 1 and 2.
	require.NoError(t, s.clients[1].Send(0, []byte("1 to 0")))
	require.NoError(t, s.clients[1].Send(1, []byte("1 to 2")))
	require.NoError(t, s.clients[0].Send(1, []byte("0 to 2")))
	s.step()
	require.Equal(t, []got{{0, "1 to 0"}}, drain(s.clients[0]))
	require.Empty(t, drain(s.clients[1]))
	// Machine 2's peer 0 is slot 0, peer 1 slot 1, in one envelope in the
	// order the relay received them (machine 0 flushed first).
	require.Equal(t, []got{{0, "0 to 2"}, {1, "1 to 2"}}, drain(s.clients[2]))
	st := s.r.Stats()
	require.Equal(t, int64(2), st.EnvelopesIn)
	require.Equal(t, int64(3), st.Forwarded)
	require.Equal(t, int64(2), st.EnvelopesOut, "one envelope per destination")
}

func TestOneDatagramPerTickEachWay(t *testing.T) {
	const n = 4
	s := newStar(t, n)
	for tick := range 10 {
		for i, c := range s.clients {
			for p := range n - 1 {
				for k := range 3 { // three datagrams to each peer in a tick
					require.NoError(t, c.Send(p, []byte{byte(i), byte(p), byte(k), byte(tick)}))
				}
			}
		}
		s.step()
		for _, c := range s.clients {
			require.Len(t, drain(c), 3*(n-1))
		}
	}
	for i := range n {
		up, down := s.nw.Link(i, n), s.nw.Link(n, i)
		require.Equal(t, 10, up.Sent, "machine %d sent one envelope a tick", i)
		require.Equal(t, 10, down.Sent, "machine %d got one envelope a tick", i)
	}
	require.Equal(t, int64(10*n*(n-1)*3), s.r.Stats().Forwarded)
}

func TestAMachineHearsOnlyTheRelay(t *testing.T) {
	const n = 5
	s := newStar(t, n)
	for tick := range 20 {
		for i, c := range s.clients {
			require.NoError(t, c.Send((i+tick)%(n-1), []byte{byte(i)}))
		}
		s.step()
		for _, c := range s.clients {
			drain(c)
		}
	}
	for i := range n {
		require.NotEmpty(t, s.from[i])
		for _, node := range s.from[i] {
			require.Equal(t, n, node, "machine %d received a datagram from node %d", i, node)
		}
	}
}

func TestLargeBatchesSplit(t *testing.T) {
	s := newStar(t, 2)
	big := bytes.Repeat([]byte{7}, 1200)
	for range 5 {
		require.NoError(t, s.clients[0].Send(0, big))
	}
	s.step()
	require.Len(t, drain(s.clients[1]), 5)
	require.Equal(t, 5, s.nw.Link(0, 2).Sent)
	require.Equal(t, 5, s.nw.Link(2, 1).Sent)
	require.LessOrEqual(t, s.nw.Link(2, 1).Bytes, 5*relay.MaxDatagram)
	require.ErrorIs(t, s.clients[0].Send(0, make([]byte, relay.MaxDatagram)), relay.ErrTooLarge)
	require.ErrorIs(t, s.clients[0].Send(1, big), relay.ErrSlot)
	require.ErrorIs(t, s.clients[0].Send(0, nil), relay.ErrTooLarge)
}

func TestMalformedEnvelopesDropped(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", []byte{}},
		{"kind only", []byte{0xe1}},
		{"wrong kind", []byte{0xe2, 1, 1, 'x'}},
		{"to itself", []byte{0xe1, 0, 1, 'x'}},
		{"slot out of range", []byte{0xe1, 3, 1, 'x'}},
		{"truncated", []byte{0xe1, 1, 2, 'x'}},
		{"zero length", []byte{0xe1, 1, 0}},
		{"long length form", []byte{0xe1, 1, 0x81, 0x00, 'x'}},
		{"good then bad", []byte{0xe1, 1, 1, 'x', 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := requireDropped(t, tc.b)
			require.Equal(t, int64(0), s.r.Stats().Forwarded)
		})
	}
}

func TestClientDropsWhatIsNotFromTheRelay(t *testing.T) {
	s := newStar(t, 3)
	// Node 1 sends node 0 an envelope directly (node 1 is node 0's peer 0),
	// then the relay sends one that is malformed (slot 0 is node 0's own).
	require.NoError(t, s.nw.Endpoint(1).Send(0, []byte{0xe1, 1, 1, 'x'}))
	require.NoError(t, s.nw.Endpoint(3).Send(0, []byte{0xe1, 0, 1, 'x'}))
	s.nw.Advance(time.Millisecond)
	require.Empty(t, drain(s.clients[0]))
	require.Equal(t, int64(2), s.clients[0].Stats().Dropped)
}

func TestRelayFlushesOncePerTick(t *testing.T) {
	s := newStar(t, 2)
	start := s.nw.Now()
	s.r.Poll(start) // the first flush is due at the first Poll
	for ms := range 50 {
		require.NoError(t, s.clients[0].Send(0, []byte{byte(ms)}))
		_ = s.clients[0].Flush()
		s.nw.Advance(time.Millisecond)
		s.r.Poll(s.nw.Now())
	}
	// 50 ms: flushes at 16.7, 33.3 and 50 ms (the one at 0 had nothing).
	require.Equal(t, 3, s.nw.Link(2, 1).Sent)
	require.Equal(t, int64(50), s.r.Stats().Forwarded)
}

func TestConfigChecked(t *testing.T) {
	nw, err := netsim.New(2, 1, netsim.Profile{})
	require.NoError(t, err)
	for _, c := range []relay.Config{{Machines: 1, Link: nw.Endpoint(0)}, {Machines: 2}, {Machines: 256, Link: nw.Endpoint(0)}, {Machines: 2, Link: nw.Endpoint(0), Tick: -1}} {
		_, err := relay.New(c)
		require.ErrorIs(t, err, relay.ErrConfig)
	}
	for _, a := range [][3]int{{-1, 0, 2}, {1, 2, 2}, {1, 0, 1}, {1, -1, 2}} {
		_, err := relay.NewClient(nw.Endpoint(0), a[0], a[1], a[2])
		require.ErrorIs(t, err, relay.ErrConfig)
	}
	_, err = relay.NewClient(nil, 0, 0, 2)
	require.ErrorIs(t, err, relay.ErrConfig)
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	s := newStar(t, 4)
	payload := bytes.Repeat([]byte{1}, 40)
	buf := make([]byte, 2048)
	round := func() {
		for _, c := range s.clients {
			for p := range 3 {
				_ = c.Send(p, payload)
			}
		}
		s.step()
		for _, c := range s.clients {
			for {
				if _, _, ok := c.Receive(buf); !ok {
					break
				}
			}
		}
	}
	round()
	require.Zero(t, testing.AllocsPerRun(100, round))
}

func FuzzEnvelope(f *testing.F) {
	f.Add([]byte{0xe1, 1, 1, 'x'})
	f.Add([]byte{0xe1, 1, 1, 'x', 2, 2, 'y', 'z'})
	f.Add([]byte{0xe1, 1, 0x80, 0x01})
	f.Add([]byte{0xe1, 1, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 0xff, 2, 5, 1, 'x', 8, 8, 'y'})
	f.Add([]byte{0xe1, 1, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 0xff, 2, 0, 'x', 'y', '1', '2', '3', '4'})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > netsim.MTU {
			return
		}
		s := newStar(t, 3)
		require.NoError(t, s.nw.Endpoint(0).Send(2, b))
		s.step()
		st := s.r.Stats()
		require.Equal(t, int64(1), st.EnvelopesIn+st.Malformed)
		// Whatever was forwarded arrives whole, from machine 0's slot; no
		// larger than its envelope unless rebuilt from copies.
		total, got := 0, int64(0)
		for _, m := range []int{1, 2} {
			for _, g := range drain(s.clients[m]) {
				require.Equal(t, 0, g.peer)
				total += len(g.b)
				got++
			}
		}
		require.Equal(t, st.Forwarded, got)
		switch {
		case st.EnvelopesIn == 0:
			require.Zero(t, total)
		case st.Rebuilt == 0:
			require.Less(t, total, len(b))
		}
	})
}

func TestClientMovesToAnotherRelay(t *testing.T) {
	// Nodes 0 and 1 are machines, 2 and 3 relays.
	nw, err := netsim.New(4, 1, netsim.Profile{})
	require.NoError(t, err)
	var relays [2]*relay.Relay
	for k := range relays {
		relays[k], err = relay.New(relay.Config{Machines: 2, Link: nw.Endpoint(2 + k)})
		require.NoError(t, err)
	}
	var clients [2]*relay.Client
	for i := range clients {
		clients[i], err = relay.NewClient(nw.Endpoint(i), 1, i, 2) // node 2 is each machine's peer 1
		require.NoError(t, err)
	}
	exchange := func(b byte) []got {
		require.NoError(t, clients[0].Send(0, []byte{b}))
		require.NoError(t, clients[0].Flush())
		nw.Advance(time.Second / 60)
		for _, r := range relays {
			r.Poll(nw.Now())
		}
		nw.Advance(time.Millisecond)
		return drain(clients[1])
	}
	require.Equal(t, []got{{0, "\x01"}}, exchange(1))
	require.Equal(t, int64(1), relays[0].Stats().Forwarded)
	for i, c := range clients {
		require.NoError(t, c.Move(nw.Endpoint(i), 2)) // node 3 is each machine's peer 2
	}
	require.Equal(t, []got{{0, "\x02"}}, exchange(2))
	require.Equal(t, int64(1), relays[0].Stats().Forwarded)
	require.Equal(t, int64(1), relays[1].Stats().Forwarded)
	require.ErrorIs(t, clients[0].Move(nil, 0), relay.ErrConfig)
	require.ErrorIs(t, clients[0].Move(nw.Endpoint(0), -1), relay.ErrConfig)
}

// statementLike is what a session sends each peer in one Advance with
// statements: a per-pair header and echo, the same 66 bytes of signed
// statement, a per-pair input packet and seal.
func statementLike(peer, tick int) []byte {
	b := []byte{0xc0 | byte(peer), byte(tick), byte(peer * 7), byte(tick * 3)}
	for k := range 66 {
		b = append(b, byte(tick*31+k*17))
	}
	return append(b, byte(peer), 0x10, byte(tick), 9, 8, 7, byte(peer+tick))
}

func TestCopyRecordsRebuildByteForByte(t *testing.T) {
	const n = 4
	s := newStar(t, n)
	for tick := range 5 {
		for _, c := range s.clients {
			for p := range n - 1 {
				require.NoError(t, c.Send(p, statementLike(p, tick)))
			}
		}
		s.step()
		for i, c := range s.clients {
			var want []got
			for from := range n {
				if from == i {
					continue
				}
				p := i // i's slot is peer i of a machine before it, i-1 after it
				if from < i {
					p = i - 1
				}
				peer := from // from's slot is peer from of i below i, from-1 above
				if from > i {
					peer = from - 1
				}
				want = append(want, got{peer, string(statementLike(p, tick))})
			}
			require.Equal(t, want, drain(c), "machine %d, tick %d", i, tick)
		}
	}
	plain := 1 + 3*(2+len(statementLike(0, 0)))
	for i, c := range s.clients {
		st := c.Stats()
		require.Equal(t, int64(2*5), st.Copies, "machine %d: the second and third datagram of each tick copy the first", i)
		require.Less(t, st.BytesOut, int64(5*(plain-2*60)), "machine %d: each copy saves the 66 bytes less its cost", i)
	}
	require.Equal(t, int64(n*2*5), s.r.Stats().Rebuilt)
	require.Equal(t, int64(n*3*5), s.r.Stats().Forwarded)
}

func TestCopyRecordsRandom(t *testing.T) {
	const n = 5
	s := newStar(t, n)
	rng := uint64(1)
	next := func(k int) int {
		rng = rng*6364136223846793005 + 1442695040888963407
		return int(rng>>33) % k
	}
	shared := make([]byte, 300)
	for tick := range 200 {
		for k := range shared {
			shared[k] = byte(next(4)) // few values: many short runs alike too
		}
		sent := make([][]got, n)
		for i, c := range s.clients {
			var last []byte
			for range next(6) {
				p := next(n - 1)
				lo := next(len(shared))
				hi := lo + next(len(shared)-lo+1)
				b := append([]byte{byte(i), byte(tick)}, shared[lo:hi]...)
				b = append(b, byte(next(256)))
				if next(3) == 0 && len(last) > 0 { // the last one's middle, other ends
					b = append([]byte{byte(next(256)), byte(next(256))}, last[2:len(last)-4]...)
					b = append(b, byte(next(256)), byte(next(256)), byte(next(256)), byte(next(256)))
				}
				if len(b) >= 6 {
					last = b
				}
				require.NoError(t, c.Send(p, b))
				to := p
				if p >= i {
					to = p + 1
				}
				from := i
				if i > to {
					from = i - 1
				}
				sent[to] = append(sent[to], got{from, string(b)})
			}
			require.NoError(t, c.Flush())
		}
		s.nw.Advance(time.Second / 60)
		s.r.Poll(s.nw.Now())
		s.nw.Advance(time.Millisecond)
		for i, c := range s.clients {
			// Per sender in order; senders in the order they flushed.
			require.Equal(t, sent[i], drain(c), "machine %d, tick %d", i, tick)
		}
	}
	require.Zero(t, s.r.Stats().Malformed)
	require.NotZero(t, s.r.Stats().Rebuilt)
}

func TestMalformedCopyRecordsDropped(t *testing.T) {
	// Machine 0 of 3 sends the relay: a plain record "abcdefgh" for slot
	// 1 at position 1 (its datagram at 3 to 10), then a copy record at
	// position 11 for slot 2: "x", a copy of back bytes from position 11,
	// n long, then "y".
	cp := func(slot, back, n byte) []byte {
		return []byte{0xe1, 1, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 0xff, slot, 5, 1, 'x', back, n, 'y'}
	}
	s := newStar(t, 3)
	require.NoError(t, s.nw.Endpoint(0).Send(2, cp(2, 8, 8)))
	s.step()
	require.Equal(t, []got{{0, "xabcdefghy"}}, drain(s.clients[2]))
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"copy of nothing", cp(2, 8, 0)},
		{"copy past its record", cp(2, 8, 9)},
		{"copy of the kind byte", cp(2, 11, 8)},
		{"copy before the envelope", cp(2, 12, 1)},
		{"copy to itself", cp(0, 8, 8)},
		{"copy out of range", cp(3, 8, 8)},
		{"copy record truncated", cp(2, 8, 8)[:18]},
		{"long form", []byte{0xe1, 1, 1, 'a', 0xff, 2, 0x84, 0x00, 0, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) { requireDropped(t, tc.b) })
	}
	// The relay never sends a copy record: a client drops one.
	s = newStar(t, 3)
	require.NoError(t, s.nw.Endpoint(3).Send(0, []byte{0xe1, 1, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 0xff, 2, 4, 0, 10, 8, 'y'}))
	s.nw.Advance(time.Millisecond)
	require.Empty(t, drain(s.clients[0]))
	require.Equal(t, int64(1), s.clients[0].Stats().Dropped)
}

// requireDropped sends envelope b from machine 0 to the relay of a match
// of 3 (node 0's peer 2 is the relay, node 3), and requires the relay to
// count it malformed and forward nothing of it.
func requireDropped(t *testing.T, b []byte) *star {
	t.Helper()
	s := newStar(t, 3)
	require.NoError(t, s.nw.Endpoint(0).Send(2, b))
	s.step()
	require.Equal(t, int64(1), s.r.Stats().Malformed)
	require.Empty(t, drain(s.clients[1]))
	require.Empty(t, drain(s.clients[2]))
	return s
}

// sealedLike is a sealed datagram to peer: its own header and MAC around
// a body the same for every peer.
func sealedLike(peer, tick int, body string) []byte {
	return append(append([]byte{0x10 | byte(peer), byte(tick)}, body...), byte(peer), 2, 3, byte(tick))
}

func TestResealRecords(t *testing.T) {
	const n = 4
	s := newStar(t, n)
	body := "a body of input"
	for tick := range 3 {
		for _, c := range s.clients {
			for p := range n - 1 {
				require.NoError(t, c.Send(p, sealedLike(p, tick, body)))
			}
		}
		s.step()
		for i, c := range s.clients {
			var want []got
			for from := range n {
				if from == i {
					continue
				}
				p, peer := i, from
				if from < i {
					p = i - 1
				}
				if from > i {
					peer = from - 1
				}
				want = append(want, got{peer, string(sealedLike(p, tick, body))})
			}
			require.Equal(t, want, drain(c), "machine %d, tick %d", i, tick)
		}
	}
	size := len(sealedLike(0, 0, body))
	for i, c := range s.clients {
		st := c.Stats()
		require.Equal(t, int64(2*3), st.Copies, "machine %d", i)
		// Each tick: the kind byte, one plain record, two short reseal
		// records of 7 bytes (each to the slot after the one before).
		require.Equal(t, int64(3*(1+2+size+2*7)), st.BytesOut, "machine %d", i)
	}
	require.Equal(t, int64(n*2*3), s.r.Stats().Rebuilt)
}

func TestMalformedResealRecordsDropped(t *testing.T) {
	plain := []byte{0xe1, 1, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'} // a middle: "cd"
	reseal := []byte{0xff, 2, 0, 'x', 'y', '1', '2', '3', '4'}
	s := newStar(t, 3)
	require.NoError(t, s.nw.Endpoint(0).Send(2, append(append([]byte{}, plain...), reseal...)))
	s.step()
	require.Equal(t, []got{{0, "abcdefgh"}}, drain(s.clients[1]))
	require.Equal(t, []got{{0, "xycd1234"}}, drain(s.clients[2]))
	// A short reseal record goes to the slot after the previous record's:
	// from machine 0 after slot 1, to slot 2; from machine 1 after slot 0,
	// to slot 2 (its own skipped).
	short := []byte{0xfe, 'x', 'y', '1', '2', '3', '4'}
	require.NoError(t, s.nw.Endpoint(0).Send(2, append(append([]byte{}, plain...), short...)))
	plain0 := []byte{0xe1, 0, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}
	require.NoError(t, s.nw.Endpoint(1).Send(2, append(append([]byte{}, plain0...), short...)))
	s.step()
	require.Equal(t, []got{{0, "abcdefgh"}}, drain(s.clients[1]))
	require.Equal(t, []got{{0, "abcdefgh"}}, drain(s.clients[0]))
	require.Equal(t, []got{{0, "xycd1234"}, {1, "xycd1234"}}, drain(s.clients[2]))
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"short, nothing before", append([]byte{0xe1}, short...)},
		{"short, past the last slot", append([]byte{0xe1, 2, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}, short...)},
		{"short, truncated", append(append([]byte{}, plain...), short[:6]...)},
		{"short, after a copy record", append([]byte{0xe1, 1, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 0xff, 1, 5, 1, 'x', 8, 8, 'y'}, short...)},
		{"nothing before", append([]byte{0xe1}, reseal...)},
		{"after a short datagram", append([]byte{0xe1, 1, 6, 'a', 'b', 'c', 'd', 'e', 'f'}, reseal...)},
		{"after a copy record", append([]byte{0xe1, 1, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 0xff, 2, 5, 1, 'x', 8, 8, 'y'}, reseal...)},
		{"truncated", append(append([]byte{}, plain...), reseal[:8]...)},
		{"to itself", append(append([]byte{}, plain...), 0xff, 0, 0, 'x', 'y', '1', '2', '3', '4')},
	} {
		t.Run(tc.name, func(t *testing.T) { requireDropped(t, tc.b) })
	}
}

// TestCopiesAreNoAmplifier: the relay refuses an envelope whose datagrams,
// rebuilt, come to more than the sender's envelope once for each other
// machine (a reseal record of 9 bytes may stand for 1,396); a client stays
// within it, sending a datagram whole when a copy would pass it.
func TestCopiesAreNoAmplifier(t *testing.T) {
	body := string(bytes.Repeat([]byte{'m'}, 100))
	env := append([]byte{0xe1, 1, 106}, sealedLike(0, 0, body)...)
	for range 3 { // 109 + 3*9 = 136 bytes standing for 4*106 = 424 > 2*136
		env = append(env, 0xff, 2, 0, 0x10, 0, 1, 2, 3, 4)
	}
	s := newStar(t, 3)
	require.NoError(t, s.nw.Endpoint(0).Send(2, env))
	s.step()
	require.Equal(t, int64(1), s.r.Stats().Malformed)
	require.Empty(t, drain(s.clients[2]))

	s = newStar(t, 3)
	var want [2][]got
	for k := range 8 {
		b := sealedLike(k%2, k, body)
		require.NoError(t, s.clients[0].Send(k%2, b))
		want[k%2] = append(want[k%2], got{0, string(b)})
	}
	s.step()
	require.Zero(t, s.r.Stats().Malformed)
	require.Equal(t, want[0], drain(s.clients[1]))
	require.Equal(t, want[1], drain(s.clients[2]))
	st := s.clients[0].Stats()
	require.Positive(t, st.Copies)
	require.Less(t, st.Copies, int64(7), "some went whole")
	require.LessOrEqual(t, s.r.Stats().BytesOut, 2*st.BytesOut)
}
