package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// TestLinkHeard: a datagram counts in the window, and reports once that the
// peer speaks again after an interruption.
func TestLinkHeard(t *testing.T) {
	l := link{interrupted: true}
	assert.True(t, l.heard(2*time.Second, 40), "the end of the interruption")
	assert.False(t, l.interrupted)
	assert.False(t, l.heard(3*time.Second, 60))
	assert.Equal(t, 3*time.Second, l.lastRecv)
	assert.Equal(t, int64(2), l.winRecv)
	assert.Equal(t, int64(100), l.winRecvBytes)

	l.sent(4*time.Second, 30)
	l.sent(5*time.Second, 20)
	assert.Equal(t, 5*time.Second, l.lastSend)
	assert.Equal(t, int64(2), l.winSent)
	assert.Equal(t, int64(50), l.winSentBytes)
}

// TestLinkSample: the first sample is the round trip; later ones move it by
// an eighth of the difference (RFC 6298); impossible ones are refused.
func TestLinkSample(t *testing.T) {
	steps := []struct {
		d    time.Duration
		ok   bool
		want time.Duration
	}{
		{d: 100 * ms, ok: true, want: 100 * ms},
		{d: 180 * ms, ok: true, want: 110 * ms}, // 100 + 80/8
		{d: 30 * ms, ok: true, want: 100 * ms},  // 110 - 80/8
		{d: -1, ok: false, want: 100 * ms},      // a clock that went back
		{d: time.Minute + 1, ok: false, want: 100 * ms},
		{d: 100*ms + 15, ok: true, want: 100*ms + 1}, // 15ns/8 truncates to 1ns
		{d: 100*ms - 15, ok: true, want: 100*ms - 1}, // -16ns/8 = -2ns
		{d: time.Minute, ok: true, want: 100*ms - 1 + (time.Minute-100*ms+1)/8},
	}
	var l link
	for i, s := range steps {
		assert.Equal(t, s.ok, l.sample(s.d), "step %d: sample %v", i, s.d)
		assert.Equal(t, s.want, l.rtt, "step %d: sample %v", i, s.d)
	}

	var z link
	assert.True(t, z.sample(0))
	assert.Equal(t, time.Duration(0), z.rtt, "a zero sample leaves the round trip unknown")
	assert.True(t, z.sample(40*ms))
	assert.Equal(t, 40*ms, z.rtt, "so the next one is taken whole")
}

// TestLinkFloor: the floor is the least of the latest rttRecent samples; an
// impossible sample does not count, and an old low one ages out.
func TestLinkFloor(t *testing.T) {
	var l link
	assert.Equal(t, time.Duration(0), l.floor(), "no sample yet")
	l.sample(67 * ms)
	assert.Equal(t, 67*ms, l.floor(), "one sample is its own floor")
	l.sample(33 * ms)
	l.sample(50 * ms)
	l.sample(-1)
	assert.Equal(t, 33*ms, l.floor())
	for range rttRecent - 2 {
		l.sample(50 * ms)
	}
	assert.Equal(t, 33*ms, l.floor(), "33 ms is still among the latest %d", rttRecent)
	l.sample(60 * ms)
	assert.Equal(t, 50*ms, l.floor(), "33 ms aged out")
}

// TestLinkThrottled: silent for more than a second, a peer is sent to at
// most every 250 ms.
func TestLinkThrottled(t *testing.T) {
	cases := []struct {
		lastRecv, lastSend, now time.Duration
		want                    bool
	}{
		{lastRecv: 0, lastSend: 900 * ms, now: time.Second, want: false},              // silent exactly a second
		{lastRecv: 0, lastSend: time.Second, now: time.Second + 1, want: true},        // silent, sent just now
		{lastRecv: 0, lastSend: 1750 * ms, now: 2 * time.Second, want: false},         // 250 ms since the last send
		{lastRecv: 0, lastSend: 1750*ms + 1, now: 2 * time.Second, want: true},        // not quite
		{lastRecv: 1500 * ms, lastSend: 1999 * ms, now: 2 * time.Second, want: false}, // heard recently
	}
	for _, tc := range cases {
		l := link{lastRecv: tc.lastRecv, lastSend: tc.lastSend}
		assert.Equal(t, tc.want, l.throttled(tc.now), "%+v", tc)
	}
}

// TestLinkRoll: the window closes after a second into per-second rates.
func TestLinkRoll(t *testing.T) {
	l := link{winStart: time.Second}
	var st PeerStats
	for range 3 {
		l.sent(0, 100)
	}
	l.heard(0, 50)
	l.heard(0, 50)

	l.roll(time.Second+999*ms, &st)
	assert.Equal(t, PeerStats{}, st, "the window is not over")
	assert.Equal(t, int64(3), l.winSent)

	l.roll(3*time.Second, &st) // two seconds
	assert.Equal(t, PeerStats{SendPacketsPerSec: 1.5, SendBytesPerSec: 150, RecvPacketsPerSec: 1, RecvBytesPerSec: 50}, st)
	assert.Equal(t, 3*time.Second, l.winStart)
	assert.Zero(t, l.winSent+l.winSentBytes+l.winRecv+l.winRecvBytes)

	l.sent(0, 10)
	l.roll(3500*ms, &st)
	assert.Equal(t, 1.5, st.SendPacketsPerSec, "the last complete window stays")
	l.roll(4*time.Second, &st)
	assert.Equal(t, PeerStats{SendPacketsPerSec: 1, SendBytesPerSec: 10}, st)
}

// TestProgressAcked: an ack beyond our next frame is refused; an older one
// never moves it back.
func TestProgressAcked(t *testing.T) {
	steps := []struct {
		ack, localNext Frame
		ok             bool
		want           Frame
	}{
		{ack: 5, localNext: 10, ok: true, want: 5},
		{ack: 3, localNext: 10, ok: true, want: 5}, // reordered
		{ack: 11, localNext: 10, ok: false, want: 5},
		{ack: 10, localNext: 10, ok: true, want: 10},
		{ack: 0, localNext: 10, ok: true, want: 10},
	}
	var p progress
	for i, s := range steps {
		assert.Equal(t, s.ok, p.acked(s.ack, s.localNext), "step %d", i)
		assert.Equal(t, s.want, p.ack, "step %d", i)
	}
}

// TestProgressFirst: the redundancy window, the loss burst after a round
// trip and a quarter plus 35 ms, and the 10 s of full resends after it.
func TestProgressFirst(t *testing.T) {
	const rtt = 100 * ms // a frame is lost after 100+25+35 = 160 ms
	now := 20 * time.Second
	cases := []struct {
		name      string
		ack       Frame
		fullUntil time.Duration
		sentAt    time.Duration
		sent      bool
		rtt       time.Duration
		redundant int
		first     Frame
		burst     bool
		until     time.Duration // fullUntil after
	}{
		{name: "the newest 8", ack: 10, sentAt: now - 50*ms, sent: true, rtt: rtt, redundant: 8, first: 22},
		{name: "just not lost", ack: 10, sentAt: now - 160*ms, sent: true, rtt: rtt, redundant: 8, first: 22},
		{name: "lost: a burst, everything from the ack", ack: 10, sentAt: now - 161*ms, sent: true, rtt: rtt, redundant: 8,
			first: 10, burst: true, until: now + 10*time.Second},
		{name: "never sent: not lost", ack: 10, sentAt: 0, sent: false, rtt: rtt, redundant: 8, first: 22},
		{name: "within the full period", ack: 10, fullUntil: now + time.Second, sentAt: now - 50*ms, sent: true, rtt: rtt, redundant: 8,
			first: 10, until: now + time.Second},
		{name: "lost again within the period: extended, not counted", ack: 10, fullUntil: now + time.Second, sentAt: now - time.Second, sent: true, rtt: rtt, redundant: 8,
			first: 10, until: now + 10*time.Second},
		{name: "the period is over", ack: 10, fullUntil: now, sentAt: now - 50*ms, sent: true, rtt: rtt, redundant: 8, first: 22, until: now},
		{name: "lost as the period ends: a new burst", ack: 10, fullUntil: now, sentAt: now - time.Second, sent: true, rtt: rtt, redundant: 8,
			first: 10, burst: true, until: now + 10*time.Second},
		{name: "the window covers every unacked frame", ack: 22, sentAt: 0, sent: true, rtt: rtt, redundant: 8, first: 22},
		{name: "redundant 0: from the ack", ack: 10, sentAt: 0, sent: true, rtt: rtt, redundant: 0, first: 10},
		{name: "redundant -1: from the ack", ack: 10, sentAt: 0, sent: true, rtt: rtt, redundant: -1, first: 10},
		{name: "no round trip yet: from the ack", ack: 10, sentAt: 0, sent: true, rtt: 0, redundant: 8, first: 10},
		{name: "a 300 ms link: lost after 410 ms", ack: 10, sentAt: now - 410*ms, sent: true, rtt: 300 * ms, redundant: 8, first: 22},
		{name: "a 300 ms link, 411 ms", ack: 10, sentAt: now - 411*ms, sent: true, rtt: 300 * ms, redundant: 8,
			first: 10, burst: true, until: now + 10*time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := progress{ack: tc.ack, fullUntil: tc.fullUntil}
			first, burst := p.first(now, tc.sentAt, tc.rtt, tc.sent, 30, tc.redundant)
			assert.Equal(t, tc.first, first)
			assert.Equal(t, tc.burst, burst)
			assert.Equal(t, tc.until, p.fullUntil)
			assert.Equal(t, tc.ack, p.ack, "first never moves the ack")
		})
	}
}

// TestProgressBurstPeriod: one burst, counted once, gives 10 s of full
// resends while the losses go on; then the window again.
func TestProgressBurstPeriod(t *testing.T) {
	var p progress
	p.ack = 10
	lost := func(now time.Duration) (Frame, bool) { return p.first(now, now-time.Second, 100*ms, true, 30, 8) }
	clean := func(now time.Duration) (Frame, bool) { return p.first(now, now-10*ms, 100*ms, true, 30, 8) }
	bursts := 0
	for now := time.Second; now < 5*time.Second; now += 100 * ms {
		first, burst := lost(now)
		assert.Equal(t, Frame(10), first)
		if burst {
			bursts++
		}
	}
	assert.Equal(t, 1, bursts, "one burst however long it lasts")
	// The last loss was at 4.9 s: full resends until 14.9 s.
	first, _ := clean(14900*ms - 1)
	assert.Equal(t, Frame(10), first)
	first, _ = clean(14900 * ms)
	assert.Equal(t, Frame(22), first)
	_, burst := lost(15 * time.Second)
	assert.True(t, burst, "a loss after the period is a new burst")
}

// TestProgressLockstepDue: at once with a new input, else at most every
// 15 ms.
func TestProgressLockstepDue(t *testing.T) {
	steps := []struct {
		now       time.Duration
		localNext Frame
		want      bool
	}{
		{now: 20 * ms, localNext: 1, want: true},  // a new input
		{now: 25 * ms, localNext: 1, want: false}, // 5 ms later, nothing new
		{now: 34 * ms, localNext: 1, want: false},
		{now: 35 * ms, localNext: 1, want: true}, // 15 ms after the last send
		{now: 36 * ms, localNext: 2, want: true}, // a new input: at once
		{now: 40 * ms, localNext: 2, want: false},
		{now: 51 * ms, localNext: 2, want: true},
	}
	var p progress
	for i, s := range steps {
		assert.Equal(t, s.want, p.lockstepDue(s.now, s.localNext), "step %d: %v %d", i, s.now, s.localNext)
	}
	assert.Equal(t, Frame(2), p.sentNext)
	assert.Equal(t, 51*ms, p.inputSentAt)
}

// TestLeave: a peer disconnected here keeps our own count of its frames
// until the agreement; each reporter's lowest report counts; the agreed
// frame is the least of our count and every report at or above what its
// reporter had already claimed (its floor): a liar cannot cut a machine
// below the frames it said it had.
func TestLeave(t *testing.T) {
	var l leave
	assert.True(t, l.reportBy(2, 50), "a first report")
	assert.False(t, l.reportBy(2, 44))
	assert.False(t, l.reportBy(2, 47))
	assert.Equal(t, Frame(44), l.report[2], "the lowest report from each reporter")
	assert.Equal(t, 1, l.reporters())
	assert.True(t, l.disconnect(60))
	assert.False(t, l.disconnect(30), "disconnected once")
	assert.Equal(t, Frame(60), l.frozen)
	assert.Equal(t, Frame(60), l.frame, "our own count until agreed")

	cases := []struct {
		name   string
		frozen Frame
		report Frame // by peer 1, the only other machine
		floor  Frame // peer 1's floor
		want   Frame
	}{
		{"our count alone is lower", 40, 45, 0, 40},
		{"a lower report wins", 40, 35, 0, 35},
		{"a report below its floor lowers nothing", 40, 10, 30, 40},
		{"a report at its floor counts", 40, 30, 30, 30},
		{"the floor never raises above our count", 40, 10, 50, 40},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			peers := make([]peer, 2)
			l := &peers[0].leave
			l.disconnect(tc.frozen)
			l.reportBy(1, tc.report)
			floor := [MaxPlayers]Frame{1: tc.floor}
			require.True(t, l.settle(0, peers, &floor))
			assert.Equal(t, tc.want, l.frame)
		})
	}
}

// TestForgedGossipCutAgrees: two honest machines that count a liar's
// frames differently agree on the cut of a third machine that the liar
// reported gone at a stale frame. Seed 1027 of the rejoin soak with a
// forged-gossip liar: machine 0 raised the liar's report of 0 to its floor
// for the liar, 1328, and machine 2 to its own, 1312, so the two cut the
// departing machine at different frames and the rejoin failed.
func TestForgedGossipCutAgrees(t *testing.T) {
	cut := func(liarFloor Frame) Frame {
		peers := make([]peer, 3) // 0: the departing machine, 1: the other honest one, 2: the liar
		l := &peers[0].leave
		l.disconnect(1332)
		l.reportBy(1, 1332)
		l.reportBy(2, 0)
		floor := [MaxPlayers]Frame{1: 1332, 2: liarFloor}
		require.True(t, l.settle(0, peers, &floor))
		return l.frame
	}
	assert.Equal(t, Frame(1332), cut(1328))
	assert.Equal(t, cut(1328), cut(1312), "the same cut whatever our floor for the liar")
}

// TestLeaveSettle: the leaver (peers[0]) is settled once every other peer
// still here reported it.
func TestLeaveSettle(t *testing.T) {
	cases := []struct {
		name     string
		disc     bool  // we disconnected the leaver
		reported []int // peers that reported it
		gone     []int // peers disconnected themselves
		want     bool
	}{
		{name: "not disconnected here", reported: []int{1, 2, 3}, want: false},
		{name: "nobody reported", disc: true, want: false},
		{name: "one missing", disc: true, reported: []int{1, 3}, want: false},
		{name: "every one", disc: true, reported: []int{1, 2, 3}, want: true},
		{name: "the missing one left too", disc: true, reported: []int{1, 3}, gone: []int{2}, want: true},
		{name: "every other one left", disc: true, gone: []int{1, 2, 3}, want: true},
		{name: "its own report does not count", disc: true, reported: []int{0, 1, 2}, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			peers := make([]peer, 4)
			l := &peers[0].leave
			if tc.disc {
				l.disconnect(100)
			}
			for _, j := range tc.reported {
				l.reportBy(j, 90)
			}
			for _, j := range tc.gone {
				peers[j].leave.disconnect(80)
			}
			assert.Equal(t, tc.want, l.settle(0, peers, &[MaxPlayers]Frame{}))
			assert.Equal(t, tc.want, l.agreed)
			assert.False(t, l.settle(0, peers, &[MaxPlayers]Frame{}), "settled at most once")
		})
	}
}

// TestSumSender: a new checksum goes three times, 250 ms apart; a newer one
// starts again.
func TestSumSender(t *testing.T) {
	steps := []struct {
		now  time.Duration
		f    Frame
		want bool
	}{
		{now: time.Second, f: 500, want: true},
		{now: time.Second + 100*ms, f: 500, want: false},
		{now: time.Second + 249*ms, f: 500, want: false},
		{now: time.Second + 250*ms, f: 500, want: true},
		{now: time.Second + 499*ms, f: 500, want: false},
		{now: time.Second + 500*ms, f: 500, want: true},
		{now: time.Second + 750*ms, f: 500, want: false}, // three sent
		{now: 9 * time.Second, f: 500, want: false},
		{now: 9*time.Second + 1*ms, f: 1000, want: true}, // a new frame, at once
		{now: 9*time.Second + 2*ms, f: 1000, want: false},
		{now: 9*time.Second + 251*ms, f: 1000, want: true},
		{now: 9*time.Second + 260*ms, f: 1500, want: true}, // newer again, before the repeats ended
	}
	var c sumSender
	for i, s := range steps {
		assert.Equal(t, s.want, c.due(s.now, s.f), "step %d: %v frame %d", i, s.now, s.f)
	}
	assert.Equal(t, 1, c.sends)
}

// TestGossipViewCount: counts only grow.
func TestGossipViewCount(t *testing.T) {
	var g gossipView
	steps := []struct {
		x     int
		count Frame
		want  [3]Frame
	}{
		{x: 1, count: 10, want: [3]Frame{0, 10, 0}},
		{x: 1, count: 7, want: [3]Frame{0, 10, 0}}, // a reordered packet
		{x: 2, count: 4, want: [3]Frame{0, 10, 4}},
		{x: 1, count: 12, want: [3]Frame{0, 12, 4}},
		{x: 1, count: 12, want: [3]Frame{0, 12, 4}},
	}
	for i, s := range steps {
		g.count(s.x, s.count)
		assert.Equal(t, s.want, [3]Frame(g.sees[:3]), "step %d", i)
	}
}

// TestLinkTakeReply: a reply that echoes one of our pings is a round-trip
// sample; one that echoes no ping of ours is forged; an impossible sample
// is dropped.
func TestLinkTakeReply(t *testing.T) {
	for _, tc := range []struct {
		name string
		echo time.Duration
		now  time.Duration
		want verdict
		rtt  time.Duration
	}{
		{"our ping", time.Second, time.Second + 40*time.Millisecond, taken, 40 * time.Millisecond},
		{"an older ping of ours", 500 * time.Millisecond, 600 * time.Millisecond, taken, 100 * time.Millisecond},
		{"no ping of ours", 700 * time.Millisecond, time.Second, forged, 0},
		{"a reply from the future", time.Second, 900 * time.Millisecond, dropped, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l link
			l.pinged(500 * time.Millisecond)
			l.pinged(time.Second)
			assert.Equal(t, tc.want, l.takeReply(tc.echo, tc.now))
			assert.Equal(t, tc.rtt, l.rtt)
		})
	}
}

// TestUnanswered: a peer is named for withholding the answers to our
// pings only once it has answered none of 8 or more sent over 8 s or more.
func TestUnanswered(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pings   int
		every   time.Duration
		answers int
		want    bool
	}{
		{"8 in 8 s, none answered", 9, time.Second, 0, true},
		{"8 in 0.8 s (before the start), none answered", 9, 100 * time.Millisecond, 0, false},
		{"7 in 14 s", 7, 2 * time.Second, 0, false},
		{"one answered", 20, time.Second, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l link
			now := time.Second
			for range tc.pings {
				l.pinged(now)
				now += tc.every
			}
			for range tc.answers {
				l.sample(50 * time.Millisecond)
			}
			assert.Equal(t, tc.want, l.unanswered(now-tc.every))
		})
	}
}
