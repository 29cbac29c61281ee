package advantage_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rewindgg/rewind/advantage"
)

func TestStallFrames(t *testing.T) {
	cases := []struct {
		input float64
		want  int
	}{
		{-3, 0},
		{0, 0},
		{1, 0}, // simulation advantage 0.5: never corrected
		{1.49, 0},
		{1.5, 1}, // 0.75: the article's threshold
		{1.6, 1}, // the article's example: stall 1, leaving 0.4 on the other side
		{2, 1},
		{2.99, 1}, // 1.495 + 0.5 truncates to 1
		{3, 2},    // 1.5 + 0.5 = 2
		{7, 4},    // 3.5 + 0.5 = 4
		{20, 10},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, advantage.StallFrames(tc.input), "input advantage %v", tc.input)
	}
}

func TestStallPeriod(t *testing.T) {
	want := map[int]int{-1: 0, 0: 0, 1: 10, 2: 9, 3: 8, 4: 7, 5: 6, 6: 5, 7: 4, 8: 3, 9: 2, 10: 1, 11: 1, 1000: 1}
	for q := -1; q <= 11; q++ {
		assert.Equal(t, want[q], advantage.StallPeriod(q), "queued %d", q)
	}
	assert.Equal(t, 1, advantage.StallPeriod(1000))
}

func TestStartDelay(t *testing.T) {
	ms := time.Millisecond
	// Two machines 100 ms apart: the host hears the other's ready after a
	// whole round trip, the other hears the host's after half of one, so
	// the other waits 50 ms and the host not at all.
	two := [][]time.Duration{{0, 100 * ms}, {100 * ms, 0}}
	assert.Equal(t, time.Duration(0), advantage.StartDelay(two, 0, 0))
	assert.Equal(t, 50*ms, advantage.StartDelay(two, 0, 1))

	// Three machines; the host (0) is near 1 and far from 2.
	three := [][]time.Duration{
		{0, 20 * ms, 200 * ms},
		{20 * ms, 0, 180 * ms},
		{200 * ms, 180 * ms, 0},
	}
	// delays: 0 ← max((0→1)+(1→0), (0→2)+(2→0))/2 = 200; 1 ← max(0+20, 200+180)/2 = 190;
	// 2 ← max(0+200, 20+180)/2 = 100.
	assert.Equal(t, time.Duration(0), advantage.StartDelay(three, 0, 0))
	assert.Equal(t, 10*ms, advantage.StartDelay(three, 0, 1))
	assert.Equal(t, 100*ms, advantage.StartDelay(three, 0, 2))

	assert.Zero(t, advantage.StartDelay(two, 2, 0), "host out of range")
	assert.Zero(t, advantage.StartDelay([][]time.Duration{{0, 1}}, 0, 0), "not square")
}

func TestTracker(t *testing.T) {
	tr := advantage.NewTracker(2)
	// Peer 0 sees us with 1 frame of lag, we see it with 5: it has 4 frames
	// of input advantage over us (the article's example). Peer 1 has 1.
	for f := 1; f <= advantage.Window; f++ {
		tr.Local(0, 5)
		tr.Remote(0, 1)
		tr.Local(1, 2)
		tr.Remote(1, 1)
		adv, ok := tr.Frame()
		if f < advantage.Window {
			assert.False(t, ok)
			continue
		}
		assert.True(t, ok)
		assert.InDelta(t, 4.0, adv, 1e-9, "the largest over the peers")
	}
	assert.InDelta(t, 4.0, tr.Last(), 1e-9)
	_, ok := tr.Peer(0)
	assert.False(t, ok, "a new window has begun")

	// Averages, not last values: 2.6 local, 1.0 remote gives 1.6.
	for f := range advantage.Window {
		tr.Local(0, []int{2, 3, 3, 2, 3}[f%5])
		tr.Remote(0, 1)
		if adv, ok := tr.Frame(); ok {
			assert.InDelta(t, 1.6, adv, 1e-9)
			assert.Equal(t, 1, advantage.StallFrames(adv))
		}
	}
	// We being ahead gives 0, not a negative advantage.
	for range advantage.Window {
		tr.Local(0, 0)
		tr.Remote(0, 4)
		if adv, ok := tr.Frame(); ok {
			assert.Zero(t, adv)
		}
	}
	tr.Local(7, 1) // unknown peers are ignored
	_, ok = tr.Peer(-1)
	assert.False(t, ok)
	assert.Zero(t, testing.AllocsPerRun(100, func() { tr.Local(0, 1); tr.Remote(0, 1); tr.Frame() }))
}
