package rollback

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/savestate"
)

// checkpoint is what simulate does with a frame: records it if wanted.
func (c *checksums) checkpoint(f Frame, state []byte) {
	if c.wants(f) {
		c.record(f, state)
	}
}

// roomy is a budget that holds every state these tests keep.
const roomy = 1 << 20

// sumSink is a checksumSink that records what it is given.
type sumSink struct {
	finals []finalSum
	sent   []sentState
	voted  []desync.Error
}

type finalSum struct {
	f   Frame
	sum uint64
}

type sentState struct {
	peer int
	m    wire.State
}

func (s *sumSink) finalChecksum(f Frame, sum uint64) { s.finals = append(s.finals, finalSum{f, sum}) }

func (s *sumSink) outvoted(e *desync.Error) { s.voted = append(s.voted, *e) }

// control copies the State message, as encoding it would: the owner
// reuses it.
func (s *sumSink) control(peer int, msg wire.Control) {
	m := msg.(*wire.State)
	c := *m
	c.Data = slices.Clone(m.Data)
	s.sent = append(s.sent, sentState{peer, c})
}

func (s *sumSink) frames() []Frame {
	var fs []Frame
	for _, f := range s.finals {
		fs = append(fs, f.f)
	}
	return fs
}

// pendingFrames returns the checkpoints not yet final, in frame order.
func pendingFrames(c *checksums) []Frame {
	var fs []Frame
	for _, p := range c.points {
		if p.pending {
			fs = append(fs, p.frame)
		}
	}
	slices.Sort(fs)
	return fs
}

// TestChecksumsCheckpoint: only multiples of every (never frame 0) are
// kept, as copies of the state.
func TestChecksumsCheckpoint(t *testing.T) {
	cases := []struct {
		every Frame
		upTo  Frame
		want  []Frame
	}{
		{every: 10, upTo: 35, want: []Frame{10, 20, 30}},
		{every: 1, upTo: 5, want: []Frame{1, 2, 3, 4, 5}},
		{every: 7, upTo: 30, want: []Frame{7, 14, 21, 28}},
		{every: 10, upTo: 9, want: nil},
		{every: 10, upTo: 95, want: []Frame{20, 30, 40, 50, 60, 70, 80, 90}}, // 8 kept: 90 took 10's place
	}
	for _, tc := range cases {
		c := newChecksums(tc.every, nil, 0, roomy)
		for f := range tc.upTo + 1 {
			c.checkpoint(f, []byte{byte(f), 0xee})
		}
		assert.Equal(t, tc.want, pendingFrames(c), "every %d up to %d", tc.every, tc.upTo)
		for _, p := range c.points {
			if p.pending {
				assert.Equal(t, []byte{byte(p.frame), 0xee}, p.data)
				assert.False(t, p.hashed, "hashed once final, not now")
			}
		}
	}

	// A copy: the live state changing afterwards does not change it.
	c := newChecksums(10, nil, 0, roomy)
	state := []byte{1, 2, 3}
	c.checkpoint(10, state)
	state[0] = 9
	var sink sumSink
	c.finals(11, 10, &sink)
	assert.Equal(t, []finalSum{{10, xxhash.Sum64([]byte{1, 2, 3})}}, sink.finals)
}

// TestChecksumsResimulated: a re-simulation keeps the state again while the
// frame is pending; once final it is never replaced.
func TestChecksumsResimulated(t *testing.T) {
	c := newChecksums(10, nil, 0, roomy)
	var sink sumSink
	c.checkpoint(10, []byte("predicted"))
	c.checkpoint(10, []byte("corrected"))
	c.finals(11, 10, &sink)
	assert.Equal(t, []finalSum{{10, xxhash.Sum64([]byte("corrected"))}}, sink.finals)

	c.checkpoint(10, []byte("a snapshot moving to the anchor")) // steps frame 10 again
	c.finals(11, 10, &sink)
	assert.Len(t, sink.finals, 1, "handed on once")
	assert.Equal(t, []byte("corrected"), c.points[1].data)
	assert.False(t, c.points[1].pending)
}

// TestChecksumsFinalOnceFarBack: a frame stepped again after its
// checkpoint's slot went to a later frame (the snapshot at the settled
// frame, moved up more than checkpoints×every frames behind the present,
// on an 8-machine hell match with statements) is final already: it is not
// kept nor handed on a second time, out of order.
func TestChecksumsFinalOnceFarBack(t *testing.T) {
	c := newChecksums(10, nil, 0, roomy)
	var sink sumSink
	c.checkpoint(10, []byte("ten"))
	c.finals(11, 10, &sink)
	for f := Frame(20); f <= 90; f += 10 { // 90 takes frame 10's slot
		c.checkpoint(f, []byte{byte(f)})
	}
	c.checkpoint(10, []byte("ten again"))
	c.finals(91, 30, &sink)
	assert.Equal(t, []Frame{10, 20, 30}, sink.frames())
}

// TestChecksumsFinals: the pending checksums before the simulated frame and
// not after the anchor are handed on oldest first, once.
func TestChecksumsFinals(t *testing.T) {
	state := func(f Frame) []byte { return []byte{byte(f), byte(f >> 8), 0xee} }
	cases := []struct {
		name              string
		simulated, anchor Frame
		want              []Frame
	}{
		{name: "held back by the anchor", simulated: 81, anchor: 25, want: []Frame{10, 20}},
		{name: "held back by the simulated frame", simulated: 30, anchor: 100, want: []Frame{10, 20}},
		{name: "the anchor exactly at one", simulated: 81, anchor: 40, want: []Frame{10, 20, 30, 40}},
		{name: "all, in frame order (80 sits in slot 0)", simulated: 81, anchor: 80, want: []Frame{10, 20, 30, 40, 50, 60, 70, 80}},
		{name: "none yet", simulated: 81, anchor: 9, want: nil},
		{name: "none simulated past", simulated: 10, anchor: 100, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecksums(10, nil, 1, roomy)
			for f := Frame(10); f <= 80; f += 10 {
				c.checkpoint(f, state(f))
			}
			var sink sumSink
			c.finals(tc.simulated, tc.anchor, &sink)
			assert.Equal(t, tc.want, sink.frames())
			for _, fs := range sink.finals {
				assert.Equal(t, xxhash.Sum64(state(fs.f)), fs.sum, "frame %d", fs.f)
			}
			f, sum, ok := c.latest()
			if len(tc.want) == 0 {
				assert.False(t, ok)
				return
			}
			last := tc.want[len(tc.want)-1]
			assert.Equal(t, []any{last, xxhash.Sum64(state(last)), true}, []any{f, sum, ok}, "the detector has them")
		})
	}

	// Step by step, never twice.
	c := newChecksums(10, nil, 0, roomy)
	for f := Frame(10); f <= 50; f += 10 {
		c.checkpoint(f, state(f))
	}
	var sink sumSink
	c.finals(41, 25, &sink)
	c.finals(41, 25, &sink)
	c.finals(41, 41, &sink)
	assert.Equal(t, []Frame{10, 20, 30, 40}, sink.frames())
	c.finals(60, 60, &sink)
	assert.Equal(t, []Frame{10, 20, 30, 40, 50}, sink.frames())
	_, _, ok := c.latest()
	assert.False(t, ok, "no peers: no detector")
}

// TestChecksumsGameData: Config.ChecksumData is hashed at the checkpoint,
// while the state is current, not when the frame becomes final.
func TestChecksumsGameData(t *testing.T) {
	game := "abc"
	c := newChecksums(10, func(b []byte) []byte { return append(b, game...) }, 0, roomy)
	c.checkpoint(10, []byte("arena"))
	game = "xyz"
	c.checkpoint(20, []byte("arena"))
	game = "later"
	var sink sumSink
	c.finals(21, 20, &sink)
	assert.Equal(t, []finalSum{{10, xxhash.Sum64String("abc")}, {20, xxhash.Sum64String("xyz")}}, sink.finals)
}

// TestChecksumsNil: a session without checksums has a nil owner.
func TestChecksumsNil(t *testing.T) {
	var c *checksums
	var sink sumSink
	assert.NotPanics(t, func() {
		c.checkpoint(10, []byte{1})
		c.finals(100, 100, &sink)
		c.remote(0, 10, 1)
		c.outgoing(0, time.Second, &sink)
	})
	assert.Nil(t, c.detect(1, &sumSink{}, 0))
	assert.Nil(t, c.failed())
	_, _, ok := c.latest()
	assert.False(t, ok)
	ok, completed := c.incoming(0, &wire.State{Frame: 10, Total: 1, Data: []byte{1}}, nil)
	assert.Equal(t, []bool{true, false}, []bool{ok, completed})
	assert.Empty(t, sink.finals)
	assert.Empty(t, sink.sent)
}

// TestChecksumsDetect: two owners fed different states: the desync is
// returned once, and failed keeps returning it.
func TestChecksumsDetect(t *testing.T) {
	a, b := newChecksums(10, nil, 1, roomy), newChecksums(10, nil, 1, roomy)
	var sa, sb sumSink
	a.checkpoint(10, []byte("same"))
	b.checkpoint(10, []byte("same"))
	a.checkpoint(20, []byte("mine"))
	b.checkpoint(20, []byte("theirs"))
	a.finals(21, 20, &sa)
	b.finals(21, 20, &sb)
	require.Len(t, sb.finals, 2)

	a.remote(0, 10, sb.finals[0].sum)
	assert.Nil(t, a.detect(1, &sumSink{}, 0), "frame 10 agrees")
	assert.Nil(t, a.failed())

	a.remote(0, 20, sb.finals[1].sum)
	e := a.detect(1, &sumSink{}, 0)
	require.NotNil(t, e)
	assert.Equal(t, desync.Error{Frame: 20, Peer: 0, Local: xxhash.Sum64String("mine"), Remote: xxhash.Sum64String("theirs")}, *e)
	assert.Nil(t, a.detect(1, &sumSink{}, 0), "once")
	assert.Same(t, e, a.failed())

	a.checkpoint(30, []byte("more"))
	a.finals(31, 30, &sa)
	assert.Len(t, sa.finals, 2, "nothing is handed on after a desync")

	// Without peers nothing is compared.
	n := newChecksums(10, nil, 0, roomy)
	n.checkpoint(10, []byte("x"))
	n.finals(11, 10, &sumSink{})
	n.remote(0, 10, 1)
	assert.Nil(t, n.detect(1, &sumSink{}, 0))
}

// TestChecksumsStateGone: a desync at a frame whose state is no longer held
// is reported at once: detect returns the report itself (nothing to
// exchange, so nothing will change it), and nothing of ours is sent.
func TestChecksumsStateGone(t *testing.T) {
	c := newChecksums(10, nil, 1, roomy)
	var sink sumSink
	c.checkpoint(20, []byte("ours"))
	c.finals(21, 20, &sink)
	c.checkpoint(100, []byte("predicted")) // frame 100 takes frame 20's place, not yet final
	c.remote(0, 20, 1)
	e := c.detect(1, &sumSink{}, 0)
	require.NotNil(t, e)
	assert.Equal(t, desync.Error{Frame: 20, Peer: 0, Local: xxhash.Sum64String("ours"), Remote: 1,
		Field: "our state at that frame is no longer held"}, *e)
	assert.Same(t, e, c.failed())
	assert.Nil(t, c.detect(1, &sumSink{}, 0))
	c.outgoing(0, time.Second, &sink)
	require.Len(t, sink.sent, 1, "no piece of ours, only a status")
	assert.Equal(t, wire.State{Frame: 20, Done: true}, sink.sent[0].m, "we want nothing more: the peer may stop")
	ok, completed := c.incoming(0, &wire.State{Frame: 20, Total: 10, Data: make([]byte, 10)}, nil)
	assert.Equal(t, []bool{true, false}, []bool{ok, completed}, "nothing of theirs wanted")
	assert.Same(t, e, c.failed())
}

// stateWorld is a game state big enough to need several State messages.
type stateWorld struct {
	Frame uint32
	Vals  [512]uint64
}

// worldArena returns an arena holding a stateWorld filled from seed.
func worldArena(t *testing.T, seed uint64) (*savestate.Arena, *stateWorld) {
	t.Helper()
	a, err := savestate.New(8192)
	require.NoError(t, err)
	h, err := savestate.Alloc[stateWorld](a)
	require.NoError(t, err)
	w := h.Get(a)
	w.Frame = 20
	x := seed
	for i := range w.Vals {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		w.Vals[i] = x // incompressible
	}
	return a, w
}

// exchangePair is two machines' checksum owners that found a desync at
// frame 20 (each the other's peer 0).
type exchangePair struct {
	c      [2]*checksums
	arena  [2]*savestate.Arena
	world  [2]*stateWorld
	err    [2]*desync.Error
	sink   [2]sumSink
	chunks int // State messages one full copy of a state takes
}

func newExchangePair(t *testing.T, edit func(w *stateWorld), data [2]func([]byte) []byte) *exchangePair {
	t.Helper()
	x := &exchangePair{}
	for i := range 2 {
		x.arena[i], x.world[i] = worldArena(t, 0x9e3779b97f4a7c15)
		x.c[i] = newChecksums(10, data[i], 1, roomy)
	}
	edit(x.world[1])
	for i := range 2 {
		x.c[i].checkpoint(10, []byte("same"))
		x.c[i].checkpoint(20, x.arena[i].Bytes())
		x.c[i].finals(21, 20, &x.sink[i])
	}
	for i := range 2 {
		theirs := x.sink[1-i].finals[1]
		x.c[i].remote(0, int32(theirs.f), theirs.sum)
		x.err[i] = x.c[i].detect(1, &sumSink{}, 0)
		require.NotNil(t, x.err[i], "machine %d", i)
	}
	n := len(x.c[0].ex.mine)
	require.Greater(t, n, 8*wire.MaxStateData, "the test wants more chunks than go in one call")
	x.chunks = (n + wire.MaxStateData - 1) / wire.MaxStateData
	return x
}

// tick lets machine i send, and delivers what it sent to the other one. It
// returns the messages and whether one of them completed the other's
// exchange.
func (x *exchangePair) tick(t *testing.T, i int, now time.Duration) ([]sentState, bool) {
	t.Helper()
	return x.pass(t, i, now, nil)
}

// pass lets machine i send, and delivers to the other one what it sent
// that keep passes (nil: all of it). It returns the messages sent and
// whether one of those delivered completed the other's exchange.
func (x *exchangePair) pass(t *testing.T, i int, now time.Duration, keep func(m *wire.State) bool) ([]sentState, bool) {
	t.Helper()
	s := &x.sink[i]
	s.sent = s.sent[:0]
	x.c[i].outgoing(0, now, s)
	completed := false
	for _, m := range s.sent {
		if keep != nil && !keep(&m.m) {
			continue
		}
		require.Equal(t, 0, m.peer)
		ok, done := x.c[1-i].incoming(0, &m.m, x.arena[1-i])
		require.True(t, ok, "a well-formed message")
		assert.False(t, done && completed, "completed twice")
		completed = completed || done
	}
	return s.sent, completed
}

// TestChecksumsExchange: the two owners swap their states through a sink
// until each can name the first differing field with desync.Compare.
func TestChecksumsExchange(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(w *stateWorld)
		data  [2]func([]byte) []byte
		field func(a, b *stateWorld) [2]string
	}{
		{name: "a field differs",
			edit: func(w *stateWorld) { w.Vals[300]++ },
			field: func(a, b *stateWorld) [2]string {
				return [2]string{
					fmt.Sprintf("rollback.stateWorld.Vals[300]: %d vs %d", a.Vals[300], b.Vals[300]),
					fmt.Sprintf("rollback.stateWorld.Vals[300]: %d vs %d", b.Vals[300], a.Vals[300]),
				}
			}},
		{name: "the first of two fields",
			edit: func(w *stateWorld) { w.Frame = 21; w.Vals[0] = 7 },
			field: func(a, b *stateWorld) [2]string {
				return [2]string{"rollback.stateWorld.Frame: 20 vs 21", "rollback.stateWorld.Frame: 21 vs 20"}
			}},
		{name: "equal states, different checksum data",
			edit: func(w *stateWorld) {},
			data: [2]func([]byte) []byte{
				func(b []byte) []byte { return append(b, 1) },
				func(b []byte) []byte { return append(b, 2) },
			},
			field: func(a, b *stateWorld) [2]string {
				const eq = "the states are equal: the checksum data (Config.ChecksumData) differs"
				return [2]string{eq, eq}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newExchangePair(t, tc.edit, tc.data)
			var completed [2]bool
			now := time.Second
			for tick := 0; tick < 10 && !(completed[0] && completed[1]); tick++ {
				for i := range 2 {
					if _, done := x.tick(t, i, now); done {
						completed[1-i] = true
					}
				}
				now += 16 * time.Millisecond
			}
			require.Equal(t, [2]bool{true, true}, completed)

			want := tc.field(x.world[0], x.world[1])
			for i := range 2 {
				got := x.c[i].failed()
				require.NotSame(t, x.err[i], got, "machine %d: the report is a new error", i)
				assert.Equal(t, "", x.err[i].Field, "machine %d: the returned error is never changed", i)
				assert.Equal(t, want[i], got.Field, "machine %d", i)
				e := *x.err[i]
				e.Field = want[i]
				assert.Equal(t, e, *got, "machine %d: the rest is the detected desync", i)
			}
		})
	}
}

// TestChecksumsOutgoing: 8 pieces of our state per call, round and round,
// until the peer says it has them all; then a bare status every 250 ms.
func TestChecksumsOutgoing(t *testing.T) {
	x := newExchangePair(t, func(w *stateWorld) { w.Vals[300]++ }, [2]func([]byte) []byte{})
	total := uint32(len(x.c[0].ex.mine))
	require.LessOrEqual(t, x.chunks, 2*stateChunksPerTick, "two calls send it all")
	offsets := func(from int) []uint32 {
		var o []uint32
		for k := from; k < from+stateChunksPerTick; k++ {
			o = append(o, uint32(k%x.chunks*wire.MaxStateData))
		}
		return o
	}
	check := func(sent []sentState, want []uint32, done bool) {
		t.Helper()
		var got []uint32
		for _, m := range sent {
			got = append(got, m.m.Offset)
			assert.Equal(t, int32(20), m.m.Frame)
			assert.Equal(t, total, m.m.Total)
			assert.Equal(t, done, m.m.Done)
		}
		assert.Equal(t, want, got)
	}

	now := time.Second
	sent, completed := x.tick(t, 0, now)
	check(sent, offsets(0), false)
	assert.False(t, completed)
	pieces := make([][]byte, x.chunks)
	for _, m := range sent {
		pieces[m.m.Offset/wire.MaxStateData] = m.m.Data
	}
	_, completed = x.tick(t, 1, now)
	assert.False(t, completed)

	now += 16 * time.Millisecond
	sent, completed = x.tick(t, 0, now)
	check(sent, offsets(8), false)
	assert.True(t, completed, "machine 1 has all of ours")
	for _, m := range sent {
		pieces[m.m.Offset/wire.MaxStateData] = m.m.Data
	}
	all := bytes.Join(pieces, nil)
	n, k := binary.Uvarint(all)
	require.Positive(t, k)
	got, err := io.ReadAll(flate.NewReader(bytes.NewReader(all[k : k+int(n)])))
	require.NoError(t, err)
	assert.Equal(t, x.arena[0].Bytes(), got, "the pieces are our payload: the length of our state, compressed, and it")
	assert.Len(t, all, k+int(n), "no trace section: no bundler")

	sent, completed = x.tick(t, 1, now)
	assert.True(t, completed, "machine 0 has all of machine 1's")
	for _, m := range sent {
		assert.True(t, m.m.Done, "machine 1 sends after it has ours")
	}

	// Both done: bare statuses, every 250 ms.
	now += 16 * time.Millisecond
	for i := range 2 {
		sent, _ = x.tick(t, i, now)
		require.Len(t, sent, 1, "machine %d", i)
		assert.Equal(t, wire.State{Frame: 20, Total: uint32(len(x.c[i].ex.mine)), Done: true}, sent[0].m)
	}
	for _, d := range []time.Duration{16 * time.Millisecond, 249 * time.Millisecond} {
		for i := range 2 {
			sent, _ = x.tick(t, i, now+d)
			assert.Empty(t, sent, "machine %d, %v after the last status", i, d)
		}
	}
	for i := range 2 {
		sent, _ = x.tick(t, i, now+250*time.Millisecond)
		assert.Len(t, sent, 1, "machine %d", i)
	}
}

// desyncedAt10 returns an owner (two peers) that found a desync with peer 0
// at frame 10, with its state there held, in an arena of 8192 bytes.
func desyncedAt10(t *testing.T) (*checksums, *savestate.Arena) {
	t.Helper()
	a, _ := worldArena(t, 1)
	c := newChecksums(10, nil, 2, roomy)
	c.checkpoint(10, a.Bytes())
	c.finals(11, 10, &sumSink{})
	c.remote(0, 10, 1)
	c.forget(1) // no third opinion to wait for
	require.NotNil(t, c.detect(2, &sumSink{}, 0))
	require.NotNil(t, c.ex.mine)
	return c, a
}

// TestChecksumsHostileState: a State message a peer could forge is refused
// or ignored, never a panic; the total it makes us allocate is bounded by
// the arena's size.
func TestChecksumsHostileState(t *testing.T) {
	ff := func(n int) []byte { return bytes.Repeat([]byte{0xff}, n) }
	var bomb bytes.Buffer // 9000 bytes, more than the arena, in a few
	w, err := flate.NewWriter(&bomb, flate.BestCompression)
	require.NoError(t, err)
	_, _ = w.Write(make([]byte, 9000))
	require.NoError(t, w.Close())
	bombed := append(binary.AppendUvarint(nil, uint64(bomb.Len())), bomb.Bytes()...)
	require.Less(t, len(bombed), wire.MaxStateData)
	// head is a first piece of n bytes whose payload's state is of state
	// bytes (the rest garbage).
	head := func(n, state int) []byte {
		b := binary.AppendUvarint(nil, uint64(state))
		return append(b, ff(n-len(b))...)
	}

	const zmax = 8192 + 8192/1024 + 64 // maxCompressed of the arena's size
	bound := maxPayload(8192)
	largest := 2 + zmax + wire.MaxTraceSize // the largest a head of 2 bytes allows
	type step struct {
		peer          int
		m             wire.State
		ok, completed bool
	}
	cases := []struct {
		name   string
		steps  []step
		field  string // the report, when the exchange completes
		theirs int    // the buffer allocated for the peer's state, if checked
	}{
		{name: "another frame: ignored", steps: []step{
			{m: wire.State{Frame: 30, Total: 10, Data: ff(10)}, ok: true}}},
		{name: "empty", steps: []step{
			{m: wire.State{Frame: 10, Total: 500}, ok: true}}},
		{name: "from the other peer: not compared", steps: []step{
			{peer: 1, m: wire.State{Frame: 10, Total: 10, Data: ff(10)}, ok: true}}},
		{name: "offset not a multiple", steps: []step{
			{m: wire.State{Frame: 10, Total: 500, Offset: 100, Data: ff(320)}}}},
		{name: "beyond the total", steps: []step{
			{m: wire.State{Frame: 10, Total: 500, Offset: 320, Data: ff(320)}}}},
		{name: "far beyond the total", steps: []step{
			{m: wire.State{Frame: 10, Total: 500, Offset: 13421772 * 320, Data: ff(320)}}}},
		{name: "total too big", steps: []step{
			{m: wire.State{Frame: 10, Total: uint32(bound + 1), Data: head(320, zmax)}}}},
		{name: "total at the bound", steps: []step{
			{m: wire.State{Frame: 10, Total: uint32(largest), Data: head(320, zmax)}, ok: true}}, theirs: largest},
		{name: "a trace section too big", steps: []step{
			{m: wire.State{Frame: 10, Total: uint32(largest + 1), Data: head(320, zmax)}}}},
		{name: "a state too big", steps: []step{
			{m: wire.State{Frame: 10, Total: 10000, Data: head(320, zmax+1)}}}},
		{name: "a state past the total", steps: []step{
			{m: wire.State{Frame: 10, Total: 500, Data: head(320, 499)}}}},
		{name: "no head", steps: []step{
			{m: wire.State{Frame: 10, Total: 500, Data: ff(320)}}}},
		{name: "the largest total", steps: []step{
			{m: wire.State{Frame: 10, Total: 1<<32 - 1, Data: ff(320)}}}},
		{name: "the largest offset", steps: []step{
			{m: wire.State{Frame: 10, Total: 500, Offset: 1<<32 - 1, Data: ff(1)}}}},
		{name: "a chunk too long", steps: []step{
			{m: wire.State{Frame: 10, Total: 1000, Data: ff(321)}}}},
		{name: "a chunk too short", steps: []step{
			{m: wire.State{Frame: 10, Total: 500, Data: ff(100)}}}},
		{name: "the last chunk too short", steps: []step{
			{m: wire.State{Frame: 10, Total: 500, Offset: 320, Data: ff(100)}}}},
		{name: "the total changes", steps: []step{
			{m: wire.State{Frame: 10, Total: 500, Data: head(320, 400)}, ok: true},
			{m: wire.State{Frame: 10, Total: 640, Offset: 320, Data: ff(320)}},
		}},
		{name: "a repeat", steps: []step{
			{m: wire.State{Frame: 10, Total: 500, Data: head(320, 400)}, ok: true},
			{m: wire.State{Frame: 10, Total: 500, Data: head(320, 400)}, ok: true},
		}},
		{name: "garbage: the report says so", field: "the peer's state did not decompress", steps: []step{
			{m: wire.State{Frame: 10, Total: 500, Offset: 320, Data: ff(180)}, ok: true},
			{m: wire.State{Frame: 10, Total: 500, Data: head(320, 498)}, ok: true, completed: true},
			{m: wire.State{Frame: 10, Total: 500, Data: head(320, 498)}, ok: true}, // after the end
		}},
		{name: "garbage behind the state: the field comes with the state's pieces", field: "the peer's state did not decompress", steps: []step{
			{m: wire.State{Frame: 10, Total: 1000, Data: head(320, 100)}, ok: true, completed: true},
			{m: wire.State{Frame: 10, Total: 1000, Offset: 320, Data: ff(320)}, ok: true},
		}},
		{name: "a state bigger than the arena", field: "the peer's state did not decompress", steps: []step{
			{m: wire.State{Frame: 10, Total: uint32(len(bombed)), Data: bombed}, ok: true, completed: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, a := desyncedAt10(t)
			e := c.failed()
			for i, s := range tc.steps {
				var ok, completed bool
				require.NotPanics(t, func() { ok, completed = c.incoming(s.peer, &s.m, a) })
				assert.Equal(t, []bool{s.ok, s.completed}, []bool{ok, completed}, "step %d", i)
			}
			assert.LessOrEqual(t, len(c.ex.theirs), bound)
			if tc.theirs > 0 {
				assert.Equal(t, tc.theirs, len(c.ex.theirs))
			}
			if tc.field == "" {
				assert.Same(t, e, c.failed(), "no report")
				assert.False(t, c.ex.complete)
				return
			}
			assert.Equal(t, tc.field, c.failed().Field)
			assert.Equal(t, "", e.Field)
			assert.Zero(t, c.failed().FirstFrame, "no bundler: no trace compared")
		})
	}
}

// TestChecksumsStateGoneTellsThePeer: when our state at the desync is gone
// we want nothing more from the peer, and it should learn that it can stop
// sending its state.
func TestChecksumsStateGoneTellsThePeer(t *testing.T) {
	a, b := newChecksums(10, nil, 1, roomy), newChecksums(10, nil, 1, roomy)
	arena, _ := worldArena(t, 1)
	var sa, sb sumSink
	a.checkpoint(20, []byte("ours, soon gone"))
	a.finals(21, 20, &sa)
	a.checkpoint(100, []byte("frame 100 takes its place"))
	b.checkpoint(20, arena.Bytes())
	b.finals(21, 20, &sb)
	a.remote(0, 20, sb.finals[0].sum)
	b.remote(0, 20, sa.finals[0].sum)
	require.NotNil(t, a.detect(1, &sumSink{}, 0))
	require.NotNil(t, b.detect(1, &sumSink{}, 0))

	now := time.Second
	for range 20 {
		sa.sent, sb.sent = sa.sent[:0], sb.sent[:0]
		a.outgoing(0, now, &sa)
		for _, m := range sa.sent {
			b.incoming(0, &m.m, arena)
		}
		b.outgoing(0, now, &sb)
		for _, m := range sb.sent {
			a.incoming(0, &m.m, arena)
		}
		now += 16 * time.Millisecond
	}
	pieces := 0
	for _, m := range sb.sent {
		if len(m.m.Data) > 0 {
			pieces++
		}
	}
	assert.Zero(t, pieces, "pieces of its state still sent on the call at %v", now-16*time.Millisecond)
}

// TestChecksumsRejectedStateLeavesNoTrace: a State message that is refused
// changes nothing; the genuine pieces that follow still complete the
// exchange.
func TestChecksumsRejectedStateLeavesNoTrace(t *testing.T) {
	x := newExchangePair(t, func(w *stateWorld) { w.Vals[300]++ }, [2]func([]byte) []byte{})
	ok, _ := x.c[1].incoming(0, &wire.State{Frame: 20, Total: 500, Data: make([]byte, 100)}, x.arena[1])
	require.False(t, ok)
	completed := false
	for tick := range 3 {
		_, done := x.tick(t, 0, time.Second+time.Duration(tick)*16*time.Millisecond)
		completed = completed || done
	}
	assert.True(t, completed)
}

// heldFrames returns the frames whose states are held, in frame order.
func heldFrames(c *checksums) []Frame {
	var fs []Frame
	for _, p := range c.points {
		if p.data != nil {
			fs = append(fs, p.frame)
		}
	}
	slices.Sort(fs)
	return fs
}

// sized returns a state of n bytes that names frame f and version v.
func sized(n int, f Frame, v byte) []byte {
	b := make([]byte, n)
	b[0], b[1], b[2] = byte(f), byte(f>>8), v
	return b
}

// TestChecksumsBudget: with room for one state (a state that fills the
// arena), the oldest checkpoint that may still be needed keeps it — until
// it is final, then until no desync can be reported at it — and the
// others' states are hashed when simulated and not kept; every checksum is
// still the state's.
func TestChecksumsBudget(t *testing.T) {
	const n = 100
	c := newChecksums(10, nil, 1, n)
	var sink sumSink
	c.checkpoint(10, sized(n, 10, 0))
	c.checkpoint(20, sized(n, 20, 0))
	assert.Equal(t, []Frame{10}, heldFrames(c), "20 is hashed: 10, pending, keeps the room")
	c.checkpoint(10, sized(n, 10, 1)) // a rollback simulates both again
	c.checkpoint(20, sized(n, 20, 1))
	c.finals(21, 20, &sink)
	assert.Equal(t, []finalSum{{10, xxhash.Sum64(sized(n, 10, 1))}, {20, xxhash.Sum64(sized(n, 20, 1))}}, sink.finals)

	c.checkpoint(30, sized(n, 30, 0))
	assert.Equal(t, []Frame{10}, heldFrames(c), "10 is final, but the peer's checksum of it has not come")
	c.remote(0, 10, sink.finals[0].sum)
	assert.Nil(t, c.detect(1, &sumSink{}, 0))
	c.checkpoint(40, sized(n, 40, 0))
	assert.Equal(t, []Frame{40}, heldFrames(c), "10 agreed: 40 takes its room")
	assert.Equal(t, n, c.held)
	assert.Len(t, c.points[4].data, n)

	// A desync at a frame whose state is held is explained; at one whose
	// state was only hashed, it is reported as such.
	c.finals(41, 40, &sink)
	c.remote(0, 40, 1)
	e := c.detect(1, &sumSink{}, 0)
	require.NotNil(t, e)
	assert.Equal(t, sized(n, 40, 0), c.ex.local)
	c = newChecksums(10, nil, 1, n)
	c.checkpoint(10, sized(n, 10, 0))
	c.checkpoint(20, sized(n, 20, 0))
	c.finals(21, 20, &sumSink{})
	c.remote(0, 20, 1)
	e = c.detect(1, &sumSink{}, 0)
	require.NotNil(t, e)
	assert.Equal(t, "our state at that frame is no longer held", e.Field)
}

// TestChecksumsBudgetSilentPeer: a final state the peer's checksum never
// settles is held for heldFinal frames, then its buffer goes to a newer
// checkpoint, which is copied, not hashed at each simulation. (Before, it
// was held until 8 newer checksum frames were final: with checksums every
// 500 frames, 67 minutes.)
func TestChecksumsBudgetSilentPeer(t *testing.T) {
	const n = 64
	c := newChecksums(100, nil, 1, n)
	var sink sumSink
	c.checkpoint(100, sized(n, 100, 0))
	c.finals(101, 100, &sink)
	c.checkpoint(200, sized(n, 200, 0))
	assert.Equal(t, []Frame{100}, heldFrames(c), "100 waits for the peer's checksum")
	assert.True(t, c.points[2].hashed, "200 is hashed at once")
	c.checkpoint(200+heldFinal-100, sized(n, 200, 1)) // not a checksum frame: nothing
	c.checkpoint(300, sized(n, 300, 0))
	assert.Equal(t, []Frame{300}, heldFrames(c), "100 waited %d frames: 300 takes its room", heldFinal)
	assert.False(t, c.points[3].hashed, "300 is copied, hashed when final")
	assert.Equal(t, n, c.held)
}

// TestChecksumsBudgetRollback: a rollback's re-simulation of a frame takes
// the room of a later pending frame (which it simulates again after it);
// the later frame's state is hashed before it goes, so its checksum is
// right even if it is not simulated again.
func TestChecksumsBudgetRollback(t *testing.T) {
	const n = 64
	c := newChecksums(10, nil, 0, n) // no peers: a final state is needed no more
	var sink sumSink
	c.checkpoint(10, sized(n, 10, 0))
	c.checkpoint(20, sized(n, 20, 0))
	c.finals(21, 10, &sink)
	c.checkpoint(30, sized(n, 30, 0)) // 10 is final: 30 takes its room
	assert.Equal(t, []Frame{30}, heldFrames(c))
	c.checkpoint(20, sized(n, 20, 1)) // the rollback: 20 takes 30's room
	assert.Equal(t, []Frame{20}, heldFrames(c))
	c.finals(31, 30, &sink) // 30 was not simulated again (say, it stepped no further)
	assert.Equal(t, []finalSum{{10, xxhash.Sum64(sized(n, 10, 0))}, {20, xxhash.Sum64(sized(n, 20, 1))},
		{30, xxhash.Sum64(sized(n, 30, 0))}}, sink.finals)
}

// TestChecksumsBudgetGrows: when the state grows past the buffers held,
// the ones no checkpoint needs make room for a bigger one.
func TestChecksumsBudgetGrows(t *testing.T) {
	c := newChecksums(10, nil, 0, 100)
	var sink sumSink
	c.checkpoint(10, sized(40, 10, 0))
	c.checkpoint(20, sized(40, 20, 0))
	assert.Equal(t, []Frame{10, 20}, heldFrames(c), "two fit")
	c.finals(21, 20, &sink)
	c.checkpoint(30, sized(90, 30, 0))
	assert.Equal(t, []Frame{30}, heldFrames(c))
	assert.Equal(t, 90, c.held)
	c.finals(31, 30, &sink)
	assert.Equal(t, xxhash.Sum64(sized(90, 30, 0)), sink.finals[2].sum)
}

// TestChecksumsBudgetModel plays random sequences of simulations,
// rollbacks, finals and peers' checksums against budgets of one to three
// states: every checksum handed on is the hash of the state last recorded
// for its frame, in frame order; the buffers never take more than the
// budget; a held final state is the one its checksum was taken of;
// waiting agrees with a scan; and a final state held is held until no
// desync can be reported at its frame.
func TestChecksumsBudgetModel(t *testing.T) {
	const n = 48
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 21))
		budget := n * (1 + r.IntN(3))
		c := newChecksums(5, nil, 1, budget)
		var sink sumSink
		last := map[Frame][]byte{} // the state last recorded for each frame
		keep := map[Frame]bool{}   // final with its state held
		version := byte(0)
		present, anchor := Frame(1), Frame(0)
		record := func(f Frame) {
			version++
			s := sized(n, f, version)
			if f%5 == 0 && f > c.final {
				last[f] = s
			}
			c.checkpoint(f, s)
		}
		for range 300 {
			switch k := r.IntN(10); {
			case k < 6: // simulate the next frame
				record(present)
				present++
			case k < 8 && present-anchor > 2: // roll back and simulate again
				from := anchor + 1 + Frame(r.IntN(int(present-anchor-1)))
				for f := from; f < present; f++ {
					record(f)
				}
			case k < 9: // the anchor moves: frames become final
				anchor = min(present-1, anchor+Frame(r.IntN(12)))
				had := len(sink.finals)
				c.finals(present, anchor, &sink)
				for _, f := range sink.finals[had:] {
					keep[f.f] = c.points[int(f.f/5)%checkpoints].data != nil
				}
			default: // the peer's checksum of its newest final frame
				if len(sink.finals) > 0 {
					f := sink.finals[len(sink.finals)-1]
					c.remote(0, int32(f.f), f.sum)
					require.Nil(t, c.detect(1, &sumSink{}, 0), "seed %d", seed)
				}
			}
			require.LessOrEqual(t, c.held, budget, "seed %d", seed)
			due := false
			for _, p := range c.points {
				due = due || (p.pending && p.frame < present)
			}
			require.Equal(t, due, c.waiting(present), "seed %d", seed)
			for _, p := range c.points {
				if p.data != nil && !p.pending {
					require.Equal(t, p.sum, xxhash.Sum64(p.data), "seed %d: frame %d", seed, p.frame)
				}
				if !p.pending && p.frame > c.settled && keep[p.frame] && present-p.frame <= heldFinal {
					require.NotNil(t, p.data, "seed %d: frame %d let go before it was settled", seed, p.frame)
				}
			}
		}
		for i, s := range sink.finals {
			require.Equal(t, xxhash.Sum64(last[s.f]), s.sum, "seed %d: frame %d", seed, s.f)
			if i > 0 {
				require.Greater(t, s.f, sink.finals[i-1].f, "seed %d", seed)
			}
		}
	}
}

// TestChecksumsDetectOnNews: the comparison runs only when something that
// can change its outcome came: a checksum of ours or a peer's, a peer
// that left or came back. Checking every frame cost a pass over the
// checkpoints and the peers on every Advance.
func TestChecksumsDetectOnNews(t *testing.T) {
	c := newChecksums(10, nil, 2, roomy)
	assert.False(t, c.dirty)
	for _, news := range []func(){
		func() { c.remote(0, 10, 1) },
		func() { c.checkpoint(20, []byte{1}); c.finals(21, 20, &sumSink{}) },
		func() { c.forget(1) },
		func() { c.resume(1) },
	} {
		news()
		assert.True(t, c.dirty)
		c.detect(2, &sumSink{}, 0)
		assert.False(t, c.dirty)
	}
	assert.False(t, c.waiting(1000))
	c.checkpoint(30, []byte{1})
	assert.False(t, c.waiting(30))
	assert.True(t, c.waiting(31))
}

// TestChecksumsWants: wants, which skips the division between checksum
// frames, answers as the division does on any walk of frames: forward a
// frame at a time, and back by a rollback's depth.
func TestChecksumsWants(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, every := range []Frame{1, 2, 7, 10, 60} {
		c := newChecksums(every, nil, 0, roomy)
		f := Frame(0)
		for range 5000 {
			if r.IntN(8) == 0 {
				f = max(0, f-Frame(r.IntN(25)))
			} else {
				f++
			}
			assert.Equal(t, f > c.final && f%every == 0, c.wants(f), "every %d, frame %d", every, f)
		}
	}
}

// TestChecksumsTake: a peer's checksum is taken for a checksum frame it
// can have finished; frame 0 or before is dropped, and one that is not a
// checksum frame, or past every input we sent, is forged.
func TestChecksumsTake(t *testing.T) {
	for _, tc := range []struct {
		name      string
		frame     int32
		localNext Frame
		want      verdict
	}{
		{"a finished checksum frame", 20, 25, taken},
		{"the frame we are at", 20, 20, taken},
		{"frame 0", 0, 25, dropped},
		{"negative", -10, 25, dropped},
		{"not a checksum frame", 15, 25, forged},
		{"past our inputs", 30, 25, forged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecksums(10, nil, 2, roomy)
			assert.Equal(t, tc.want, c.take(1, &wire.Checksum{Frame: tc.frame, Sum: 7}, tc.localNext))
			assert.Equal(t, tc.want == taken, c.dirty, "only a taken checksum is compared")
		})
	}
}
