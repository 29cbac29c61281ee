package rollback

// This file is the session's side of the relay as the match clock (issue
// 50 part 2; docs/protocol.md, "The relay clock"): a Transport through a
// relay that fixes a deadline per frame and decides, signed, the input of
// a machine whose input for a frame did not reach it in time. The session
// knows the relay only through the RelayClock hook; the relay package
// checks the signatures.

// RelayClock is a [Transport] through a relay that is the match clock
// (relay.Client after UseClock): the relay decides the inputs of a
// machine late for a frame, and the decision is final on every machine,
// the late one's too. Every machine of the match must use one (the
// handshake refuses a mix). The session hands it its newest local frame
// before it sends, and takes the relay's items, in order, as they come.
type RelayClock interface {
	Transport
	// ClockOn reports whether the relay is the match clock.
	ClockOn() bool
	// ClockLocal is told, before the session sends, its next local frame
	// and its local players' inputs (Config.Local's order) of the frame
	// before it.
	ClockLocal(next int32, inputs []uint64)
	// ClockNext returns the relay's oldest item not taken: the decided
	// inputs of peer's players (-1: ours) for frame, or, with inputs nil,
	// a receipt: every frame of ours before frame is final at the relay.
	ClockNext() (peer int, frame int32, inputs []uint64, ok bool)
	// ClockTaken removes the item ClockNext returned.
	ClockTaken()
}

// clockMode is the bit of Terms.Mode that says the match's relay is its
// clock: a machine that takes the relay's decisions cannot play with one
// that does not.
const clockMode = 0x40

// relayClock is the session's state of the relay clock: the decisions
// taken, by frame, for the frames the ring holds.
type relayClock struct {
	t RelayClock
	// settled is our first frame the relay has not settled (its receipts):
	// our statements sign only before it, the inputs being final.
	settled Frame
	// at[ring(f)][p] is f+1 when player p's input of frame f was decided
	// (dec holds it), 0 or another frame's otherwise.
	at  [ringSize][MaxPlayers]Frame
	dec [ringSize][MaxPlayers]Input
	own []uint64 // ClockLocal's inputs
	// taken counts the decisions taken; conflicts those for a frame whose
	// input was here and differed (an honest relay never makes one: the
	// decision wins).
	taken, conflicts int64
}

// newRelayClock returns the clock of a session over tr, nil when tr is no
// relay clock.
func newRelayClock(tr Transport, lockstep bool) *relayClock {
	rc, ok := tr.(RelayClock)
	if !ok || lockstep || !rc.ClockOn() {
		return nil
	}
	return &relayClock{t: rc}
}

// decided returns the relay's input of player p for frame f, if it decided
// one. It is nil-safe: false without a relay clock.
func (c *relayClock) decided(f Frame, p PlayerID) (Input, bool) {
	if c == nil || f < 0 || c.at[ring(f)][p] != f+1 {
		return 0, false
	}
	return c.dec[ring(f)][p], true
}

// signable bounds what our statements may sign: our frames before it are
// final. noFrame without a relay clock.
func (c *relayClock) signable() Frame {
	if c == nil {
		return noFrame
	}
	return c.settled
}

// tellLocal gives the relay our next local frame and its inputs before we
// send.
func (s *Session) tellLocal() {
	c := s.pace.clock
	next := s.inputs.next[s.roster.local[0]]
	c.own = c.own[:0]
	for _, p := range s.roster.local {
		c.own = append(c.own, uint64(s.inputs.at(next-1, p)))
	}
	c.t.ClockLocal(int32(next), c.own)
}

// takeDecisions takes the relay's items waiting in the transport, and
// returns the first frame to re-simulate (s.frame for none). An item for
// a frame the ring cannot hold yet waits in the transport (the relay
// learns only of what was taken).
func (s *Session) takeDecisions() Frame {
	c, mis := s.pace.clock, s.frame
	for {
		peer, f32, in, ok := c.t.ClockNext()
		if !ok {
			break
		}
		f := Frame(f32)
		if in == nil { // a receipt
			c.settled = max(c.settled, f)
			s.inputs.localFinal = c.settled
			c.t.ClockTaken()
			continue
		}
		players := s.roster.local
		if peer >= 0 && peer < len(s.peers) {
			players = s.peers[peer].players
		} else if peer >= 0 {
			players = nil
		}
		if len(players) != len(in) {
			c.t.ClockTaken() // not the players of any machine of ours: no decision
			continue
		}
		if !s.ringRoom(f + 1) {
			break // beyond the ring: it waits
		}
		c.t.ClockTaken()
		if f < s.ringLow() {
			continue // final long ago
		}
		c.taken++
		for j, p := range players {
			mis = min(mis, s.decide(c, p, f, Input(in[j])&s.inputs.mask))
		}
	}
	return min(mis, s.pumpDecided())
}

// decide records the relay's input d of player p for frame f and applies
// it to what the ring holds: an input already here is replaced (ours, of
// a frame the relay found late; a peer's only from a relay that lies, or
// a frame the ring no longer needs). It returns the first frame to
// re-simulate.
func (s *Session) decide(c *relayClock, p PlayerID, f Frame, d Input) Frame {
	slot := ring(f)
	c.at[slot][p], c.dec[slot][p] = f+1, d
	if s.inputs.disconnected(p) || f >= s.inputs.next[p] {
		return s.frame // taken when its frame comes (addLocal, receive, pumpDecided)
	}
	if s.inputs.correct(p, f, d) && !s.inputs.local[p] {
		c.conflicts++
	}
	if f < s.frame && s.inputs.usedAt(f, p) != d {
		return f
	}
	return s.frame
}

// pumpDecided takes, for each remote player, the decided inputs of its
// next frames: the relay made them final, so nobody waits for their
// machine. It returns the first mispredicted frame.
func (s *Session) pumpDecided() Frame {
	c, mis := s.pace.clock, s.frame
	for p := range s.roster.players {
		if s.inputs.local[p] || s.inputs.disconnected(PlayerID(p)) {
			continue
		}
		for {
			f := s.inputs.next[p]
			d, ok := c.decided(f, PlayerID(p))
			if !ok {
				break
			}
			if s.inputs.receive(PlayerID(p), f, d, s.frame) {
				mis = min(mis, f)
			}
		}
	}
	return mis
}
