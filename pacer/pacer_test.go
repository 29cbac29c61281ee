package pacer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// fakeTime is a clock whose sleeps always overshoot by a fixed amount, like
// a real timer that wakes late.
type fakeTime struct {
	t         time.Time
	overshoot time.Duration
}

func (f *fakeTime) now() time.Time        { return f.t }
func (f *fakeTime) sleep(d time.Duration) { f.t = f.t.Add(d + f.overshoot) }
func (f *fakeTime) stall(d time.Duration) { f.t = f.t.Add(d) }

func TestNoDriftDespiteLateWakeups(t *testing.T) {
	ft := &fakeTime{t: time.Unix(1000, 0), overshoot: 600 * time.Microsecond}
	p := newPacer(time.Second/60, ft.now, ft.sleep)
	start := ft.t
	for range 600 {
		late := p.Wait()
		assert.LessOrEqual(t, late, 600*time.Microsecond)
	}
	elapsed := ft.t.Sub(start)
	// 600 frames at 60 Hz is 10 s; relative sleeps would drift by 360 ms.
	assert.InDelta(t, float64(10*time.Second), float64(elapsed), float64(time.Millisecond))
}

func TestSkipsAheadAfterALongStall(t *testing.T) {
	ft := &fakeTime{t: time.Unix(1000, 0)}
	p := newPacer(time.Second/60, ft.now, ft.sleep)
	p.Wait()
	ft.stall(2 * time.Second)
	late := p.Wait()
	assert.Greater(t, late, MaxBehind)
	assert.Equal(t, int64(1), p.Resets())
	before := ft.t
	p.Wait()
	assert.Equal(t, time.Second/60, ft.t.Sub(before), "after a reset the next frame is one period away, not a burst")
}

func TestRealPacerKeepsTheRate(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	p := New(10 * time.Millisecond)
	start := time.Now()
	for range 30 {
		p.Wait()
	}
	elapsed := time.Since(start)
	// Never early; the upper bound only guards against a broken schedule,
	// not against a busy machine (the fake-clock tests check the arithmetic).
	assert.GreaterOrEqual(t, elapsed, 300*time.Millisecond)
	assert.Less(t, elapsed, 600*time.Millisecond)
	assert.Equal(t, 10*time.Millisecond, p.Period())
}
