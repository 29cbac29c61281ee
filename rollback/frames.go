package rollback

import "github.com/rewindgg/rewind/desync"

// This file is the simulation side of the session: stepping a frame,
// rolling back, and the state offered to joiners. The bounds that keep
// every rollback possible (the anchor, the ring's low end, the stalls) are
// the horizon's (horizon.go).

// step simulates s.frame in the live state with the best inputs known,
// after taking any snapshot the policy asks for (resim: again, during a
// rollback, which never saves).
func (s *Session) step(resim bool) {
	f := s.frame
	if !resim && s.snaps.saveDue(f) { // the anchor only when the policy may save
		anchor, settled := s.horizon().anchors(f)
		if slot := s.snaps.saveSlot(f, anchor, settled); slot >= 0 {
			_ = s.snaps.saveLogged(slot, f, s.out.log, s.now)
		}
	}
	s.inputs.take(f, s.io.stepIn[:s.roster.players])
	if !resim && s.snaps.timeStep(f) {
		t := s.clock()
		s.simulate(f, resim, true)
		s.snaps.cad.noteStep(s.clock() - t)
	} else {
		s.simulate(f, resim, true)
	}
	if !resim {
		s.times.simmed.note(f+1, s.now)
		if s.snaps.cad.played() {
			s.snaps.adapt()
		}
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
	s.inputs.take(f, s.io.stepIn[:s.roster.players]) // the stand-in's input is kept, for finalInputs
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
	if s.sync != nil {
		s.sync.trace()
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
	anchor, settled := s.horizon().anchors(next)
	r, err := s.snaps.restore(mis, min(anchor, target), min(settled, target), s)
	if err != nil {
		return 0, err
	}
	if s.out.log != nil {
		s.out.log.Restore(s.now, r.slot, int(r.at), int(mis), int(target))
	}
	for s.frame = r.at; ; s.step(true) {
		if s.frame == r.saveAt {
			if err := s.snaps.saveLogged(r.saveSlot, s.frame, s.out.log, s.now); err != nil {
				return 0, err
			}
		}
		if s.frame >= target {
			break
		}
	}
	n := int(target - r.from)
	s.snaps.cad.noteRollback(int(target - mis))
	s.stats.Rollbacks++
	s.stats.MaxRollbackFrames = max(s.stats.MaxRollbackFrames, int(target-mis))
	s.stats.ResimulatedFrames += int64(n)
	s.stats.MaxResimulated = max(s.stats.MaxResimulated, n)
	return n, nil
}

// ringLow is the horizon's ringLow, for judging a packet (a ringView) and
// taking statements (a stmtHost).
func (s *Session) ringLow() Frame { return s.horizon().ringLow() }

// ringRoom is the horizon's ringRoom, for judging a packet (a ringView).
// Without the tests' check (lowFloorCheck) the ring's floor alone
// answers: no horizon is built.
func (s *Session) ringRoom(end Frame) bool {
	if lowFloorCheck == nil {
		return s.inputs.room(end)
	}
	return s.horizon().ringRoom(end)
}

// joinState gives the audience the newest snapshot no later than the
// frames already in its feed (final: recording.record put them there), or
// the live state when every frame simulated is (lockstep without
// snapshots): a stateSource.
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
	if adversaryBuilt && s.tx.adv.corruptsStates() && len(dst) > n {
		dst[len(dst)-1] ^= 1 // the test of a state that must be caught
		s.tx.adv.lied()
	}
	return s.snaps.backups[slot].frame, dst, true
}

// emitGuest reports a spectator's arrival or departure (a stateSource).
func (s *Session) emitGuest(k EventKind, idx int) { s.events.emit(k, s.frame, idx) }

// syncCheck is sync-test mode's record of the arena at the start of each
// frame, to compare a re-simulation with the first simulation.
type syncCheck struct {
	sums  [ringSize]uint64
	high  Frame          // the newest frame whose checksum is recorded
	err   *desync.Error  // Peer -1: a sync test's
	marks *desync.Marks  // Config.Marks: each step is traced
	hash  func() uint64  // the state's hash, for the trace
	first []desync.Trace // with marks, by frame (ring): the trace of the first simulation of the step before it
}

// check records or compares the checksum sum of the state at the start of
// frame f.
func (c *syncCheck) check(s *Session, f Frame, sum uint64) {
	var tr desync.Trace
	if c.marks != nil {
		tr = c.marks.Stop()
	}
	if f > c.high {
		c.sums[ring(f)] = sum
		c.high = f
		if c.first != nil {
			c.first[ring(f)] = tr
		}
		return
	}
	if want := c.sums[ring(f)]; want != sum && c.err == nil {
		c.err = &desync.Error{Frame: int32(f), Peer: -1, Local: want, Remote: sum}
		if c.first != nil {
			c.err.System, _ = desync.FirstDiff(c.first[ring(f)], tr)
		}
	}
}

// trace starts tracing the step about to run (Config.Marks).
func (c *syncCheck) trace() {
	if c.marks != nil {
		c.marks.Trace(c.hash)
	}
}
