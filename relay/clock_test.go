package relay_test

import (
	"crypto/ed25519"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// clockStar is a star whose relay is the match clock, with signing key
// key; the clients check with pub.
func clockStar(t *testing.T, n int, key ed25519.PrivateKey, pub ed25519.PublicKey, decided *[]string) *star {
	t.Helper()
	nw, err := netsim.New(n+1, 1, netsim.Profile{})
	require.NoError(t, err)
	s := &star{nw: nw, from: make([][]int, n)}
	clk := &relay.Clock{Key: key, Allowance: 50 * time.Millisecond, OnDecide: func(slot int, f int32, in []uint64) {
		*decided = append(*decided, string(rune('0'+slot))+":"+string(rune('0'+f%10)))
	}}
	s.r, err = relay.New(relay.Config{Machines: n, Link: nw.Endpoint(n), Clock: clk})
	require.NoError(t, err)
	for i := range n {
		c, err := relay.NewClient(nw.Endpoint(i), n-1, i, n)
		require.NoError(t, err)
		require.NoError(t, c.UseClock(pub))
		s.clients = append(s.clients, c)
	}
	return s
}

type item struct {
	peer   int
	frame  int32
	inputs []uint64 // nil: a receipt
}

func items(c *relay.Client) []item {
	var out []item
	for {
		peer, f, in, ok := c.ClockNext()
		if !ok {
			return out
		}
		out = append(out, item{peer, f, append([]uint64(nil), in...)})
		c.ClockTaken()
	}
}

func testKey(b byte) (ed25519.PrivateKey, ed25519.PublicKey) {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = b
	k := ed25519.NewKeyFromSeed(seed)
	return k, k.Public().(ed25519.PublicKey)
}

// TestClockDecidesALateMachine: two machines play a frame a tick; machine
// 1 stops at frame 10. Once frame 10's deadline passes, the relay decides
// it, machine 1's input of frame 9 repeated, and every machine gets the
// decision; machine 0, on time, is never decided, and the relay decides
// nothing past the frames machine 0 reached.
func TestClockDecidesALateMachine(t *testing.T) {
	key, pub := testKey(1)
	var decided []string
	s := clockStar(t, 2, key, pub, &decided)
	var got [2][]item
	for tick := int32(1); tick <= 30; tick++ {
		s.clients[0].ClockLocal(tick, []uint64{uint64(100 + tick)})
		if tick <= 10 {
			s.clients[1].ClockLocal(tick, []uint64{uint64(200 + tick)})
		}
		s.step()
		for i, c := range s.clients {
			drain(c)
			got[i] = append(got[i], items(c)...)
		}
	}
	require.NotEmpty(t, decided)
	for _, d := range decided {
		require.Equal(t, byte('1'), d[0], "only the late machine is decided: %v", decided)
	}
	// Machine 0 sees decisions for its peer 0 (slot 1) from frame 10 on,
	// each its input of frame 9 (sent with next frame 10), in order.
	var frames []int32
	for _, it := range got[0] {
		if it.inputs != nil {
			require.Equal(t, 0, it.peer)
			require.Equal(t, []uint64{210}, it.inputs)
			frames = append(frames, it.frame)
		}
	}
	require.NotEmpty(t, frames)
	for k, f := range frames {
		require.Equal(t, int32(10+k), f)
	}
	require.Less(t, frames[len(frames)-1], int32(30), "nothing decided past what machine 0 reached")
	// Machine 1 learns of them too, as its own (-1), and a receipt.
	var own, receipts int
	for _, it := range got[1] {
		if it.inputs != nil && it.peer == -1 {
			own++
		}
		if it.inputs == nil {
			receipts++
		}
	}
	require.Equal(t, len(frames), own)
	require.Positive(t, receipts)
	require.Equal(t, int64(len(frames)), s.r.Stats().Decisions)
}

// TestClockForgedItemsDropped: items signed with another key than the
// match relay's are dropped by every client, none handed out.
func TestClockForgedItemsDropped(t *testing.T) {
	key, _ := testKey(1)
	_, pub := testKey(2)
	var decided []string
	s := clockStar(t, 2, key, pub, &decided)
	for tick := int32(1); tick <= 30; tick++ {
		s.clients[0].ClockLocal(tick, []uint64{1})
		if tick <= 5 {
			s.clients[1].ClockLocal(tick, []uint64{2})
		}
		s.step()
		for _, c := range s.clients {
			drain(c)
			require.Empty(t, items(c))
		}
	}
	require.NotEmpty(t, decided)
	require.Positive(t, s.clients[0].Stats().Forged)
	require.Zero(t, s.clients[0].Stats().Items)
}

// TestClockItemsSurviveLoss: on a lossy network every decision reaches
// every machine, once, in order (resent until acknowledged).
func TestClockItemsSurviveLoss(t *testing.T) {
	key, pub := testKey(3)
	nw, err := netsim.New(4, 7, netsim.Profile{Loss: 0.3, Reorder: 0.2, Duplicate: 0.1, Latency: 20 * time.Millisecond})
	require.NoError(t, err)
	n := 3
	var want []int32
	r, err := relay.New(relay.Config{Machines: n, Link: nw.Endpoint(n), Clock: &relay.Clock{Key: key, OnDecide: func(slot int, f int32, _ []uint64) {
		if slot == 2 {
			want = append(want, f)
		}
	}}})
	require.NoError(t, err)
	var cs []*relay.Client
	for i := range n {
		c, err := relay.NewClient(nw.Endpoint(i), n-1, i, n)
		require.NoError(t, err)
		require.NoError(t, c.UseClock(pub))
		cs = append(cs, c)
	}
	got := make([][]int32, n)
	for tick := int32(1); tick <= 400; tick++ {
		for i, c := range cs {
			if i != 2 || tick%40 < 20 { // machine 2 hitches: half of each 40 ticks silent
				c.ClockLocal(tick, []uint64{uint64(tick)})
			}
			_ = c.Flush()
		}
		nw.Advance(time.Second / 60)
		r.Poll(nw.Now())
		for i, c := range cs {
			drain(c)
			for _, it := range items(c) {
				if it.inputs != nil && (it.peer == 1 && i < 2 || it.peer == -1 && i == 2) {
					got[i] = append(got[i], it.frame)
				}
			}
		}
	}
	require.NotEmpty(t, want)
	for i := range n {
		require.Equal(t, want[:len(got[i])], got[i], "machine %d: in order, none twice", i)
		require.Greater(t, len(got[i]), len(want)*9/10, "machine %d got nearly all", i)
	}
}

// TestClockOneScheduleForTheMatch: machine 1 starts 20 ticks after
// machine 0 and then keeps the same pace. The schedule is the match's,
// not each machine's own: machine 1 is late for its first frames, which
// the relay decides, and it is told it is late (a negative slack) until
// it catches up. With a schedule of its own it was never late, ran 20
// frames behind machine 0 for the whole match, and machine 0 waited on
// its inputs 20 frames nearer its reach (on hell it stalled there, fell
// behind its own schedule and was decided in turn).
func TestClockOneScheduleForTheMatch(t *testing.T) {
	key, pub := testKey(4)
	var decided []string
	s := clockStar(t, 2, key, pub, &decided)
	var slack []time.Duration
	for tick := int32(1); tick <= 40; tick++ {
		s.clients[0].ClockLocal(tick, []uint64{1})
		if tick > 20 {
			s.clients[1].ClockLocal(tick-20, []uint64{2})
		}
		s.step()
		for _, c := range s.clients {
			drain(c)
			items(c)
		}
		if tick > 25 {
			slack = append(slack, s.clients[1].ClockSlack())
		}
	}
	require.NotEmpty(t, decided, "the late machine's frames were decided")
	for _, d := range decided {
		require.Equal(t, byte('1'), d[0], "only the machine that started late: %v", decided)
	}
	for _, sl := range slack {
		require.Negative(t, sl, "it is told it is late: %v", slack)
	}
}

// TestClockNoResendWithinTheRoundTrip: on a link whose round trip is
// longer than 100 ms but loses nothing, every item goes in two envelopes
// in a row and no more: the relay waits for the acknowledgement as long
// as the round trip it measures. A fixed 100 ms timeout sent each item
// again and again (on hell the items' backlog then delayed the receipts
// by seconds).
func TestClockNoResendWithinTheRoundTrip(t *testing.T) {
	key, pub := testKey(5)
	nw, err := netsim.New(3, 1, netsim.Profile{Latency: 85 * time.Millisecond})
	require.NoError(t, err)
	sent := map[uint32]int{}
	link := countItems{Link: nw.Endpoint(2), to: 0, seen: sent}
	r, err := relay.New(relay.Config{Machines: 2, Link: link, Clock: &relay.Clock{Key: key}})
	require.NoError(t, err)
	var cs []*relay.Client
	for i := range 2 {
		c, err := relay.NewClient(nw.Endpoint(i), 1, i, 2)
		require.NoError(t, err)
		require.NoError(t, c.UseClock(pub))
		cs = append(cs, c)
	}
	taken := 0
	for tick := int32(1); tick <= 300; tick++ {
		cs[0].ClockLocal(tick, []uint64{1})
		if tick%30 < 20 { // machine 1 hitches: its frames are decided
			cs[1].ClockLocal(tick, []uint64{2})
		}
		for _, c := range cs {
			_ = c.Flush()
		}
		nw.Advance(time.Second / 60)
		r.Poll(nw.Now())
		for _, c := range cs {
			drain(c)
		}
		taken += len(items(cs[0]))
	}
	require.Greater(t, len(sent), 50, "items went to machine 0")
	require.Greater(t, taken, 50)
	for seq, n := range sent {
		require.LessOrEqual(t, n, 2, "item %d went %d times", seq, n)
	}
}

// countItems counts, by seq, the relay's items in its envelopes to
// machine to.
type countItems struct {
	relay.Link
	to   int
	seen map[uint32]int
}

func (c countItems) Send(to int, b []byte) error {
	if to == c.to && len(b) > 0 && b[0] == 0xe2 {
		size, k := binary.Uvarint(b[1:])
		sec := b[1+k : 1+k+int(size)]
		seq := binary.LittleEndian.Uint32(sec)
		for it := sec[6:]; len(it) >= 7; seq++ {
			n := 7 + 8*int(it[6]) + ed25519.SignatureSize
			c.seen[seq]++
			it = it[n:]
		}
	}
	return c.Link.Send(to, b)
}

// TestClockNoReceiptPastADroppedDecision: machine 1 goes silent, so the
// relay decides its frames; machine 0 takes no item for longer than its
// queue holds. Once machine 0 takes them again, no receipt it gets covers
// a frame whose decision it did not get: the relay queues nothing more
// for a machine once an item for it was dropped. (It dropped the items
// while the queue was full and queued the later ones: a receipt then made
// final at machine 0 inputs the others had decided otherwise.)
func TestClockNoReceiptPastADroppedDecision(t *testing.T) {
	key, pub := testKey(6)
	var decided []string
	s := clockStar(t, 2, key, pub, &decided)
	seen := map[int32]bool{} // machine 0's decisions about machine 1, by frame
	receipts := 0
	for tick := int32(1); tick <= 5400; tick++ {
		s.clients[0].ClockLocal(tick, []uint64{1})
		if tick <= 5 {
			s.clients[1].ClockLocal(tick, []uint64{2})
		}
		s.step()
		for _, c := range s.clients {
			drain(c)
		}
		items(s.clients[1])
		if tick < 4400 {
			continue // machine 0 takes nothing: its queue at the relay fills
		}
		for _, it := range items(s.clients[0]) {
			if it.peer != 0 {
				continue
			}
			if it.inputs != nil {
				seen[it.frame] = true
				continue
			}
			receipts++
			for f := int32(5); f < it.frame; f++ {
				require.True(t, seen[f], "a receipt up to %d, frame %d never decided here", it.frame, f)
			}
		}
	}
	require.Greater(t, len(decided), 4096, "the relay decided more than a queue holds")
	require.Positive(t, len(seen))
	// A decided frame settles as one on time does: receipts at the
	// statement intervals, not one after every decision (which doubled
	// the items for a late machine).
	require.Less(t, receipts*8, len(seen), "receipts %d, decisions %d", receipts, len(seen))
}
