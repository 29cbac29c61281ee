//go:build rewind_adversary

package rollback_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTimerDeadline plays the same matches with the protocol timers'
// deadline (timers.go) and with every timer checked in every call, and
// requires the same ticks of each: every ping (the round trip and the
// packets sent follow it), every interrupt, resume and disconnect, every
// rate window's roll, every checksum and its repeats, and after a desync
// the repeats of ours. A timer skipped past its due time moves one of
// them.
func TestTimerDeadline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		profile netsim.Profile
		edit    func(i int, c *rollback.Config)
		silent  [2]int // peer 1 says nothing in the ticks [silent[0], silent[1])
		leak    bool   // machine 1's game leaks state from frame 30 on: a desync
		ticks   int
		want    []rollback.EventKind // machine 0's liveness events, in order
	}{
		{name: "pings over a long link", profile: netsim.Profile{Latency: 70 * time.Millisecond}, ticks: 600},
		{name: "pings every 250 ms", edit: func(_ int, c *rollback.Config) { c.QualityInterval = 250 * time.Millisecond },
			profile: netsim.Profile{Latency: 20 * time.Millisecond}, ticks: 300},
		{name: "an interrupt and the resume", silent: [2]int{100, 280}, ticks: 450,
			want: []rollback.EventKind{rollback.EventNetworkInterrupted, rollback.EventNetworkResumed}},
		{name: "an interrupt at 200 ms, a resume", edit: func(_ int, c *rollback.Config) { c.Timeouts.Interrupt = 200 * time.Millisecond },
			silent: [2]int{100, 130}, ticks: 200,
			want: []rollback.EventKind{rollback.EventNetworkInterrupted, rollback.EventNetworkResumed}},
		{name: "throttled before the interrupt at 3 s", edit: func(_ int, c *rollback.Config) { c.Timeouts.Interrupt = 3 * time.Second },
			silent: [2]int{100, 250}, ticks: 350},
		{name: "a disconnect", silent: [2]int{100, 500}, ticks: 500,
			want: []rollback.EventKind{rollback.EventNetworkInterrupted, rollback.EventDisconnected}},
		{name: "a disconnect at 1 s", edit: func(_ int, c *rollback.Config) {
			c.Timeouts.Interrupt, c.Timeouts.Disconnect = 300*time.Millisecond, time.Second
		}, silent: [2]int{100, 300}, ticks: 300,
			want: []rollback.EventKind{rollback.EventNetworkInterrupted, rollback.EventDisconnected}},
		{name: "a checksum every second and its repeats", edit: func(_ int, c *rollback.Config) { c.ChecksumEvery = 60 },
			profile: netsim.Profile{Latency: 30 * time.Millisecond, Loss: 0.2}, ticks: 400},
		{name: "a desync: our checksum repeated until the peer answers", edit: func(_ int, c *rollback.Config) { c.ChecksumEvery = 10 },
			leak: true, silent: [2]int{60, 120}, ticks: 200,
			want: []rollback.EventKind{rollback.EventNetworkInterrupted, rollback.EventNetworkResumed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with := timerTrace(t, tc.profile, tc.edit, tc.silent, tc.leak, tc.ticks)
			without := timerTrace(t, tc.profile, func(i int, c *rollback.Config) {
				if tc.edit != nil {
					tc.edit(i, c)
				}
				*c = rollback.WithTestHooks(*c, rollback.TestHooks{NoTimerDeadline: true})
			}, tc.silent, tc.leak, tc.ticks)
			require.Equal(t, len(without), len(with))
			for k := range without {
				require.Equal(t, without[k], with[k], "tick %d", k)
			}
			var kinds []rollback.EventKind
			for _, line := range with {
				for _, k := range line.events {
					switch k {
					case rollback.EventNetworkInterrupted, rollback.EventNetworkResumed, rollback.EventDisconnected:
						kinds = append(kinds, k)
					}
				}
			}
			assert.Equal(t, tc.want, kinds, "the timers this case is for fired")
			assert.NotZero(t, with[len(with)-1].peers[0].RTT, "pinged")
			if tc.leak {
				assert.Contains(t, with[len(with)-1].errs, "desync", "the desync was found")
			}
		})
	}
}

// timerLine is one tick of a timer trace: machine 0's events, and both
// machines' view of each other.
type timerLine struct {
	events []rollback.EventKind
	frames string
	errs   string // what the calls returned
	peers  [2]rollback.PeerStats
}

// timerTrace plays ticks ticks of two machines over a network of profile
// p, peer 1 silent in the ticks [silent[0], silent[1]) and its game
// leaking if leak, and returns each tick's line.
func timerTrace(t *testing.T, p netsim.Profile, edit func(i int, c *rollback.Config), silent [2]int, leak bool, ticks int) []timerLine {
	t.Helper()
	ss, gs, nw := connectedPairOver(t, p, edit)
	gs[1].Leak = leak
	var trace []timerLine
	for k := range ticks {
		var line timerLine
		for i, s := range ss {
			if i == 1 && k >= silent[0] && k < silent[1] {
				continue
			}
			_, err := s.AddLocalInput(rollback.PlayerID(i), rollback.Input(k/40%2))
			require.NoError(t, err)
			r, err := s.Advance()
			if err != nil { // a stall's input not taken; a desync
				line.errs += err.Error() + "; "
			}
			if i == 0 {
				for _, e := range r.Events {
					line.events = append(line.events, e.Kind)
				}
			}
			line.peers[i], _ = s.PeerStats(0)
			line.peers[i].SinceLastHeard = 0 // read at the call, not a timer
			line.frames += fmt.Sprintf("%d/%d ", s.Frame(), s.ConfirmedFrame())
		}
		trace = append(trace, line)
		nw.Advance(match.Tick)
	}
	return trace
}
