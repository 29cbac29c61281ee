package bundle_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/desync/bundle"
	"github.com/rewindgg/rewind/savestate"
)

// sample returns a re-simulated bundle of a two-player counter game of
// frames frames, with marks "add" and "mix"; flip, when positive, flips a
// bit in "mix" of that frame.
func sample(t testing.TB, frames int, flip int32) (*bundle.Bundle, *savestate.Arena) {
	a, err := savestate.New(1024)
	require.NoError(t, err)
	h, err := savestate.Alloc[[2]uint64](a)
	require.NoError(t, err)
	b := &bundle.Bundle{Players: 2, SessionID: 9, Every: 10, ArenaSize: a.Size(), WholeArena: true, Start: 100,
		Report: desync.Error{Frame: 100 + int32(frames), Peer: 0, Local: 1, Remote: 2, System: "x"}}
	b.State = append([]byte(nil), a.Bytes()...)
	for f := range frames {
		b.Inputs = append(b.Inputs, uint64(f), uint64(3*f))
		b.Status = append(b.Status, 1, 1)
	}
	m := &desync.Marks{}
	require.NoError(t, b.Resimulate(a, func(f int32, in []uint64, _ []uint8) {
		st := h.Get(a)
		st[0] += in[0] + in[1]
		m.Mark("add")
		st[1] = st[1]*31 + st[0]
		if f == flip {
			st[1] ^= 4
		}
		m.Mark("mix")
	}, m))
	return b, a
}

// TestRoundTrip: a bundle reads back as written; Compare of a bundle with
// one whose "mix" flips a bit at frame 105 names frame 106, "mix" and the
// field; with itself, no divergence.
func TestRoundTrip(t *testing.T) {
	b, a := sample(t, 20, -1)
	enc := b.Encode()
	r, err := bundle.Read(enc)
	require.NoError(t, err)
	assert.Equal(t, enc, r.Encode())
	assert.Equal(t, b.Report, r.Report)
	assert.Equal(t, 20, r.Frames())
	assert.Len(t, r.Sums, 21)
	for f := r.Start; f <= r.Start+20; f++ {
		want, err := b.StateAt(f)
		require.NoError(t, err)
		got, err := r.StateAt(f)
		require.NoError(t, err)
		assert.Equal(t, want, got, "frame %d", f)
	}
	_, err = r.StateAt(r.Start + 21)
	assert.ErrorIs(t, err, bundle.ErrNoState)

	c, _ := sample(t, 20, 105)
	d := bundle.Compare(b, c, a, 0)
	assert.Equal(t, int32(106), d.Frame)
	assert.Equal(t, "mix", d.System)
	require.Len(t, d.Fields, 1)
	assert.Equal(t, "[2]uint64[1]", d.Fields[0].Path)
	assert.Equal(t, int32(-1), bundle.Compare(b, r, a, 0).Frame)
}

// FuzzRead: any bytes give a bundle or a *FormatError, never a panic.
func FuzzRead(f *testing.F) {
	b, _ := sample(f, 8, 103)
	f.Add(b.Encode())
	f.Add([]byte(bundle.Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := bundle.Read(data)
		if err != nil {
			require.ErrorIs(t, err, bundle.ErrFormat)
			return
		}
		for g := r.Start; g <= r.Start+int32(r.Frames()); g++ {
			_, _ = r.StateAt(g)
		}
	})
}
