package rollbacktest

import (
	"fmt"
	"strings"

	"github.com/rewindgg/rewind/rollback"
)

// This file is the reports: stable text, the same on every run, made of
// the counts a behaviour shows in (never a rate, a round-trip time or a
// byte count, which move with every change of the packets' layout).

// Stats returns machine i's statistics: a line for the session, then a
// line per peer.
func (e *Env) Stats(i int) (string, error) {
	m, err := e.machine(i)
	if err != nil {
		return "", err
	}
	if m.s == nil {
		return fmt.Sprintf("m%d: %s\n", i, m.state), nil
	}
	st := m.s.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "m%d: %s frame=%d confirmed=%d", i, m.state, st.Frame, st.ConfirmedFrame)
	if m.rec != nil {
		fmt.Fprintf(&b, " final=%d", len(m.rec.digests))
	}
	fmt.Fprintf(&b, " rollbacks=%d resimulated=%d deepest=%d stalls=%d\n", st.Rollbacks, st.ResimulatedFrames, st.MaxRollbackFrames, st.StallFrames)
	fmt.Fprintf(&b, "  received: invalid=%d forged=%d duplicate=%d over-budget=%d\n", st.PacketsInvalid, st.PacketsForged, st.PacketsDuplicate, st.PacketsOverBudget)
	if st.Spectators > 0 || m.cfg.MaxSpectators > 0 {
		fmt.Fprintf(&b, "  spectators=%d cut=%d sent=%d\n", st.Spectators, st.SpectatorsCut, st.SpectatorPackets)
	}
	if j := st.Join; m.cfg.InProgress {
		fmt.Fprintf(&b, "  join: source=%d took-over=%v at=%d proposals=%d confirmed=%d\n", j.Source, j.TookOver, j.TakeOver, j.Proposals, j.Confirmed)
	}
	for k := range m.cfg.Peers {
		ps, ok := m.s.PeerStats(k)
		if !ok {
			continue
		}
		node := k
		if node >= i {
			node++
		}
		fmt.Fprintf(&b, "  peer %d (m%d): %s dropped=%d forged=%d", k, node, peerState(ps), ps.PacketsDropped, ps.PacketsForged)
		for s, n := range ps.Suspected {
			if n > 0 {
				fmt.Fprintf(&b, " suspect-%s=%d", rollback.Suspicion(s), n)
			}
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// peerState is a peer's state, as one word and the disconnect frame.
func peerState(ps rollback.PeerStats) string {
	switch {
	case ps.Reserved:
		return "reserved"
	case ps.Disconnected && ps.DisconnectAgreed:
		return fmt.Sprintf("disconnected at=%d", ps.DisconnectFrame)
	case ps.Disconnected:
		return "disconnected (not agreed)"
	case !ps.Verified:
		return "handshaking"
	case ps.Interrupted:
		return "interrupted"
	}
	return "connected"
}

// SpectatorStats returns spectator k's statistics on a line.
func (e *Env) SpectatorStats(k int) (string, error) {
	if k < 0 || k >= len(e.spectators) {
		return "", fmt.Errorf("rollbacktest: no spectator %d", k)
	}
	st := e.spectators[k].s.Stats()
	return fmt.Sprintf("s%d: frame=%d received=%d state-frame=%d caught-up=%v source-left=%v invalid=%d\n",
		k, st.Frame, st.Received, st.StateFrame, st.CaughtUp, st.SourceLeft, st.PacketsInvalid), nil
}

// Events returns machine i's events (and the error that stopped it) since
// the last call, a line each, prefixed with the tick: "t=12 connected
// frame=0 peer=0".
func (e *Env) Events(i int) (string, error) {
	m, err := e.machine(i)
	if err != nil {
		return "", err
	}
	out := lines(m.events)
	m.events = m.events[:0]
	return out, nil
}

// SpectatorEvents is Events for spectator k.
func (e *Env) SpectatorEvents(k int) (string, error) {
	if k < 0 || k >= len(e.spectators) {
		return "", fmt.Errorf("rollbacktest: no spectator %d", k)
	}
	sp := e.spectators[k]
	out := lines(sp.events)
	sp.events = sp.events[:0]
	return out, nil
}

func lines(ls []string) string {
	if len(ls) == 0 {
		return "none\n"
	}
	return strings.Join(ls, "\n") + "\n"
}

// Agreement compares the running machines that record final frames
// (every one that has not restarted) on the final frames they all have: it reports
// how many, and whether their final inputs are the same. It then
// compares the game states of every running machine and spectator that
// has simulated exactly frame frames; when frames is negative, of every
// running machine and spectator, if they are all at the same frame.
func (e *Env) Agreement(frames int) string {
	var b strings.Builder
	common := -1
	var who []int
	for _, m := range e.machines {
		if m.rec != nil && m.state == stateRunning {
			who = append(who, m.id)
			if n := len(m.rec.digests); common < 0 || n < common {
				common = n
			}
		}
	}
	switch {
	case len(who) == 0:
		b.WriteString("final: no machine records\n")
	case common == 0:
		fmt.Fprintf(&b, "final: machines %v have no final frame in common\n", who)
	default:
		same := true
		for _, i := range who[1:] {
			same = same && e.machines[i].rec.digests[common-1] == e.machines[who[0]].rec.digests[common-1]
		}
		verdict := "agree"
		if !same {
			verdict = "DISAGREE"
		}
		fmt.Fprintf(&b, "final: machines %v %s on frames 0 to %d\n", who, verdict, common-1)
	}
	if frames < 0 {
		var at []string
		same := true
		for _, m := range e.machines {
			if m.state == stateRunning {
				at = append(at, fmt.Sprintf("m%d=%d", m.id, m.s.Frame()))
				same = same && (frames < 0 || m.s.Frame() == rollback.Frame(frames))
				frames = int(m.s.Frame())
			}
		}
		for k, sp := range e.spectators {
			if sp.err == nil {
				at = append(at, fmt.Sprintf("s%d=%d", k, sp.s.Frame()))
				same = same && sp.s.Frame() == rollback.Frame(frames)
			}
		}
		if !same || frames < 0 {
			fmt.Fprintf(&b, "state: not all at one frame (%s)\n", strings.Join(at, " "))
			return b.String()
		}
	}
	var names []string
	var states [][128]uint64
	for _, m := range e.machines {
		if m.state == stateRunning && m.s.Frame() == rollback.Frame(frames) {
			names, states = append(names, fmt.Sprintf("m%d", m.id)), append(states, m.game.Totals())
		}
	}
	for k, sp := range e.spectators {
		if sp.err == nil && sp.s.Frame() == rollback.Frame(frames) {
			names, states = append(names, fmt.Sprintf("s%d", k)), append(states, sp.game.Totals())
		}
	}
	same := true
	for _, st := range states {
		same = same && st == states[0]
	}
	verdict := "the same state"
	if !same {
		verdict = "DIFFERENT states"
	}
	if len(names) == 0 {
		fmt.Fprintf(&b, "state at %d: nobody is there\n", frames)
	} else {
		fmt.Fprintf(&b, "state at %d: %s have %s\n", frames, strings.Join(names, " "), verdict)
	}
	return b.String()
}
