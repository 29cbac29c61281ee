package rollback

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/desync/bundle"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// tracedPair is an exchange pair whose machines re-simulated frames 10 to
// 20: machine 1's states differ from frame 15 on, after system "b" of
// frame 14's step. section, when set, replaces machine 1's trace section.
func tracedPair(t *testing.T, section []byte) *exchangePair {
	t.Helper()
	x := newExchangePair(t, func(w *stateWorld) { w.Vals[300]++ }, [2]func([]byte) []byte{})
	for i := range 2 {
		sums, steps := make([]uint64, 11), make([][]bundle.Mark, 10)
		for f := range sums {
			sums[f] = uint64(f)
			if i == 1 && f >= 5 {
				sums[f] += 100
			}
		}
		for s := range steps { // 16 marks a step, "a", "b", then "m2" to "m15", of sums that do not compress
			for j := range 16 {
				name := string(rune('a' + j))
				if j >= 2 {
					name = fmt.Sprintf("m%d", j)
				}
				sum := uint64(s*16+j+1) * 0x9e3779b97f4a7c15
				if i == 1 && s >= 4 && j >= 1 {
					sum++
				}
				steps[s] = append(steps[s], bundle.Mark{System: name, Sum: sum})
			}
		}
		c := x.c[i]
		c.bun = &bundler{}
		c.bun.keep(&bundle.Bundle{Start: 10, Sums: sums, Traces: steps})
		c.offer(c.ex, c.ex.z) // as trace does after the re-simulation
	}
	if section != nil {
		x.c[1].ex.mine = payload(x.c[1].ex.z, section)
	}
	return x
}

// deliver sends machine from's messages due at now to the other machine,
// those that keep passes; it reports whether one completed its state.
func (x *exchangePair) deliver(t *testing.T, from int, now time.Duration, keep func(m *wire.State) bool) bool {
	t.Helper()
	_, completed := x.pass(t, from, now, keep)
	return completed
}

// TestTimeMachineExchange: the trace sections ride behind the states;
// each machine names the first divergent frame (15) and system ("b")
// once the peer's whole payload is in, and the field as soon as its
// state is, whether or not the trace comes. A trace lost names nothing
// and keeps the exchange from being over (recovery.tick's limit ends
// it); a malformed one names nothing, and does not panic.
func TestTimeMachineExchange(t *testing.T) {
	all := func(*wire.State) bool { return true }
	t.Run("both", func(t *testing.T) {
		x := tracedPair(t, nil)
		now := time.Second
		for range 20 {
			for i := range 2 {
				x.deliver(t, i, now, all)
			}
			now += 16 * time.Millisecond
		}
		for i := range 2 {
			e := x.c[i].failed()
			assert.NotEmpty(t, e.Field, "machine %d", i)
			assert.Equal(t, int32(15), e.FirstFrame, "machine %d", i)
			assert.Equal(t, "b", e.System, "machine %d", i)
			assert.Zero(t, x.err[i].FirstFrame, "machine %d: the error handed out is never changed", i)
			assert.True(t, x.c[i].ex.over(), "machine %d", i)
		}
	})
	t.Run("pieces", func(t *testing.T) {
		// 6 pieces of the head and state a call and 2 of the trace, each
		// round and round: the state's are not held back by the trace's.
		x := tracedPair(t, nil)
		ex := x.c[0].ex
		states := (ex.own + wire.MaxStateData - 1) / wire.MaxStateData
		traces := (len(ex.mine)+wire.MaxStateData-1)/wire.MaxStateData - states
		require.Greater(t, states, 8)
		require.Greater(t, traces, 2)
		s := &x.sink[0]
		for call := range 3 {
			s.sent = s.sent[:0]
			x.c[0].outgoing(0, time.Second, s)
			var got, want []uint32
			for _, m := range s.sent {
				got = append(got, m.m.Offset/wire.MaxStateData)
			}
			for k := range 6 {
				want = append(want, uint32((call*6+k)%states))
			}
			for k := range 2 {
				want = append(want, uint32(states+(call*2+k)%traces))
			}
			assert.Equal(t, want, got, "call %d", call)
		}
	})
	t.Run("trace lost", func(t *testing.T) {
		x := tracedPair(t, nil)
		ex := x.c[1].ex
		tail := len(ex.mine) - len(x.c[1].bun.trace) // the head and the state: the pieces after are lost
		require.Greater(t, len(ex.mine)-tail, 2*wire.MaxStateData, "the trace takes pieces of its own")
		stateOnly := func(m *wire.State) bool { return int(m.Offset) < tail }
		now, completed := time.Second, false
		for range 40 {
			completed = x.deliver(t, 1, now, stateOnly) || completed
			x.deliver(t, 0, now, all)
			now += 16 * time.Millisecond
		}
		require.True(t, completed, "machine 0 has machine 1's state")
		e := x.c[0].failed()
		assert.NotEmpty(t, e.Field, "the field is named without the trace")
		assert.Zero(t, e.FirstFrame)
		assert.False(t, x.c[0].ex.whole)
		assert.True(t, x.c[0].ex.done[0], "machine 1 has all of ours")
		assert.False(t, x.c[0].ex.over(), "machine 1's trace is still due")
		for range 20 { // the pieces come after all
			x.deliver(t, 1, now, all)
			now += 16 * time.Millisecond
		}
		assert.Equal(t, int32(15), x.c[0].failed().FirstFrame)
		assert.Equal(t, "b", x.c[0].failed().System)
	})
	for name, section := range map[string][]byte{
		"garbage":       {0xff, 0xfe, 0x01},
		"another frame": wire.AppendTrace(nil, &wire.Trace{Start: 5000, Sums: []uint64{1, 2}, Steps: [][]wire.TraceMark{nil}}),
	} {
		t.Run(name, func(t *testing.T) {
			x := tracedPair(t, section)
			now := time.Second
			for range 20 {
				require.NotPanics(t, func() { x.deliver(t, 1, now, all) })
				now += 16 * time.Millisecond
			}
			e := x.c[0].failed()
			assert.NotEmpty(t, e.Field)
			assert.Zero(t, e.FirstFrame, "nothing named")
			assert.Empty(t, e.System)
			assert.True(t, x.c[0].ex.whole)
		})
	}
}

// TestBundlerDispute: a peer outvoted at a frame disputes it; the agreed
// state does not move there, however settled, until the dispute is
// resolved (the peer has our state, or left).
func TestBundlerDispute(t *testing.T) {
	b := &bundler{start: noFrame, logged: 100, disputed: noFrame, info: bundle.Bundle{Players: 1},
		inputs: make([]uint64, 100), status: make([]uint8, 100)}
	points := []checkpoint{{frame: 10, data: []byte{1}}, {frame: 20, data: []byte{2}}, {frame: 30, data: []byte{3}, pending: true}}
	b.dispute(20)
	b.dispute(25)
	b.agree(points, 30)
	assert.Equal(t, Frame(10), b.start, "20 is disputed")
	assert.Equal(t, []byte{1}, b.agreed)
	b.resolve()
	b.agree(points, 30)
	assert.Equal(t, Frame(20), b.start, "resolved: the newest final checkpoint settled")
	assert.Equal(t, []byte{2}, b.agreed)
	var nilb *bundler
	nilb.dispute(5) // no bundler: nothing
	nilb.resolve()
}
