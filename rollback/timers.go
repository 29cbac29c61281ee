package rollback

import (
	"math"
	"time"
)

// This file is the one deadline of the protocol's timers: the rate
// window's roll, the liveness of each peer (interrupted, disconnected,
// sent to only four times a second),
// the judgement of a doubted departure report, the pings, and the repeats
// of a checksum (and of ours at a desync, until the peer answers). Each is a
// check of the form "now has passed a stamp plus an interval", run by
// every call; the stamps only move forward (a datagram heard, a ping
// sent, a window rolled), so the earliest time any of them can come due,
// computed once (peerSet.nextTimer), stays a lower bound of it until a
// timer fires. The calls before it skip the checks (protocol.timersDue):
// on a steady tick none of them can be true, and with two machines they
// cost ~100 instructions a tick. The few writes that move a timer
// earlier instead (a link made new, a ping asked for at once, a report
// doubted, a new final checksum due to every peer at once, a desync
// found) lower the deadline themselves (resetTimers, timerAt).

// timersDue reports whether a protocol timer may fire in a call at now:
// always before the match starts (the handshake's and the start's pace),
// then from the deadline on.
func (p *protocol) timersDue(now time.Duration) bool {
	return now >= p.timersAt || !p.started
}

// nextTimer returns the earliest time a protocol timer of the peers can
// fire, as the stamps stand (p holds the intervals): a rate window's end,
// a peer's interrupt or disconnect timeout, its throttling, its next
// ping, its next repeat of our newest checksum or of our checksum at a
// desync (sums), a doubted report's judgement. A peer disconnected here has only its
// window and the doubts of it: its liveness is not checked, and it is
// neither pinged nor sent checksums.
func (ps peerSet) nextTimer(p *protocol, sums *checksums) time.Duration {
	if p.noDeadline {
		return 0 // every call checks
	}
	at := time.Duration(math.MaxInt64)
	silence := min(p.interruptAfter, p.disconnectAfter)
	f, _, newest := sums.latest()
	for i := range ps {
		x := &ps[i]
		l := &x.link
		at = min(at, l.winStart+time.Second)
		for _, d := range x.leave.doubt[:len(ps)] {
			if d != 0 {
				at = min(at, d+doubtFor)
			}
		}
		if !x.leave.disc {
			at = min(at, l.lastRecv+silence, l.lastRecv+throttleAfter, l.lastQuality+p.qualityEvery)
			if newest {
				at = min(at, x.sums.next(f))
			}
			if t := x.sums.sentAt + checksumResend; sums.repeats(i, t) {
				at = min(at, t)
			}
		}
	}
	return at
}

// timerAt notes a timer that fires at t, which may be earlier than the
// deadline: a report of a departure doubted now.
func (p *protocol) timerAt(t time.Duration) { p.timersAt = min(p.timersAt, t) }

// resetTimers makes the next call run every timer's check, and compute
// the deadline again: a stamp moved back (a ping asked for at once, a
// link made new).
func (p *protocol) resetTimers() { p.timersAt = 0 }

// Timeouts bound how long a [Session] or a [Spectator] waits on another
// machine. Zero values mean the defaults.
type Timeouts struct {
	// Handshake bounds the handshake and the start protocol (a
	// Spectator's: until its source answers); 0 means 10 s (8 machines on
	// a lossy 400 ms round trip need more than 5).
	Handshake time.Duration
	// Interrupt is the silence after which EventNetworkInterrupted is
	// emitted for a peer; 0 means 750 ms.
	Interrupt time.Duration
	// Disconnect is the silence after which a peer (a Spectator's source)
	// is disconnected; 0 means 5 s.
	Disconnect time.Duration
}

// populate returns t with the defaults filled in.
func (t Timeouts) populate() Timeouts {
	return Timeouts{
		Handshake:  orDefault(t.Handshake, defaultHandshakeTimeout),
		Interrupt:  orDefault(t.Interrupt, defaultInterruptTimeout),
		Disconnect: orDefault(t.Disconnect, defaultDisconnectTimeout),
	}
}

// check checks t's bounds.
func (t Timeouts) check() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Handshake", t.Handshake}, {"Interrupt", t.Interrupt}, {"Disconnect", t.Disconnect}} {
		if d.v < 0 {
			return cfgErr("Timeouts."+d.name, "negative duration %v", d.v)
		}
	}
	if t.Interrupt > 0 && t.Disconnect > 0 && t.Interrupt >= t.Disconnect {
		return cfgErr("Timeouts.Interrupt", "%v is not shorter than Timeouts.Disconnect %v", t.Interrupt, t.Disconnect)
	}
	return nil
}
