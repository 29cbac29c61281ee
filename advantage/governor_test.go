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
// the governor was in: each peer's drift moves only once its advantage has
// stayed beyond driftBand the same way for driftWindows windows.
func TestGovernorDriftStalls(t *testing.T) {
	cases := []struct {
		name       string
		drift      float64
		streak     int
		adv        float64 // the peer's advantage in the window (input frames)
		want       int
		wantDrift  float64
		wantStreak int
		wantEvery  float64
	}{
		{name: "a first window ahead: no drift yet", adv: 3, want: 0, wantStreak: 1},
		{name: "a second", streak: 1, adv: 3, want: 0, wantStreak: 2},
		// the third: drift 0 + 0.5 * 1.5 = 0.75 < 1: nothing paced.
		{name: "the third moves the drift", streak: 2, adv: 3, want: 0, wantDrift: 0.75, wantStreak: 3},
		// drift 0.75 + 0.5 * 1.5 = 1.5: every 66.7 frames; StallFrames(3) = 2 stalls already.
		{name: "a drift starts", drift: 0.75, streak: 3, adv: 3, want: 0, wantDrift: 1.5, wantStreak: 4, wantEvery: 100 / 1.5},
		// adv/2 = 0.5 ≥ 0.25 while StallFrames(1) = 0: one now; 0.5 is
		// within driftBand: the streak ends and the drift holds.
		{name: "at the quarter frame", drift: 2, streak: 5, adv: 1, want: 1, wantDrift: 2, wantStreak: 0, wantEvery: 50},
		{name: "under the quarter frame", drift: 2, streak: 5, adv: 0.4, want: 0, wantDrift: 2, wantStreak: 0, wantEvery: 50},
		// behind for three windows: the drift falls by 0.5 * 1 and the pacing stops.
		{name: "the drift dies out", drift: 1.2, streak: -2, adv: -2, want: 0, wantDrift: 0.7, wantStreak: -3, wantEvery: 0},
		{name: "capped", drift: 4.5, streak: 6, adv: 8, want: 0, wantDrift: maxDriftStalls, wantStreak: 7, wantEvery: 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGovernor(1, true)
			g.drift[0], g.streak[0] = tc.drift, tc.streak
			g.tracker.lastPeer[0], g.tracker.lastOK[0] = tc.adv, true
			assert.Equal(t, tc.want, g.driftStalls(max(tc.adv, 0)))
			assert.InDelta(t, tc.wantDrift, g.drift[0], 1e-9)
			assert.Equal(t, tc.wantStreak, g.streak[0])
			assert.InDelta(t, tc.wantEvery, g.driftEvery, 1e-9)
		})
	}
}

// TestGovernorDrift: a peer whose clock is slow keeps an advantage of 3
// frames window after window against the article's rule: from the third
// window the drift term adds to the stalls, paced through the next ones.
func TestGovernorDrift(t *testing.T) {
	g := NewGovernor(1, true)
	l, r := []int{3}, []int{0} // advantage 3
	var stalled int64
	for w := 1; w <= 2; w++ {
		q := window(t, g, l, r, stalled)
		assert.Equal(t, 2, q[Window-1], "window %d: the article's 2, no drift yet", w)
		stalled += drain(g)
	}
	assert.Zero(t, g.driftEvery)
	q := window(t, g, l, r, stalled)
	assert.Equal(t, 2, q[Window-1], "window 3: drift 0.75, under a frame")
	stalled += drain(g)
	q = window(t, g, l, r, stalled)
	assert.Equal(t, 2, q[Window-1], "window 4: drift 1.5, paced from the next window")
	assert.InDelta(t, 100/1.5, g.driftEvery, 1e-9)
	stalled += drain(g)
	q = window(t, g, l, r, stalled)
	assert.Equal(t, 1, q[66], "paced: frame 67 of window 5")
	assert.InDelta(t, 100/2.25, g.driftEvery, 1e-9, "drift 2.25")
}

// drain takes every queued stall and returns how many.
func drain(g *Governor) int64 {
	n := int64(0)
	for g.Queued() > 0 && g.tokens > 0 {
		if g.Stall() {
			n++
		}
	}
	return n
}

// TestGovernorMutualStalls (issue 49): the other machines stall as much as
// this one (every machine waits out the same loss burst; four machines
// each stall for the largest of their noisy estimates), so the advantage
// stays at 0 while the session's stalls grow 4 a window: that is no drift,
// and nothing is queued. Before, the drift estimate (stalls taken + half
// the change in advantage) read it as a peer 4% slow and paced 4 stalls a
// window more, which the others saw in turn: 132 stall frames a minute on
// intercontinental with 4 players, 93% of them for fairness.
func TestGovernorMutualStalls(t *testing.T) {
	g := NewGovernor(1, true)
	queued := 0
	for w := range 10 {
		q := window(t, g, []int{2}, []int{2}, int64(4*w))
		queued += q[Window-1]
		drain(g)
	}
	assert.Zero(t, queued)
	assert.Zero(t, g.driftEvery)
}

// TestGovernorNoisyPeers (issue 49): three peers whose advantages swing
// ±3 frames from window to window, never the same way three windows
// running: the largest of them is often worth a stall (the article's rule
// takes them), but no drift builds up and nothing is paced.
func TestGovernorNoisyPeers(t *testing.T) {
	g := NewGovernor(3, true)
	swing := [][3]int{{3, -3, 0}, {-3, 3, 3}, {3, 0, -3}, {0, -3, 3}}
	for w := range 20 {
		s := swing[w%len(swing)]
		for p := range 3 {
			g.Local(p, 3+s[p])
			g.Remote(p, 3)
		}
		for range Window {
			g.Simulated(0)
		}
		drain(g)
	}
	for p := range 3 {
		assert.Zero(t, g.drift[p], "peer %d", p)
	}
	assert.Zero(t, g.driftEvery)
}

// TestGovernorOtherStalls (issue 49): frames the session did not simulate
// for another reason (a wait for a peer's input after a loss burst) pay
// queued stalls: the machine gave those frames back already.
func TestGovernorOtherStalls(t *testing.T) {
	g := NewGovernor(1, true)
	q := window(t, g, []int{8}, []int{0}, 0)
	require.Equal(t, 4, q[Window-1])
	g.Simulated(3) // it waited 3 frames for a peer's input
	assert.Equal(t, 1, g.Queued(), "3 of the 4 paid")
	require.True(t, drainOne(g))
	g.Simulated(4) // its own stall: pays nothing more
	assert.Zero(t, g.Queued())
	g.Simulated(10)
	assert.Zero(t, g.Queued(), "never below 0")
}

// drainOne takes the next queued stall.
func drainOne(g *Governor) bool {
	for range 20 {
		if g.Stall() {
			return true
		}
	}
	return false
}

// TestGovernorEarlyLead (issue 49): after the first window, a lead of 5
// frames appears at frame 26 of a window (a peer that lost a burst's
// inputs waited for them): the estimate of the last recentFrames (5)
// frames is worth earlyStalls (5) stalls at frame 30, and they are
// queued then, not 70 frames later; the window's end adds only what they
// did not cover.
func TestGovernorEarlyLead(t *testing.T) {
	g := NewGovernor(1, true)
	window(t, g, []int{0}, []int{0}, 0) // the first window: the start's, never early
	var queued []int
	for f := 1; f <= Window; f++ {
		if f > 25 && f <= 50 {
			g.Local(0, 10) // advantage 10: StallFrames 5
			g.Remote(0, 0)
		}
		g.Simulated(0)
		queued = append(queued, g.Queued())
	}
	assert.Zero(t, queued[28])
	assert.Equal(t, 5, queued[29], "at frame 30, the first recentFrames to show it")
	// The window's mean advantage is 10 (its only samples): StallFrames 5,
	// all queued early.
	assert.Equal(t, 5, queued[Window-1])

	// A smaller lead waits for the window's end, as before.
	drain(g)
	q := window(t, g, []int{8}, []int{0}, 0)
	assert.Zero(t, q[Window-2])
	assert.Equal(t, 4, q[Window-1])

	// So does a large one in the first window.
	g = NewGovernor(1, true)
	q = window(t, g, []int{10}, []int{0}, 0)
	assert.Zero(t, q[Window-2])
	assert.Equal(t, 5, q[Window-1])
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
