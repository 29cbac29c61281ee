package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rewindgg/rewind/advantage"
	"github.com/rewindgg/rewind/inputlag"
)

// TestInputLagRetarget: raising the lag queues stalls, lowering it queues
// frames to catch up, the same lag changes nothing.
func TestInputLagRetarget(t *testing.T) {
	cases := []struct {
		name    string
		from    inputLag
		next    int
		changed bool
		want    inputLag
	}{
		{name: "raise", from: inputLag{delay: 2}, next: 4, changed: true, want: inputLag{delay: 4, stalls: 2}},
		{name: "lower", from: inputLag{delay: 4}, next: 1, changed: true, want: inputLag{delay: 1, catchUp: 3}},
		{name: "same", from: inputLag{delay: 3, stalls: 1}, next: 3, changed: false, want: inputLag{delay: 3, stalls: 1}},
		{name: "raise again before the stalls are taken", from: inputLag{delay: 4, stalls: 2}, next: 5, changed: true,
			want: inputLag{delay: 5, stalls: 3}},
		{name: "lower while stalls wait: both queued", from: inputLag{delay: 4, stalls: 1}, next: 2, changed: true,
			want: inputLag{delay: 2, stalls: 1, catchUp: 2}},
		{name: "to zero", from: inputLag{delay: 1}, next: 0, changed: true, want: inputLag{catchUp: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.from
			got, changed := l.retarget(tc.next)
			assert.Equal(t, tc.next, got)
			assert.Equal(t, tc.changed, changed)
			assert.Equal(t, tc.want, l)
		})
	}
}

// TestInputLagRaise: only upwards, and never a fixed lag.
func TestInputLagRaise(t *testing.T) {
	cases := []struct {
		name string
		from inputLag
		next int
		ok   bool
		want inputLag
	}{
		{name: "up", from: inputLag{delay: 1}, next: 4, ok: true, want: inputLag{delay: 4, stalls: 3}},
		{name: "same", from: inputLag{delay: 4}, next: 4, ok: false, want: inputLag{delay: 4}},
		{name: "never down", from: inputLag{delay: 4}, next: 2, ok: false, want: inputLag{delay: 4}},
		{name: "fixed", from: inputLag{delay: 1, fixed: true}, next: 4, ok: false, want: inputLag{delay: 1, fixed: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.from
			assert.Equal(t, tc.ok, l.raise(tc.next))
			assert.Equal(t, tc.want, l)
		})
	}
}

// TestStarving: the wait for an input starts with EventStarved, once,
// moves to another peer without a second event, names the peer to cut
// once it waited past the disconnect timeout (never a local player), and
// ends with EventResumed.
func TestStarving(t *testing.T) {
	const after = 5 * time.Second
	var w starving
	var events eventLog
	kinds := func() []EventKind {
		var k []EventKind
		for _, e := range events {
			k = append(k, e.Kind)
		}
		return k
	}
	assert.Equal(t, -1, w.starve(1, time.Second, after, &events, 10))
	assert.Equal(t, -1, w.starve(1, 2*time.Second, after, &events, 10))
	assert.Equal(t, []EventKind{EventStarved}, kinds())
	assert.Equal(t, -1, w.starve(0, 3*time.Second, after, &events, 10), "another peer: the wait starts again")
	assert.Equal(t, -1, w.starve(0, 3*time.Second+after, after, &events, 10), "not past the timeout")
	assert.Equal(t, 0, w.starve(0, 3*time.Second+after+1, after, &events, 10), "past it: cut")
	assert.Equal(t, []EventKind{EventStarved}, kinds())
	w.resume(&events, 11)
	w.resume(&events, 12)
	assert.Equal(t, []EventKind{EventStarved, EventResumed}, kinds())
	assert.Equal(t, -1, w.starve(-1, time.Minute, after, &events, 12))
	assert.Equal(t, -1, w.starve(-1, time.Hour, after, &events, 12), "a local player is never cut")
}

// TestPacePlayed: every frame played is counted at its input lag; at the
// end of the governor's window the lag is evaluated again, unless fixed,
// with EventInputLagChanged when it moves.
func TestPacePlayed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lag    inputLag
		events []Event
	}{
		{"lowered on a link without lag", inputLag{delay: 4}, []Event{
			{Kind: EventInputLagChanged, Frame: advantage.Window, Peer: -1, Lag: inputlag.Next(4, 0)},
		}},
		{"already the least", inputLag{}, nil},
		{"fixed", inputLag{delay: 4, fixed: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pace{gov: advantage.NewGovernor(1, false), lag: tc.lag}
			var st Stats
			var events eventLog
			for f := range Frame(advantage.Window) {
				p.played(f+1, &st, &events)
			}
			assert.Equal(t, tc.events, []Event(events))
			assert.Equal(t, int64(advantage.Window), st.LagFrames[tc.lag.delay], "each frame at the lag it was played with")
		})
	}
}
