package rollback

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/predict"
)

// TestInputRingConfirmed: the first frame some connected player's input is
// missing for; disconnected players do not hold it back.
func TestInputRingConfirmed(t *testing.T) {
	cases := []struct {
		name   string
		local  int     // inputs added for local player 0 (input lag 2: its first is frame 2)
		remote [2]int  // inputs received for players 1 and 2, from frame 0
		disc   [2]bool // players 1 and 2 disconnected (from frame 1)
		want   Frame
	}{
		{name: "fresh: the remote players have nothing", want: 0},
		{name: "the local lag counts", remote: [2]int{9, 9}, want: 2},
		{name: "the slowest remote", local: 8, remote: [2]int{5, 3}, want: 3},
		{name: "the local player is slowest", local: 1, remote: [2]int{5, 4}, want: 3},
		{name: "a disconnected player does not count", local: 8, remote: [2]int{5, 0}, disc: [2]bool{false, true}, want: 5},
		{name: "only the local player left", local: 4, remote: [2]int{1, 0}, disc: [2]bool{true, true}, want: 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newInputRing(3, []PlayerID{0}, 0xff, nil, 2)
			for range tc.local {
				r.addLocal(0, 1)
			}
			for i, n := range tc.remote {
				for f := range n {
					r.receive(PlayerID(i+1), Frame(f), 1, 0)
				}
				if tc.disc[i] {
					r.disconnect(PlayerID(i+1), 1)
				}
			}
			assert.Equal(t, tc.want, r.confirmed())
		})
	}

	r := newInputRing(2, []PlayerID{0}, 0xff, nil, 0)
	r.disconnect(0, 0)
	r.disconnect(1, 0)
	assert.Equal(t, noFrame, r.confirmed(), "nobody connected: every frame is final")
	assert.True(t, r.disconnected(1))
	assert.False(t, newInputRing(2, nil, 0xff, nil, 0).disconnected(1))
}

// TestInputRingReceive: a received input is stored, becomes the player's last
// input and next frame, and is a misprediction only for a frame already
// simulated with a different input.
func TestInputRingReceive(t *testing.T) {
	cases := []struct {
		name      string
		f         Frame
		used      Input // the input frame f was simulated with (when f < simulated)
		in        Input
		simulated Frame
		want      bool
	}{
		{name: "not simulated yet", f: 5, used: 0x3, in: 0x7, simulated: 5, want: false},
		{name: "simulated with the same input", f: 4, used: 0x7, in: 0x7, simulated: 5, want: false},
		{name: "simulated with another input", f: 4, used: 0x3, in: 0x7, simulated: 5, want: true},
		{name: "long ago, another input", f: 0, used: 0x0, in: 0x1, simulated: 20, want: true},
		{name: "the prediction was zero and so is the input", f: 0, used: 0x0, in: 0x0, simulated: 20, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newInputRing(2, []PlayerID{0}, 0xff, nil, 0)
			used := []PlayerInput{{Input: 0x55}, {Input: tc.used}}
			r.use(tc.f, used)
			assert.Equal(t, tc.want, r.receive(1, tc.f, tc.in, tc.simulated))
			assert.Equal(t, tc.in, r.at(tc.f, 1))
			assert.Equal(t, tc.f+1, r.next[1])
			assert.Equal(t, tc.in, r.last[1])
			assert.Equal(t, tc.used, r.usedAt(tc.f, 1), "receiving never changes what was used")
			assert.Equal(t, Input(0x55), r.usedAt(tc.f, 0))
		})
	}
}

// TestInputRingAddLocal: local inputs start at the input lag and go one
// frame after the other.
func TestInputRingAddLocal(t *testing.T) {
	r := newInputRing(3, []PlayerID{2, 0}, 0xff, nil, 3)
	assert.Equal(t, [MaxPlayers]Frame{3, 0, 3}, r.next, "the local players' first delay frames are the zero input")
	r.addLocal(2, 0x21)
	r.addLocal(2, 0x22)
	r.addLocal(0, 0x01)
	assert.Equal(t, [MaxPlayers]Frame{4, 0, 5}, r.next)
	assert.Equal(t, Input(0x21), r.at(3, 2))
	assert.Equal(t, Input(0x22), r.at(4, 2))
	assert.Equal(t, Input(0x01), r.at(3, 0))
	assert.Equal(t, Input(0), r.at(2, 2))
	assert.Equal(t, Input(0), r.last[2], "last is the remote players'")
}

// TestInputRingInputsFor: Confirmed where the input is here, Predicted (by
// the predictor, masked to the layout) for a remote player whose input has
// not arrived, Disconnected with the zero input from discFrom on.
func TestInputRingInputsFor(t *testing.T) {
	var got []predict.Context
	pred := predict.Func(func(c predict.Context) uint64 {
		got = append(got, c)
		// The distance from the last input, plus bits outside the layout
		// that the ring must mask off.
		return c.Last + uint64(c.Frame-c.LastFrame) + 0x100*uint64(c.Player+1)
	})
	// Player 0 is local (lag 0), 1 and 2 remote; 3 is remote and has sent
	// nothing.
	r := newInputRing(4, []PlayerID{0}, 0xff, pred, 0)
	for f := range Frame(5) {
		r.addLocal(0, 0x01+Input(f))
	}
	for f := range Frame(3) {
		r.receive(1, f, 0x11+Input(f), 0)
	}
	for f := range Frame(4) {
		r.receive(2, f, 0x21+Input(f), 0)
	}
	r.disconnect(2, 2)

	C := func(in Input) PlayerInput { return PlayerInput{Input: in, Status: Confirmed} }
	P := func(in Input) PlayerInput { return PlayerInput{Input: in, Status: Predicted} }
	D := PlayerInput{Status: Disconnected}
	cases := []struct {
		f    Frame
		want []PlayerInput
		ctx  []predict.Context
	}{
		{f: 1, want: []PlayerInput{C(0x02), C(0x12), C(0x22), P(0x02)},
			ctx: []predict.Context{{Player: 3, Frame: 1, Last: 0, LastFrame: -1}}},
		{f: 2, want: []PlayerInput{C(0x03), C(0x13), D, P(0x03)}, // player 2's 0x23 is here, unread
			ctx: []predict.Context{{Player: 3, Frame: 2, Last: 0, LastFrame: -1}}},
		{f: 3, want: []PlayerInput{C(0x04), P(0x14), D, P(0x04)},
			ctx: []predict.Context{{Player: 1, Frame: 3, Last: 0x13, LastFrame: 2}, {Player: 3, Frame: 3, Last: 0, LastFrame: -1}}},
		{f: 4, want: []PlayerInput{C(0x05), P(0x15), D, P(0x05)},
			ctx: []predict.Context{{Player: 1, Frame: 4, Last: 0x13, LastFrame: 2}, {Player: 3, Frame: 4, Last: 0, LastFrame: -1}}},
	}
	for _, tc := range cases {
		got = got[:0]
		dst := make([]PlayerInput, 4)
		r.inputsFor(tc.f, dst)
		assert.Equal(t, tc.want, dst, "frame %d", tc.f)
		assert.Equal(t, tc.ctx, got, "frame %d: what the predictor was asked", tc.f)
	}

	// Without a predictor the ring repeats the last input.
	rl := newInputRing(2, []PlayerID{0}, 0x0f, nil, 0)
	rl.receive(1, 0, 0x0a, 0)
	dst := make([]PlayerInput, 2)
	rl.inputsFor(7, dst)
	assert.Equal(t, P(0x0a), dst[1])
}

// TestInputRingUse: the inputs a frame was simulated with are kept per frame
// and per player, and only for the players there are.
func TestInputRingUse(t *testing.T) {
	r := newInputRing(2, []PlayerID{0}, 0xff, nil, 0)
	r.use(7, []PlayerInput{{Input: 0x70, Status: Confirmed}, {Input: 0x71, Status: Predicted}})
	r.use(8, []PlayerInput{{Input: 0x80}, {Input: 0x81}, {Input: 0xee}}) // a third entry: not a player
	assert.Equal(t, Input(0x70), r.usedAt(7, 0))
	assert.Equal(t, Input(0x71), r.usedAt(7, 1))
	assert.Equal(t, Input(0x81), r.usedAt(8, 1))
	assert.Equal(t, Input(0), r.usedAt(8, 2))
	r.use(7, []PlayerInput{{Input: 0x72}, {Input: 0x73}}) // a re-simulation
	assert.Equal(t, Input(0x73), r.usedAt(7, 1))
}

// TestInputRingWrap: frames ringSize apart share a slot, for the inputs and
// for the inputs used.
func TestInputRingWrap(t *testing.T) {
	require.Equal(t, 512, ringSize)
	cases := []struct{ a, b Frame }{{5, 517}, {0, 512}, {511, 1023}, {100, 100 + 3*512}}
	for _, tc := range cases {
		r := newInputRing(2, []PlayerID{0}, 0xff, nil, 0)
		r.receive(1, tc.a, 0x0a, 0)
		r.use(tc.a, []PlayerInput{{}, {Input: 0x0a}})
		assert.Equal(t, ring(tc.a), ring(tc.b))
		assert.Equal(t, Input(0x0a), r.at(tc.b, 1), "frame %d reads frame %d's slot", tc.b, tc.a)
		assert.Equal(t, Input(0x0a), r.usedAt(tc.b, 1))
		r.receive(1, tc.b, 0x0b, 0)
		assert.Equal(t, Input(0x0b), r.at(tc.a, 1), "frame %d overwrote frame %d", tc.b, tc.a)
		// Frame b was never simulated, but its slot says frame a was
		// simulated with 0x0a: a receive with a simulated frame past b
		// compares against it.
		assert.True(t, r.receive(1, tc.b, 0x0c, tc.b+1))
		assert.False(t, r.receive(1, tc.b, 0x0a, tc.b+1))
	}
	assert.Equal(t, 0, ring(-512), "negative frames wrap through uint32")
	assert.Equal(t, 511, ring(-1))
}
