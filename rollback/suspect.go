package rollback

import "time"

// Suspicion says what an authenticated peer did that no honest machine
// does (docs/security.md, "A peer that lies"). Each is counted in the
// peer's PeerStats.Suspected and raises EventSuspect.
type Suspicion uint8

// Suspicions.
const (
	// SuspectGossip: it reported a third machine disconnected that we
	// still hear from. A report alone never disconnects anyone.
	SuspectGossip Suspicion = 1 + iota // gossip
	// SuspectAck: it acknowledged fewer of our frames than its own
	// progress proves it has (it cannot simulate that far without them).
	SuspectAck // ack
	// SuspectLookahead: its inputs arrive later than its round trip
	// explains, over a 100-frame window: it could have chosen each after
	// seeing ours for the same frame.
	SuspectLookahead // lookahead
	// SuspectRewrite: it re-sent a different input for a frame whose input
	// it had already sent.
	SuspectRewrite // rewrite
	// SuspectWithheld: it holds back what the protocol needs from it: the
	// counts of third machines' frames, its inputs while it still talks,
	// or the answers to our pings (8 and more, none answered, while it
	// talks).
	SuspectWithheld // withheld
	// SuspectChecksum: it sent a checksum for a frame it cannot have
	// finished: one whose inputs from us it has not received.
	SuspectChecksum // checksum
	// SuspectTiming: it reported start-of-match round trips beyond any
	// link (over a second, and over twice our slowest; they were capped),
	// or answered a ping we never sent (to look closer than it is).
	SuspectTiming // timing
	// SuspectDesync: with three or more machines, its checksum disagrees
	// with ours and with another machine's that agrees with ours; or,
	// watched by a machine joining in progress, it sent a state another
	// machine's checksum refuted, and the machine took over from another
	// source's state, which every machine that plays confirmed.
	SuspectDesync // desync
	// SuspectEquivocation: with three or more machines, it signed two
	// statements of its inputs that disagree on a frame — it sent
	// different machines different inputs — or sent us inputs its own
	// signed statement contradicts. Proof (two signatures) disconnects it
	// from the interval's first frame at every machine.
	SuspectEquivocation // equivocation
)

// numSuspicions is the length of PeerStats.Suspected.
const numSuspicions = int(SuspectEquivocation) + 1

// suspectEvery is the shortest interval between two EventSuspect of one
// kind for one peer; every occurrence is counted.
const suspectEvery = time.Second

// suspicions is one peer's record of what it was caught at.
type suspicions struct {
	count [numSuspicions]int64
	last  [numSuspicions]time.Duration // when each last raised the event
}

// note counts one suspicion of kind k at now and reports whether it raises
// the event: the first time, then at most once per suspectEvery.
func (s *suspicions) note(k Suspicion, now time.Duration) bool {
	if int(k) >= numSuspicions {
		return false
	}
	s.count[k]++
	if s.count[k] > 1 && now-s.last[k] < suspectEvery {
		return false
	}
	s.last[k] = now
	return true
}

// suspect counts suspicion k of peer i, raising EventSuspect when due.
func (s *Session) suspect(i int, k Suspicion) {
	if s.peers[i].suspect.note(k, s.now) {
		s.events = append(s.events, Event{Kind: EventSuspect, Frame: s.frame, Peer: i, Suspicion: k})
	}
}
