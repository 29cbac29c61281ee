package advantage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGovernorStallSpacing: queued stalls are taken one every
// StallPeriod(queued) frames, the period following the queue as it drains.
func TestGovernorStallSpacing(t *testing.T) {
	cases := []struct {
		queued int
		want   []int // the calls (1-based) on which Stall reports true
	}{
		{queued: 0, want: nil},
		{queued: 1, want: []int{10}},
		{queued: 3, want: []int{8, 17, 27}}, // periods 8, 9, 10
		// 12, 11, 10 queued: every frame; then 2 apart; then the
		// allowance (MaxStalls in the first window) is spent: 7 stay queued.
		{queued: 12, want: []int{1, 2, 3, 5, 8}},
	}
	for _, tc := range cases {
		g := NewGovernor(1, true)
		g.queued = tc.queued
		var got []int
		for call := 1; call <= 100; call++ {
			if g.Stall() {
				got = append(got, call)
			}
		}
		assert.Equal(t, tc.want, got, "queued %d", tc.queued)
		assert.Equal(t, tc.queued-len(tc.want), g.Queued())
	}
}

// TestGovernorWindow: Simulated reports the end of a window once every
// Window frames.
func TestGovernorWindow(t *testing.T) {
	for _, smoothing := range []bool{false, true} {
		g := NewGovernor(1, smoothing)
		var ends []int
		for f := 1; f <= 2*Window+50; f++ {
			if g.Simulated(0) {
				ends = append(ends, f)
			}
		}
		assert.Equal(t, []int{Window, 2 * Window}, ends, "smoothing %v", smoothing)
	}
}

// window feeds g one window in which peer 0 showed the given lags, the
// session having stalled stalled frames in all so far, and returns the
// queue after each frame.
func window(t *testing.T, g *Governor, local, remote []int, stalled int64) []int {
	t.Helper()
	for _, l := range local {
		g.Local(0, l)
	}
	for _, r := range remote {
		g.Remote(0, r)
	}
	q := make([]int, 0, Window)
	for f := 1; f <= Window; f++ {
		end := g.Simulated(stalled)
		require.Equal(t, f == Window, end, "frame %d of the window", f)
		q = append(q, g.Queued())
	}
	return q
}

// TestGovernorSteadyAdvantage: at the end of a window the article's
// StallFrames(advantage) is queued, nothing when only measuring.
func TestGovernorSteadyAdvantage(t *testing.T) {
	cases := []struct {
		name          string
		local, remote []int
		adv           float64
		want          int
	}{
		{name: "none", local: []int{2}, remote: []int{2}, adv: 0, want: 0},
		{name: "under the dead zone", local: []int{1}, remote: []int{0}, adv: 1, want: 0},
		{name: "at 0.75", local: []int{1, 2}, remote: []int{0}, adv: 1.5, want: 1},
		{name: "the article's 4", local: []int{5}, remote: []int{1}, adv: 4, want: 2},
		{name: "7", local: []int{7, 8, 6}, remote: []int{0}, adv: 7, want: 4},
		{name: "we lead: never negative", local: []int{0}, remote: []int{4}, adv: 0, want: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGovernor(1, true)
			q := window(t, g, tc.local, tc.remote, 0)
			assert.Zero(t, q[Window-2], "nothing before the window ends")
			assert.Equal(t, tc.want, q[Window-1])
			assert.InDelta(t, tc.adv, g.Advantage(), 1e-9)

			m := NewGovernor(1, false)
			window(t, m, tc.local, tc.remote, 0)
			assert.InDelta(t, tc.adv, m.Advantage(), 1e-9, "measured all the same")
			assert.Zero(t, m.Queued(), "smoothing off: nothing queued")
			for range 20 {
				assert.False(t, m.Stall())
			}
		})
	}
}

// TestGovernorLinkLag: the mean of the two directions, advantage cancelled.
func TestGovernorLinkLag(t *testing.T) {
	g := NewGovernor(1, false)
	window(t, g, []int{5}, []int{1}, 0)
	assert.InDelta(t, 3.0, g.LinkLag(), 1e-9)
}

// TestGovernorDriftStalls: the rule at the end of a window, from the state
// the governor was in.
func TestGovernorDriftStalls(t *testing.T) {
	cases := []struct {
		name                       string
		drift, lastAdv, driftEvery float64
		windows                    int
		stallsSeen                 int64
		adv                        float64
		stalled                    int64
		want                       int
		wantDrift, wantEvery       float64
	}{
		{name: "the first window: no sample", windows: 0, adv: 1, stalled: 4, want: 0, wantDrift: 0, wantEvery: 0},
		// sample 4 + 0 → drift 0 + (4-0)/4 = 1: pace every 100 frames, and
		// one now: adv/2 = 0.5 ≥ 0.25 while StallFrames(1) = 0.
		{name: "a drift starts", windows: 1, lastAdv: 1, adv: 1, stalled: 4, want: 1, wantDrift: 1, wantEvery: 100},
		// sample 4 + (3-1)/2 = 5 → drift 1.25 → every 80; StallFrames(3) = 2 stalls already.
		{name: "the article's rule stalls", windows: 1, lastAdv: 1, adv: 3, stalled: 4, want: 0, wantDrift: 1.25, wantEvery: 80},
		// sample 8 → drift 2 + (8-2)/4 = 3.5 → every 100/3.5; adv/2 = 0.2 < 0.25.
		{name: "under the quarter frame", windows: 3, drift: 2, lastAdv: 0.4, adv: 0.4, stalled: 8, want: 0, wantDrift: 3.5, wantEvery: 100 / 3.5},
		{name: "at the quarter frame", windows: 3, drift: 2, lastAdv: 0.5, adv: 0.5, stalled: 8, want: 1, wantDrift: 3.5, wantEvery: 100 / 3.5},
		// the stalls counted are those since the last window: 30 - 22 = 8.
		{name: "taken since the last window", windows: 3, drift: 2, stallsSeen: 22, lastAdv: 0.5, adv: 0.5, stalled: 30, want: 1, wantDrift: 3.5, wantEvery: 100 / 3.5},
		// sample 10 → drift 10: capped at 5 a window.
		{name: "capped", windows: 5, drift: 10, lastAdv: 1, adv: 1, stalled: 10, want: 1, wantDrift: 10, wantEvery: 20},
		// sample 0 → drift 1.2 - 1.2/4 = 0.9: the pacing stops.
		{name: "the drift dies out", windows: 5, drift: 1.2, driftEvery: 100 / 1.2, lastAdv: 1, adv: 1, stalled: 0, want: 0, wantDrift: 0.9, wantEvery: 0},
		// stalls taken and the advantage fell by twice as much: no drift.
		// sample 2 + (0-4)/2 = 0.
		{name: "stalls that worked are no drift", windows: 1, lastAdv: 4, adv: 0, stalled: 2, want: 0, wantDrift: 0, wantEvery: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGovernor(1, true)
			g.drift, g.lastAdv, g.driftEvery, g.windows, g.stallsSeen = tc.drift, tc.lastAdv, tc.driftEvery, tc.windows, tc.stallsSeen
			assert.Equal(t, tc.want, g.driftStalls(tc.adv, tc.stalled))
			assert.InDelta(t, tc.wantDrift, g.drift, 1e-9)
			assert.InDelta(t, tc.wantEvery, g.driftEvery, 1e-9)
			assert.Equal(t, tc.stalled, g.stallsSeen)
			assert.Equal(t, tc.windows+1, g.windows)
			assert.Equal(t, tc.adv, g.lastAdv)
		})
	}
}

// TestGovernorDrift: windows in which the session stalled 4 frames each
// (a peer whose clock is slow) with a steady advantage of 1 frame, which
// the article's rule never stalls: the drift term queues one extra stall
// per window and paces more through the next ones.
func TestGovernorDrift(t *testing.T) {
	g := NewGovernor(1, true)
	l, r := []int{1}, []int{0} // advantage 1

	q := window(t, g, l, r, 0)
	assert.Equal(t, 0, q[Window-1], "window 1: no sample yet")

	q = window(t, g, l, r, 4)
	assert.Zero(t, q[Window-2])
	assert.Equal(t, 1, q[Window-1], "window 2: drift 1: one extra stall, pacing every 100 frames")

	q = window(t, g, l, r, 8)
	assert.Equal(t, 1, q[Window-2], "paced: not yet")
	// Frame 100: the pacing (every 100) adds one, the window end one more
	// (drift 1 + (4-1)/4 = 1.75: now every 100/1.75 = 57.14 frames).
	assert.Equal(t, 3, q[Window-1])

	q = window(t, g, l, r, 12)
	assert.Equal(t, 3, q[56], "frame 57 of window 4: 57 < 57.14")
	assert.Equal(t, 4, q[57], "frame 58: paced")
	assert.Equal(t, 4, q[Window-2], "next at 58 + 57.14 - 0.86…: frame 115")
	assert.Equal(t, MaxStalls, q[Window-1], "drift 1.75 + (4-1.75)/4 = 2.3125; 5 queued (none taken) is capped at MaxStalls")
	assert.InDelta(t, 100/2.3125, g.driftEvery, 1e-9)
}

// TestGovernorNoDrift: with no drift the rate term adds nothing, whatever
// the advantage does.
func TestGovernorNoDrift(t *testing.T) {
	g := NewGovernor(1, true)
	for w := range 10 {
		q := window(t, g, []int{1}, []int{0}, 0) // advantage 1, never stalled
		assert.Zero(t, q[Window-1], "window %d", w+1)
	}
	assert.Zero(t, g.driftEvery)

	// A lead of 4 stalled away: 2 stalls, after which the advantage is 0.
	g = NewGovernor(1, true)
	q := window(t, g, []int{4}, []int{0}, 0)
	require.Equal(t, 2, q[Window-1])
	for range 2 {
		for !g.Stall() {
		}
	}
	for w := range 5 {
		q = window(t, g, []int{0}, []int{0}, 2)
		assert.Zero(t, q[Window-1], "window %d after", w+1)
	}
	assert.Zero(t, g.driftEvery)
}

// TestGovernorDriftPacing: the drift stalls are paced evenly, one every
// driftEvery frames, the fraction carried over; only when smoothing.
func TestGovernorDriftPacing(t *testing.T) {
	cases := []struct {
		name      string
		every     float64
		smoothing bool
		want      []int // the frames of the window that queue a stall
	}{
		{name: "none", every: 0, smoothing: true, want: nil},
		// 28.57 apart: 29, 57.14 → 58, 85.71 → 86 (not 87: the fractions add up)
		{name: "3.5 a window", every: 100 / 3.5, smoothing: true, want: []int{29, 58, 86}},
		{name: "5 a window", every: 20, smoothing: true, want: []int{20, 40, 60, 80}},
		{name: "1.75 a window", every: 100 / 1.75, smoothing: true, want: []int{58}},
		{name: "measuring only", every: 20, smoothing: false, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGovernor(1, tc.smoothing)
			g.driftEvery = tc.every
			var got []int
			for f := 1; f < Window; f++ {
				before := g.Queued()
				g.Simulated(0)
				if g.Queued() > before {
					got = append(got, f)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestGovernorStallCap (issue 16): however large the advantage a peer's
// timing shows, window after window, the governor stalls at most
// MaxStalls frames per window on average (2*MaxStalls at most in any one):
// a lying or deliberately late peer cannot slow the machine below 95%.
// Before, an advantage of 40 input frames stalled 700 of 3,600 ticks (24
// frames of every 100 simulated).
func TestGovernorStallCap(t *testing.T) {
	g := NewGovernor(1, true)
	stalls, frames := 0, 0
	var stalled int64
	for range 3600 {
		g.Local(0, 40)
		g.Remote(0, 0)
		if g.Stall() {
			stalls++
			stalled++
			continue
		}
		frames++
		g.Simulated(stalled)
	}
	windows := frames / Window
	assert.LessOrEqual(t, stalls, MaxStalls*(windows+1), "%d stalls in %d windows", stalls, windows)
	assert.GreaterOrEqual(t, stalls, MaxStalls*(windows-1), "the cap is not the whole story: it does stall")
}
