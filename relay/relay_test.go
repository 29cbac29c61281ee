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
			s := newStar(t, 3)
			require.NoError(t, s.nw.Endpoint(0).Send(2, tc.b)) // node 0's peer 2 is the relay, node 3
			s.step()
			require.Equal(t, int64(1), s.r.Stats().Malformed)
			require.Equal(t, int64(0), s.r.Stats().Forwarded)
			require.Empty(t, drain(s.clients[1]))
			require.Empty(t, drain(s.clients[2]))
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
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > netsim.MTU {
			return
		}
		s := newStar(t, 3)
		require.NoError(t, s.nw.Endpoint(0).Send(2, b))
		s.step()
		st := s.r.Stats()
		require.Equal(t, int64(1), st.EnvelopesIn+st.Malformed)
		// Whatever was forwarded arrives whole, from machine 0's slot.
		total := 0
		for _, m := range []int{1, 2} {
			for _, g := range drain(s.clients[m]) {
				require.Equal(t, 0, g.peer)
				total += len(g.b)
			}
		}
		if st.EnvelopesIn == 1 {
			require.Less(t, total, len(b))
		} else {
			require.Zero(t, total)
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
