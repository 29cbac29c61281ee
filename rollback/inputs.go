package rollback

import "github.com/rewindgg/rewind/predict"

// ringSize is how many frames of inputs the session keeps. It is a power of
// two larger than any window a healthy match needs (2×MaxRollbackLimit +
// 2×MaxInputLag plus slack); a peer that would push past it is stalled on
// or ignored, never allowed to overwrite what is still needed.
const ringSize = 256

// noFrame marks a player who has not disconnected.
const noFrame = Frame(1<<31 - 1)

func ring(f Frame) int { return int(uint32(f) % ringSize) }

// inputRing owns every input the session holds: the real inputs of the last
// ringSize frames as they become known, the inputs each frame was last
// simulated with, each player's next missing frame and last input, and the
// frames from which disconnected players play the default input. It answers
// the one question every caller asks — the inputs of frame f — in
// inputsFor. It does not know which frames are still needed: the session
// bounds what it may overwrite (Session.ringLow).
type inputRing struct {
	players int
	mask    Input
	local   [MaxPlayers]bool
	pred    predict.Predictor

	in       [ringSize][MaxPlayers]Input
	used     [ringSize][MaxPlayers]Input
	next     [MaxPlayers]Frame // each player's first frame whose input is not here
	last     [MaxPlayers]Input // each player's last input received (remote players)
	discFrom [MaxPlayers]Frame // a disconnected player's inputs from this frame on are the default
}

// newInputRing returns a ring for players players of whom local are this
// machine's; the local players' first delay frames run on the zero input.
func newInputRing(players int, local []PlayerID, mask Input, pred predict.Predictor, delay int) *inputRing {
	r := &inputRing{players: players, mask: mask, pred: pred}
	if r.pred == nil {
		r.pred = predict.RepeatLast{}
	}
	for p := range r.discFrom {
		r.discFrom[p] = noFrame
	}
	for _, p := range local {
		r.local[p] = true
		r.next[p] = Frame(delay)
	}
	return r
}

// confirmed returns the first frame some connected player's input is
// missing for: every input before it is final.
func (r *inputRing) confirmed() Frame {
	c := noFrame
	for p := range r.players {
		if r.discFrom[p] == noFrame {
			c = min(c, r.next[p])
		}
	}
	return c
}

// addLocal appends local player p's next input.
func (r *inputRing) addLocal(p PlayerID, in Input) {
	r.in[ring(r.next[p])][p] = in
	r.next[p]++
}

// receive stores remote player p's input for frame f, the frame after its
// last one, and reports whether frame f was simulated (f < simulated) with
// a different input: a misprediction.
func (r *inputRing) receive(p PlayerID, f Frame, in Input, simulated Frame) bool {
	slot := ring(f)
	r.in[slot][p] = in
	r.last[p] = in
	r.next[p] = f + 1
	return f < simulated && r.used[slot][p] != in
}

// correct replaces player p's input for frame f, which is here, by in, and
// reports whether it differed.
func (r *inputRing) correct(p PlayerID, f Frame, in Input) bool {
	slot := ring(f)
	if r.in[slot][p] == in {
		return false
	}
	r.in[slot][p] = in
	if f == r.next[p]-1 {
		r.last[p] = in
	}
	return true
}

// at returns player p's input stored for frame f.
func (r *inputRing) at(f Frame, p PlayerID) Input { return r.in[ring(f)][p] }

// inputsFor fills dst (one entry per player) with the best inputs known for
// frame f: the default for a disconnected player, a prediction for a
// remote player whose input has not arrived, the input otherwise. For a
// frame before confirmed() every input is final.
func (r *inputRing) inputsFor(f Frame, dst []PlayerInput) {
	slot := ring(f)
	for p := range r.players {
		in, st := r.in[slot][p], Confirmed
		switch {
		case f >= r.discFrom[p]:
			in, st = 0, Disconnected
		case !r.local[p] && f >= r.next[p]:
			st = Predicted
			ctx := predict.Context{Player: p, Frame: int32(f), Last: uint64(r.last[p]), LastFrame: int32(r.next[p] - 1)}
			in = Input(r.pred.Predict(ctx)) & r.mask
		}
		dst[p] = PlayerInput{Input: in, Status: st}
	}
}

// use records the inputs frame f is being simulated with.
func (r *inputRing) use(f Frame, in []PlayerInput) {
	slot := ring(f)
	for p := range r.players {
		r.used[slot][p] = in[p].Input
	}
}

// usedAt returns player p's input the last simulation of frame f used.
func (r *inputRing) usedAt(f Frame, p PlayerID) Input { return r.used[ring(f)][p] }

// disconnect makes player p play the default input from frame f on.
func (r *inputRing) disconnect(p PlayerID, f Frame) { r.discFrom[p] = f }

// disconnected reports whether player p has an agreed disconnect frame.
func (r *inputRing) disconnected(p PlayerID) bool { return r.discFrom[p] != noFrame }
