package rollback

import (
	"math"
	"time"
)

// peer is one remote machine, made of small parts that each own one
// concern (etcd raft's tracker.Progress is the model for progress).
type peer struct {
	players []PlayerID // sorted; the order of inputs in its packets
	id      PlayerID   // its lowest player: the machine's name in gossip
	machine int        // its index among the match's machines, by lowest PlayerID
	late    bool       // a reserved slot (Peer.Late) whose machine has not played yet

	auth     peerAuth
	link     link
	progress progress
	leave    leave
	start    peerStart
	gossip   gossipView
	sums     sumSender
	suspect  suspicions
	timing   timing
	join     rejoin // its way back after it left (rejoin.go)

	st PeerStats // counters; the rest is filled in by Session.PeerStats
}

// link is the peer's liveness, round trip and traffic windows.
type link struct {
	lastRecv, lastSend, lastQuality time.Duration
	interrupted                     bool
	replyQuality                    bool  // a ping waits for our reply
	replyEcho                       int64 // the time its ping carried
	rtt                             time.Duration

	winStart              time.Duration
	winSent, winSentBytes int64
	winRecv, winRecvBytes int64
	winForged             int64         // datagrams that failed the MAC check
	missed                uint64        // the opener's Lost at the last datagram
	lost                  bool          // a datagram of the match went missing
	lossAt                time.Duration // when one last did

	// Read once a second, after what every datagram touches.
	recent   [rttRecent]time.Duration // the latest samples, for floor
	samples  int
	pings    [pingsKept]time.Duration // the times our last pings carried
	nextPing int
	pingedAt time.Duration // when the first went
}

// throttleAfter and throttleInterval: a peer not heard from for a second
// is sent to only four times a second (INVERSUS).
const (
	throttleAfter    = time.Second
	throttleInterval = 250 * time.Millisecond
)

// heard notes a valid datagram of n bytes and reports whether the peer had
// been interrupted (it speaks again).
func (l *link) heard(now time.Duration, n int) (wasInterrupted bool) {
	l.lastRecv = now
	l.winRecv++
	l.winRecvBytes += int64(n)
	wasInterrupted, l.interrupted = l.interrupted, false
	return wasInterrupted
}

// sent notes a datagram of n bytes sent.
func (l *link) sent(now time.Duration, n int) {
	l.lastSend = now
	l.winSent++
	l.winSentBytes += int64(n)
}

// missing takes the opener's count of lost datagrams (wire.Opener.Lost)
// after a datagram: a rise after the start is a loss (before it, the
// datagrams sent before we had the keys count).
func (l *link) missing(now time.Duration, missed uint64, started bool) {
	if missed > l.missed && started {
		l.lost, l.lossAt = true, now
	}
	l.missed = missed
}

// lossWithin reports whether a datagram of the match went missing in the
// last d.
func (l *link) lossWithin(now, d time.Duration) bool {
	return l.lost && now-l.lossAt < d
}

// throttled reports whether the peer, silent for a second, must wait.
func (l *link) throttled(now time.Duration) bool {
	return now-l.lastRecv > throttleAfter && now-l.lastSend < throttleInterval
}

// pingsKept is how many of our latest pings a reply may echo: before the
// start they go every 100 ms, so a link with a round trip up to 6.4 s has
// its replies taken (lockstep is tested at 2 s one way).
const pingsKept = 64

// pinged notes a ping sent at now, carrying now.
func (l *link) pinged(now time.Duration) {
	l.lastQuality = now
	if l.nextPing == 0 {
		l.pingedAt = now
	}
	l.pings[l.nextPing%pingsKept] = now
	l.nextPing++
}

// unansweredPings and unansweredFor: a peer that has answered none of our
// pings, when we have sent it this many over this long, while it talks
// to us, is named for withholding them (SuspectWithheld): a round trip is
// what judges its timing (timing.judged). Before the start pings go every
// 100 ms, and a loss burst on a bad link can take a second of them (two
// honest machines in 100 matches on hell lost 8 in 3 s); 8 s of them is
// what no honest link loses.
const (
	unansweredPings = 8
	unansweredFor   = 8 * time.Second
)

// unanswered reports whether the peer answered none of our pings, of
// unansweredPings or more sent over unansweredFor or more until now.
func (l *link) unanswered(now time.Duration) bool {
	return l.samples == 0 && l.nextPing >= unansweredPings && now-l.pingedAt >= unansweredFor
}

// echoes reports whether a reply's echo is the time one of our latest
// pings carried: a peer cannot answer a ping before it arrives, so a
// round trip cannot be made shorter than it is.
func (l *link) echoes(echo time.Duration) bool {
	for k := range min(l.nextPing, pingsKept) {
		if l.pings[k] == echo {
			return true
		}
	}
	return false
}

// takeReply takes a reply to one of our pings that echoes echo, at now: a
// round-trip sample (taken). It is forged when no ping of ours carried
// echo, and dropped when the sample is impossible.
func (l *link) takeReply(echo, now time.Duration) verdict {
	switch {
	case !l.echoes(echo):
		return forged
	case !l.sample(now - echo):
		return dropped
	}
	return taken
}

// sample folds one round-trip sample into the smoothed round trip
// (RFC 6298's 1/8 gain). It reports false for an impossible sample.
func (l *link) sample(d time.Duration) bool {
	if d < 0 || d > time.Minute {
		return false
	}
	l.recent[l.samples%rttRecent] = d
	l.samples++
	if l.rtt == 0 {
		l.rtt = d
	} else {
		l.rtt += (d - l.rtt) / 8
	}
	return true
}

// rttRecent is how many of the latest round-trip samples floor takes the
// least of: 8 seconds of play (a ping a second), under a second before the
// start (a ping every 100 ms).
const rttRecent = 8

// floor returns the least of the latest rttRecent round-trip samples (0
// before the first). A sample is the round trip plus up to two ticks of
// waiting (the peer answers at its next tick, we read at ours): the least
// of several is close to the link's own; one alone can be two ticks off.
func (l *link) floor() time.Duration {
	var least time.Duration
	for k := range min(l.samples, rttRecent) {
		if k == 0 || l.recent[k] < least {
			least = l.recent[k]
		}
	}
	return least
}

// roll closes the one-second rate window into st when it is over.
func (l *link) roll(now time.Duration, st *PeerStats) {
	d := now - l.winStart
	if d < time.Second {
		return
	}
	sec := d.Seconds()
	st.SendPacketsPerSec, st.SendBytesPerSec = float64(l.winSent)/sec, float64(l.winSentBytes)/sec
	st.RecvPacketsPerSec, st.RecvBytesPerSec = float64(l.winRecv)/sec, float64(l.winRecvBytes)/sec
	l.winSent, l.winSentBytes, l.winRecv, l.winRecvBytes, l.winForged = 0, 0, 0, 0, 0
	l.winStart = now
}

// forged notes a datagram that failed the MAC check and reports
// whether it is the one that makes this second's count forgeryAlarm.
func (l *link) forged() bool {
	l.winForged++
	return l.winForged == forgeryAlarm
}

// progress is what the peer has of our inputs and how we resend them.
type progress struct {
	ack       Frame // the next of our frames it wants; all before it arrived
	fullUntil time.Duration
	// proves is how many of its inputs its first packet after we took our
	// players back brought (Session.takeOver sets -1 until it comes): it
	// produced those before it needed our inputs from the take-over frame
	// on, so only the ones after them prove how many of ours it has (the
	// ack check of Session.applyInput).
	proves Frame

	sentNext    Frame         // lockstep: our next local frame when we last sent it inputs
	inputSentAt time.Duration // lockstep: when we last sent it inputs
}

// fullResendFor is how long a peer gets every unacknowledged frame in
// every packet after a loss burst outran the redundancy window.
const fullResendFor = 10 * time.Second

// lostMargin is added to a round trip (and a quarter) before a frame the
// peer still wants counts as lost: two frames at 60 Hz.
const lostMargin = 35 * time.Millisecond

// canAck reports whether ack, the next of our frames the peer wants, is
// possible: not past localNext, our next local frame.
func canAck(ack, localNext Frame) bool { return ack <= localNext }

// acked takes the peer's acknowledgement: the next of our frames it wants.
// It reports false for an ack of frames we never sent (localNext is our
// next local frame); an older ack is no news.
func (p *progress) acked(ack, localNext Frame) bool {
	if !canAck(ack, localNext) {
		return false
	}
	p.ack = max(p.ack, ack)
	return true
}

// first returns the first of our frames to put in the next packet. With a
// redundancy window (redundant > 0) and a known round trip only the newest
// redundant frames go, unless the oldest frame the peer still wants first
// went out (sentAt) longer than a round trip ago: then a loss burst outran
// the window, everything from the ack goes again, and keeps going for
// fullResendFor (bursty links get INVERSUS's full redundancy, clean ones
// stay lean). It reports whether a new burst started.
func (p *progress) first(now, sentAt, rtt time.Duration, sent bool, localNext Frame, redundant int) (first Frame, burst bool) {
	first = p.ack
	if redundant <= 0 || rtt == 0 || localNext-Frame(redundant) <= first {
		return first, false
	}
	if sent && now-sentAt > rtt+rtt/4+lostMargin {
		burst = now >= p.fullUntil
		p.fullUntil = now + fullResendFor
	}
	if now >= p.fullUntil {
		first = localNext - Frame(redundant)
	}
	return first, burst
}

// lockstepResend is the shortest interval between two lockstep input
// packets to a peer that carry no new input: under a 60 Hz frame.
const lockstepResend = 15 * time.Millisecond

// lockstepDue reports whether a lockstep session sends the peer inputs
// now: at once with a new input, else at most every lockstepResend —
// every Advance of a 60 Hz loop, as in rollback mode, whatever the tick
// rate (a 10 Hz game sending once a tick would wait a tick to repair each
// lost packet), but not every frame of a 144 Hz one.
func (p *progress) lockstepDue(now time.Duration, localNext Frame) bool {
	if localNext == p.sentNext && now-p.inputSentAt < lockstepResend {
		return false
	}
	p.sentNext, p.inputSentAt = localNext, now
	return true
}

// leave is the peer's departure and the agreement on its disconnect frame.
// A machine disconnects a peer on its own evidence (silence, starvation,
// the peer's own goodbye) or on the reports of two other machines, never
// on one report (one liar could forge it); the disconnect frame is the
// fewest of its frames any remaining machine had (docs/protocol.md).
type leave struct {
	disc     bool  // disconnected here, agreement maybe pending
	agreed   bool  // every remaining machine reported it: frame is final
	frozen   Frame // our own count of its frames when we disconnected it
	frame    Frame // frozen until agreed, then the disconnect frame
	reported [MaxPlayers]bool
	report   [MaxPlayers]Frame // by peer index: the frame each reporter froze
	proven   bool              // it equivocated (statements.go): it is cut at provenAt at the latest
	provenAt Frame
	doubt    [MaxPlayers]time.Duration // by peer index: when it reported it gone while we heard from it (0: no doubt)
}

// prove records proof that the peer equivocated in the interval starting
// at frame f: its disconnect frame is f at the latest, whatever anyone
// reports (the proof, unlike a report, cannot be forged). It reports
// whether that lowers what we knew.
func (l *leave) prove(f Frame) bool {
	if l.proven && l.provenAt <= f {
		return false
	}
	l.proven, l.provenAt = true, f
	return true
}

// disconnect disconnects the peer here with our count of its frames.
// It reports false when it was already disconnected.
func (l *leave) disconnect(have Frame) bool {
	if l.disc {
		return false
	}
	l.disc, l.frozen, l.frame = true, have, have
	return true
}

// reportBy records that peer from disconnected it at frame f (the lowest
// report from each reporter counts). It reports whether from had not
// reported it before.
func (l *leave) reportBy(from int, f Frame) bool {
	first := !l.reported[from]
	if !first {
		f = min(f, l.report[from])
	}
	l.reported[from], l.report[from] = true, f
	return first
}

// reporters returns how many machines reported it.
func (l *leave) reporters() int {
	n := 0
	for _, r := range l.reported {
		if r {
			n++
		}
	}
	return n
}

// settle reports whether every remaining machine (peers, of which this
// one is peers[self]) has now reported the departure. The disconnect frame
// is then final: the least of our frozen count and each report not below
// floor[j], the frames of it that reporter j had already claimed or its
// own progress proves (a machine cannot un-have frames; an honest count is
// never below its floor).
func (l *leave) settle(self int, peers []peer, floor *[MaxPlayers]Frame) bool {
	if !l.disc || l.agreed {
		return false
	}
	for j := range peers {
		if j != self && !peers[j].leave.disc && !l.reported[j] {
			return false
		}
	}
	l.agreed = true
	l.frame = l.least(floor)
	return true
}

// least returns the least of our frozen count and every report at or
// above floor[j], the frames of it reporter j had already claimed or its
// progress proves — and, if it equivocated, the start of the interval
// proven. A report below its floor is no honest machine's count and
// lowers nothing: raised to the floor, as it once was, it became our
// floor, which no other machine computes alike (each counts the
// reporter's inputs and settles the statements at its own pace), and a
// liar reporting every machine gone at a stale frame split the cut of
// each departure between the honest machines (rejoin -adversary
// forged-gossip: cuts 1328 and 1312 of one departure on two machines,
// 4 matches of 100 failed, TestForgedGossipCutAgrees).
func (l *leave) least(floor *[MaxPlayers]Frame) Frame {
	f := l.frozen
	if l.proven {
		f = min(f, l.provenAt)
	}
	for j := range l.reported {
		if l.reported[j] && l.report[j] >= floor[j] {
			f = min(f, l.report[j])
		}
	}
	return f
}

// peerStart is the peer's part of the start protocol.
type peerStart struct {
	row      []uint32 // its round-trip times (µs), from its Ready (host only)
	goSeen   bool     // it has the mesh (its Go, or the host's Start)
	lastSync time.Duration
	first    time.Duration // lockstep: when its first inputs arrived; -1 before
}

// gossipView is what the peer says of the other machines.
type gossipView struct {
	order []int             // the other peers, by id: the gossip entries in packets to or from it
	sees  [MaxPlayers]Frame // by peer index: how many of that peer's frames it reported having
}

// sees records that the peer has count frames of peer x; counts only
// grow, so a reordered packet cannot lower one.
func (g *gossipView) count(x int, count Frame) { g.sees[x] = max(g.sees[x], count) }

// sumSender repeats our newest final checksum to the peer.
type sumSender struct {
	frame  Frame // the frame of the last checksum sent to it
	sends  int   // how many times
	sentAt time.Duration
}

// A new final checksum is sent checksumRepeats times, checksumResend
// apart, in case a datagram that carried it is lost.
const (
	checksumRepeats = 3
	checksumResend  = 250 * time.Millisecond
)

// resend reports whether a checksum resent until the peer answers goes
// now: every checksumResend.
func (c *sumSender) resend(now time.Duration) bool {
	if now-c.sentAt < checksumResend {
		return false
	}
	c.sentAt = now
	return true
}

// next returns the earliest time due can report true for the checksum of
// frame f, as the sender stands: at once for a new one, a repeat's
// checksumResend after the last, never once the repeats are done.
func (c *sumSender) next(f Frame) time.Duration {
	switch {
	case f != c.frame:
		return 0
	case c.sends >= checksumRepeats:
		return math.MaxInt64
	}
	return c.sentAt + checksumResend
}

// due reports whether the checksum of frame f goes to the peer now.
func (c *sumSender) due(now time.Duration, f Frame) bool {
	if f != c.frame {
		c.frame, c.sends = f, 0
	} else if c.sends >= checksumRepeats || now-c.sentAt < checksumResend {
		return false
	}
	c.sends++
	c.sentAt = now
	return true
}
