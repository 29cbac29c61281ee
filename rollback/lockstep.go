package rollback

import "time"

// Lockstep mode (Config.Lockstep): the session simulates a frame
// only when every player's input for it is here, and never predicts. Two
// clocks drive it, both counted in ticks of Config.TickRate:
//
//   - the input clock: from the start of the match the local players give
//     one input per tick, for the frame InputLag ticks ahead, whatever
//     the simulation is doing, and each goes out at once;
//   - the playout clock (Gaffer's playout delay buffer): once the first
//     inputs of every peer have arrived, frame 0 is due PlayoutDelay later
//     and frame f another f ticks after that. An Advance simulates every
//     frame that is due and whose inputs are all here, at most
//     lockstepCatchUp of them; when a due frame still lacks an input the
//     buffer has run dry, and the Advance counts a hitch.
//
// The inputs of a peer arrive one way trip after they were given, so the
// delay covers everything from jitter to lost packets the redundancy has
// to repair, and no machine waits for another's simulation: only for its
// inputs. The schedule is fixed (not adaptive): Config.PlayoutDelay is the
// whole trade of latency against hitches, as in the article.

// lockstep owns lockstep mode's two clocks.
type lockstep struct {
	tick     time.Duration // the simulation period
	playout  time.Duration // the playout delay
	playFrom time.Duration // when frame 0 is due; -1 until every peer's first input arrived
}

// newLockstep is lockstep mode's clocks for the populated cfg.
func newLockstep(cfg Config) *lockstep {
	return &lockstep{
		tick:     time.Second / time.Duration(cfg.TickRate),
		playout:  max(0, cfg.PlayoutDelay),
		playFrom: -1,
	}
}

// inputDue reports whether the input clock has reached a local player's
// next input, next, with input lag delay, elapsed after the start of the
// match (before the start only the first is due, as in rollback mode).
func (l *lockstep) inputDue(next Frame, delay int, started bool, elapsed time.Duration) bool {
	due := Frame(delay)
	if started {
		due += Frame(elapsed / l.tick)
	}
	return next <= due
}

// due returns how many frames the playout clock has released at now:
// every frame before it is due. first is when the last peer's first inputs
// arrived, or -1 while some are missing (then nothing is due); with no
// peers the schedule starts at once.
func (l *lockstep) due(now, first time.Duration, peers bool) Frame {
	if l.playFrom < 0 {
		if first < 0 {
			return 0
		}
		l.playFrom = first
		if peers {
			l.playFrom += l.playout
		}
	}
	if now < l.playFrom {
		return 0
	}
	return Frame((now-l.playFrom)/l.tick) + 1
}

// advanceLockstep is Advance in lockstep mode.
func (s *Session) advanceLockstep() (Result, error) {
	r := Result{Frame: s.frame, Stalled: true}
	mis, err := s.poll()
	if err != nil || !s.proto.started {
		return s.stall(r, err)
	}
	if mis < s.frame {
		// Only a disconnect cut before frames already simulated (three or
		// more machines) gets here; the snapshots were kept for it.
		if r.Resimulated, err = s.rollback(mis, s.frame); err != nil {
			r.Events = s.events
			return r, err
		}
	}
	first := time.Duration(-1)
	if s.ls.playFrom < 0 { // the schedule is not fixed yet
		first = s.peers.firstInputs(s.proto.startedAt)
	}
	due := s.ls.due(s.now, first, len(s.peers) > 0)
	blame, dry := -1, false
	for s.frame < due && r.Simulated < lockstepCatchUp {
		// Our own input first (-1: it is ours), then what the ring and
		// the rollback window allow.
		peer, stall := -1, !s.hasLocalInput()
		if !stall {
			peer, stall = s.horizon().mustStall()
		}
		if stall {
			blame, dry = peer, true
			break
		}
		if r.Simulated == 0 {
			r.Frame = s.frame
		}
		r.Stalled = false
		s.step(false)
		r.Simulated++
	}
	if dry {
		s.stats.Hitches++
		r.Hitch = true
		if r.Stalled {
			s.stats.StallFrames++
		}
		s.cut(s.pace.starving.starve(blame, s.now, s.proto.disconnectAfter, &s.events, s.frame))
	} else {
		s.pace.starving.resume(&s.events, s.frame)
	}
	err = s.endTick()
	r.Events = s.events
	return r, err
}
