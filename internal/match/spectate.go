package match

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// SpectatorsPerMachine is how many spectators a player machine serves
// directly in a match with Config.Spectators (its Config.MaxSpectators),
// and how many each spectator relays to: the rest join through spectators.
const SpectatorsPerMachine = 2

// SpectatorReport is what the spectators of a match did.
type SpectatorReport struct {
	Joined   int // spectators that started
	Verified int // whose state at the last frame they reached equals the offline re-simulation's
	Left     int // that left early (Close)
	Crashed  int // that stopped early without a word
	Relayed  int // that joined through another spectator
	// With Config.Witnesses: the sources and the witnesses a vote went
	// against, the witnesses lost for any reason, and the frames whose
	// final inputs a witness confirmed.
	Refuted, Outvoted, WitnessesLost int
	Corroborated                     int64
	// Named counts the spectators' EventSuspect by the machine named
	// (a relaying spectator by its netsim node).
	Named map[int]int
	// JoinMS sums and MaxJoinMS bounds the time from a spectator's start
	// to its first frame simulated, in milliseconds, over Timed of them;
	// CatchUpFrames and CatchUpTicks sum the frames simulated and the
	// ticks taken from the state loaded to caught up; StateBytes sums the
	// compressed states received, over Timed.
	JoinMS, MaxJoinMS           float64
	CatchUpFrames, CatchUpTicks int64
	StateBytes                  int64
	Timed                       int
	// Failures names the first spectators that did not verify, and why.
	Failures []string
}

// Add folds o into r.
func (r *SpectatorReport) Add(o SpectatorReport) {
	r.Joined += o.Joined
	r.Verified += o.Verified
	r.Left += o.Left
	r.Crashed += o.Crashed
	r.Relayed += o.Relayed
	r.Refuted += o.Refuted
	r.Outvoted += o.Outvoted
	r.WitnessesLost += o.WitnessesLost
	r.Corroborated += o.Corroborated
	for i, n := range o.Named {
		if r.Named == nil {
			r.Named = map[int]int{}
		}
		r.Named[i] += n
	}
	r.JoinMS += o.JoinMS
	r.MaxJoinMS = max(r.MaxJoinMS, o.MaxJoinMS)
	r.CatchUpFrames += o.CatchUpFrames
	r.CatchUpTicks += o.CatchUpTicks
	r.StateBytes += o.StateBytes
	r.Timed += o.Timed
	r.Failures = append(r.Failures, o.Failures...)
}

// watcher is one spectator of a match: its plan and, once started, its
// game and Spectator.
type watcher struct {
	join, leave int  // ticks: when it starts, and (leave > 0) when it stops early
	crash       bool // stops silently instead of Closing
	parent      int  // the machine it joins through (< machines) or machines + the spectator's index
	node        int  // its netsim node, once started (netsim runs)

	a     *savestate.Arena
	g     *arena.Game
	s     *rollback.Spectator
	done  bool // left, crashed, or failed
	err   error
	named map[int]int // the peers its EventSuspect named, and how often
}

// planSpectators draws when each of c.Spectators spectators joins, which
// quarter leave early (half of those crash), and whom each joins through:
// a player machine with a free slot, else an earlier spectator that stays
// to the end with a free slot (so a spectator that leaves never strands
// another). The machine that drops (c.DropMachine) serves none: its
// spectators would lose their source, which is ErrSourceLeft, not a
// failure of the match.
func planSpectators(c Config, machines int) []watcher {
	r := rand.New(rand.NewPCG(c.Seed, 0x5bec7a70))
	ticks := ticksFor(c, c.Frames)
	ws := make([]watcher, c.Spectators)
	for k := range ws {
		w := &ws[k]
		switch k % 4 {
		case 0:
			w.join = 0 // from the start
		case 3:
			w.join = max(0, ticks-60+r.IntN(30)) // in the last second
		default:
			w.join = r.IntN(ticks)
		}
	}
	// Joins in time order, so that a parent always starts first.
	order := make([]int, len(ws))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(x, y int) int { return ws[x].join - ws[y].join })
	leavers := len(ws) / 4
	children := make([]int, machines+len(ws))
	if c.DropAt > 0 && c.DropMachine >= 0 && c.DropMachine < machines {
		children[c.DropMachine] = SpectatorsPerMachine // full from the start
	}
	for n, k := range order {
		w := &ws[k]
		w.parent = -1
		for m := range machines {
			if children[(n+m)%machines] < SpectatorsPerMachine {
				w.parent = (n + m) % machines
				break
			}
		}
		if w.parent < 0 || (n%3 == 2 && n > 0) {
			// Through an earlier spectator that stays (every third
			// spectator, and all once the players are full).
			for _, e := range order[:n] {
				if ws[e].leave == 0 && children[machines+e] < SpectatorsPerMachine {
					w.parent = machines + e
					break
				}
			}
		}
		if w.parent < 0 {
			w.parent = n % machines // nowhere free: it may be refused, and is then a failure
		}
		children[w.parent]++
	}
	// The last spectators to join with no children leave early.
	for n := len(order) - 1; n >= 0 && leavers > 0; n-- {
		k := order[n]
		if children[machines+k] > 0 || ws[k].join >= ticks-60 {
			continue
		}
		ws[k].leave = ws[k].join + 60 + r.IntN(max(1, ticks-ws[k].join-60))
		ws[k].crash = leavers%2 == 0
		leavers--
	}
	return ws
}

// startSpectator starts watcher k over tr, whose peer source is the
// machine or spectator it watches through.
func (rn *run) startSpectator(k int, tr rollback.Transport, source int, clock func() time.Duration, rnd io.Reader) error {
	w := &rn.watchers[k]
	var err error
	if w.a, err = savestate.New(rn.size); err == nil {
		w.g, err = arena.New(w.a, rn.c.Players, rn.c.Seed)
	}
	if err != nil {
		return err
	}
	w.s, err = rollback.NewSpectator(rollback.SpectatorConfig{Players: rn.c.Players, Layout: arena.Layout,
		State: w.a, Game: w.g, Transport: tr, Source: source, Witnesses: rn.witnessesOf(k), SessionID: sessionID(rn.c), Clock: clock, Rand: rnd,
		MaxSpectators: SpectatorsPerMachine, Timeouts: rollback.Timeouts{Disconnect: rn.c.DisconnectTimeout, Handshake: rn.c.HandshakeTimeout}})
	return err
}

// witnessesOf returns watcher k's witnesses (Config.Witnesses): the
// player machines after the one at the root of its chain of relays,
// leaving out the one that drops.
func (rn *run) witnessesOf(k int) []int {
	root := rn.watchers[k].parent
	for root >= len(rn.ms) {
		root = rn.watchers[root-len(rn.ms)].parent
	}
	var ws []int
	for d := 1; d < len(rn.ms) && len(ws) < rn.c.Witnesses; d++ {
		if i := (root + d) % len(rn.ms); !(rn.c.DropAt > 0 && i == rn.c.DropMachine) {
			ws = append(ws, i)
		}
	}
	return ws
}

// parentNode is the netsim node of watcher k's parent: machine i is node
// i, and a spectator the node it was given when it started.
func (rn *run) parentNode(k int) int {
	p := rn.watchers[k].parent
	if p >= len(rn.ms) {
		p = rn.watchers[p-len(rn.ms)].node
	}
	return p
}

// tickSpectator runs watcher k's tick: Advance, or its early exit.
func (rn *run) tickSpectator(k, tick int) {
	w := &rn.watchers[k]
	if w.s == nil || w.done {
		return
	}
	if st := w.s.Stats(); w.leave > 0 && tick >= w.leave && st.StateFrame >= 0 && (rn.c.Witnesses == 0 || st.JoinTime > 0) {
		// It leaves once it has watched: a spectator that leaves before
		// its state arrives (with witnesses, before they confirmed it)
		// proves nothing.
		if !w.crash {
			_ = w.s.Close()
		}
		w.done = true
		return
	}
	res, err := w.s.Advance()
	if err != nil {
		w.err, w.done = err, true
	}
	for _, e := range res.Events {
		if e.Kind == rollback.EventSuspect {
			if w.named == nil {
				w.named = map[int]int{}
			}
			w.named[e.Peer]++
		}
	}
}

// spectatorsDone reports whether every spectator that stays has simulated
// every frame of the match (or failed).
func (rn *run) spectatorsDone() bool {
	end := rollback.Frame(rn.target.Load())
	for k := range rn.watchers {
		w := &rn.watchers[k]
		if w.leave > 0 && !w.done {
			return false
		}
		if w.leave == 0 && !w.done && (w.s == nil || w.s.Frame() < end) {
			return false
		}
	}
	return true
}

// spectatorReport verifies every spectator's state at the last frame it
// reached against the offline re-simulation with the true inputs, the
// disconnections and the machines that came back (backAt), as the
// players' is.
func (rn *run) spectatorReport(c Config, r *Result, truth []rollback.Input, disc, backAt []rollback.Frame) {
	rep := &r.Spectators
	want := map[rollback.Frame]uint64{}
	for k := range rn.watchers {
		if w := &rn.watchers[k]; w.s != nil {
			want[w.s.Frame()] = 0
		}
	}
	if err := offlineHashes(c, rn.size, truth, disc, backAt, want); err != nil {
		r.Err = err
		return
	}
	for k := range rn.watchers {
		w := &rn.watchers[k]
		if w.s == nil {
			continue
		}
		rep.Joined++
		if w.parent >= len(rn.ms) {
			rep.Relayed++
		}
		if w.leave > 0 {
			if w.crash {
				rep.Crashed++
			} else {
				rep.Left++
			}
		}
		st := w.s.Stats()
		rep.Add(SpectatorReport{Refuted: st.Refuted, Outvoted: st.Outvoted, WitnessesLost: st.WitnessesLost,
			Corroborated: st.Corroborated, Named: w.named})
		fail := ""
		switch {
		case w.err != nil:
			fail = w.err.Error()
		case st.StateFrame < 0:
			fail = "never received a state"
		case w.leave == 0 && w.s.Frame() != rollback.Frame(c.Frames):
			fail = fmt.Sprintf("stopped at frame %d of %d", w.s.Frame(), c.Frames)
		case xxhash.Sum64(w.a.Bytes()) != want[w.s.Frame()]:
			fail = fmt.Sprintf("state at frame %d differs from the offline re-simulation's", w.s.Frame())
		}
		if fail != "" {
			if len(rep.Failures) < 4 {
				rep.Failures = append(rep.Failures, fmt.Sprintf("seed %d spectator %d (joined tick %d through %d): %s", rn.c.Seed, k, w.join, w.parent, fail))
			}
			continue
		}
		rep.Verified++
		if st.JoinTime > 0 {
			ms := float64(st.JoinTime) / float64(time.Millisecond)
			rep.JoinMS += ms
			rep.MaxJoinMS = max(rep.MaxJoinMS, ms)
			rep.CatchUpFrames += st.CatchUpFrames
			rep.CatchUpTicks += st.CatchUpTicks
			rep.StateBytes += int64(st.StateBytes)
			rep.Timed++
		}
	}
}

// offlineHashes sets want[f], for every frame f it holds, to the xxhash
// of the offline re-simulation's state at the start of frame f.
func offlineHashes(c Config, size int, truth []rollback.Input, discFrom, backAt []rollback.Frame, want map[rollback.Frame]uint64) error {
	_, err := offline(c, size, truth, discFrom, backAt, nil, func(f rollback.Frame, a *savestate.Arena) {
		if _, ok := want[f]; ok {
			want[f] = xxhash.Sum64(a.Bytes())
		}
	})
	return err
}
