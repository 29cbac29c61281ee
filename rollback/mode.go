package rollback

// This file is the session's modes (raft's r.step, chosen once per role):
// Advance runs its tick through s.advance, set when the session is made
// and changed only by the transitions below, instead of asking at every
// call which optional part is there.

// advancer runs one Advance tick of a session in a mode.
type advancer func(s *Session) (Result, error)

// becomePlaying makes s play its mode's ticks: lockstep's when the match
// is in lockstep, rollback's otherwise. It is the mode at the start, and
// after a join's take-over.
func (s *Session) becomePlaying() {
	s.advance = (*Session).advanceRollback
	if s.ls != nil {
		s.advance = (*Session).advanceLockstep
	}
}

// becomeJoining makes s a machine joining a match in progress: it watches,
// proposes and takes its players over (join.go) until becomePlaying.
func (s *Session) becomeJoining() { s.advance = (*Session).advanceJoin }
