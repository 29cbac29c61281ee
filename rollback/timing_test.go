package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestTiming: a peer's acknowledgements and inputs judged against a round
// trip, ours from pings or, while it answers none, its least ack age
// (issue 46: a peer that never answered a ping was never judged).
func TestTiming(t *testing.T) {
	const tick = time.Second / 60
	for _, tc := range []struct {
		name      string
		pingRTT   time.Duration // 0: it answers no ping
		ackAge    time.Duration // how old the oldest frame it still wants is, when its packet comes
		inputLate time.Duration // how long after we simulated a frame its input comes
		ackLies   bool
		lookahead bool
	}{
		{"honest, pinged", 100 * time.Millisecond, 90 * time.Millisecond, 60 * time.Millisecond, false, false},
		{"honest, no pings", 0, 90 * time.Millisecond, 60 * time.Millisecond, false, false},
		{"holds its inputs, pinged", 100 * time.Millisecond, 90 * time.Millisecond, 400 * time.Millisecond, false, true},
		{"holds its inputs, no pings", 0, 90 * time.Millisecond, 400 * time.Millisecond, false, true},
		{"acks late, pinged", 100 * time.Millisecond, 400 * time.Millisecond, 60 * time.Millisecond, true, false},
		// Without pings, acknowledging late only claims a longer link:
		// what its inputs' lateness then hides is bounded by that delay.
		{"acks late and holds its inputs as much, no pings", 0, 400 * time.Millisecond, 400 * time.Millisecond, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := timing{ackAgeMin: -1}
			var sent, simmed frameTimes
			var ackLies, lookahead bool
			f := Frame(0)
			for w := range ackWindows + 2 { // without pings the first two only measure: acks of nothing sent have age 0
				for range 60 {
					now := time.Duration(f) * tick
					sent.note(f+1, now)
					simmed.note(f+1, now)
					// Its packet at now+1 wants the frame sent ackAge ago,
					// and brings its input for the frame simulated
					// inputLate ago.
					later := now + tick
					ack := Frame((later - tc.ackAge) / tick)
					tm.acked(later, ack, f+1, &sent)
					if in := Frame((later - tc.inputLate) / tick); in >= 0 && tm.input(later, in, &simmed, tm.judged(tc.pingRTT)) {
						tm.late()
					}
					f++
				}
				ackLies, lookahead = tm.roll(tm.judged(tc.pingRTT))
				if w == 0 && tc.pingRTT == 0 {
					assert.False(t, ackLies || lookahead, "the first window has no round trip to judge by")
				}
			}
			assert.Equal(t, tc.ackLies, ackLies, "ack lies")
			assert.Equal(t, tc.lookahead, lookahead, "lookahead")
		})
	}
	var tm timing
	assert.Zero(t, tm.judged(0), "no pings and no acks: no round trip")
	assert.False(t, tm.input(time.Second, 0, &frameTimes{high: 1}, 0), "without a round trip no input is late")
}
