package rollback

// horizon is how far back the session's frames may still be needed, as
// one call sees it: the anchor (no rollback needs to go before it), the
// oldest frame whose inputs the ring must keep, and whether simulating the
// next frame would go past either. Session.horizon builds it on the stack
// from the owners it reads; ringLow alone writes, the ring's floor
// (inputRing.lowFloor).
type horizon struct {
	frame    Frame // the next frame to simulate
	delay    Frame // the input lag
	lockstep bool
	roster   *roster
	inputs   *inputRing
	peers    peerSet
	snaps    *snapshots
	stmts    *statements // nil: fewer than three machines, or lockstep
	out      *recording  // the frames given to the Recorder and the spectators
	aud      *audience   // nil: no spectators
	host     horizonHost
}

// horizonHost is what the horizon asks of the session: to simulate the
// frames a snapshot moves up over (finalRunner).
type horizonHost interface {
	finalRunner
}

// horizon returns the session's horizon for one call. It is inlined: the
// horizon lives on the caller's stack, and nothing allocates.
func (s *Session) horizon() *horizon {
	return &horizon{frame: s.frame, delay: Frame(s.pace.lag.delay), lockstep: s.ls != nil, roster: &s.roster,
		inputs: &s.inputs, peers: s.peers, snaps: &s.snaps, stmts: s.stmts, out: &s.out, aud: s.aud, host: s}
}

// anchor returns the frame that no rollback will ever need to go before,
// when next is the next frame to be simulated: the settled frame of
// anchors.
func (h *horizon) anchor(next Frame) Frame {
	_, settled := h.anchors(next)
	return settled
}

// anchors returns, when next is the next frame to be simulated, the frame
// no rollback needs to go before but to cut a proven equivocator — the
// confirmed frame, but no later than the fewest frames of any remote
// machine that another remaining machine reported having (a machine that
// disconnects is cut at the smallest such count, docs/protocol.md, so a
// snapshot there can always be restored), nor, in a forced mode, than the
// next forced rollback's frame — and the settled frame, no later than the
// settled statements (with three or more machines: a frame an equivocator
// may yet be cut at), which no rollback ever goes before.
func (h *horizon) anchors(next Frame) (anchor, settled Frame) {
	c := h.inputs.confirmed()
	if h.confirmedAnchor() {
		return c, c
	}
	return h.bounded(min(c, h.snaps.forcedBound(next)))
}

// final returns the first frame whose inputs may not be final yet: the
// settled frame of anchors, but for a forced mode's next rollback, which
// re-simulates the frames after it with the same final inputs. The
// Recorder and the spectators' feed get the frames before it; held back
// by the forced rollback, a ConstantCost session never gave them the last
// MaxRollback frames of a match.
func (h *horizon) final() Frame {
	c := h.inputs.confirmed()
	if len(h.peers) <= 1 && h.stmts == nil {
		return c
	}
	_, settled := h.bounded(c)
	return settled
}

// confirmedAnchor reports whether the anchor and the settled frame are the
// confirmed frame: two machines (no third machine's counts), no forced
// mode, no statements.
func (h *horizon) confirmedAnchor() bool {
	return h.snaps.forced == 0 && len(h.peers) <= 1 && h.stmts == nil
}

// bounded is anchors for three or more machines or a forced mode: the
// confirmed frame c (already bounded by the forced rollback) bounded by
// the other machines' counts and the settled statements.
func (h *horizon) bounded(c Frame) (anchor, settled Frame) {
	if len(h.peers) > 1 { // the floors of third machines' counts
		d := newDepartures(h.peers, h.inputs, h.lockstep, h.stmts)
		for x := range h.peers {
			if h.peers[x].leave.agreed {
				continue
			}
			for m := range h.peers {
				if m != x && !h.peers[m].leave.disc {
					c = min(c, d.floor(m, x))
				}
			}
		}
	}
	if h.stmts == nil {
		return c, c
	}
	return c, min(c, h.stmts.end())
}

// ringLow returns the oldest frame whose inputs the session may still read,
// and keeps it as the ring's lowFloor.
func (h *horizon) ringLow() Frame {
	// The next frame to simulate counts too: in lockstep every input of
	// frames far ahead of it can be here (confirmed), waiting their turn.
	low := min(h.frame, h.anchor(h.frame), h.snaps.low())
	for i := range h.peers {
		if !h.peers[i].leave.disc {
			low = min(low, h.peers[i].progress.ack)
		}
	}
	if h.out.rec != nil || h.aud != nil {
		low = min(low, h.out.recorded) // frames not yet given to the Recorder or the spectators
	}
	h.inputs.lowFloor = low
	return low
}

// ringRoom reports whether end-ringLow() <= ringSize (the inputs of every
// frame before end fit in the ring beside those the session may still
// read), as far as the ring's lowFloor tells. It is a lower bound of
// ringLow, which never decreases: each frame it takes the minimum of only
// moves up (the live frame outside a rollback, the confirmed frame and the
// floors that bound the anchor, the oldest snapshot, the
// acknowledgements, the frame recorded), and a peer taken back or a
// machine that joins starts from a frame not before them. A false report
// is not a full ring: ringLow, computed again, answers then. This
// package's tests check the bound (lowFloorCheck); the checks of a steady
// Advance cost ~30 ns without it.
func (h *horizon) ringRoom(end Frame) bool {
	ok := end-h.inputs.lowFloor <= ringSize // inputRing.room, written out: small enough to inline
	if ok && lowFloorCheck != nil {
		h.checkLowFloor()
	}
	return ok
}

// checkLowFloor hands lowFloorCheck the floor and ringLow computed again
// (apart from ringRoom, which stays small enough to inline).
func (h *horizon) checkLowFloor() {
	floor := h.inputs.lowFloor
	lowFloorCheck(floor, h.ringLow())
}

// lowFloorCheck, when set (only by this package's tests), is given the
// floor each answer of ringRoom came from and ringLow computed again.
var lowFloorCheck func(floor, low Frame)

// mustStall reports whether simulating the next frame would let a future
// rollback reach back further than MaxRollback, or would overwrite inputs
// the session still needs, and names the peer to blame.
func (h *horizon) mustStall() (int, bool) {
	for p := range h.roster.players {
		if h.inputs.local[p] || h.inputs.disconnected(PlayerID(p)) {
			continue
		}
		if h.frame-h.inputs.next[p] >= h.snaps.reach {
			return h.roster.owner[p], true
		}
	}
	if h.ringRoom(h.frame + h.delay + 2) { // the test below, from the floor
		return 0, false
	}
	low := h.ringLow()
	if h.frame+h.delay+1-low >= ringSize && h.snaps.on && low == h.snaps.low() {
		// Our own oldest snapshot holds the ring, left behind while the
		// anchor lagged (with no misprediction to move it; in a forced
		// mode, the one kept at the settled frame while a machine's
		// departure was agreed: the stall then stopped the rollbacks that
		// would have freed it, for ever): the frames up to the anchor are
		// final, so it moves up in place.
		if err := h.snaps.catchUp(min(h.anchor(h.frame), h.frame), h.host); err == nil {
			low = h.ringLow()
		}
	}
	if h.frame+h.delay+1-low >= ringSize {
		// A peer that stopped acknowledging, or a snapshot that cannot move
		// on: never overwrite inputs that may still be read.
		return h.blameRing(low), true
	}
	return 0, false
}

// mustStallTick decides whether this tick simulates nothing, for any
// reason, and counts it: a missing input (the game shows the spinner), a
// raised input lag, or the fairness governor's stall.
func (s *Session) mustStallTick() bool {
	// The horizon decides only when the inputs' bound (inputRing.clear)
	// or the ring's room from its floor may stall: a steady tick needs
	// neither the horizon nor a look at every player.
	if s.frame >= s.inputs.clear || !s.inputs.room(s.frame+Frame(s.pace.lag.delay)+2) {
		h := s.horizon()
		if peer, ok := h.mustStall(); ok {
			s.stats.StallFrames++
			s.cut(s.pace.starving.starve(peer, s.now, s.proto.disconnectAfter, &s.events, s.frame))
			return true
		}
		s.inputs.clear = h.inputsClear()
	}
	s.pace.starving.resume(&s.events, s.frame)
	if s.pace.lag.stalls > 0 {
		s.pace.lag.stalls--
		s.stats.LagStalls++
		return true
	}
	if s.pace.gov.Stall() {
		s.stats.AdvantageStalls++
		return true
	}
	return false
}

// inputsClear returns the first frame from which the first test of
// mustStall, a remote player's input reach frames behind, may stall: the
// least of every remote player's next frame plus the reach, of the
// players not absent for good. It only moves up while the frames go on
// (a remote player's next frame only grows; one that leaves no longer
// counts), but for a player taken back (inputRing.rejoin forgets it).
func (h *horizon) inputsClear() Frame {
	c := noFrame
	for p := range h.roster.players {
		if !h.inputs.local[p] && !h.inputs.disconnected(PlayerID(p)) {
			c = min(c, h.inputs.next[p]+h.snaps.reach)
		}
	}
	return c
}

// blameRing names the peer that holds the input ring at frame low: one
// that has not acknowledged it, whose input is missing there, or whose
// count of a third machine holds the anchor there; -1 when none does (our
// own snapshots or Recorder).
func (h *horizon) blameRing(low Frame) int {
	if h.stmts != nil && low == h.stmts.end() {
		if i := h.stmts.blame(&h.stmts.port); i >= 0 {
			return i
		}
	}
	for i := range h.peers {
		if !h.peers[i].leave.disc && h.peers[i].progress.ack == low {
			return i
		}
	}
	for p := range h.roster.players {
		if !h.inputs.local[p] && !h.inputs.disconnected(PlayerID(p)) && h.inputs.next[p] == low {
			return h.roster.owner[p]
		}
	}
	d := newDepartures(h.peers, h.inputs, h.lockstep, h.stmts)
	for x := range h.peers {
		if h.peers[x].leave.agreed {
			continue
		}
		for m := range h.peers {
			if m != x && !h.peers[m].leave.disc && d.floor(m, x) == low {
				return m
			}
		}
	}
	return -1
}
