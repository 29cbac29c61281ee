package inputlag_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rewindgg/rewind/inputlag"
)

// TestNext follows CalcInputLagFrames line by line: each row names the
// condition of the article's code that decides it.
func TestNext(t *testing.T) {
	cases := []struct {
		cur   int
		worst float64
		want  int
		why   string
	}{
		{0, 0, 0, "no condition holds"},
		{0, 1.99, 0, "below the first raise threshold"},
		{0, 2, 1, "cur <= 0 && worst >= 2"},
		{0, 3, 2, "cur <= 1 && worst >= 3 also holds for 0 and wins"},
		{0, 6, 3, "every raise up to 6 holds for 0"},
		{0, 8, 4, "every raise holds for 0: straight to 4"},
		{0, 100, 4, "never above Max"},
		{1, 2.5, 1, "hysteresis: 2.5 does not raise 1"},
		{1, 3, 2, "cur <= 1 && worst >= 3"},
		{1, 1, 0, "cur >= 1 && worst <= 1"},
		{1, 1.5, 1, "between the down threshold 1 and the up threshold 3: stay"},
		{2, 2, 1, "cur >= 2 && worst <= 2"},
		{2, 1, 0, "cur >= 2 && worst <= 2, then cur >= 1 && worst <= 1 wins"},
		{2, 4, 2, "between 2 and 6: stay"},
		{2, 6, 3, "cur <= 2 && worst >= 6"},
		{2, 8, 4, "cur <= 3 && worst >= 8 also holds for 2"},
		{3, 5, 2, "cur >= 3 && worst <= 5"},
		{3, 5.5, 3, "between 5 and 8: stay"},
		{3, 8, 4, "cur <= 3 && worst >= 8"},
		{3, 0.5, 0, "every reduction holds for 3 at 0.5"},
		{4, 7, 3, "cur >= 4 && worst <= 7"},
		{4, 7.5, 4, "above 7: stay at 4"},
		{4, 5, 2, "cur >= 3 && worst <= 5 also holds for 4"},
		{4, 2, 1, "and cur >= 2 && worst <= 2"},
		{4, 1, 0, "and cur >= 1 && worst <= 1"},
		{4, 100, 4, "nothing raises beyond 4"},
		{-3, 2, 1, "a negative setting counts as 0"},
		{9, 7, 3, "a setting above Max counts as Max"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("cur=%d/worst=%v", tc.cur, tc.worst), func(t *testing.T) {
			assert.Equal(t, tc.want, inputlag.Next(tc.cur, tc.worst), tc.why)
		})
	}
}

// TestHysteresis walks a lag that rises and falls: the setting follows it
// up at 2, 3, 6, 8 and down only at 7, 5, 2, 1.
func TestHysteresis(t *testing.T) {
	lag := 0
	var trace []int
	for _, w := range []float64{1, 2, 2.5, 3, 5, 6, 7, 8, 7.5, 7, 6, 5, 4, 2, 1.5, 1} {
		lag = inputlag.Next(lag, w)
		trace = append(trace, lag)
	}
	assert.Equal(t, []int{0, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 2, 2, 1, 1, 0}, trace)
}

func TestInitial(t *testing.T) {
	frame := time.Second / 60
	cases := []struct {
		rtt  time.Duration
		want int
	}{
		{0, 0},
		{30 * time.Millisecond, 0},  // one way 0.9 frames
		{70 * time.Millisecond, 1},  // one way 2.1 frames
		{100 * time.Millisecond, 2}, // one way 3 frames
		{200 * time.Millisecond, 3}, // one way 6 frames
		{600 * time.Millisecond, 4}, // one way 18 frames
		{-time.Second, 0},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, inputlag.Initial(tc.rtt, frame), "rtt %v", tc.rtt)
	}
	assert.Zero(t, inputlag.Initial(time.Second, 0))
}
