package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestNewLockstep: the tick from the rate, the defaults (Config.populate),
// a negative delay clamped, and no schedule yet.
func TestNewLockstep(t *testing.T) {
	cases := []struct {
		cfg  Config
		want lockstep
	}{
		{cfg: Config{Lockstep: true}, want: lockstep{tick: time.Second / 60, playout: 100 * ms, playFrom: -1}},
		{cfg: Config{Lockstep: true, TickRate: 10, PlayoutDelay: 30 * ms}, want: lockstep{tick: 100 * ms, playout: 30 * ms, playFrom: -1}},
		{cfg: Config{Lockstep: true, TickRate: 20, PlayoutDelay: -time.Second}, want: lockstep{tick: 50 * ms, playout: 0, playFrom: -1}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, *newLockstep(tc.cfg.populate()), "%+v", tc.cfg)
	}
}

// TestLockstepInputDue: before the start only the first input (at the input
// lag) is due; after it, one more every tick.
func TestLockstepInputDue(t *testing.T) {
	l := &lockstep{tick: 100 * ms, playFrom: -1}
	cases := []struct {
		next    Frame
		delay   int
		started bool
		elapsed time.Duration
		want    bool
	}{
		{next: 2, delay: 2, want: true},
		{next: 3, delay: 2, want: false},
		{next: 3, delay: 2, elapsed: 10 * time.Second, want: false}, // not started: the clock does not run
		{next: 0, delay: 0, want: true},
		{next: 2, delay: 2, started: true, elapsed: 0, want: true},
		{next: 3, delay: 2, started: true, elapsed: 99 * ms, want: false},
		{next: 3, delay: 2, started: true, elapsed: 100 * ms, want: true},
		{next: 4, delay: 2, started: true, elapsed: 100 * ms, want: false},
		{next: 12, delay: 2, started: true, elapsed: time.Second, want: true},
		{next: 13, delay: 2, started: true, elapsed: time.Second, want: false},
		{next: 1, delay: 2, started: true, elapsed: time.Second, want: true}, // behind: due already
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, l.inputDue(tc.next, tc.delay, tc.started, tc.elapsed), "%+v", tc)
	}
}

// TestLockstepDue: nothing until every first input arrived; then frame 0
// is due a playout delay later (at once without peers) and one more frame
// every tick.
func TestLockstepDue(t *testing.T) {
	type call struct {
		now, first time.Duration
		want       Frame
	}
	cases := []struct {
		name  string
		peers bool
		calls []call
	}{
		{name: "with peers", peers: true, calls: []call{
			{now: time.Second, first: -1, want: 0},
			{now: 1500 * ms, first: -1, want: 0},
			{now: 1540 * ms, first: 1500 * ms, want: 0}, // frame 0 at 1.55 s
			{now: 1550 * ms, first: -1, want: 1},        // the start is kept
			{now: 1649 * ms, first: -1, want: 1},
			{now: 1650 * ms, first: -1, want: 2},
			{now: 2 * time.Second, first: 1900 * ms, want: 5}, // a later first changes nothing
		}},
		{name: "without peers", peers: false, calls: []call{
			{now: 200 * ms, first: 200 * ms, want: 1},
			{now: 299 * ms, first: 200 * ms, want: 1},
			{now: 300 * ms, first: 200 * ms, want: 2},
		}},
		{name: "first inputs long ago", peers: true, calls: []call{
			// frame 0 due at 1.05 s, frame 89 at 9.95 s, frame 90 at 10.05 s
			{now: 10 * time.Second, first: time.Second, want: 90},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &lockstep{tick: 100 * ms, playout: 50 * ms, playFrom: -1}
			for i, c := range tc.calls {
				assert.Equal(t, c.want, l.due(c.now, c.first, tc.peers), "call %d", i)
			}
		})
	}
}
