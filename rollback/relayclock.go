package rollback

import "time"

// This file is the session's side of the relay as the match clock (issue
// 50 part 2; docs/protocol.md, "The relay clock"): a Transport through a
// relay that fixes a deadline per frame and decides, signed, the input of
// a machine whose input for a frame did not reach it in time. The session
// knows the relay only through the RelayClock hook; the relay package
// checks the signatures.

// relayClockTransport is a Transport through a relay that is the match
// clock (relay.Client after UseClock): the relay decides the inputs of a
// machine late for a frame, and the decision is final on every machine,
// the late one's too. Every machine of the match must use one (the
// handshake refuses a mix). The session hands it its newest local frame
// before it sends, and takes the relay's items, in order, as they come.
type relayClockTransport interface {
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
	// ClockSlack is how long before its deadline our last clock section
	// reached the relay, as the relay last said (negative: late).
	ClockSlack() time.Duration
}

// clockMode is the bit of Terms.Mode that says the match's relay is its
// clock: a machine that takes the relay's decisions cannot play with one
// that does not.
const clockMode = 0x40

// relayClock is the session's state of the relay clock: the decisions
// taken, by frame, for the frames the ring holds.
type relayClock struct {
	t relayClockTransport
	// settled is our first frame the relay has not settled (its receipts):
	// our statements sign only before it, the inputs being final.
	settled Frame
	// at[ring(f)][p] is f+1 when player p's input of frame f was decided
	// (dec holds it), 0 or another frame's otherwise.
	at  [ringSize][MaxPlayers]Frame
	dec [ringSize][MaxPlayers]Input
	own []uint64 // ClockLocal's inputs
	// extraAt is the frame of our last second input of a tick (extraDue).
	extraAt Frame

	// taken counts the decisions taken; conflicts those for a frame already
	// final, whose input differed (an honest relay never makes one: the
	// decision wins).
	taken, conflicts int64
}

// newRelayClock returns the clock of a session over tr, whose inputs are
// inputs and input lag lag; nil when tr is no relay clock.
func newRelayClock(tr Transport, lockstep bool, inputs *inputRing, lag *inputLag) *relayClock {
	rc, ok := tr.(relayClockTransport)
	if !ok || lockstep || !rc.ClockOn() {
		return nil
	}
	inputs.final = [MaxPlayers]Frame{} // until the relay's receipts
	// The relay's schedule is of input frames: an input lag that changed
	// would move ours against it (a raise early, a cut late).
	lag.fixed = true
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

// decidesStalled reports whether the relay decides a stalled machine's
// frames, so that we may hold a peer's inputs far beyond what it has
// simulated: then they prove no acknowledgement of ours (applyInput).
// Taken as one, our inputs it lacked went to it no more, and it stalled
// for good. It is nil-safe: false without a relay clock.
func (c *relayClock) decidesStalled() bool { return c != nil }

// provisional reports whether player p's input of frame f, here, may
// still change: with the relay clock, one the relay has not settled for
// us (its receipt), or one it decided. False without a relay clock.
func (c *relayClock) provisional(r *inputRing, f Frame, p PlayerID) bool {
	if c == nil {
		return false
	}
	_, decided := c.decided(f, p)
	return decided || f >= r.final[p]
}

// signable bounds what our statements may sign: our frames before it are
// final. noFrame without a relay clock.
func (c *relayClock) signable() Frame {
	if c == nil {
		return noFrame
	}
	return c.settled
}

// tell gives the relay our next local frame and its inputs (of our
// players local) before we send.
func (c *relayClock) tell(r *inputRing, local []PlayerID) {
	next := r.next[local[0]]
	c.own = c.own[:0]
	for _, p := range local {
		c.own = append(c.own, uint64(r.at(next-1, p)))
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
		players := s.roster.local
		if peer >= 0 && peer < len(s.peers) {
			players = s.peers[peer].players
		} else if peer >= 0 {
			players = nil
		}
		if in == nil { // a receipt: every decision about its frames before f came before it
			if peer < 0 {
				c.settled = max(c.settled, f)
			}
			for _, p := range players {
				s.inputs.final[p] = max(s.inputs.final[p], f)
			}
			c.t.ClockTaken()
			continue
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
			mis = min(mis, c.decide(&s.inputs, p, f, Input(in[j])&s.inputs.mask, s.frame))
		}
	}
	return min(mis, c.pump(&s.inputs, s.frame))
}

// A packet of a peer's may carry, for a frame the relay decided, the
// input its machine sent before it learned of the decision: the decision
// replaces it (applyInput), and a statement of the peer's that differs
// from such a packet is no lie (the peer signs only frames the relay
// settled, statements.signOwn): the statement wins, and no one is named.

// decide records the relay's input d of player p for frame f and applies
// it to what the ring holds: an input already here is replaced (the one
// its machine sent, which reached the relay too late; not yet final, the
// relay's receipt of f has not come), in r, frame being the next to
// simulate. It returns the first frame to re-simulate (frame for none).
func (c *relayClock) decide(r *inputRing, p PlayerID, f Frame, d Input, frame Frame) Frame {
	slot := ring(f)
	c.at[slot][p], c.dec[slot][p] = f+1, d
	if r.disconnected(p) || f >= r.next[p] {
		return frame // taken when its frame comes (addLocal, receive, pump)
	}
	if r.correct(p, f, d) && f < r.final[p] {
		c.conflicts++ // final already: a relay that lies (the decision wins)
	}
	if f < frame && r.usedAt(f, p) != d {
		return f
	}
	return frame
}

// pump takes, for each player, the decided inputs of its next
// frames: the relay made them final, so nobody waits for a late machine,
// and a late machine's own are its inputs (it is behind the relay's
// schedule: it catches up, catchUpClock). It returns the first
// mispredicted frame in r (frame, the next to simulate, for none).
func (c *relayClock) pump(r *inputRing, frame Frame) Frame {
	mis := frame
	for p := range r.players {
		if r.disconnected(PlayerID(p)) {
			continue
		}
		for {
			f := r.next[p]
			d, ok := c.decided(f, PlayerID(p))
			switch {
			case !ok:
			case r.local[p]:
				r.addLocal(PlayerID(p), d)
				continue
			case r.receive(PlayerID(p), f, d, frame):
				mis = min(mis, f)
				continue
			default:
				continue
			}
			break
		}
	}
	return mis
}

// clockCatchUp is how many frames more than one a late machine simulates
// in an Advance to get back to the relay's schedule.
const clockCatchUp = 3

// minSlack is the least time our inputs should reach the relay before
// their deadline: with less, we take a second input a tick.
const minSlack = 2 * time.Second / 60

// clockExtraEvery is how many frames apart a session short of slack
// takes its second inputs of a tick, at most. The relay's word on our
// slack is a round trip old: taken every tick, a catch-up ran on for a
// round trip after it was done (12 frames on hell), and the machine ran
// that far ahead of the schedule, and of the others, for the rest of the
// match (nothing slows an early machine but its stalls: on hell it
// waited on the others' inputs at its reach).
const clockExtraEvery = 4

// extraDue reports whether AddLocalInput may take a local player's input
// of frame next, one beyond the input lag (frame is the next to simulate):
// the relay says our inputs reach it with less than minSlack to spare,
// and we took none in the clockExtraEvery frames before frame (or took
// one for frame: each local player takes its own). It is nil-safe.
func (c *relayClock) extraDue(next, frame, delay Frame) bool {
	if c == nil || next != frame+delay+1 || c.t.ClockSlack() >= minSlack ||
		(frame != c.extraAt && frame < c.extraAt+clockExtraEvery) {
		return false
	}
	c.extraAt = frame
	return true
}

// catchUpClock simulates, after an Advance's frame (simulated so far),
// up to clockCatchUp frames more whose local inputs are here beyond the
// input lag: those the relay decided because we were late for them, and
// the second input the game gave in the tick when we are short of slack
// (extraDue). A machine behind the relay's schedule (a hitch, stalls)
// thus gets back to it, as the fairness governor would have made the
// others wait for it without the relay clock. It returns the frames
// simulated in all.
func (s *Session) catchUpClock(simulated int) int {
	for s.pace.clock != nil && simulated <= clockCatchUp && s.hasLocalInput() &&
		s.inputs.next[s.roster.local[0]] > s.frame+Frame(s.pace.lag.delay) {
		if _, stall := s.horizon().mustStall(); stall {
			break
		}
		s.step(false)
		s.pace.played(s.frame, &s.stats, &s.events)
		simulated++
	}
	return simulated
}
