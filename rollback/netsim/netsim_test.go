package netsim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/netsim"
)

const tick = time.Second / 60

// trace sends one numbered packet per tick from node 0 to node 1 and from 1
// to 0 for n ticks, and returns what each node received, tick by tick.
func trace(t *testing.T, seed uint64, p netsim.Profile, n int) []string {
	t.Helper()
	nw, err := netsim.New(2, seed, p)
	require.NoError(t, err)
	var out []string
	buf := make([]byte, netsim.MTU)
	for i := range n {
		for node := range 2 {
			require.NoError(t, nw.Endpoint(node).Send(0, []byte{byte(node), byte(i), byte(i >> 8)}))
		}
		nw.Advance(tick)
		for node := range 2 {
			for {
				m, peer, ok := nw.Endpoint(node).Receive(buf)
				if !ok {
					break
				}
				require.Equal(t, 0, peer)
				require.Equal(t, 3, m)
				require.Equal(t, byte(1-node), buf[0], "delivered to the right node")
				out = append(out, fmt.Sprintf("t%d n%d got %d", i, node, int(buf[1])|int(buf[2])<<8))
			}
		}
	}
	return out
}

func TestSameSeedSameDeliveries(t *testing.T) {
	p, err := netsim.ParseProfile("hell")
	require.NoError(t, err)
	a := trace(t, 7, p, 2000)
	b := trace(t, 7, p, 2000)
	c := trace(t, 8, p, 2000)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c, "another seed gives another network")
}

func TestImpairments(t *testing.T) {
	p := netsim.Profile{Latency: 50 * time.Millisecond, Jitter: 20 * time.Millisecond,
		Loss: 0.1, Duplicate: 0.05, Reorder: 0.05, BurstLoss: 0.01, BurstLength: 5}
	nw, err := netsim.New(2, 1, p)
	require.NoError(t, err)
	buf := make([]byte, 8)
	const n = 20000
	sentAt := map[int]time.Duration{}
	last, reordered := -1, 0
	for i := range n {
		sentAt[i] = nw.Now()
		require.NoError(t, nw.Endpoint(0).Send(0, []byte{byte(i), byte(i >> 8)}))
		nw.Advance(time.Millisecond)
		for {
			_, _, ok := nw.Endpoint(1).Receive(buf)
			if !ok {
				break
			}
			id := int(buf[0]) | int(buf[1])<<8
			delay := nw.Now() - sentAt[id]
			require.GreaterOrEqual(t, delay, p.Latency)
			if id < last {
				reordered++
			}
			last = max(last, id)
		}
	}
	s := nw.Link(0, 1)
	assert.Equal(t, n, s.Sent)
	lossRate := float64(s.Lost) / n
	assert.InDelta(t, 0.1+0.01*5*0.9, lossRate, 0.04, "random plus burst loss")
	assert.InDelta(t, 0.05, float64(s.Duplicated)/n, 0.01)
	assert.Positive(t, reordered)
	assert.Equal(t, s.Delivered, nw.Total().Delivered)
}

func TestPerfectNetworkDeliversAtNextAdvance(t *testing.T) {
	nw, err := netsim.New(3, 1, netsim.Profile{})
	require.NoError(t, err)
	require.NoError(t, nw.Endpoint(2).Send(1, []byte("hi"))) // node 2's peer 1 is node 1
	buf := make([]byte, 8)
	_, _, ok := nw.Endpoint(1).Receive(buf)
	assert.True(t, ok, "zero latency means due now")
	assert.Equal(t, "hi", string(buf[:2]))

	require.NoError(t, nw.Endpoint(0).Send(1, []byte("x"))) // node 0's peer 1 is node 2
	_, peer, ok := nw.Endpoint(2).Receive(buf)
	require.True(t, ok)
	assert.Equal(t, 0, peer, "node 2's peer 0 is node 0")
}

func TestErrors(t *testing.T) {
	_, err := netsim.New(0, 1, netsim.Profile{})
	assert.ErrorIs(t, err, netsim.ErrNodes)
	_, err = netsim.New(2, 1, netsim.Profile{Loss: 2})
	assert.ErrorIs(t, err, netsim.ErrProfile)
	nw, err := netsim.New(2, 1, netsim.Profile{})
	require.NoError(t, err)
	assert.ErrorIs(t, nw.Endpoint(0).Send(1, nil), netsim.ErrPeer)
	assert.ErrorIs(t, nw.Endpoint(0).Send(-1, nil), netsim.ErrPeer)
	assert.ErrorIs(t, nw.Endpoint(0).Send(0, make([]byte, netsim.MTU+1)), netsim.ErrTooLarge)
	assert.Nil(t, nw.Endpoint(2))
}

func TestParseProfile(t *testing.T) {
	cases := []struct {
		in   string
		want netsim.Profile
		err  bool
	}{
		{in: "latency=80ms,jitter=10ms,loss=2%,dup=1%,reorder=1%", want: netsim.Profile{
			Latency: 80 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.02, Duplicate: 0.01, Reorder: 0.01}},
		{in: "loss=0.5,burst=1%,burstlen=3,reorderdelay=5ms", want: netsim.Profile{
			Loss: 0.5, BurstLoss: 0.01, BurstLength: 3, ReorderDelay: 5 * time.Millisecond}},
		{in: "lan", want: netsim.Presets[0].Profile},
		{in: "moon", err: true},
		{in: "latency=fast", err: true},
		{in: "loss=200%", err: true},
		{in: "colour=blue", err: true},
		{in: "latency", err: true},
		{in: "latency=1ms,,", err: true},
		{in: "jitter=-5ms", err: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := netsim.ParseProfile(tc.in)
			if tc.err {
				assert.ErrorIs(t, err, netsim.ErrProfile)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	for _, pr := range netsim.Presets {
		assert.NoError(t, pr.Profile.Validate(), pr.Name)
	}
}

func TestNoAllocsInSteadyState(t *testing.T) {
	nw, err := netsim.New(2, 1, netsim.Presets[1].Profile)
	require.NoError(t, err)
	payload, buf := make([]byte, 40), make([]byte, netsim.MTU)
	step := func() {
		_ = nw.Endpoint(0).Send(0, payload)
		_ = nw.Endpoint(1).Send(0, payload)
		nw.Advance(tick)
		for _, n := range []int{0, 1} {
			for {
				if _, _, ok := nw.Endpoint(n).Receive(buf); !ok {
					break
				}
			}
		}
	}
	for range 200 {
		step()
	}
	assert.Zero(t, testing.AllocsPerRun(500, step))
}

// TestReliable: in the TCP model every packet arrives once and in order
// even on a lossy, duplicating, reordering link; a lost packet arrives two
// round trips late and holds back those sent after it.
func TestReliable(t *testing.T) {
	p := netsim.Profile{Latency: 100 * time.Millisecond, Loss: 0.05, Duplicate: 0.05, Reorder: 0.05}
	nw, err := netsim.New(2, 3, p)
	require.NoError(t, err)
	nw.Reliable()
	const n = 3000
	sentAt := make([]time.Duration, n)
	buf := make([]byte, 8)
	next, blocked := 0, 0
	var worst time.Duration
	receive := func() {
		for {
			_, _, ok := nw.Endpoint(1).Receive(buf)
			if !ok {
				return
			}
			id := int(buf[0]) | int(buf[1])<<8
			require.Equal(t, next, id, "in order, exactly once")
			d := nw.Now() - sentAt[id]
			require.GreaterOrEqual(t, d, p.Latency)
			worst = max(worst, d)
			if d > p.Latency+20*time.Millisecond { // more than the reorder delay and a step
				blocked++
			}
			next++
		}
	}
	for i := range n {
		sentAt[i] = nw.Now()
		require.NoError(t, nw.Endpoint(0).Send(0, []byte{byte(i), byte(i >> 8)}))
		nw.Advance(5 * time.Millisecond)
		receive()
	}
	for range 1000 {
		nw.Advance(10 * time.Millisecond)
		receive()
	}
	lost := nw.Link(0, 1).Lost
	assert.Equal(t, n, next, "nothing lost for good")
	assert.InDelta(t, 0.05*n, lost, 0.025*n, "transmissions lost (and retransmitted)")
	assert.GreaterOrEqual(t, worst, p.Latency+400*time.Millisecond, "a retransmission waits two round trips of 200 ms")
	assert.Greater(t, blocked, 5*lost, "head-of-line blocking: each loss holds back the packets behind it")
	assert.Zero(t, nw.Link(0, 1).Duplicated)
}

// TestAddNode: a node added later talks to the others like any node, and
// the links between the first nodes keep their fates: the same seed gives
// them the same losses and delays with or without the newcomer's traffic.
func TestAddNode(t *testing.T) {
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	run := func(add bool) []string {
		nw, err := netsim.New(2, 7, p)
		require.NoError(t, err)
		var out []string
		buf := make([]byte, netsim.MTU)
		for i := range 600 {
			if add && i == 100 {
				require.Equal(t, 2, nw.AddNode())
				require.Equal(t, 3, nw.Nodes())
			}
			require.NoError(t, nw.Endpoint(0).Send(0, []byte{0, byte(i), byte(i >> 8)}))
			if nw.Nodes() == 3 {
				require.NoError(t, nw.Endpoint(2).Send(0, []byte{2, byte(i), byte(i >> 8)})) // to node 0
				require.NoError(t, nw.Endpoint(0).Send(1, []byte{9}))                        // to node 2
			}
			nw.Advance(tick)
			for {
				m, peer, ok := nw.Endpoint(1).Receive(buf)
				if !ok {
					break
				}
				out = append(out, fmt.Sprintf("t%d from %d: % x", i, peer, buf[:m]))
			}
			for node := 0; node < nw.Nodes(); node += 2 {
				for _, _, ok := nw.Endpoint(node).Receive(buf); ok; _, _, ok = nw.Endpoint(node).Receive(buf) {
				}
			}
		}
		if add {
			assert.Positive(t, nw.Link(2, 0).Delivered, "the added node's packets arrive")
			assert.Positive(t, nw.Link(0, 2).Delivered)
		}
		return out
	}
	without := run(false)
	assert.NotEmpty(t, without)
	assert.Equal(t, without, run(true))
}

// TestInjectAndTap: Tap sees what nodes send, never what is injected; an
// injected datagram arrives after the fixed latency, marked as injected,
// and leaves the genuine traffic's fate unchanged.
func TestInjectAndTap(t *testing.T) {
	p := netsim.Profile{Latency: 10 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.3}
	deliveries := func(inject bool) []string {
		nw, err := netsim.New(3, 4, p)
		require.NoError(t, err)
		var tapped int
		nw.Tap = func(from, to int, b []byte) {
			assert.Equal(t, 0, from)
			assert.Equal(t, 2, to)
			tapped++
		}
		buf := make([]byte, netsim.MTU)
		var got []string
		for i := range 100 {
			require.NoError(t, nw.Endpoint(0).Send(1, []byte{byte(i)})) // node 0's peer 1 is node 2
			if inject {
				require.NoError(t, nw.Inject(1, 2, []byte{0xff, byte(i)}))
			}
			nw.Advance(tick)
			for {
				n, peer, ok := nw.Endpoint(2).Receive(buf)
				if !ok {
					break
				}
				if nw.Endpoint(2).Injected() {
					assert.Equal(t, 1, peer, "as if from node 1")
					assert.Equal(t, []byte{0xff, byte(i)}, buf[:n], "after the latency, before the next tick")
					continue
				}
				assert.Equal(t, 0, peer)
				got = append(got, string(buf[:n]))
			}
		}
		assert.Equal(t, 100, tapped)
		if inject {
			assert.Equal(t, 100, nw.Link(1, 2).Injected)
			assert.Equal(t, 100, nw.Total().Injected)
			assert.Zero(t, nw.Link(1, 2).Delivered)
		}
		return got
	}
	assert.Equal(t, deliveries(false), deliveries(true))

	nw, err := netsim.New(2, 1, netsim.Profile{})
	require.NoError(t, err)
	assert.ErrorIs(t, nw.Inject(0, 0, nil), netsim.ErrPeer)
	assert.ErrorIs(t, nw.Inject(0, 2, nil), netsim.ErrPeer)
	assert.ErrorIs(t, nw.Inject(-1, 1, nil), netsim.ErrPeer)
	assert.ErrorIs(t, nw.Inject(0, 1, make([]byte, netsim.MTU+1)), netsim.ErrTooLarge)
}
