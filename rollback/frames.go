package rollback

import (
	"github.com/rewindgg/rewind/inputlag"
)

// This file is the simulation side of the session: playing a frame,
// rolling back, and the bounds (anchor, ring low, stalls) that keep every
// rollback possible.

// play simulates the next frame during play (not a re-simulation) and
// runs the 100-frame evaluations of frame advantage and input lag.
func (s *Session) play() {
	s.step(false)
	s.stats.LagFrames[min(s.pace.lag.delay, MaxInputLagHistogram-1)]++
	// Every frame not simulated gives frames back, whatever the reason.
	stalled := s.stats.AdvantageStalls + s.stats.StallFrames + s.stats.LagStalls
	if !s.pace.gov.Simulated(stalled) || s.pace.lag.fixed {
		return
	}
	if next, changed := s.pace.lag.retarget(inputlag.Next(s.pace.lag.delay, s.pace.gov.LinkLag())); changed {
		s.events = append(s.events, Event{Kind: EventInputLagChanged, Frame: s.frame, Peer: -1, Lag: next})
	}
}

// step simulates s.frame in the live state with the best inputs known,
// after taking any snapshot the policy asks for (resim: again, during a
// rollback, which never saves).
func (s *Session) step(resim bool) {
	f := s.frame
	if !resim && s.snaps.saveDue(f) { // the anchor only when the policy may save
		anchor, settled := s.anchors(f)
		if slot := s.snaps.saveSlot(f, anchor, settled); slot >= 0 {
			_ = s.save(slot, f)
		}
	}
	s.inputs.inputsFor(f, s.io.stepIn[:s.roster.players])
	s.inputs.use(f, s.io.stepIn[:s.roster.players])
	s.simulate(f, resim, true)
	if !resim {
		s.times.simmed.note(f+1, s.now)
	}
	s.frame = f + 1
}

// runFinal simulates frame f, every input of which is final, in the
// arena's current region: the snapshots move a snapshot forward with it.
// A frame with news (from a rollback's mispredicted frame on) is told to
// the Observer, as the re-simulation that goes on from there; one
// simulated again with the same inputs is not, and nothing is heard from
// it.
func (s *Session) runFinal(f Frame, news bool) {
	s.inputs.inputsFor(f, s.io.stepIn[:s.roster.players])
	s.inputs.use(f, s.io.stepIn[:s.roster.players]) // the stand-in's input, for finalInputs
	if news || s.app.obs == nil {
		s.simulate(f, true, true)
		return
	}
	s.app.extrapolating(true)
	s.simulate(f, true, false)
	s.app.extrapolating(false)
}

// simulate steps the current region through frame f with s.io.stepIn, with
// everything that goes with every step: the desync checkpoint, the
// observer (observed), the sync-test check.
func (s *Session) simulate(f Frame, resim, observed bool) {
	if s.sums.wants(f) {
		s.sums.record(f, s.snaps.arena.Bytes())
	}
	if s.proto.joins > 0 {
		s.peers.noteJoinStates(f, s.snaps.arena.Bytes())
	}
	if s.out.log != nil {
		s.out.logStep(s.now, f, resim, s.io.stepIn[:s.roster.players], s.snaps.sum())
	}
	s.app.step(f, s.io.stepIn[:s.roster.players], observed)
	if s.sync != nil {
		s.sync.check(s, f+1, s.snaps.sum())
	}
}

// rollback restores the newest usable snapshot not after frame mis and
// re-simulates up to the present. next is the frame simulated after this
// call (the present, or one more when a frame is simulated right after:
// it bounds the anchor of the forced modes). It returns the frames
// simulated again, in the snapshot and in the live state.
func (s *Session) rollback(mis, next Frame) (int, error) {
	target := s.frame
	anchor, settled := s.anchors(next)
	r, err := s.snaps.restore(mis, min(anchor, target), min(settled, target), s)
	if err != nil {
		return 0, err
	}
	if s.out.log != nil {
		s.out.log.Restore(s.now, r.slot, int(r.at), int(mis), int(target))
	}
	for s.frame = r.at; ; s.step(true) {
		if s.frame == r.saveAt {
			if err := s.save(r.saveSlot, s.frame); err != nil {
				return 0, err
			}
		}
		if s.frame >= target {
			break
		}
	}
	n := int(target - r.from)
	s.stats.Rollbacks++
	s.stats.MaxRollbackFrames = max(s.stats.MaxRollbackFrames, int(target-mis))
	s.stats.ResimulatedFrames += int64(n)
	s.stats.MaxResimulated = max(s.stats.MaxResimulated, n)
	return n, nil
}

// save saves the live state into slot as the start of frame f.
func (s *Session) save(slot int, f Frame) error {
	if err := s.snaps.save(slot, f); err != nil {
		return err
	}
	if s.out.log != nil {
		s.out.log.Save(s.now, slot, int(f))
	}
	return nil
}

// anchor returns the frame that no rollback will ever need to go before,
// when next is the next frame to be simulated: the settled frame of
// anchors.
func (s *Session) anchor(next Frame) Frame {
	_, settled := s.anchors(next)
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
func (s *Session) anchors(next Frame) (anchor, settled Frame) {
	c := s.inputs.confirmed()
	if s.confirmedAnchor() {
		return c, c
	}
	return s.bounded(c, next)
}

// confirmedAnchor reports whether the anchor and the settled frame are the
// confirmed frame: two machines (no third machine's counts), no forced
// mode, no statements.
func (s *Session) confirmedAnchor() bool {
	return s.snaps.forced == 0 && len(s.peers) <= 1 && s.stmts == nil
}

// bounded is anchors for three or more machines or a forced mode: the
// confirmed frame c bounded by the other machines' counts, the forced
// rollback and the settled statements.
func (s *Session) bounded(c, next Frame) (anchor, settled Frame) {
	if s.snaps.forced > 0 {
		c = min(c, s.snaps.forcedBound(next))
	}
	if len(s.peers) > 1 { // the floors of third machines' counts
		d := newDepartures(s.peers, &s.inputs, s.ls != nil)
		for x := range s.peers {
			if s.peers[x].leave.agreed {
				continue
			}
			for m := range s.peers {
				if m != x && !s.peers[m].leave.disc {
					c = min(c, d.floor(m, x))
				}
			}
		}
	}
	if s.stmts == nil {
		return c, c
	}
	return c, min(c, s.stmts.end())
}

// ringLow returns the oldest frame whose inputs the session may still read,
// and keeps it as s.inputs.lowFloor.
func (s *Session) ringLow() Frame {
	// The next frame to simulate counts too: in lockstep every input of
	// frames far ahead of it can be here (confirmed), waiting their turn.
	low := min(s.frame, s.anchor(s.frame), s.snaps.low())
	for i := range s.peers {
		if !s.peers[i].leave.disc {
			low = min(low, s.peers[i].progress.ack)
		}
	}
	if s.out.rec != nil || s.aud != nil {
		low = min(low, s.out.recorded) // frames not yet given to the Recorder or the spectators
	}
	s.inputs.lowFloor = low
	return low
}

// ringRoom reports whether end-ringLow() <= ringSize (the inputs of every
// frame before end fit in the ring beside those the session may still
// read), as far as s.inputs.lowFloor tells. It is a lower bound of ringLow, which
// never decreases: each frame it takes the minimum of only moves up (the
// live frame outside a rollback, the confirmed frame and the floors that
// bound the anchor, the oldest snapshot, the acknowledgements, the frame
// recorded), and a peer taken back or a machine that joins starts from a
// frame not before them. A false report is not a full ring: ringLow,
// computed again, answers then. This package's tests check the bound
// (lowFloorCheck); the checks of a steady Advance cost ~30 ns without it.
func (s *Session) ringRoom(end Frame) bool {
	ok := end-s.inputs.lowFloor <= ringSize
	if ok && lowFloorCheck != nil {
		s.checkLowFloor()
	}
	return ok
}

// checkLowFloor hands lowFloorCheck the floor and ringLow computed again.
func (s *Session) checkLowFloor() {
	floor := s.inputs.lowFloor
	lowFloorCheck(floor, s.ringLow())
}

// lowFloorCheck, when set (only by this package's tests), is given the
// floor each answer of ringRoom came from and ringLow computed again.
var lowFloorCheck func(floor, low Frame)

// mustStall reports whether simulating s.frame would let a future rollback
// reach back further than MaxRollback, or would overwrite inputs the session
// still needs, and names the peer to blame.
func (s *Session) mustStall() (int, bool) {
	for p := range s.roster.players {
		if s.inputs.local[p] || s.inputs.disconnected(PlayerID(p)) {
			continue
		}
		if s.frame-s.inputs.next[p] >= s.snaps.reach {
			return s.roster.owner[p], true
		}
	}
	if s.ringRoom(s.frame + Frame(s.pace.lag.delay) + 2) { // the test below, from the floor
		return 0, false
	}
	low := s.ringLow()
	if s.frame+Frame(s.pace.lag.delay)+1-low >= ringSize && s.snaps.on && low == s.snaps.low() {
		// Our own oldest snapshot holds the ring, left behind while the
		// anchor lagged (with no misprediction to move it; in a forced
		// mode, the one kept at the settled frame while a machine's
		// departure was agreed: the stall then stopped the rollbacks that
		// would have freed it, for ever): the frames up to the anchor are
		// final, so it moves up in place.
		if err := s.snaps.catchUp(min(s.anchor(s.frame), s.frame), s); err == nil {
			low = s.ringLow()
		}
	}
	if s.frame+Frame(s.pace.lag.delay)+1-low >= ringSize {
		// A peer that stopped acknowledging, or a snapshot that cannot move
		// on: never overwrite inputs that may still be read.
		return s.blameRing(low), true
	}
	return 0, false
}

// blameRing names the peer that holds the input ring at frame low: one
// that has not acknowledged it, whose input is missing there, or whose
// count of a third machine holds the anchor there; -1 when none does (our
// own snapshots or Recorder).
func (s *Session) blameRing(low Frame) int {
	if s.stmts != nil && low == s.stmts.end() {
		if i := s.stmts.blame(&s.stmts.port); i >= 0 {
			return i
		}
	}
	for i := range s.peers {
		if !s.peers[i].leave.disc && s.peers[i].progress.ack == low {
			return i
		}
	}
	for p := range s.roster.players {
		if !s.inputs.local[p] && !s.inputs.disconnected(PlayerID(p)) && s.inputs.next[p] == low {
			return s.roster.owner[p]
		}
	}
	d := newDepartures(s.peers, &s.inputs, s.ls != nil)
	for x := range s.peers {
		if s.peers[x].leave.agreed {
			continue
		}
		for m := range s.peers {
			if m != x && !s.peers[m].leave.disc && d.floor(m, x) == low {
				return m
			}
		}
	}
	return -1
}

// record gives the Recorder every frame that has become final: simulated,
// and before the anchor, so that no rollback can change its inputs. It is
// inlined where it is called: without a Recorder, a log or spectators it
// costs no call.
func (s *Session) record() {
	if s.out.rec == nil && s.out.log == nil && s.aud == nil {
		return
	}
	s.recordFinal()
}

// recordFinal is record's work.
func (s *Session) recordFinal() {
	if s.out.recorded >= s.frame {
		return
	}
	end := min(s.anchor(s.frame), s.frame)
	if s.out.log != nil && end > s.out.recorded {
		s.out.log.Final(s.now, int(end))
	}
	if s.out.rec == nil && s.aud == nil {
		s.out.recorded = max(s.out.recorded, end)
		return
	}
	for ; s.out.recorded < end; s.out.recorded++ {
		f, in := s.out.recorded, s.out.in[:s.roster.players]
		s.inputs.finalInputs(f, in)
		if s.out.rec != nil {
			s.out.rec.Confirmed(f, in)
		}
		if s.aud != nil {
			s.aud.feed.add(in)
		}
	}
}

// joinState gives the audience the newest snapshot no later than the
// frames already in its feed (final: record put them there), or the live
// state when every frame simulated is (lockstep without snapshots): a
// stateSource.
func (s *Session) joinState(dst []byte) (Frame, []byte, bool) {
	fed := s.out.recorded
	if !s.proto.started {
		return 0, dst, false
	}
	if !s.snaps.on {
		if fed < s.frame {
			return 0, dst, false
		}
		return s.frame, append(dst, s.snaps.arena.Bytes()...), true
	}
	slot := s.snaps.newest(fed)
	if slot < 0 || s.snaps.arena.Enter(slot) != nil {
		return 0, dst, false
	}
	n := len(dst)
	dst = append(dst, s.snaps.arena.Bytes()...)
	s.snaps.arena.Leave()
	if corruptJoinState(s.tx.tr) && len(dst) > n {
		dst[len(dst)-1] ^= 1 // the test of a state that must be caught
	}
	return s.snaps.backups[slot].frame, dst, true
}

// emitGuest reports a spectator's arrival or departure (a stateSource).
func (s *Session) emitGuest(k EventKind, idx int) { s.events.emit(k, s.frame, idx) }

// syncCheck is sync-test mode's record of the arena at the start of each
// frame, to compare a re-simulation with the first simulation.
type syncCheck struct {
	sums [ringSize]uint64
	high Frame // the newest frame whose checksum is recorded
	err  *SyncTestError
}

// check records or compares the checksum sum of the state at the start of
// frame f.
func (c *syncCheck) check(s *Session, f Frame, sum uint64) {
	if f > c.high {
		c.sums[ring(f)] = sum
		c.high = f
		return
	}
	if want := c.sums[ring(f)]; want != sum && c.err == nil {
		c.err = &SyncTestError{Frame: f - 1, Want: want, Got: sum}
		s.events.emit(EventSyncTestFailed, f-1, -1)
	}
}
