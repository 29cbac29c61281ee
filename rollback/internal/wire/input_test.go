package wire_test

import (
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// inversus is the INVERSUS input: fire direction, thrust angle, thrust magnitude.
var inversus = wire.Layout{3, 8, 8}

func in3(fire, angle, mag uint64) uint64 { return fire | angle<<3 | mag<<11 }

// TestGolden checks the encoder against packets written out by hand in
// testdata/*.hex (see docs/protocol.md for the bit-by-bit derivation of
// the first one).
func TestGolden(t *testing.T) {
	cases := []struct {
		file string
		l    wire.Layout
		p    wire.InputPacket
	}{
		{"inversus-1p-3frames.hex", inversus, wire.InputPacket{Ack: 100, First: 98, Count: 3, Players: 1,
			Inputs: []uint64{in3(2, 0x80, 0xff), in3(2, 0x80, 0xff), in3(0, 0x81, 0xff)}}},
		{"ack-only.hex", inversus, wire.InputPacket{Ack: 70000, First: 70010, Count: 0, Players: 2}},
		{"inversus-2p-2frames.hex", inversus, wire.InputPacket{Ack: 5, First: 3, Count: 2, Players: 2,
			Inputs: []uint64{0, in3(1, 0, 0), 0, in3(1, 0, 0)}}},
		{"one-bit-2frames.hex", wire.Layout{1}, wire.InputPacket{Ack: 0, First: 0, Count: 2, Players: 1,
			Inputs: []uint64{1, 0}}},
		{"gossip-3frames-base.hex", inversus, wire.InputPacket{Ack: 100, First: 98, Count: 3, Players: 1, Lag: 3,
			Base:   []uint64{in3(2, 0x80, 0x7f)},
			Inputs: []uint64{in3(2, 0x80, 0xff), in3(2, 0x80, 0xff), in3(0, 0x81, 0xff)},
			Gossip: []wire.Gossip{{Disconnected: true, Frame: 0x123}, {Frame: 99}}}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", tc.file))
			require.NoError(t, err)
			want, err := hex.DecodeString(strings.Join(strings.Fields(string(raw)), ""))
			require.NoError(t, err)

			got, err := wire.AppendInput(nil, &tc.p, tc.l)
			require.NoError(t, err)
			assert.Equal(t, hex.EncodeToString(want), hex.EncodeToString(got))

			back := wire.InputPacket{Base: tc.p.Base}
			require.NoError(t, wire.ParseInput(want, tc.p.Ack, tc.l, tc.p.Players, len(tc.p.Gossip), &back))
			assert.Equal(t, tc.p.Lag, back.Lag)
			assert.Equal(t, tc.p.Ack, back.Ack)
			assert.Equal(t, tc.p.First, back.First)
			assert.Equal(t, tc.p.Count, back.Count)
			assert.Equal(t, tc.p.Inputs[:tc.p.Count*tc.p.Players], back.Inputs)
			assert.Equal(t, len(tc.p.Gossip), len(back.Gossip))
			for i, g := range tc.p.Gossip {
				assert.Equal(t, g, back.Gossip[i])
			}
			h, err := wire.PeekInput(want, tc.p.Ack)
			require.NoError(t, err)
			assert.Equal(t, wire.InputHeader{Ack: tc.p.Ack, First: tc.p.First, End: tc.p.End()}, h)
		})
	}
}

func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	layouts := []wire.Layout{{1}, {3, 8, 8}, {64}, {32, 32}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {7, 57}}
	var p, back wire.InputPacket
	var buf []byte
	for i := range 2000 {
		l := layouts[i%len(layouts)]
		p.Players = 1 + r.IntN(wire.MaxPlayers)
		p.Lag = r.IntN(wire.MaxLag + 1)
		p.Count = r.IntN(40)
		p.Base = nil
		if r.IntN(2) == 0 {
			p.Base = make([]uint64, p.Players)
			for j := range p.Base {
				p.Base[j] = r.Uint64() & l.Mask()
			}
		}
		p.First = r.Int32N(wire.MaxFrame - 300)
		p.Ack = max(0, p.First+r.Int32N(200)-100)
		p.Inputs = p.Inputs[:0]
		for range p.Count * p.Players {
			var v uint64
			if r.IntN(3) > 0 && len(p.Inputs) >= p.Players {
				v = p.Inputs[len(p.Inputs)-p.Players] // held input
			} else {
				v = r.Uint64() & l.Mask()
			}
			p.Inputs = append(p.Inputs, v)
		}
		p.Gossip = p.Gossip[:0]
		for range r.IntN(7) {
			g := wire.Gossip{Disconnected: r.IntN(2) == 0}
			if g.Disconnected {
				g.Frame = r.Int32N(wire.MaxFrame + 1)
			} else {
				g.Frame = max(-1, p.First+int32(p.Count)-r.Int32N(256)) // within what the wire can say
			}
			p.Gossip = append(p.Gossip, g)
		}
		var err error
		buf, err = wire.AppendInput(buf[:0], &p, l)
		require.NoError(t, err)
		// The Format, checked once, encodes the same bytes.
		f, err := wire.NewFormat(l)
		require.NoError(t, err)
		again, err := f.AppendInput(nil, &p)
		require.NoError(t, err)
		require.Equal(t, buf, again)
		back.Base = p.Base
		// The receiver's reference frame: anywhere within 2^15 of the base.
		ref := max(0, min(p.Ack, p.First)+r.Int32N(1<<16-600)-(1<<15-300))
		if i%2 == 1 { // the Format's decoder, after its own PeekInput
			h, end, err := f.PeekInput(buf, ref)
			require.NoError(t, err)
			ph, err := wire.PeekInput(buf, ref)
			require.NoError(t, err)
			require.Equal(t, ph, h)
			require.NoError(t, f.ParseInputAfter(buf, h, end, p.Players, len(p.Gossip), &back))
		} else {
			require.NoError(t, wire.ParseInput(buf, ref, l, p.Players, len(p.Gossip), &back))
		}
		require.Equal(t, p.Lag, back.Lag)
		require.Equal(t, p.Ack, back.Ack)
		require.Equal(t, p.First, back.First)
		require.Equal(t, p.Count, back.Count)
		require.Equal(t, p.Inputs, back.Inputs)
		require.Equal(t, len(p.Gossip), len(back.Gossip))
		for i := range p.Gossip {
			require.Equal(t, p.Gossip[i], back.Gossip[i])
		}
	}
}

// TestFormat: NewFormat refuses what Layout.Check refuses, and the zero
// Format encodes and decodes nothing.
func TestFormat(t *testing.T) {
	for _, l := range []wire.Layout{{}, {3, 0}, {64, 1}} {
		_, err := wire.NewFormat(l)
		assert.ErrorIs(t, err, wire.ErrLayout, "%v", l)
	}
	f, err := wire.NewFormat(inversus)
	require.NoError(t, err)
	assert.Equal(t, inversus, f.Layout())
	var zero wire.Format
	p := wire.InputPacket{Ack: 10, First: 10, Count: 1, Players: 1, Inputs: []uint64{1}}
	b, err := zero.AppendInput([]byte{7}, &p)
	assert.ErrorIs(t, err, wire.ErrLayout)
	assert.Equal(t, []byte{7}, b, "nothing appended")
	body, err := f.AppendInput(nil, &p)
	require.NoError(t, err)
	assert.ErrorIs(t, zero.ParseInput(body, 10, 1, 0, &wire.InputPacket{}), wire.ErrLayout)
}

func TestAppendErrors(t *testing.T) {
	ok := wire.InputPacket{Ack: 10, First: 10, Count: 1, Players: 1, Inputs: []uint64{1}}
	cases := []struct {
		name string
		l    wire.Layout
		edit func(p *wire.InputPacket)
		want error
	}{
		{"empty layout", wire.Layout{}, nil, wire.ErrLayout},
		{"zero-width field", wire.Layout{3, 0}, nil, wire.ErrLayout},
		{"65 bits", wire.Layout{64, 1}, nil, wire.ErrLayout},
		{"no players", inversus, func(p *wire.InputPacket) { p.Players = 0 }, wire.ErrPlayers},
		{"nine players", inversus, func(p *wire.InputPacket) { p.Players = 9 }, wire.ErrPlayers},
		{"too few inputs", inversus, func(p *wire.InputPacket) { p.Count = 2 }, wire.ErrRange},
		{"negative frame", inversus, func(p *wire.InputPacket) { p.First = -1 }, wire.ErrRange},
		{"beyond MaxFrame", inversus, func(p *wire.InputPacket) { p.First, p.Ack = wire.MaxFrame+1, wire.MaxFrame+1 }, wire.ErrRange},
		{"ack too far ahead", inversus, func(p *wire.InputPacket) { p.Ack = 300 }, wire.ErrRange},
		{"frames too far ahead", inversus, func(p *wire.InputPacket) { p.Ack = 0; p.First = 256 }, wire.ErrRange},
		{"bits outside layout", inversus, func(p *wire.InputPacket) { p.Inputs = []uint64{1 << 19} }, wire.ErrInput},
		{"short base", inversus, func(p *wire.InputPacket) { p.Base = []uint64{} }, wire.ErrRange},
		{"gossip frame", inversus, func(p *wire.InputPacket) { p.Gossip = []wire.Gossip{{Disconnected: true, Frame: -1}} }, wire.ErrRange},
		{"input lag", inversus, func(p *wire.InputPacket) { p.Lag = 8 }, wire.ErrRange},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			if tc.edit != nil {
				tc.edit(&p)
			}
			b, err := wire.AppendInput([]byte("x"), &p, tc.l)
			assert.ErrorIs(t, err, tc.want)
			assert.Equal(t, "x", string(b), "nothing appended on error")
		})
	}
}

func TestParseErrors(t *testing.T) {
	good, err := wire.AppendInput(nil, &wire.InputPacket{Ack: 1, First: 0, Count: 2, Players: 1,
		Inputs: []uint64{in3(1, 2, 3), in3(1, 2, 4)}}, inversus)
	require.NoError(t, err)
	var p wire.InputPacket
	require.NoError(t, wire.ParseInput(good, 0, inversus, 1, 0, &p))
	goodGossip, err := wire.AppendInput(nil, &wire.InputPacket{Ack: 1, Players: 1,
		Gossip: []wire.Gossip{{Disconnected: true, Frame: 0xabcdef}}}, inversus)
	require.NoError(t, err)
	require.NoError(t, wire.ParseInput(goodGossip, 0, inversus, 1, 1, &p))

	cases := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"header only partly", good[:2]},
		{"gossip missing", goodGossip[:len(goodGossip)-2]}, // parsed below with one gossip entry expected
		{"truncated body", good[:len(good)-1]},
		{"extra byte", append(append([]byte{}, good...), 0)},
		{"padding bits set", append(append([]byte{}, good[:len(good)-1]...), good[len(good)-1]|1)},
		// base 0, First is the base, Ack 0 after it: First flagged as
		// before Ack but not before it.
		{"first flagged before ack, equal", []byte{0, 0, 0x80, 0}},
		// base 0, Ack is the base, First 0, count 15 written as 1111 0000 1111... no: 3 as 1111 00000011.
		{"count not in its shortest form", []byte{0, 0, 0x07, 0x80, 0x30}},
		{"claims 255 frames", []byte{0, 0, 0x07, 0xff, 0xf0}},
		// base 0, one frame: 1 (changed), then no field changed.
		{"changed input, no field changed", []byte{0, 0, 0, 0xc0}},
		// base 0xffff from reference 0: frame -1.
		{"frame before 0", []byte{0xff, 0xff, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gossip := 0
			if tc.name == "gossip missing" {
				gossip = 1
			}
			assert.ErrorIs(t, wire.ParseInput(tc.b, 0, inversus, 1, gossip, &p), wire.ErrMalformed)
		})
	}
	// A connected gossip count 5 frames before Ack 0 (01, 11, negative,
	// 0101): a frame count no sender has.
	negative := []byte{0, 0, 0, 0x07, 0xa8}
	assert.ErrorIs(t, wire.ParseInput(negative, 0, inversus, 1, 1, &p), wire.ErrMalformed)
	assert.ErrorIs(t, wire.ParseInput(good, 0, inversus, 0, 0, &p), wire.ErrPlayers)
	assert.ErrorIs(t, wire.ParseInput(good, 0, inversus, 1, 9, &p), wire.ErrPlayers)
	assert.ErrorIs(t, wire.ParseInput(good, 0, wire.Layout{}, 1, 0, &p), wire.ErrLayout)
}

// TestGossipCounts: a count is sent as its distance d from Ack (01 0 for
// 0, 01 10 and the sign for 1, 01 11, the sign and a short beyond), and
// one further than 255 from Ack (but within 255 of End) as the escape, a
// negative zero, then 8 bits behind End; the escape for a count that has
// a shorter form is refused, as are the long form of a distance of 1 and
// a positive zero.
func TestGossipCounts(t *testing.T) {
	// Ack 10, First 8, 3 held frames of a 1-bit layout: 25 bits of header,
	// 3 of frames, 3 of lag; then the entries.
	l := wire.Layout{1}
	p := wire.InputPacket{Ack: 10, First: 8, Count: 3, Players: 1, Inputs: make([]uint64, 3),
		Gossip: []wire.Gossip{{Frame: 11}, {Frame: 10}, {Frame: 9}, {Frame: 5}}}
	head := "0000000000001000" + "1" + "0010" + "0011" + "000" + "000"
	want := fromBits(head + "01100" + "010" + "01101" + "011110101")
	b, err := wire.AppendInput(nil, &p, l)
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(want), hex.EncodeToString(b))
	var back wire.InputPacket
	require.NoError(t, wire.ParseInput(b, 10, l, 1, 4, &back))
	assert.Equal(t, p.Gossip, back.Gossip)
	for name, bad := range map[string]string{
		"one in the long form": head + "011100001" + "010" + "01101" + "011110101",
		"positive zero":        head + "011100000" + "010" + "01101" + "011110101",
		"negative zero":        head + "011110000" + "010" + "01101" + "011110101",
	} {
		assert.ErrorIs(t, wire.ParseInput(fromBits(bad), 10, l, 1, 4, &back), wire.ErrMalformed, name)
	}

	// Ack 0, First 255, 255 held frames: End 510, so that a count can be
	// more than 255 from Ack.
	p = wire.InputPacket{Ack: 0, First: 255, Count: 255, Players: 1, Inputs: make([]uint64, 255),
		Gossip: []wire.Gossip{{Frame: 300}, {Frame: 255}}}
	head = "0000000000000000" + "0" + "1111" + "11111111" + "1111" + "11111111" + strings.Repeat("0", 255) + "000"
	// 300: 01 11 1 0000, then 210 (510 - 300) behind End; 255: 01 11 0
	// 1111 11111111, 255 after Ack.
	want = fromBits(head + "011110000" + "11010010" + "01110111111111111")
	b, err = wire.AppendInput(nil, &p, l)
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(want), hex.EncodeToString(b))
	require.NoError(t, wire.ParseInput(b, 0, l, 1, 2, &back))
	assert.Equal(t, p.Gossip, back.Gossip)
	// The escape for 255, 255 behind End: it has the form above.
	bad := fromBits(head + "011110000" + "11111111" + "01110111111111111")
	assert.ErrorIs(t, wire.ParseInput(bad, 0, l, 1, 2, &back), wire.ErrMalformed)
}

// fromBits packs a string of 0s and 1s, most significant bit first, padded
// with zero bits to a whole byte.
func fromBits(s string) []byte {
	b := make([]byte, (len(s)+7)/8)
	for i, c := range s {
		if c == '1' {
			b[i/8] |= 1 << (7 - i%8)
		}
	}
	return b
}

// TestFramesPast24Bits: the header's frame numbers are the low 16 bits of
// the base, completed from the receiver's own frame: a match runs on past
// 2^24 frames (77 hours at 60 Hz, where the old 24-bit header stopped)
// and up to MaxFrame (over a year), wrapping the 16 bits on the way.
func TestFramesPast24Bits(t *testing.T) {
	for _, base := range []int32{1<<16 - 3, 1<<24 - 2, 1 << 24, 1<<24 + 1<<15, wire.MaxFrame - 300} {
		p := wire.InputPacket{Ack: base + 9, First: base, Count: 5, Players: 1, Inputs: []uint64{1, 2, 3, 4, 5}, Base: []uint64{7}}
		b, err := wire.AppendInput(nil, &p, inversus)
		require.NoError(t, err)
		for _, ref := range []int32{base + 9, base - 200, base + 1<<15 - 1, max(0, base-1<<15+1)} {
			back := wire.InputPacket{Base: p.Base}
			require.NoError(t, wire.ParseInput(b, ref, inversus, 1, 0, &back), "base %d, ref %d", base, ref)
			assert.Equal(t, []int32{p.Ack, p.First, int32(p.Count)}, []int32{back.Ack, back.First, int32(back.Count)}, "base %d, ref %d", base, ref)
			assert.Equal(t, p.Inputs, back.Inputs)
		}
	}
	// Past MaxFrame the encoder refuses (the session ends the match first).
	_, err := wire.AppendInput(nil, &wire.InputPacket{Ack: wire.MaxFrame + 1, First: wire.MaxFrame, Players: 1}, inversus)
	assert.ErrorIs(t, err, wire.ErrRange)
}

func TestNoAllocs(t *testing.T) {
	p := wire.InputPacket{Ack: 1000, First: 990, Count: 20, Players: 2, Inputs: make([]uint64, 40)}
	for i := range p.Inputs {
		p.Inputs[i] = in3(uint64(i/8%5), uint64(i*7%256), 255)
	}
	buf := make([]byte, 0, 512)
	back := wire.InputPacket{Inputs: make([]uint64, 0, 64)}
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		buf, err = wire.AppendInput(buf[:0], &p, inversus)
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.ParseInput(buf, 1000, inversus, 2, 0, &back); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// FuzzParseInput feeds arbitrary bytes to the decoder. Whatever it accepts
// must re-encode, and the re-encoding must decode to the same packet.
// The seed corpus is in testdata/fuzz/FuzzParseInput.
func FuzzParseInput(f *testing.F) {
	f.Add([]byte{0x00, 0x62, 0x91, 0xeb, 0x01, 0xff, 0x63, 0x02, 0x00}, uint8(0), uint8(1), int32(100))
	f.Fuzz(func(t *testing.T, b []byte, layoutSel, players uint8, ref int32) {
		layouts := []wire.Layout{inversus, {1}, {64}, {5, 59}, {1, 1, 1, 1}}
		l := layouts[int(layoutSel)%len(layouts)]
		n := 1 + int(players)%wire.MaxPlayers
		gossip := int(players/wire.MaxPlayers) % 4
		var p wire.InputPacket
		if players&0x80 != 0 {
			p.Base = make([]uint64, n)
			for i := range p.Base {
				p.Base[i] = uint64(i) * 0x9e3779b9 & l.Mask()
			}
		}
		if err := wire.ParseInput(b, ref, l, n, gossip, &p); err != nil {
			return
		}
		enc, err := wire.AppendInput(nil, &p, l)
		if err != nil {
			t.Fatalf("accepted packet does not re-encode: %v", err)
		}
		q := wire.InputPacket{Base: p.Base}
		if err := wire.ParseInput(enc, ref, l, n, gossip, &q); err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		if p.Lag != q.Lag || p.Ack != q.Ack || p.First != q.First || p.Count != q.Count || len(p.Inputs) != len(q.Inputs) || len(p.Gossip) != len(q.Gossip) {
			t.Fatalf("header changed: %+v vs %+v", p, q)
		}
		for i := range p.Inputs {
			if p.Inputs[i] != q.Inputs[i] {
				t.Fatalf("input %d changed: %x vs %x", i, p.Inputs[i], q.Inputs[i])
			}
		}
		for i := range p.Gossip {
			if p.Gossip[i] != q.Gossip[i] {
				t.Fatalf("gossip %d changed: %+v vs %+v", i, p.Gossip[i], q.Gossip[i])
			}
		}
	})
}

// FuzzRoundTrip encodes packets built from fuzz data and checks that they
// decode to themselves.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint32(98), uint8(2), uint8(3), uint8(1), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, first uint32, ackOff, count, players uint8, data []byte) {
		l := inversus
		p := wire.InputPacket{First: int32(first % (wire.MaxFrame - 600)), Count: int(count) % 64, Players: 1 + int(players)%wire.MaxPlayers}
		p.Ack = p.First + int32(ackOff)
		for i := range p.Count * p.Players {
			var v uint64
			if len(data) > 0 {
				v = uint64(data[i%len(data)]) * 0x9e3779b97f4a7c15 >> uint(i%13)
			}
			p.Inputs = append(p.Inputs, v&l.Mask())
		}
		b, err := wire.AppendInput(nil, &p, l)
		if err != nil {
			return // header out of range is a legitimate refusal
		}
		var q wire.InputPacket
		if err := wire.ParseInput(b, p.Ack, l, p.Players, 0, &q); err != nil {
			t.Fatalf("own encoding rejected: %v", err)
		}
		if q.Ack != p.Ack || q.First != p.First || q.Count != p.Count {
			t.Fatalf("header: got %+v want %+v", q, p)
		}
		for i := range p.Inputs {
			if q.Inputs[i] != p.Inputs[i] {
				t.Fatalf("input %d: got %x want %x", i, q.Inputs[i], p.Inputs[i])
			}
		}
	})
}

func BenchmarkInputPacket(b *testing.B) {
	p := wire.InputPacket{Ack: 1000, First: 990, Count: 20, Players: 1, Inputs: make([]uint64, 20)}
	for i := range p.Inputs {
		p.Inputs[i] = in3(uint64(i/8%5), uint64(i/3), 255)
	}
	buf := make([]byte, 0, 512)
	back := wire.InputPacket{Inputs: make([]uint64, 0, 64)}
	b.Run("encode-20frames", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = wire.AppendInput(buf[:0], &p, inversus)
		}
		b.ReportMetric(float64(len(buf)), "bytes/packet")
	})
	b.Run("decode-20frames", func(b *testing.B) {
		buf, _ = wire.AppendInput(buf[:0], &p, inversus)
		b.ReportAllocs()
		for b.Loop() {
			_ = wire.ParseInput(buf, 1000, inversus, 1, 0, &back)
		}
	})
}
