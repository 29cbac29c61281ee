package rollback

import "github.com/rewindgg/rewind/predict"

// ringSize is how many frames of inputs the session keeps. It is a power of
// two larger than any window a healthy match needs (2×maxRollbackLimit +
// 2×maxInputLag plus slack, and with statements everything after the
// settled frame); a peer that would push past it is stalled on or
// ignored, never allowed to overwrite what is still needed. 512 since the
// statements span 64 frames: with 256, 4 machines on hell stalled 23% more
// frames, on the ring, waiting for the settled frame.
const ringSize = 512

// noFrame marks a player who has not disconnected.
const noFrame = Frame(1<<31 - 1)

// maxGaps is how many absences of one player the ring remembers: a
// player who drops, comes back and drops again (docs/protocol.md,
// "Reconnect"). The oldest is forgotten when a fifth begins; its frames
// were final long before (a player is back only after the disconnect
// timeout, the take-over, and the catch-up).
const maxGaps = 4

// gap is a player's absence: frames [from, to) play the stand-in; to is
// noFrame while it lasts.
type gap struct{ from, to Frame }

func ring(f Frame) int { return int(uint32(f) % ringSize) }

// inputRing owns every input the session holds: the real inputs of the last
// ringSize frames as they become known, the inputs each frame was last
// simulated with, each player's next missing frame and last input, and the
// frames in which absent players play the stand-in (Config.StandIn). It answers
// the one question every caller asks — the inputs of frame f — in
// inputsFor. It does not know which frames are still needed: the session
// bounds what it may overwrite (horizon.ringLow).
type inputRing struct {
	players int
	mask    Input
	local   [MaxPlayers]bool
	pred    predict.Predictor
	standIn func(Frame, PlayerID) Input // nil: the zero input
	// lowFloor is the session's ringLow when last computed (the oldest
	// frame whose inputs it may still read): ringLow never decreases, so
	// it is a lower bound of it, and most calls learn from it alone that
	// the ring has room (horizon.ringRoom).
	lowFloor Frame
	// clear is the horizon's inputsClear when last computed: until the
	// frame to simulate reaches it, no remote input is missing for a stall
	// (Session.mustStallTick). 0: compute it again.
	clear Frame
	// final bounds each player's final frames: with the relay clock, the
	// relay's receipts (relayclock.go): its input of a frame before is
	// here, and no decision of the relay will change it. noFrame without
	// it, where an input is final when it is here.
	final [MaxPlayers]Frame

	// The per-player state first, the rings after it: every call reads
	// the first, and a frame's row of each ring.
	next  [MaxPlayers]Frame // each player's first frame whose input is not here
	last  [MaxPlayers]Input // each player's last input received (remote players)
	ngaps [MaxPlayers]int
	gaps  [MaxPlayers][maxGaps]gap // each player's absences, oldest first
	// The rings, a frame's row of players at a time (cell): ringSize
	// rows of players, not of MaxPlayers (a 2-player session holds 16
	// KiB of inputs, not 64).
	in   []Input
	used []Input
}

// cell is the index of player p's input of frame f in in and used.
func (r *inputRing) cell(f Frame, p PlayerID) int { return ring(f)*r.players + int(p) }

// newInputRing returns a ring for players players of whom local are this
// machine's; the local players' first delay frames run on the zero input.
func newInputRing(players int, local []PlayerID, mask Input, pred predict.Predictor, delay int) *inputRing {
	r := &inputRing{players: players, mask: mask, pred: pred, lowFloor: -ringSize, // no bound yet: the first ring check computes ringLow
		in: make([]Input, ringSize*players), used: make([]Input, ringSize*players)}
	for p := range r.final {
		r.final[p] = noFrame
	}
	if r.pred == nil {
		r.pred = predict.RepeatLast{}
	}
	for _, p := range local {
		r.local[p] = true
		r.next[p] = Frame(delay)
	}
	return r
}

// room reports whether the inputs of every frame before end fit in the
// ring beside those from lowFloor on. A false answer is not a full ring:
// ringLow, computed again, answers then (horizon.ringRoom).
func (r *inputRing) room(end Frame) bool { return end-r.lowFloor <= ringSize }

// confirmed returns the first frame some connected player's input is
// missing for (or, with the relay clock, not yet settled by the relay):
// every input before it is final.
func (r *inputRing) confirmed() Frame {
	c := noFrame
	for p := range r.players {
		if !r.disconnected(PlayerID(p)) {
			c = min(c, r.next[p], r.final[p])
		}
	}
	return c
}

// addLocal appends local player p's next input.
func (r *inputRing) addLocal(p PlayerID, in Input) {
	r.in[r.cell(r.next[p], p)] = in
	r.next[p]++
}

// receive stores remote player p's input for frame f, the frame after its
// last one, and reports whether frame f was simulated (f < simulated) with
// a different input: a misprediction.
func (r *inputRing) receive(p PlayerID, f Frame, in Input, simulated Frame) bool {
	c := r.cell(f, p)
	r.in[c] = in
	r.last[p] = in
	r.next[p] = f + 1
	return f < simulated && r.used[c] != in
}

// correct replaces player p's input for frame f, which is here, by in, and
// reports whether it differed.
func (r *inputRing) correct(p PlayerID, f Frame, in Input) bool {
	c := r.cell(f, p)
	if r.in[c] == in {
		return false
	}
	r.in[c] = in
	if f == r.next[p]-1 {
		r.last[p] = in
	}
	return true
}

// at returns player p's input stored for frame f.
func (r *inputRing) at(f Frame, p PlayerID) Input { return r.in[r.cell(f, p)] }

// inputsFor fills dst (one entry per player) with the best inputs known for
// frame f, the state being at its start: the stand-in's for an absent
// player, a prediction for a remote player whose input has not arrived,
// the input otherwise. For a frame before confirmed() every input is
// final.
func (r *inputRing) inputsFor(f Frame, dst []PlayerInput) { r.fill(f, dst, false) }

// take is inputsFor and use at once, for a frame about to be simulated
// with dst: one pass over the players, where every step made two.
func (r *inputRing) take(f Frame, dst []PlayerInput) { r.fill(f, dst, true) }

// fill is inputsFor, and use too when use is set.
func (r *inputRing) fill(f Frame, dst []PlayerInput, use bool) {
	row := ring(f) * r.players
	in0, used := r.in[row:row+r.players], r.used[row:row+r.players]
	for p := range r.players {
		in, st := in0[p], Confirmed
		switch {
		case r.ngaps[p] > 0 && r.absent(PlayerID(p), f): // never absent: no gap to look through
			in, st = 0, Disconnected
			if r.standIn != nil {
				in = r.standIn(f, PlayerID(p)) & r.mask
			}
		case !r.local[p] && f >= r.next[p]:
			st = Predicted
			ctx := predict.Context{Player: p, Frame: int32(f), Last: uint64(r.last[p]), LastFrame: int32(r.next[p] - 1)}
			in = Input(r.pred.Predict(ctx)) & r.mask
		}
		dst[p] = PlayerInput{Input: in, Status: st}
		if use {
			used[p] = in
		}
	}
}

// finalInputs fills dst with frame f's final inputs, f simulated and
// before confirmed(): the stand-in's input is the one the last simulation
// of f used (the state is no longer at f's start).
func (r *inputRing) finalInputs(f Frame, dst []PlayerInput) {
	row := ring(f) * r.players
	for p := range r.players {
		dst[p] = PlayerInput{Input: r.in[row+p], Status: Confirmed}
		if r.absent(PlayerID(p), f) {
			dst[p] = PlayerInput{Input: r.used[row+p], Status: Disconnected}
		}
	}
}

// use records the inputs frame f is being simulated with.
func (r *inputRing) use(f Frame, in []PlayerInput) {
	row := ring(f) * r.players
	for p := range r.players {
		r.used[row+p] = in[p].Input
	}
}

// usedAt returns player p's input the last simulation of frame f used.
func (r *inputRing) usedAt(f Frame, p PlayerID) Input { return r.used[r.cell(f, p)] }

// absent reports whether player p plays the stand-in at frame f.
func (r *inputRing) absent(p PlayerID, f Frame) bool {
	for _, g := range r.gaps[p][:r.ngaps[p]] {
		if f >= g.from && f < g.to {
			return true
		}
	}
	return false
}

// disconnect makes player p play the stand-in from frame f on: a new
// absence, or an earlier start of the current one.
func (r *inputRing) disconnect(p PlayerID, f Frame) {
	if r.disconnected(p) {
		g := &r.gaps[p][r.ngaps[p]-1]
		g.from = min(g.from, f)
		return
	}
	if r.ngaps[p] == maxGaps {
		copy(r.gaps[p][:], r.gaps[p][1:])
		r.ngaps[p]--
	}
	r.gaps[p][r.ngaps[p]] = gap{from: max(f, r.back(p)), to: noFrame}
	r.ngaps[p]++
}

// disconnected reports whether player p is absent for good: it has an
// agreed disconnect frame and no take-over frame.
func (r *inputRing) disconnected(p PlayerID) bool {
	n := r.ngaps[p]
	return n > 0 && r.gaps[p][n-1].to == noFrame
}

// back returns the frame player p was last taken back at (0: never
// absent).
func (r *inputRing) back(p PlayerID) Frame {
	if n := r.ngaps[p]; n > 0 && r.gaps[p][n-1].to != noFrame {
		return r.gaps[p][n-1].to
	}
	return 0
}

// rejoin ends player p's current absence at frame t: its inputs from t on
// are its machine's again, none of which is here yet. A later take-over
// frame may replace t while none has come. It reports false when p is
// not absent, or its inputs from the last take-over have begun to come.
func (r *inputRing) rejoin(p PlayerID, t Frame) bool {
	n := r.ngaps[p]
	if n == 0 {
		return false
	}
	g := &r.gaps[p][n-1]
	if g.to != noFrame && r.next[p] != g.to {
		return false
	}
	g.to = max(t, g.from)
	r.next[p], r.last[p] = g.to, 0
	r.clear = 0                 // p counts again, from g.to
	r.in[r.cell(g.to-1, p)] = 0 // the base its first packet is delta-coded against (Session.takeOver)
	return true
}

// unjoin undoes rejoin while none of p's inputs from the take-over frame
// has come: p is absent for good again.
func (r *inputRing) unjoin(p PlayerID) {
	if n := r.ngaps[p]; n > 0 && r.gaps[p][n-1].to == r.next[p] {
		r.gaps[p][n-1].to = noFrame
	}
}
