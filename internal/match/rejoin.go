package match

import (
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// This file is Config.RejoinAfter: the machine dropped (DropAt,
// DropMachine) restarts — a new process: a fresh arena, a new session
// with rollback.Config.InProgress on the same transport — and takes its
// players back; Config.Late: a machine whose slot is reserved starts the
// same way mid-match; and Config.StandIn, the stand-in that plays their
// players meanwhile.

// standIn is the arena's stand-in for the tests and the soak: an input
// that depends on every byte of the state at the start of frame f, so
// that a machine that played an absent player from any other state is
// caught by the offline re-simulation.
func standIn(a *savestate.Arena, f rollback.Frame, p rollback.PlayerID) rollback.Input {
	h := xxhash.Sum64(a.Bytes()) ^ uint64(f)*0x9e3779b97f4a7c15 ^ uint64(p)<<56
	return rollback.Input(h) & arena.Layout.Mask()
}

// RejoinReport is what Config.RejoinAfter did (completed matches).
type RejoinReport struct {
	Rejoined  bool           // the machine took its players back
	Verified  bool           // and the match verified with its absence as agreed
	From      rollback.Frame // its disconnect frame, as every machine agreed
	Back      rollback.Frame // its take-over frame
	JoinTime  time.Duration  // from its restart to the take-over
	StateSize int            // the compressed state it was sent
	Source    int            // the machine it took the state from, at last
	Refuted   int            // the sources whose state another machine's checksum refuted (Stats.Join.Refuted)
}

// LateJoin is one reserved slot of Config.Late: Machine starts At (on its
// own clock) as a session joining in progress.
type LateJoin struct {
	Machine int
	At      time.Duration
}

// comesBack reports whether machine i (re)starts mid-match: the one that
// drops with RejoinAfter, or a late one.
func (rn *run) comesBack(i int) bool {
	return rn.ms[i].late || rn.dropping && rn.c.RejoinAfter > 0 && i == rn.c.DropMachine
}

// lateAt returns when machine j starts if its slot is reserved
// (Config.Late).
func lateAt(c Config, j int) (time.Duration, bool) {
	for _, l := range c.Late {
		if l.Machine == j {
			return l.At, true
		}
	}
	return 0, false
}

// checkLate validates Config.Late.
func checkLate(c Config, machines int) error {
	seen := make([]bool, machines)
	for _, l := range c.Late {
		switch {
		case l.Machine <= 0 || l.Machine >= machines:
			return fmt.Errorf("%w: late machine %d (1 to %d: the host starts the match)", ErrConfig, l.Machine, machines-1)
		case seen[l.Machine]:
			return fmt.Errorf("%w: machine %d is late twice", ErrConfig, l.Machine)
		case c.DropAt > 0 && l.Machine == c.DropMachine:
			return fmt.Errorf("%w: machine %d is late and drops", ErrConfig, l.Machine)
		case c.Lockstep || c.Record || c.Spectators > 0:
			return fmt.Errorf("%w: late join in rollback mode only, without Record or Spectators", ErrConfig)
		}
		seen[l.Machine] = true
	}
	return nil
}

// restart makes dead machine i a new process that joins the match in
// progress once its time has come (RejoinAfter since it crashed, or its
// Config.Late time). It reports whether it did.
func (rn *run) restart(i int) (bool, error) {
	m := &rn.ms[i]
	if m.rejoined || rn.clockOf(i)() < m.comeAt {
		return false, nil
	}
	a, err := savestate.New(rn.size)
	if err != nil {
		return false, err
	}
	g, err := arena.New(a, rn.c.Players, rn.c.Seed)
	if err != nil {
		return false, err
	}
	cfg := m.cfg
	m.mis.restart()
	cfg.State, cfg.Game, cfg.Observer, cfg.Recorder, cfg.Log = a, probedGame{Game: g, step: g, p: m.mis, steps: &m.work.steps}, probedObserver{p: m.mis}, nil, nil
	cfg.Rand = seededRand(rn.c.Seed, rn.c.randSalt+1, i)
	cfg.InProgress = true
	if rn.c.StandIn {
		cfg.StandIn = func(f rollback.Frame, p rollback.PlayerID) rollback.Input { return standIn(a, f, p) }
	}
	s, err := rollback.NewSession(cfg)
	if err != nil {
		return false, fmt.Errorf("machine %d restarting: %w", i, err)
	}
	m.s, m.a, m.g, m.rejoined, m.restartAt = s, a, g, true, rn.clockOf(i)()
	m.dead.Store(false)
	return true, nil
}

// noteRejoin records, from machine i's events, the disconnect frame it saw
// agreed for the machine that drops and the take-over frame of every
// machine that came back, and the first disagreement.
func (rn *run) noteRejoin(i int, events []rollback.Event) {
	if !rn.honest(i) {
		return // what the adversary's session saw (it may have cut everyone off) is not the match's
	}
	for _, e := range events {
		if e.Peer < 0 || (e.Kind != rollback.EventDisconnected && e.Kind != rollback.EventTookOver) {
			continue
		}
		x := e.Peer
		if x >= i {
			x++ // the peer index skips machine i
		}
		rn.rejoinMu.Lock()
		switch {
		case e.Kind == rollback.EventTookOver:
			rn.noteFrame(&rn.back[x], e.Frame, fmt.Sprintf("machine %d's take-over", x))
		case rn.dropping && x == rn.c.DropMachine:
			rn.noteFrame(&rn.rejoin.From, e.Frame, "disconnect")
		}
		rn.rejoinMu.Unlock()
	}
}

func (rn *run) noteFrame(at *rollback.Frame, f rollback.Frame, what string) {
	if *at >= 0 && *at != f && rn.rejoinWhy == "" {
		rn.rejoinWhy = fmt.Sprintf("%s frames differ: %d and %d", what, *at, f)
	}
	*at = f
}

// absences fills discFrom with the disconnect frame of the players of
// every machine that came back (0 for a late one) and returns each
// player's take-over frame (never, for the others); nil, with r's error or
// desync set, when the machines did not agree or one never came.
func (rn *run) absences(r *Result, discFrom []rollback.Frame) []rollback.Frame {
	if rn.rejoinWhy != "" {
		r.Desync = rn.rejoinWhy
		return nil
	}
	back := make([]rollback.Frame, len(discFrom))
	for p := range back {
		back[p] = rollback.Frame(1<<31 - 1)
	}
	report := func(i int, from rollback.Frame) (RejoinReport, bool) {
		m := &rn.ms[i]
		if rn.back[i] < 0 || !m.rejoined {
			r.Err = fmt.Errorf("machine %d never took its players", i)
			return RejoinReport{}, false
		}
		for _, p := range m.players {
			discFrom[p], back[p] = from, rn.back[i]
		}
		j := m.s.Stats().Join
		src, me := j.Source, i // the source's machine, and i's peer index there
		if src >= i {
			src++
		} else {
			me--
		}
		// PeerStats holds the last transfer between the two, either way:
		// unless the source itself came (back) later, the one to i.
		later := rn.back[src] > rn.back[i]
		if ps, _ := m.s.PeerStats(j.Source); !later && (ps.StateBytes != j.StateBytes || ps.StateTime != j.StateTime) {
			r.Err = fmt.Errorf("machine %d: PeerStats(%d) gives a state transfer of %d B in %v, Stats().Join %d B in %v",
				i, j.Source, ps.StateBytes, ps.StateTime, j.StateBytes, j.StateTime)
			return RejoinReport{}, false
		}
		if ps, _ := rn.ms[src].s.PeerStats(me); !later && !rn.ms[src].dead.Load() && ps.StateBytes != j.StateBytes {
			r.Err = fmt.Errorf("machine %d served machine %d a state of %d B, which received %d B", src, i, ps.StateBytes, j.StateBytes)
			return RejoinReport{}, false
		}
		return RejoinReport{Rejoined: j.TookOver, From: from, Back: rn.back[i], JoinTime: j.TakeTime, StateSize: j.StateBytes,
			Source: src, Refuted: j.Refuted}, true
	}
	if rn.dropping && rn.c.RejoinAfter > 0 {
		if rn.rejoin.From < 0 {
			r.Err = fmt.Errorf("machine %d's disconnect was never agreed", rn.c.DropMachine)
			return nil
		}
		rep, ok := report(rn.c.DropMachine, rn.rejoin.From)
		if !ok {
			return nil
		}
		r.DisconnectFrame, r.Rejoin = rn.rejoin.From, rep
	}
	for _, l := range rn.c.Late {
		rep, ok := report(l.Machine, 0)
		if !ok {
			return nil
		}
		r.Late = append(r.Late, rep)
	}
	return back
}
