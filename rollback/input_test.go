package rollback

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// fixedRing is a ringView whose room ends at a fixed frame.
type fixedRing struct{ low Frame }

func (r fixedRing) ringRoom(end Frame) bool { return end-r.low <= ringSize }
func (r fixedRing) ringLow() Frame          { return r.low }

// judgeFixture is a machine of two players (0 ours, 1 the peer's) that
// has frames 0 to 9 of player 1 (input f%16 at frame f) and has added
// frames 0 to 19 of its own.
func judgeFixture(t *testing.T) (*inputView, *peer, wire.Layout) {
	t.Helper()
	layout := wire.Layout{4}
	f, err := wire.NewFormat(layout)
	require.NoError(t, err)
	in := newInputRing(2, []PlayerID{0}, 15, nil, 0)
	for fr := range Frame(20) {
		in.addLocal(0, Input(fr%16))
	}
	for fr := range Frame(10) {
		in.receive(1, fr, Input(fr%16), 0)
	}
	ps := &peer{players: []PlayerID{1}}
	return &inputView{format: &f, inputs: in, ring: fixedRing{}, localNext: 20, strict: true}, ps, layout
}

// packet encodes frames [first, first+count) of player 1 (input f%16, or
// what in says), acknowledging ack.
func packet(t *testing.T, layout wire.Layout, ack, first Frame, count int, in func(f Frame) uint64) []byte {
	t.Helper()
	pkt := wire.InputPacket{Ack: int32(ack), First: int32(first), Count: count, Players: 1}
	for f := first; f < first+Frame(count); f++ {
		pkt.Inputs = append(pkt.Inputs, in(f))
	}
	if first > 0 {
		pkt.Base = []uint64{in(first - 1)}
	}
	b, err := wire.AppendInput(nil, &pkt, layout)
	require.NoError(t, err)
	return b
}

func honest(f Frame) uint64 { return uint64(f % 16) }

// TestJudgeInput: the judgement of a peer's input packet, case by case;
// it never changes what the session holds.
func TestJudgeInput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b       func(t *testing.T, l wire.Layout) []byte
		strict  bool
		want    inputVerdict
		wantOK  bool
		suspect Suspicion
	}{
		{"garbage", func(*testing.T, wire.Layout) []byte { return []byte{0xff, 0xff} }, true,
			inputVerdict{}, false, 0},
		{"new frames", func(t *testing.T, l wire.Layout) []byte { return packet(t, l, 12, 8, 6, honest) }, true,
			inputVerdict{header: true, ok: true, ack: 12, first: 8, want: 10, take: 4}, true, 0},
		{"nothing new", func(t *testing.T, l wire.Layout) []byte { return packet(t, l, 15, 5, 5, honest) }, true,
			inputVerdict{header: true, ok: true, ack: 15, first: 5, want: 10}, true, 0},
		{"an ack of frames we never added", func(t *testing.T, l wire.Layout) []byte { return packet(t, l, 21, 10, 1, honest) }, true,
			inputVerdict{header: true, ack: 21, first: 10, want: 10}, false, 0},
		{"a gap: only the ack counts", func(t *testing.T, l wire.Layout) []byte { return packet(t, l, 14, 12, 2, honest) }, true,
			inputVerdict{header: true, ok: true, ack: 14, first: 12, want: 10, gap: true}, true, 0},
		{"a frame it sent before, changed", func(t *testing.T, l wire.Layout) []byte {
			return packet(t, l, 12, 8, 4, func(f Frame) uint64 {
				if f == 9 {
					return 3
				}
				return honest(f)
			})
		}, true, inputVerdict{header: true, ack: 12, first: 8, want: 10, take: 2, suspect: SuspectRewrite}, false, SuspectRewrite},
		{"beyond the ring", func(t *testing.T, l wire.Layout) []byte { return packet(t, l, 12, 10, 5, honest) }, true,
			inputVerdict{header: true, ack: 12, first: 10, want: 10}, false, 0},
		{"beyond the ring, lockstep: what fits", func(t *testing.T, l wire.Layout) []byte { return packet(t, l, 12, 10, 5, honest) }, false,
			inputVerdict{header: true, ok: true, ack: 12, first: 10, want: 10, take: 2}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ps, layout := judgeFixture(t)
			v.strict = tc.strict
			if strings.HasPrefix(tc.name, "beyond the ring") {
				v.ring = fixedRing{low: 12 - ringSize} // the ring holds up to frame 12
			}
			before := *v.inputs
			before.in = slices.Clone(v.inputs.in)
			var pkt wire.InputPacket
			var base [MaxPlayers]uint64
			var got inputVerdict
			judgeInput(tc.b(t, layout), ps, v, &pkt, base[:], &got)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantOK, got.ok)
			assert.Equal(t, tc.suspect, got.suspect)
			assert.Equal(t, before, *v.inputs, "the judgement changed what the session holds")
		})
	}
}

// FuzzJudgeInput: any bytes are judged without a panic, without changing
// what the session holds, and an acceptable packet stays within what the
// ring can take.
func FuzzJudgeInput(f *testing.F) {
	t := &testing.T{}
	_, _, layout := judgeFixture(t)
	f.Add(packet(t, layout, 12, 8, 6, honest))
	f.Add(packet(t, layout, 14, 12, 2, honest))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ps, _ := judgeFixture(t)
		before := *v.inputs
		before.in = slices.Clone(v.inputs.in)
		var pkt wire.InputPacket
		var base [MaxPlayers]uint64
		var got inputVerdict
		judgeInput(b, ps, v, &pkt, base[:], &got)
		if !slices.Equal(v.inputs.in, before.in) || v.inputs.next != before.next || v.inputs.last != before.last {
			t.Fatal("the judgement changed what the session holds")
		}
		if got.ok && !got.gap && (got.take < 0 || got.want+Frame(got.take) > ringSize) {
			t.Fatalf("accepted %+v beyond the ring", got)
		}
		if got.ok && got.ack > v.localNext {
			t.Fatalf("accepted an ack of %d beyond our %d", got.ack, v.localNext)
		}
	})
}
