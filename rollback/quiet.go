package rollback

import "time"

// This file is lazy sending (the default; Config.SendEveryTick turns it
// off): a machine whose inputs have not changed since its last input
// packet may leave one tick's input packets out. The peers lose nothing
// they need: repeat-last prediction is right about every frame left out,
// so the gap costs no rollback; the next packet confirms those frames,
// acknowledges theirs, and carries the same redundancy as ever. What the
// gap costs is time: a peer confirms the frames left out a tick later, and
// learns our acknowledgement a tick later. Two bounds keep that small:
// never two quiet ticks in a row, so the acknowledgement ages a peer's
// loss detection and the timing checks measure grow by at most one tick,
// within their margins (lostMargin, ackSlack, lateSlack); and a tick is
// quiet only where the links allow it (peerSet.quietAllowed).

// quiet is the lazy sender's state: the session decides once per send,
// for every peer at once, because the send times of our frames
// (Session.sent) are shared by all of them.
type quiet struct {
	on      bool  // rollback mode without Config.SendEveryTick
	sentEnd Frame // our next local frame when input packets last went out; 0: none yet
	last    bool  // the last send was quiet
	ticks   int64 // quiet sends, for Stats.QuietTicks
}

// quietAfterLoss is how long a link that lost a datagram gets every
// tick's input packet again, and how long after the start no tick is
// quiet: a link must prove itself clean first. A quiet tick doubles the
// wait for the repair of a lost packet (the next one goes two ticks
// later), and on the lossy profiles that cost stalls and rollbacks for
// next to no datagrams saved (docs/architecture.md, "Lazy sending").
const quietAfterLoss = 5 * time.Second

// tick decides whether this send leaves the input packets out, given
// whether the inputs since the last packet are unchanged and the links
// allow it, and records the decision.
func (q *quiet) tick(localNext Frame, unchanged, allowed bool) (quietNow bool) {
	quietNow = q.on && !q.last && q.sentEnd > 0 && unchanged && allowed
	q.last = quietNow
	if quietNow {
		q.ticks++
	} else {
		q.sentEnd = localNext
	}
	return quietNow
}

// quietTick reports whether this send leaves the input packets out: only
// when every local input since the last packet repeats the last one sent
// and every link allows it. Neither is looked at when tick would refuse
// anyway (right after a quiet send, before the first packet).
func (s *Session) quietTick(localNext Frame) bool {
	q := &s.quiet
	if !q.on {
		return false
	}
	unchanged := !q.last && q.sentEnd > 0 && s.inputs.unchangedSince(s.roster.local, q.sentEnd, localNext)
	allowed := unchanged && s.proto.joins == 0 && s.now-s.proto.startedAt >= quietAfterLoss &&
		s.peers.quietAllowed(s.now, s.pace.lag.delay, s.snaps.reach)
	return q.tick(localNext, unchanged, allowed)
}

// quietAllowed reports whether every link allows a quiet tick: verified,
// measured, clean for quietAfterLoss, not within a full resend, and short
// enough that a peer's predictions of our unchanged inputs reach (reach)
// past its one-way delay beyond our input lag (lag).
func (ps peerSet) quietAllowed(now time.Duration, lag int, reach Frame) bool {
	for i := range ps {
		p := &ps[i]
		if p.leave.disc {
			continue
		}
		if !p.auth.verified || p.late || p.link.rtt == 0 || now < p.progress.fullUntil || p.link.lossWithin(now, quietAfterLoss) {
			return false
		}
		oneWay := Frame(p.link.rtt / 2 / frameDuration)
		if oneWay-Frame(lag) > reach/2 {
			return false
		}
	}
	return true
}

// unchangedSince reports whether the inputs of the players local are the
// same in every frame from from to end as in the frame before from (and
// the ring still holds them).
func (r *inputRing) unchangedSince(local []PlayerID, from, end Frame) bool {
	if from <= 0 || end-from >= ringSize {
		return false
	}
	for f := from; f < end; f++ {
		for _, p := range local {
			if r.at(f, p) != r.at(from-1, p) {
				return false
			}
		}
	}
	return true
}
