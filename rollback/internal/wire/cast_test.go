package wire_test

import (
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// TestCastGolden checks the cast encoder against a body written out by
// hand (docs/protocol.md, "Cast input bodies"): First 0 (16 bits), Count 2
// (0010), the inputs 1 then 0 of a 1-bit layout (11, 10), lag 0 (000),
// then the receiver's entry, first of two: frame 2 (010, 0010), and the
// third machine's: frame 1 (010, 0001); zeros to the byte.
func TestCastGolden(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "cast-1bit-2frames.hex"))
	require.NoError(t, err)
	want, err := hex.DecodeString(strings.Join(strings.Fields(string(raw)), ""))
	require.NoError(t, err)
	f, err := wire.NewFormat(wire.Layout{1})
	require.NoError(t, err)
	p := wire.InputPacket{Ack: 2, First: 0, Count: 2, Players: 1, Inputs: []uint64{1, 0}, Gossip: []wire.Gossip{{Frame: 1}}}
	got, err := f.AppendCast(nil, &p, 0)
	require.NoError(t, err)
	require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(got))

	h, end, err := f.PeekCast(want, 0)
	require.NoError(t, err)
	var back wire.InputPacket
	require.NoError(t, f.ParseCastAfter(want, h, end, 1, 2, 0, &back))
	require.Equal(t, int32(2), back.Ack)
	require.Equal(t, []uint64{1, 0}, back.Inputs)
	require.Equal(t, []wire.Gossip{{Frame: 1}}, back.Gossip)
	// Read by the other receiver (at 1), the first entry is the gossip.
	require.NoError(t, f.ParseCastAfter(want, h, end, 1, 2, 1, &back))
	require.Equal(t, int32(1), back.Ack)
	require.Equal(t, []wire.Gossip{{Frame: 2}}, back.Gossip)
}

// randomPacket is a packet to a receiver among peers peers: within what
// the per-pair body can say.
func randomPacket(r *rand.Rand, l wire.Layout, peers int, p *wire.InputPacket) {
	p.Players = 1 + r.IntN(wire.MaxStatementPlayers)
	p.Lag = r.IntN(wire.MaxLag + 1)
	p.Count = r.IntN(40)
	p.Base = nil
	if r.IntN(2) == 0 {
		p.Base = make([]uint64, p.Players)
		for j := range p.Base {
			p.Base[j] = r.Uint64() & l.Mask()
		}
	}
	p.First = r.Int32N(wire.MaxFrame - 600)
	p.Ack = max(0, p.First+r.Int32N(511)-255)
	p.Inputs = p.Inputs[:0]
	for range p.Count * p.Players {
		v := r.Uint64() & l.Mask()
		if r.IntN(3) > 0 && len(p.Inputs) >= p.Players {
			v = p.Inputs[len(p.Inputs)-p.Players] // held input
		}
		p.Inputs = append(p.Inputs, v)
	}
	p.Gossip = p.Gossip[:0]
	for range peers - 1 {
		g := wire.Gossip{Disconnected: r.IntN(4) == 0}
		switch {
		case g.Disconnected:
			g.Frame = r.Int32N(wire.MaxFrame + 1)
		case r.IntN(6) == 0:
			g.Frame = -1
		default: // anywhere from far behind to ahead of End
			g.Frame = max(-1, p.First+r.Int32N(600)-400)
		}
		p.Gossip = append(p.Gossip, g)
	}
}

// TestCastDecodesAsThePerPairBody: whatever the packet, the receiver at
// its place decodes from the cast body what it decodes from the per-pair
// body.
func TestCastDecodesAsThePerPairBody(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	layouts := []wire.Layout{{1}, {3, 8, 8}, {64}, {7, 57}}
	var p, viaPair, viaCast wire.InputPacket
	for i := range 3000 {
		f, err := wire.NewFormat(layouts[i%len(layouts)])
		require.NoError(t, err)
		peers := 1 + r.IntN(7)
		randomPacket(r, f.Layout(), peers, &p)
		at := r.IntN(peers)
		pair, err := f.AppendInput(nil, &p)
		require.NoError(t, err)
		cast, err := f.AppendCast(nil, &p, at)
		require.NoError(t, err)
		ref := max(0, p.First+r.Int32N(1<<15)-(1<<14))
		viaPair.Base, viaCast.Base = p.Base, p.Base
		require.NoError(t, f.ParseInput(pair, ref, p.Players, peers-1, &viaPair))
		h, end, err := f.PeekCast(cast, ref)
		require.NoError(t, err)
		require.Equal(t, wire.InputHeader{Ack: p.First, First: p.First, End: p.End()}, h)
		require.NoError(t, f.ParseCastAfter(cast, h, end, p.Players, peers, at, &viaCast))
		require.Equal(t, viaPair.Ack, viaCast.Ack, "packet %d", i)
		require.Equal(t, viaPair.First, viaCast.First)
		require.Equal(t, viaPair.Count, viaCast.Count)
		require.Equal(t, viaPair.Inputs, viaCast.Inputs)
		require.Equal(t, viaPair.Lag, viaCast.Lag)
		require.Equal(t, viaPair.Gossip, viaCast.Gossip, "packet %d", i)
	}
}

// TestCastSameForEveryPeer: a sender that wants the same frame of each
// machine whoever it tells sends every peer the same bytes.
func TestCastSameForEveryPeer(t *testing.T) {
	f, err := wire.NewFormat(wire.Layout{3, 8, 8})
	require.NoError(t, err)
	wants := []wire.Gossip{{Frame: 1000}, {Disconnected: true, Frame: 990}, {Frame: 1010}, {Frame: 996}}
	var first []byte
	for at := range wants {
		if wants[at].Disconnected {
			continue // no inputs go to a machine that left
		}
		p := wire.InputPacket{Ack: wants[at].Frame, First: 998, Count: 4, Players: 1, Inputs: []uint64{1, 1, 2, 2}, Lag: 2}
		for k, g := range wants {
			if k != at {
				p.Gossip = append(p.Gossip, g)
			}
		}
		b, err := f.AppendCast(nil, &p, at)
		require.NoError(t, err)
		if first == nil {
			first = b
		}
		require.Equal(t, first, b, "to the peer at %d", at)
	}
}

func TestCastParseErrors(t *testing.T) {
	f, err := wire.NewFormat(wire.Layout{1})
	require.NoError(t, err)
	good, err := hex.DecodeString("00002e089080")
	require.NoError(t, err)
	parse := func(b []byte, peers, at int) error {
		h, end, err := f.PeekCast(b, 0)
		if err != nil {
			return err
		}
		var p wire.InputPacket
		return f.ParseCastAfter(b, h, end, 1, peers, at, &p)
	}
	require.NoError(t, parse(good, 2, 0))
	for _, tc := range []struct {
		name string
		b    string
	}{
		{"truncated header", "0000"},
		{"truncated trailer", "00002e0890"},
		{"trailing bits", "00002e089081"},
		{"trailing byte", "00002e08908000"},
		{"negative zero", "00002e0c1080"},  // the receiver's entry 011 0000
		{"no acknowledgement", "00002e00"}, // the receiver's entry 00, the other 00...
	} {
		b, err := hex.DecodeString(tc.b)
		require.NoError(t, err)
		require.ErrorIs(t, parse(b, 2, 0), wire.ErrMalformed, tc.name)
	}
	require.Error(t, parse(good, 2, 2), "no such receiver")
}

// FuzzCast: the cast decoder never panics, and what it takes it takes
// whole: a decoded packet within the limits of the per-pair one.
func FuzzCast(f *testing.F) {
	f.Add([]byte{0, 0, 0x2e, 0x08, 0x90, 0x80}, uint8(2), uint8(0))
	f.Add([]byte{0, 0, 0x2e, 0x00}, uint8(2), uint8(1))
	format, err := wire.NewFormat(wire.Layout{3, 8, 8})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte, peers, at uint8) {
		n, k := 1+int(peers)%7, int(at)%8
		h, end, err := format.PeekCast(b, 1000)
		if err != nil {
			return
		}
		p := wire.InputPacket{Base: []uint64{1}}
		if format.ParseCastAfter(b, h, end, 1, n, k, &p) != nil {
			return
		}
		require.Less(t, k, n)
		require.Len(t, p.Gossip, n-1)
		require.Equal(t, p.Count, len(p.Inputs))
		require.LessOrEqual(t, p.Ack, int32(wire.MaxFrame))
		require.GreaterOrEqual(t, p.Ack, int32(0))
		for _, g := range p.Gossip {
			if !g.Disconnected { // a count, clamped to End as the per-pair body's
				require.LessOrEqual(t, g.Frame, h.End)
			}
		}
	})
}
