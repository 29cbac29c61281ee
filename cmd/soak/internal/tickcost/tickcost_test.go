package tickcost

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
)

// TestFigures: the model's arithmetic, from given ticks of work to the
// figures.
func TestFigures(t *testing.T) {
	t.Parallel()
	// One new frame a tick, one save every fourth; the last tick rolls
	// back: a restore and 20 frames re-simulated.
	steady := match.TickWork{Steps: 1, Simulated: 1}
	saving := match.TickWork{Steps: 1, Simulated: 1, Saves: 1, SavedBytes: 1000}
	rolled := match.TickWork{Steps: 21, Simulated: 1, Restores: 1, RestoredBytes: 1000}
	stalled := match.TickWork{}
	for _, tc := range []struct {
		name  string
		model Model
		work  []match.TickWork
		want  Figures
	}{
		{"nothing", Model{Step: time.Millisecond}, nil, Figures{Costs: []float64{}}},
		{"stalled only", Model{Step: time.Millisecond, CopyNsPerByte: 1}, []match.TickWork{stalled, stalled},
			Figures{Ticks: 2, Costs: []float64{0, 0}}},
		{"steps only", Model{Step: 500 * time.Microsecond}, []match.TickWork{steady, steady, saving, rolled},
			Figures{Ticks: 4, Steps: 24, Simulated: 4, Saves: 1, Restores: 1, Bytes: 2000,
				// 24 steps × 500 µs over 4 frames (1/15 s): 180 ms a second.
				CPUPerSecond: 180 * time.Millisecond,
				P50:          500 * time.Microsecond, P99: 10500 * time.Microsecond, Max: 10500 * time.Microsecond,
				Costs: []float64{500e3, 500e3, 500e3, 10500e3}}},
		{"steps and copies", Model{Step: 100 * time.Microsecond, CopyNsPerByte: 2}, []match.TickWork{steady, saving, stalled, rolled},
			Figures{Ticks: 4, Steps: 23, Simulated: 3, Saves: 1, Restores: 1, Bytes: 2000,
				// 23 × 100 µs + 2,000 B × 2 ns = 2.304 ms over 3 frames (1/20 s).
				CPUPerSecond: 46080 * time.Microsecond,
				P50:          100 * time.Microsecond, P99: 2102 * time.Microsecond, Max: 2102 * time.Microsecond,
				Costs: []float64{0, 100e3, 102e3, 2102e3}}},
		{"a 1 MiB state", Model{Step: 50 * time.Microsecond, CopyNsPerByte: 0.25, StateBytes: 1 << 20}, []match.TickWork{saving, rolled},
			Figures{Ticks: 2, Steps: 22, Simulated: 2, Saves: 1, Restores: 1, Bytes: 2 << 20,
				// 22 × 50 µs + 2 MiB × 0.25 ns = 1.1 ms + 524,288 ns over 2 frames.
				CPUPerSecond: time.Duration(1624288 * 30),
				P50:          50*time.Microsecond + 262144, P99: 1050*time.Microsecond + 262144, Max: 1050*time.Microsecond + 262144,
				Costs: []float64{50e3 + 262144, 1050e3 + 262144}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, tc.model.Check())
			assert.Equal(t, tc.want, tc.model.Figures(tc.work))
		})
	}
}

// TestP99: the 99th percentile is the nearest rank: of 200 ticks with the
// two dearest apart, the 198th.
func TestP99(t *testing.T) {
	t.Parallel()
	work := make([]match.TickWork, 200)
	for i := range work {
		work[i] = match.TickWork{Steps: 1, Simulated: 1}
	}
	work[10].Steps, work[20].Steps, work[30].Steps = 5, 9, 30
	f := Model{Step: time.Millisecond}.Figures(work)
	assert.Equal(t, time.Millisecond, f.P50)
	assert.Equal(t, 5*time.Millisecond, f.P99)
	assert.Equal(t, 30*time.Millisecond, f.Max)
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, m := range []Model{{Step: -1}, {CopyNsPerByte: -0.5}, {StateBytes: -1}} {
		assert.ErrorIs(t, m.Check(), ErrModel, "%+v", m)
	}
	assert.NoError(t, Model{}.Check())
}

// TestMeasureCopy: a copy costs something, and not a microsecond a byte.
func TestMeasureCopy(t *testing.T) {
	t.Parallel()
	ns := MeasureCopy(64<<10, 3)
	assert.Positive(t, ns)
	assert.Less(t, ns, 1000.0)
}
