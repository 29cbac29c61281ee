package rollback

import (
	"fmt"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is a spectator's witnesses (SpectatorConfig.Witnesses):
// machines it watches the match through besides its source, to check what
// the source hands it (docs/security.md, "A spectator can check its
// source"). A witness serves it as it serves any spectator, but the
// spectator keeps only the first piece of the witness's state — its frame
// and sum — and then asks for the final inputs from the frame its own
// state is at. The spectator loads the oldest state offered (swapOlder),
// holds its frames until every witness has offered a state at or after
// the one it plays, compares its arena with each witness's sum at that
// witness's frame, and every frame's final inputs with every witness's.
// When its source leaves, a witness becomes its source (carryOn).
//
// A disagreement is put to a vote, once every witness has had its say
// (or Timeouts.Handshake has passed): the source and the witnesses that
// agreed with it up to the disputed frame, against the witnesses that did
// not. A source outvoted is suspected (SuspectDesync) and the spectator
// watches through the first witness that outvoted it, from that witness's
// state; a witness outvoted is suspected and dropped; a tie ends the
// watch with ErrJoinState naming both sides. With one witness every
// disagreement is a tie: the spectator is never fooled silently, but it
// cannot say which machine lied.

// maxWitnesses bounds SpectatorConfig.Witnesses.
const maxWitnesses = 3

// witness is a spectator's link to one of its witnesses.
type witness struct {
	idx     int // its transport index
	auth    peerAuth
	recv    time.Duration // when it last sent a sealed datagram
	snap    snapReceiver  // its state's frame, sum and pieces (only the header is kept)
	feed    feed          // its final inputs from frame from on
	from    Frame         // the frame its feed starts at, the State we tell it (-1: none yet); kept, so that no packet it coded for another is misread
	cmp     Frame         // the next frame whose inputs we compare with it; -1: not yet
	checked bool          // our arena matched its sum at its state's frame
	dissent Frame         // the frame it disagreed with our source at; -1: none
	what    string        // what it disagreed about
	since   time.Duration // when we began waiting for it (its state, or its vote)
	judged  int           // datagrams this call
}

// newWitnesses returns the links to the witnesses at transport indices
// idx.
func newWitnesses(idx []int, k *keyring, players int, now time.Duration) []witness {
	ws := make([]witness, len(idx))
	for n, i := range idx {
		ws[n] = witness{idx: i, feed: newFeed(players), from: -1, cmp: -1, dissent: -1, since: now}
		ws[n].auth.ours = k.nonceFor(linkSource | uint64(i))
	}
	return ws
}

// witnessAt returns the witness at transport index idx, or nil.
func (s *Spectator) witnessAt(idx int) *witness {
	for n := range s.wits {
		if s.wits[n].idx == idx {
			return &s.wits[n]
		}
	}
	return nil
}

// fromWitness takes a datagram from witness w.
func (s *Spectator) fromWitness(w *witness, b []byte) bool {
	if w.judged >= peerBudget {
		return false
	}
	w.judged++
	w.auth.heard = true
	if wire.Kind(b[0]) == wire.KindHandshake {
		return s.pin(w.idx, &w.auth, b)
	}
	if w.auth.open == nil {
		return false
	}
	body, err := w.auth.open.Open(b)
	if err != nil {
		return false
	}
	if !w.auth.verified {
		w.auth.verified = true
		s.events.emit(EventConnected, s.frame, w.idx)
	}
	w.recv = s.now
	switch wire.SealedKind(b) {
	case wire.KindSnap:
		return s.witnessSnap(w, body)
	case wire.KindInput:
		if w.cmp < 0 {
			return true // ahead of our state; it repeats
		}
		return s.takeFeedInto(body, &w.feed, w.from, w.cmp)
	case wire.KindDisconnect:
		if wire.ParseControl(body, &s.io.d) != nil {
			return false
		}
		s.loseWitness(w)
		return true
	}
	return false
}

// witnessSnap keeps the frame and sum of witness w's state from any of
// its pieces, while it has no usable one.
func (s *Spectator) witnessSnap(w *witness, body []byte) bool {
	m := &s.io.snap
	if wire.ParseControl(body, m) != nil || int(m.Size) > s.arena.Size() || int(m.Total) > maxCompressed(s.arena.Size()) {
		return false
	}
	if w.cmp < 0 && w.snap.state == nil && (!w.snap.on || Frame(m.Frame) > w.snap.frame) {
		pieces := snapPieces(int(m.Total))
		w.snap = snapReceiver{on: true, frame: Frame(m.Frame), size: uint64(m.Size), sum: m.Sum, have: pieces}
	}
	return true
}

// swapOlder reports whether the source's whole state must not be loaded
// yet: while a witness has offered no state (for Timeouts.Interrupt
// after ours was whole) we wait for it; when a witness's state is older
// than the source's, we could not check it against ours, so that witness
// becomes the source (its state is the one we load) and the source a
// witness (its state is checked at its frame). That is done once a
// join, for offers move while a state is fetched; a state we hold whole
// stays with its machine, and swapping back to it loads it at once. A
// witness whose state is still older offers a newer one once we play
// (witnessHold).
func (s *Spectator) swapOlder() bool {
	r := &s.snap
	oldest := -1
	for n := range s.wits {
		w := &s.wits[n]
		switch {
		case !w.snap.on && s.now-r.readyAt < s.timeout.Interrupt:
			return true
		case w.snap.on && w.snap.frame < r.frame && (w.snap.state != nil || !s.swapped) &&
			(oldest < 0 || w.snap.frame < s.wits[oldest].snap.frame):
			oldest = n
		}
	}
	if oldest < 0 {
		return false
	}
	w := &s.wits[oldest]
	s.src, w.idx = w.idx, s.src
	s.up, w.auth = w.auth, s.up
	s.upRecv, w.recv = w.recv, s.upRecv
	s.feed, w.feed = w.feed, s.feed
	s.feedFrom, w.from = w.from, s.feedFrom
	s.snap, w.snap = w.snap, s.snap
	s.stats.Source, s.swapped = s.src, true
	if s.snap.state == nil {
		s.snap = snapReceiver{} // its pieces, from the first
		return true
	}
	return false
}

// sendWitnesses sends each witness our handshake until it is verified,
// then a Watch a tick: while it has no state we can check, one that
// claims its whole state (it sends no more pieces of it, and a newer one
// once it makes one); then the final inputs from our state's frame.
func (s *Spectator) sendWitnesses() {
	for n := range s.wits {
		w := &s.wits[n]
		if w.auth.handshakeDue(s.now) {
			s.handshakeTo(w.idx, &w.auth, w.auth.nonce)
			w.auth.replyHS = false
		}
		if !w.auth.keyed() {
			continue
		}
		m := &s.io.watch
		*m = wire.Watch{State: -1, Next: -1}
		switch {
		case w.cmp >= 0:
			m.State, m.Next = int32(w.from), int32(w.feed.high)
		case w.snap.on:
			m.State, m.Have = int32(w.snap.frame), uint32(w.snap.have)
		}
		b, err := wire.AppendControl(w.auth.seal.Begin(s.io.sendBuf[:0], wire.KindWatch), m)
		if err == nil {
			s.transmitTo(w.idx, w.auth.seal.Seal(b))
		}
	}
}

// witnessHold returns one past the last frame we may simulate before a
// witness's state is checked: its state's frame once it has offered one
// at or after ours (its inputs are compared from our state's frame on),
// else the frame we are at.
func (s *Spectator) witnessHold() Frame {
	hold := Frame(maxFrame)
	for n := range s.wits {
		w := &s.wits[n]
		if w.checked || w.dissent >= 0 {
			continue
		}
		if w.cmp < 0 && w.snap.on && w.snap.frame >= s.frame {
			w.cmp, w.since = s.stats.StateFrame, s.now
			if w.from < 0 || w.from > w.cmp || w.feed.low > w.cmp {
				w.from = w.cmp
				w.feed.reset(w.cmp)
			}
		}
		if w.cmp < 0 {
			hold = min(hold, s.frame)
		} else {
			hold = min(hold, w.snap.frame)
		}
	}
	return hold
}

// corroborate runs each witness's checks due at the frame we are at: the
// state of a witness whose frame it is, the inputs every witness and our
// source both hold; it drops a witness that kept us waiting for its state
// for Timeouts.Handshake, and puts a disagreement to the vote.
func (s *Spectator) corroborate() {
	sum, summed := uint64(0), false
	for n := 0; n < len(s.wits); n++ {
		w := &s.wits[n]
		if !w.checked && w.dissent < 0 && w.cmp >= 0 && w.snap.frame == s.frame {
			if !summed {
				sum, summed = xxhash.Sum64(s.arena.Bytes()), true
			}
			if sum == w.snap.sum {
				w.checked = true
			} else {
				s.disagree(w, s.frame, "state")
			}
		}
		if w.cmp < 0 && s.now-w.since > s.timeout.Handshake {
			s.loseWitness(w) // it never offered a state we could check
			n--
			continue
		}
		s.compareInputs(w)
	}
	s.vote()
}

// compareInputs compares the final inputs of every frame both our source
// and witness w sent, from where it left off.
func (s *Spectator) compareInputs(w *witness) {
	if w.cmp < 0 || w.dissent >= 0 {
		return
	}
	for end := min(s.feed.high, w.feed.high); w.cmp < end; w.cmp++ {
		f := w.cmp
		if !s.feed.has(f) || !w.feed.has(f) {
			continue // it fell out of one of the feeds: too far apart to compare
		}
		if !sameFinal(&s.feed, &w.feed, f) {
			s.disagree(w, f, "final inputs")
			return
		}
		s.stats.Corroborated = max(s.stats.Corroborated, int64(f-s.stats.StateFrame)+1)
	}
}

// sameFinal reports whether two feeds hold the same final inputs and
// statuses for frame f.
func sameFinal(a, b *feed, f Frame) bool {
	if a.mask(f) != b.mask(f) {
		return false
	}
	for p := range a.players {
		if a.input(f, p) != b.input(f, p) {
			return false
		}
	}
	return true
}

// disagree notes that witness w disagrees with our source about frame
// f's what.
func (s *Spectator) disagree(w *witness, f Frame, what string) {
	w.dissent, w.what, w.since = f, what, s.now
}

// vote settles the disagreements once every witness has had its say
// about the earliest disputed frame, or Timeouts.Handshake after it was
// disputed: the side with more machines wins (our source counts for its
// own); a tie ends the watch.
func (s *Spectator) vote() {
	first, against, agree, pending := -1, 0, 1, 0
	for n := range s.wits {
		if d := s.wits[n].dissent; d >= 0 && (first < 0 || d < s.wits[first].dissent) {
			first = n
		}
	}
	if first < 0 {
		return
	}
	at, since := s.wits[first].dissent, s.wits[first].since
	for n := range s.wits {
		w := &s.wits[n]
		switch {
		case w.dissent >= 0:
			against++
		case w.checked && w.cmp > at:
			agree++
		default:
			pending++
		}
	}
	if pending > 0 && s.now-since < s.timeout.Handshake {
		return
	}
	switch {
	case agree > against:
		for n := 0; n < len(s.wits); n++ {
			if w := &s.wits[n]; w.dissent >= 0 {
				s.suspectPeer(w.idx)
				s.stats.Outvoted++
				s.loseWitness(w)
				n--
			}
		}
	case against > agree:
		s.rewatch(first)
	default:
		w := &s.wits[first]
		s.fail(fmt.Errorf("%w: the spectator's source (peer %d) and its witness (peer %d) disagree about frame %d's %s, and no other witness decides",
			ErrJoinState, s.src, w.idx, w.dissent, w.what))
	}
}

// rewatch leaves our source, outvoted, for witness n: the spectator
// starts again from that witness's state.
func (s *Spectator) rewatch(n int) {
	s.suspectPeer(s.src)
	s.stats.Refuted++
	s.bye(s.src, &s.up)
	s.restart(n)
}

// restart watches through witness n from its state: our source is gone
// (left, or outvoted), and every other witness is asked for a state at or
// after the one we load.
func (s *Spectator) restart(n int) {
	s.promote(n)
	for n := range s.wits {
		v := &s.wits[n]
		v.snap, v.cmp, v.checked, v.dissent, v.since = snapReceiver{}, -1, false, -1, s.now
	}
	s.joined, s.swapped, s.stats.StateFrame, s.stats.CaughtUp = false, false, -1, false
	if s.aud != nil {
		s.aud.dropAll(s.now, s) // what we relayed came from the source we left
	}
}

// promote makes witness n our source: its link, and the feed it sent
// (the State we told it stays); it is a witness no more.
func (s *Spectator) promote(n int) {
	w := &s.wits[n]
	s.src, s.up, s.upRecv, s.feed, s.feedFrom, s.snap = w.idx, w.auth, w.recv, w.feed, w.from, snapReceiver{}
	s.wits = slices.Delete(s.wits, n, n+1)
	s.stats.Source = s.src
}

// confirmed returns one past the last frame whose final inputs every
// witness confirmed: the spectators we relay to get no frame after it.
func (s *Spectator) confirmed() Frame {
	f := Frame(maxFrame)
	for n := range s.wits {
		if w := &s.wits[n]; w.cmp < 0 || w.dissent >= 0 {
			f = min(f, s.stats.StateFrame)
		} else {
			f = min(f, w.cmp)
		}
	}
	return f
}

// unconfirmed reports whether a witness has yet to confirm our state: we
// offer it to the spectators we relay to only once every one has.
func (s *Spectator) unconfirmed() bool {
	for n := range s.wits {
		if !s.wits[n].checked || s.wits[n].dissent >= 0 {
			return true
		}
	}
	return false
}

// carryOn watches on through a witness once the source has left and
// every frame it sent has been played: the first witness that confirmed
// our state and, up to the frame we are at, every final input; else (no
// witness has confirmed it yet, or we had no state) the first witness,
// from its state. It reports false when no witness is left: the watch is
// over.
func (s *Spectator) carryOn() bool {
	for n := range s.wits {
		w := &s.wits[n]
		if !s.joined || !w.checked || w.dissent >= 0 {
			continue
		}
		if w.cmp < s.frame {
			return true // it has yet to confirm what we played: wait for it (it is dropped if silent)
		}
		s.promote(n)
		s.stats.SourceLeft = false
		return true
	}
	if len(s.wits) == 0 {
		return false
	}
	s.restart(0)
	s.stats.SourceLeft = false
	return true
}

// loseWitness drops witness w: it left, went silent, never offered a
// state we could check, or was outvoted.
func (s *Spectator) loseWitness(w *witness) {
	s.events.emit(EventDisconnected, s.frame, w.idx)
	s.stats.WitnessesLost++
	n := slices.IndexFunc(s.wits, func(v witness) bool { return v.idx == w.idx })
	s.wits = slices.Delete(s.wits, n, n+1)
}

// suspectPeer reports that peer i's word lost a vote.
func (s *Spectator) suspectPeer(i int) {
	s.events = append(s.events, Event{Kind: EventSuspect, Frame: s.frame, Peer: i, Suspicion: SuspectDesync})
}

// fail ends the watch with err (the first error stays).
func (s *Spectator) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}
