package rollback_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback"
)

// clockTransport is a relay clock (rollback.RelayClock) whose items the
// test hands the session: the relay's checks (signatures, order) are the
// relay package's (relay/clock_test.go).
type clockTransport struct {
	rollback.Transport
	items []clockItem
	next  int32         // what the session last told it
	deaf  bool          // every datagram to it is lost
	short time.Duration // how much less than a second of slack the relay reports
}

func (c *clockTransport) Receive(buf []byte) (int, int, bool) {
	for {
		n, peer, ok := c.Transport.Receive(buf)
		if !ok || !c.deaf {
			return n, peer, ok
		}
	}
}

type clockItem struct {
	peer   int
	frame  int32
	inputs []uint64 // nil: a receipt
}

func (c *clockTransport) ClockOn() bool                     { return true }
func (c *clockTransport) ClockLocal(next int32, _ []uint64) { c.next = next }
func (c *clockTransport) ClockSlack() time.Duration         { return time.Second - c.short }
func (c *clockTransport) ClockTaken()                       { c.items = c.items[1:] }
func (c *clockTransport) ClockNext() (int, int32, []uint64, bool) {
	if len(c.items) == 0 {
		return 0, 0, nil, false
	}
	it := c.items[0]
	return it.peer, it.frame, it.inputs, true
}

// clockPair is connectedPair over relay clocks; tr[i] is session i's.
func clockPair(t *testing.T) ([2]*rollback.Session, [2]*counterGame, [2]*clockTransport) {
	t.Helper()
	var tr [2]*clockTransport
	ss, gs, _ := connectedPair(t, func(i int, c *rollback.Config) {
		tr[i] = &clockTransport{Transport: c.Transport}
		c.Transport = tr[i]
	})
	return ss, gs, tr
}

// receipts tells both sessions that every frame before f of both
// machines is settled at the relay.
func receipts(tr [2]*clockTransport, f int32) {
	for i := range tr {
		tr[i].items = append(tr[i].items, clockItem{-1, f, nil}, clockItem{0, f, nil})
	}
}

// TestRelayClockDecisionRollsBackTheLatePlayer: the relay decides player
// 1's frame 20, which its machine had already played with another input:
// both sessions end with the decision (the late one rolls back to it),
// the same state, and no conflict (frame 20 was not final yet).
func TestRelayClockDecisionRollsBackTheLatePlayer(t *testing.T) {
	ss, gs, tr := clockPair(t)
	input := func(i int) rollback.Input { return rollback.Input(1 + i) }
	for range 60 {
		playTo(t, ss, 30, input)
	}
	require.Equal(t, rollback.Frame(30), ss[1].Frame())
	require.Zero(t, ss[0].ConfirmedFrame(), "nothing is final before the relay's receipts")
	before := ss[1].Stats().Rollbacks
	tr[0].items = append(tr[0].items, clockItem{0, 20, []uint64{9}})
	tr[1].items = append(tr[1].items, clockItem{-1, 20, []uint64{9}})
	receipts(tr, 30)
	for range 20 {
		playTo(t, ss, 30, input)
	}
	for i, s := range ss {
		st := s.Stats()
		require.Equal(t, int64(1), st.Decided, "session %d", i)
		require.Zero(t, st.DecisionConflicts, "session %d", i)
		require.Equal(t, rollback.Frame(30), s.ConfirmedFrame(), "session %d", i)
	}
	require.Greater(t, ss[1].Stats().Rollbacks, before, "the late machine rolled back to the decision")
	require.Equal(t, gs[0].Arena.Bytes(), gs[1].Arena.Bytes())

	// The same match without the decision ends elsewhere: the decision
	// counted.
	ss2, gs2, tr2 := clockPair(t)
	for range 60 {
		playTo(t, ss2, 30, input)
	}
	receipts(tr2, 30)
	for range 20 {
		playTo(t, ss2, 30, input)
	}
	require.Equal(t, gs2[0].Arena.Bytes(), gs2[1].Arena.Bytes())
	require.NotEqual(t, gs[0].Arena.Bytes(), gs2[0].Arena.Bytes())
}

// TestRelayClockDecisionForAFinalFrame: a decision for a frame the relay's
// receipt had already made final (only a lying relay sends one) is taken
// the same way by every machine: the decision wins, counted as a conflict,
// and the states stay equal.
func TestRelayClockDecisionForAFinalFrame(t *testing.T) {
	ss, gs, tr := clockPair(t)
	input := func(i int) rollback.Input { return rollback.Input(1 + i) }
	for range 60 {
		playTo(t, ss, 30, input)
	}
	receipts(tr, 30)
	for range 5 {
		playTo(t, ss, 30, input)
	}
	require.Equal(t, rollback.Frame(30), ss[0].ConfirmedFrame())
	tr[0].items = append(tr[0].items, clockItem{0, 10, []uint64{7}})
	tr[1].items = append(tr[1].items, clockItem{-1, 10, []uint64{7}})
	for range 5 {
		playTo(t, ss, 30, input)
	}
	require.Equal(t, int64(1), ss[0].Stats().DecisionConflicts)
	require.Equal(t, int64(1), ss[1].Stats().DecisionConflicts)
	require.Equal(t, gs[0].Arena.Bytes(), gs[1].Arena.Bytes())
}

// TestRelayClockPlaysThroughALateMachine: machine 1 stops; the relay's
// decisions for its frames (and receipts) let machine 0 play on without
// a stall, where without them it would starve.
func TestRelayClockPlaysThroughALateMachine(t *testing.T) {
	ss, _, tr := clockPair(t)
	for f := range 120 {
		_, err := ss[0].AddLocalInput(0, 1)
		require.NoError(t, err)
		_, err = ss[0].Advance()
		require.NoError(t, err)
		if f < 10 {
			offer(t, ss[1], 1, 2)
			_, err = ss[1].Advance()
			require.NoError(t, err)
		} else {
			tr[0].items = append(tr[0].items, clockItem{0, int32(f), []uint64{2}})
		}
	}
	st := ss[0].Stats()
	require.Zero(t, st.StallFrames)
	require.Equal(t, rollback.Frame(120), ss[0].Frame())
	require.Positive(t, st.Decided)
}

// TestRelayClockLateMachineKeepsItsAck: machine 1 hears nothing from
// frame 10 on (its downlink is cut) and stalls; it still sends, and the
// relay decides its frames for machine 0 far beyond what it has of
// machine 0's. Its inputs so far ahead prove nothing with the relay
// clock: machine 0 neither takes them as an acknowledgement of its own
// inputs (it would stop sending machine 1 what it lacks, and machine 1
// would stall for good) nor suspects it of lying about its acks.
func TestRelayClockLateMachineKeepsItsAck(t *testing.T) {
	ss, _, tr := clockPair(t)
	for range 30 {
		playTo(t, ss, 10, func(i int) rollback.Input { return rollback.Input(1 + i) })
	}
	require.Equal(t, rollback.Frame(10), ss[1].Frame())
	tr[1].deaf = true
	for f := 10; f < 150; f++ {
		tr[0].items = append(tr[0].items, clockItem{0, int32(f), []uint64{2}})
		offer(t, ss[0], 0, 1)
		res, err := ss[0].Advance()
		require.NoError(t, err)
		for _, e := range res.Events {
			require.False(t, e.Kind == rollback.EventSuspect, "frame %d: %v", f, e)
		}
		_, err = ss[1].Idle()
		require.NoError(t, err)
	}
	require.Greater(t, ss[0].Frame(), rollback.Frame(120), "machine 0 played on")
	st, ok := ss[0].PeerStats(0)
	require.True(t, ok)
	require.Zero(t, st.Suspected[rollback.SuspectAck], "machine 1 was not suspected")
}

// TestRelayClockCatchUpPaced: the relay says machine 0's inputs reach it
// late, and keeps saying so (its word is a round trip old). Machine 0
// takes a second input in a tick at most one every 4 frames: taken every
// tick, the catch-up ran on for a round trip after it was done (12
// frames ahead of the schedule, and of the others, on hell).
func TestRelayClockCatchUpPaced(t *testing.T) {
	ss, _, tr := clockPair(t)
	for range 30 {
		playTo(t, ss, 10, func(i int) rollback.Input { return rollback.Input(1 + i) })
	}
	tr[0].short = time.Second // no slack at all
	extra, from := 0, ss[0].Frame()
	for range 40 {
		offer(t, ss[0], 0, 1)
		if ok, err := ss[0].AddLocalInput(0, 1); err == nil && ok {
			extra++
		}
		_, err := ss[0].Advance()
		require.NoError(t, err)
		offer(t, ss[1], 1, 2)
		_, err = ss[1].Advance()
		require.NoError(t, err)
	}
	require.Positive(t, extra, "it catches up")
	frames := int(ss[0].Frame() - from)
	require.LessOrEqual(t, extra, frames/4+1, "a second input at most every 4 frames (%d frames)", frames)
}
