package match

import (
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/internal/testhook"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// This file is Config.RejoinAfter: the machine dropped (DropAt,
// DropMachine) restarts — a new process: a fresh arena, a new session
// with rollback.Config.InProgress on the same transport — and takes its
// players back; and Config.StandIn, the stand-in that plays them
// meanwhile.

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
}

// rejoining reports whether machine i is the one that drops and comes back.
func (rn *run) rejoining(i int) bool {
	return rn.dropping && rn.c.RejoinAfter > 0 && i == rn.c.DropMachine
}

// restart makes dead machine i a new process that joins the match in
// progress, once RejoinAfter has passed since it crashed. It reports
// whether it did.
func (rn *run) restart(i int) (bool, error) {
	m := &rn.ms[i]
	if m.rejoined || rn.clockOf(i).Now()-m.deadAt < rn.c.RejoinAfter {
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
	cfg.State, cfg.Game, cfg.Observer, cfg.Recorder, cfg.Log = a, g, nil, nil, nil
	cfg.Rand = seededRand(rn.c.Seed, rn.c.randSalt+1, i)
	cfg.InProgress = true
	if rn.c.StandIn {
		cfg.StandIn = func(f rollback.Frame, p rollback.PlayerID) rollback.Input { return standIn(a, f, p) }
	}
	s, err := rollback.NewSession(cfg)
	if err != nil {
		return false, fmt.Errorf("machine %d restarting: %w", i, err)
	}
	m.s, m.a, m.g, m.rejoined, m.restartAt = s, a, g, true, rn.clockOf(i).Now()
	m.dead.Store(false)
	return true, nil
}

// noteRejoin records the disconnect and take-over frames machine i saw
// agreed for the machine that drops, and the first disagreement.
func (rn *run) noteRejoin(i int, events []rollback.Event) {
	if !rn.dropping || i == rn.c.DropMachine {
		return
	}
	peer := rn.c.DropMachine
	if peer > i {
		peer--
	}
	for _, e := range events {
		if e.Peer != peer {
			continue
		}
		switch e.Kind {
		case rollback.EventDisconnected:
			rn.rejoinMu.Lock()
			rn.noteFrame(&rn.rejoin.From, e.Frame, "disconnect")
			rn.rejoinMu.Unlock()
		case rollback.EventTookOver:
			rn.rejoinMu.Lock()
			rn.noteFrame(&rn.rejoin.Back, e.Frame, "take-over")
			rn.rejoinMu.Unlock()
		}
	}
}

func (rn *run) noteFrame(at *rollback.Frame, f rollback.Frame, what string) {
	if *at >= 0 && *at != f && rn.rejoinWhy == "" {
		rn.rejoinWhy = fmt.Sprintf("%s frames differ: %d and %d", what, *at, f)
	}
	*at = f
}

// rejoinAbsence fills discFrom with the dropped machine's players'
// disconnect frame and returns each player's take-over frame (noFrame for
// the others); nil, with r's error or desync set, when the machines did
// not agree or it never came back.
func (rn *run) rejoinAbsence(r *Result, discFrom []rollback.Frame) []rollback.Frame {
	m := &rn.ms[rn.c.DropMachine]
	rep := &rn.rejoin
	switch {
	case rn.rejoinWhy != "":
		r.Desync = rn.rejoinWhy
		return nil
	case rep.From < 0:
		r.Err = fmt.Errorf("machine %d's disconnect was never agreed", rn.c.DropMachine)
		return nil
	case rep.Back < 0 || !m.rejoined:
		r.Err = fmt.Errorf("machine %d never took its players back", rn.c.DropMachine)
		return nil
	}
	back := make([]rollback.Frame, len(discFrom))
	for p := range back {
		back[p] = rollback.Frame(1<<31 - 1)
	}
	for _, p := range m.players {
		discFrom[p], back[p] = rep.From, rep.Back
	}
	j := m.s.Stats().Join
	rep.Rejoined, rep.JoinTime, rep.StateSize = j.TookOver, j.TakeTime, j.StateBytes
	r.DisconnectFrame = rep.From
	r.Rejoin = *rep
	return back
}

// corruptingTransport is a machine's transport with
// Config.CorruptJoinState: its session corrupts the states it serves.
type corruptingTransport struct{ rollback.Transport }

func (corruptingTransport) CorruptJoinState() testhook.CorruptJoinState {
	return testhook.CorruptJoinState{}
}
