package rollback

// Lockstep mode (Config.Mode = LockstepMode): the session simulates a frame
// only when every player's input for it is here, and never predicts. Two
// clocks drive it, both counted in ticks of Config.TickRate:
//
//   - the input clock: from the start of the match the local players give
//     one input per tick, for the frame InputDelay ticks ahead, whatever
//     the simulation is doing, and each goes out at once;
//   - the playout clock (Gaffer's playout delay buffer): once the first
//     inputs of every peer have arrived, frame 0 is due PlayoutDelay later
//     and frame f another f ticks after that. An Advance simulates every
//     frame that is due and whose inputs are all here, at most
//     LockstepCatchUp of them; when a due frame still lacks an input the
//     buffer has run dry, and the Advance counts a hitch.
//
// The inputs of a peer arrive one way trip after they were given, so the
// delay covers everything from jitter to lost packets the redundancy has
// to repair, and no machine waits for another's simulation: only for its
// inputs. The schedule is fixed (not adaptive): Config.PlayoutDelay is the
// whole trade of latency against hitches, as in the article.

// inputDue reports whether local player p may give its next input now:
// the input clock has reached it and the ring has room for it.
func (s *Session) inputDue(p PlayerID) bool {
	due := Frame(s.delay) // before the start: the first input, as in rollback mode
	if s.started {
		due += Frame((s.clock.Now() - s.startedAt) / s.tick)
	}
	return s.next[p] <= due && s.next[p]+1-s.ringLow() < ringSize
}

// dueFrames returns how many frames the playout clock has released: every
// frame before it is due. It is 0 until every remaining peer's first inputs
// have arrived.
func (s *Session) dueFrames() Frame {
	if s.playFrom < 0 {
		first := s.startedAt
		for i := range s.peers {
			ps := &s.peers[i]
			if ps.disc {
				continue
			}
			if ps.firstInput < 0 {
				return 0
			}
			first = max(first, ps.firstInput)
		}
		s.playFrom = first
		if len(s.peers) > 0 {
			s.playFrom += s.playout
		}
	}
	if s.now < s.playFrom {
		return 0
	}
	return Frame((s.now-s.playFrom)/s.tick) + 1
}

// advanceLockstep is Advance in lockstep mode.
func (s *Session) advanceLockstep() (Result, error) {
	r := Result{Frame: s.frame, Stalled: true}
	mis, err := s.poll()
	if err != nil || !s.started {
		s.send()
		r.Events = s.events
		return r, err
	}
	if mis < s.frame {
		// Only a disconnect cut before frames already simulated (three or
		// more machines) gets here; the snapshots were kept for it.
		if r.Resimulated, err = s.rollback(mis); err != nil {
			r.Events = s.events
			return r, err
		}
	}
	due := s.dueFrames()
	blame, dry := -1, false
	for ran := 0; s.frame < due && ran < LockstepCatchUp; ran++ {
		if peer, stall := s.lockstepWait(); stall {
			blame, dry = peer, true
			break
		}
		if ran == 0 {
			r.Frame = s.frame
		}
		r.Stalled = false
		s.step()
	}
	if dry {
		s.stats.Hitches++
		r.Hitch = true
		if r.Stalled {
			s.stats.StallFrames++
		}
		s.starve(blame)
	} else {
		s.resume()
	}
	return s.endTick(r)
}

// lockstepWait reports whether s.frame lacks an input, and names the peer
// whose input is missing (-1 for a local player's: the game did not give
// it in time).
func (s *Session) lockstepWait() (int, bool) {
	if !s.hasLocalInput() {
		return -1, true
	}
	return s.mustStall()
}
