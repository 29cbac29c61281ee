package report

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/rewindgg/rewind/internal/match"
)

func TestFormatFloat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    float64
		prec int
		want string
	}{
		{500, 0, "500"},
		{500, 2, "500"},
		{2.5, 2, "2.5"},
		{0.1 + 0.2, 2, "0.3"},
		{1.0 / 3, 2, "0.33"},
		{-0.0001, 2, "0"},
		{1234567, 1, "1234567"},
		{9.96, 1, "10"},
		{-2.25, 2, "-2.25"},
	} {
		assert.Equal(t, tc.want, FormatFloat(tc.v, tc.prec), "%v with %d decimals", tc.v, tc.prec)
	}
}

// TestNiceAxis: counts are labelled as integers on integer ticks from 0 to
// a round bound at or above the data (never "500.00", never cut short);
// a quantity gets as many decimals as its step needs; an axis without
// data or with flat data still spans a step.
func TestNiceAxis(t *testing.T) {
	t.Parallel()
	labels := func(ax *plot.Axis) []string {
		var out []string
		for _, tk := range ax.Tick.Marker.Ticks(ax.Min, ax.Max) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name             string
		min, max         float64
		integer, zero    bool
		wantMin, wantMax float64
		want             []string
	}{
		{"rollback counts", 3, 487, true, true, 0, 500, []string{"0", "100", "200", "300", "400", "500"}},
		{"a few counts", 1, 3, true, true, 0, 3, []string{"0", "1", "2", "3"}},
		{"stalls all zero", 0, 0, true, true, 0, 1, []string{"0", "1"}},
		{"no data", math.Inf(1), math.Inf(-1), true, true, 0, 1, []string{"0", "1"}},
		{"frames of advantage", 0.02, 2.57, false, true, 0, 3, []string{"0", "1", "2", "3"}},
		{"a frame of advantage", 0.02, 1.4, false, true, 0, 1.5, []string{"0", "0.5", "1", "1.5"}},
		{"round trips from 0", 41.7, 66.3, false, true, 0, 80, []string{"0", "20", "40", "60", "80"}},
		{"bandwidth", 2100, 2390, false, true, 0, 2500, []string{"0", "500", "1000", "1500", "2000", "2500"}},
		{"small fractions", 0, 0.12, false, true, 0, 0.125, []string{"0", "0.025", "0.05", "0.075", "0.1", "0.125"}},
		{"signed", -1.2, 3.1, false, false, -2, 4, []string{"-2", "-1", "0", "1", "2", "3", "4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ax := plot.New().X
			ax.Min, ax.Max = tc.min, tc.max
			niceAxis(&ax, tc.integer, tc.zero)
			assert.InDelta(t, tc.wantMin, ax.Min, 1e-9)
			assert.InDelta(t, tc.wantMax, ax.Max, 1e-9)
			assert.Equal(t, tc.want, labels(&ax))
		})
	}
}

func TestHistogram(t *testing.T) {
	t.Parallel()
	assert.Equal(t, Dist{}, Histogram(make([]int64, 5)))
	// 20 rollbacks: 10 at depth 1, 8 at 2, 1 at 5, 1 at 9.
	h := []int64{0, 10, 8, 0, 0, 1, 0, 0, 0, 1}
	assert.Equal(t, Dist{N: 20, Mean: (10 + 16 + 5 + 9) / 20.0, P95: 5, Max: 9}, Histogram(h))
	assert.Equal(t, Dist{N: 1, Mean: 3, P95: 3, Max: 3}, Histogram([]int64{0, 0, 0, 1}))
}

// TestHistogramPlot: a histogram whose deepest bucket is the last one
// (that many or more) plots whole, its axis reaching that bucket; one
// without rollbacks says so.
func TestHistogramPlot(t *testing.T) {
	t.Parallel()
	h := make([]int64, match.DepthBuckets)
	h[1], h[match.DepthBuckets-1] = 30, 1
	p := plot.New()
	require.NoError(t, histogram(p, h))
	assert.GreaterOrEqual(t, p.X.Max, float64(match.DepthBuckets-1))
	assert.Equal(t, 0.0, p.Y.Min)
	require.NoError(t, p.Save(10*vg.Centimeter, 5*vg.Centimeter, filepath.Join(t.TempDir(), "h.png")))

	empty := plot.New()
	empty.Title.Text = "Misprediction depth"
	require.NoError(t, histogram(empty, make([]int64, match.DepthBuckets)))
	assert.Equal(t, "Misprediction depth (no rollbacks)", empty.Title.Text)
	require.NoError(t, empty.Save(10*vg.Centimeter, 5*vg.Centimeter, filepath.Join(t.TempDir(), "e.png")))
}

// TestTickCostPlot: the tick-cost distribution plots on a log axis from
// the rarest tick's share to 1, its cost axis reaching the dearest tick;
// without work it says so; Write adds it to a
// run that has tick costs, and only to that one.
func TestTickCostPlot(t *testing.T) {
	t.Parallel()
	costs := make([]float64, 1000)
	for i := range costs {
		costs[i] = 500e3 // one 500 µs step
	}
	costs[0], costs[990], costs[999] = 0, 10.5e6, 16e6
	p := plot.New()
	require.NoError(t, tickCosts(p, costs))
	assert.Equal(t, 0.001, p.Y.Min)
	assert.Equal(t, 1.0, p.Y.Max)
	assert.GreaterOrEqual(t, p.X.Max, 16.0)
	require.NoError(t, p.Save(10*vg.Centimeter, 5*vg.Centimeter, filepath.Join(t.TempDir(), "c.png")))

	empty := plot.New()
	require.NoError(t, tickCosts(empty, []float64{0, 0}))
	assert.Equal(t, "Tick cost (model) (no work)", empty.Title.Text)
	require.NoError(t, empty.Save(10*vg.Centimeter, 5*vg.Centimeter, filepath.Join(t.TempDir(), "e.png")))

	dir := t.TempDir()
	require.NoError(t, Write(dir, Page{Title: "t", Runs: []Run{{Profile: "lan"}, {Profile: "wifi", TickCosts: costs}}}))
	pngs, err := filepath.Glob(filepath.Join(dir, "*.png"))
	require.NoError(t, err)
	assert.Len(t, pngs, 2*Plots()+1)
	assert.FileExists(t, filepath.Join(dir, "1-wifi-tickcost.png"))
	assert.NoFileExists(t, filepath.Join(dir, "0-lan-tickcost.png"))
}
