package match

import (
	"fmt"
	"time"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/internal/liar"
	"github.com/rewindgg/rewind/rollback"
)

// This file is the match with an adversary (Config.Adversary): one machine
// runs a modified protocol. Its session lies as its liar.Script says (the
// rollback package does that when its Config's test hooks carry the
// Script: rollback.WithTestHooks, in a build with the tag
// rewind_adversary); the match gives that machine's session the Script,
// watches what the honest machines suspect, and verifies the honest
// machines only, against the offline re-simulation of the inputs they
// used.

// adversaryGrace is how long, in virtual or real time, a match waits for
// the adversary once every honest machine has finished: its own session
// may never finish (the honest machines may have disconnected it), and its
// state is not judged.
const adversaryGrace = 5 * time.Second

// AdversaryReport is what an adversary did to a match and what the honest
// machines made of it (Result.Adversary; zero without one).
type AdversaryReport struct {
	Kind    liar.Kind
	Machine int // the machine that lied
	Lies    int64
	// Detected: some honest machine raised rollback.EventSuspect naming
	// the adversary; DetectedAt is the earliest Event.Frame of those.
	Detected   bool
	DetectedAt rollback.Frame
	// SuspectsByKind counts the honest machines' suspicions of the
	// adversary (PeerStats.Suspected), by rollback.Suspicion.
	SuspectsByKind [numSuspicions]int64
	// SuspectedHonest counts the suspicions an honest machine raised about
	// another honest machine: it must be 0.
	SuspectedHonest int64
	// HonestVerified: the match completed, every honest machine still
	// playing used the same inputs (the honest players' the ones their bots
	// gave), and its final state equals the offline re-simulation of them
	// (the adversary's players may be cut by a disconnect, or play what
	// the adversary made the honest machines use). The adversary's own
	// state is not judged.
	HonestVerified bool
	// HonestDisconnected: an honest machine disconnected another honest
	// machine (a machine Config.DropAt stops does not count).
	HonestDisconnected bool
	// Disconnected: every honest machine still playing disconnected the
	// adversary.
	Disconnected bool
	// HonestSpeedMin is the slowest honest machine's frames simulated per
	// frame scheduled (60 Hz ticks from its first frame to the tick it
	// reached the last one), at most 1.
	HonestSpeedMin float64
	// HonestInputLagMax is the largest input lag an honest machine
	// simulated a frame at (lagHistogram-1: that or more).
	HonestInputLagMax int
	// Lookahead is the adversary's mean lookahead in frames
	// (liar.Script.Looked / Decided; 0 when it decided nothing).
	Lookahead float64
	// Err is the adversary's own session error, if it failed: it then
	// went silent, and the honest machines played on.
	Err error
}

// testHooks is what the match asks of a machine's session that no game
// can (rollback.TestHooks): the adversary's Script (nil: it plays
// honestly), no statements (Config.NoStatements), corrupted states
// (Config.CorruptJoinState). withTestHooks puts them in its Config, in a
// build with the tag rewind_adversary; checkAdversary refuses them in any
// other.
type testHooks struct {
	script   *liar.Script
	unsigned bool
	corrupt  bool
}

// hooksOf returns the test hooks of machine i's session.
func (rn *run) hooksOf(i int) testHooks {
	c := rn.c
	corrupt := c.CorruptJoinState && i != c.DropMachine && (c.CorruptJoinStateBy == 0 || i == c.CorruptJoinStateBy-1)
	h := testHooks{unsigned: c.NoStatements, corrupt: corrupt}
	if rn.script != nil && i == c.AdversaryMachine {
		h.script = rn.script
	}
	return h
}

// usedInputs is the game of a machine in a match with an adversary: it
// keeps the inputs each frame was last simulated with. At the end of a
// completed match those are the inputs the machine's state is made of.
type usedInputs struct {
	*arena.Game // StepPartial and the rest
	step        rollback.Game
	players     int
	used        []rollback.PlayerInput // used[f*players+p]
}

func (u usedInputs) Step(f rollback.Frame, in []rollback.PlayerInput) {
	u.step.Step(f, in)
	if i := int(f) * u.players; f >= 0 && i+u.players <= len(u.used) {
		copy(u.used[i:i+u.players], in)
	}
}

// adversary is the match's adversary machine, or -1.
func (rn *run) adversary() int {
	if rn.script == nil {
		return -1
	}
	return rn.c.AdversaryMachine
}

// honest reports whether machine i plays honestly (always, without an
// adversary).
func (rn *run) honest(i int) bool { return i != rn.adversary() }

// machineOf is the machine that machine i's peer index j names: the
// peers are the other machines in order.
func machineOf(i, j int) int {
	if j >= i {
		return j + 1
	}
	return j
}

// checkAdversary validates c's adversary settings.
func checkAdversary(c Config, machines int) error {
	switch {
	case !AdversaryBuilt && (c.Adversary != liar.None || c.NoStatements || c.CorruptJoinState):
		return fmt.Errorf("%w: an adversary, NoStatements and CorruptJoinState need a build with the tag rewind_adversary (go run -tags rewind_adversary ./cmd/soak …; make test passes it)", ErrConfig)
	case c.Adversary == liar.None:
		return nil
	case c.Adversary >= liar.NumKinds:
		return fmt.Errorf("%w: adversary %v", ErrConfig, c.Adversary)
	case machines < 2:
		return fmt.Errorf("%w: an adversary needs two machines", ErrConfig)
	case c.AdversaryMachine < 0 || c.AdversaryMachine >= machines:
		return fmt.Errorf("%w: adversary machine %d of %d", ErrConfig, c.AdversaryMachine, machines)
	}
	return nil
}

// noteEvents keeps what machine m learnt from one call's events: the
// first frame at which it suspected each peer.
func (m *machine) noteEvents(events []rollback.Event) {
	for _, e := range events {
		if e.Kind == rollback.EventSuspect && e.Peer >= 0 && e.Peer < len(m.suspectAt) && m.suspectAt[e.Peer] < 0 {
			m.suspectAt[e.Peer] = e.Frame
		}
	}
}

// noteReached records when machine m first reached frame end.
func (m *machine) noteReached(end rollback.Frame) {
	if m.reachTick == 0 && m.s.Frame() >= end {
		m.reachTick, m.reachFrame = m.ticks, m.s.Frame()
	}
}

// over reports whether a match with an adversary is over at time now:
// every honest machine has done its part, and the adversary too, or
// adversaryGrace has passed since the honest machines were done. Safe to
// call concurrently.
func (rn *run) over(now time.Duration, finished func(i int) bool) bool {
	for i := range rn.ms {
		if rn.honest(i) && !finished(i) {
			return false
		}
	}
	if finished(rn.adversary()) {
		return true
	}
	since := rn.honestDone.Load()
	if since == 0 {
		rn.honestDone.CompareAndSwap(0, int64(now)+1)
		return false
	}
	return now-time.Duration(since-1) >= adversaryGrace
}

// adversaryFailed reports whether err is the adversary's own session
// error: the adversary then goes silent (its state is not judged), and
// the match goes on without it.
func (rn *run) adversaryFailed(i int, err error) bool {
	if i != rn.adversary() {
		return false
	}
	if rn.advErr == nil {
		rn.advErr = err
	}
	rn.ms[i].dead.Store(true)
	return true
}

// adversaryReport fills r.Adversary from the machines' statistics, for
// finish (HonestVerified is finish's).
func (rn *run) adversaryReport(r *Result) {
	c, ms, adv := rn.c, rn.ms, rn.adversary()
	a := &r.Adversary
	a.Kind, a.Machine, a.Lies = c.Adversary, adv, rn.script.Lies
	if rn.script.Decided > 0 {
		a.Lookahead = float64(rn.script.Looked) / float64(rn.script.Decided)
	}
	a.Err = rn.advErr
	a.HonestSpeedMin = 1
	speeds := 0
	a.Disconnected = true
	for i := range ms {
		m := &ms[i]
		if !rn.honest(i) || (rn.dropping && i == c.DropMachine) {
			continue
		}
		for j := range machinesOf(c) - 1 {
			ps, ok := m.s.PeerStats(j)
			if !ok {
				continue
			}
			peer := machineOf(i, j)
			if peer == adv {
				for k, n := range ps.Suspected {
					a.SuspectsByKind[k] += n
				}
				if f := m.suspectAt[j]; f >= 0 && (!a.Detected || f < a.DetectedAt) {
					a.Detected, a.DetectedAt = true, f
				}
				a.Disconnected = a.Disconnected && ps.Disconnected
				continue
			}
			for _, n := range ps.Suspected {
				a.SuspectedHonest += n
			}
			if ps.Disconnected && !(rn.dropping && peer == c.DropMachine) {
				a.HonestDisconnected = true
			}
		}
		st := m.s.Stats()
		for k := len(st.LagFrames) - 1; k >= 0; k-- {
			if st.LagFrames[k] > 0 {
				a.HonestInputLagMax = max(a.HonestInputLagMax, k)
				break
			}
		}
		if m.reachTick > 0 && m.startTick > 0 {
			scheduled := float64(m.reachTick - m.startTick + 1)
			if c.Lockstep && c.TickRate > 0 {
				scheduled = scheduled * float64(c.TickRate) / 60
			}
			a.HonestSpeedMin = min(a.HonestSpeedMin, float64(m.reachFrame)/scheduled)
			speeds++
		}
	}
	if speeds == 0 {
		a.HonestSpeedMin = 0
	}
}

// honestTruth returns the inputs the honest machines used, in Offline's
// form, or why they are not one truth: two honest machines used different
// inputs, or one used another input for an honest player than its bot
// gave. backAt, when not nil, is the frame each player's absence ended
// (rejoin.go): its inputs are its own again from there. A machine that
// came back used no input before it did: only the frames both machines
// used are compared, and the truth is one that played throughout, if
// any. It is called for a completed match.
func (rn *run) honestTruth(backAt []rollback.Frame) (truth []rollback.Input, discFrom []rollback.Frame, why string) {
	c, ms := rn.c, rn.ms
	frames := int(rn.target.Load())
	n := frames * c.Players
	first := -1
	for i := range ms {
		if rn.honest(i) && !ms[i].dead.Load() && (first < 0 || (ms[first].rejoined && !ms[i].rejoined)) {
			first = i
		}
	}
	for i := range ms {
		if !rn.honest(i) || ms[i].dead.Load() || i == first {
			continue
		}
		a, b := ms[first].used[:n], ms[i].used[:n]
		from := 0
		for _, x := range []int{first, i} {
			if ms[x].rejoined && rn.back[x] > 0 {
				// What it used before it came back, it used before it
				// crashed: its last frames never saw their real inputs.
				from = max(from, int(rn.back[x])*c.Players)
			}
		}
		for k := from; k < n; k++ {
			if a[k].Status == 0 || b[k].Status == 0 {
				continue // one of them was not playing then
			}
			if a[k].Input != b[k].Input || (a[k].Status == rollback.Disconnected) != (b[k].Status == rollback.Disconnected) {
				return nil, nil, fmt.Sprintf("machines %d and %d used different inputs for player %d of frame %d: %v and %v",
					first, i, k%c.Players, k/c.Players, a[k], b[k])
			}
		}
	}
	if first < 0 {
		return nil, nil, "no honest machine finished"
	}
	used := ms[first].used
	truth = make([]rollback.Input, len(rn.truth))
	discFrom = make([]rollback.Frame, c.Players)
	for p := range discFrom {
		discFrom[p] = rollback.Frame(frames)
	}
	honestPlayer := make([]bool, c.Players)
	for i := range ms {
		for _, p := range ms[i].players {
			honestPlayer[p] = rn.honest(i)
		}
	}
	for f := range frames {
		for p := range c.Players {
			in := used[f*c.Players+p]
			if in.Status == rollback.Disconnected {
				discFrom[p] = min(discFrom[p], rollback.Frame(f))
				continue
			}
			if rollback.Frame(f) >= discFrom[p] && (backAt == nil || rollback.Frame(f) < backAt[p]) {
				return nil, nil, fmt.Sprintf("machine %d used player %d's input at frame %d after it left at frame %d", first, p, f, discFrom[p])
			}
			truth[f*c.Players+p] = in.Input
			if honestPlayer[p] && in.Input != rn.truth[f*c.Players+p] {
				return nil, nil, fmt.Sprintf("machine %d used %v for honest player %d at frame %d; its bot gave %v",
					first, in.Input, p, f, rn.truth[f*c.Players+p])
			}
		}
	}
	return truth, discFrom, ""
}
