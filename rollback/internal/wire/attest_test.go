package wire_test

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

func TestAttestRoundTrip(t *testing.T) {
	for name, m := range map[string]*wire.Attest{
		"echo only":      {Want: 3, Have: []byte{5, 0, 0xff}, From: 70, Echo: bytes.Repeat([]byte{0xab}, 2*wire.EchoDigestSize)},
		"statement only": {HasStatement: true, Machine: 2, Interval: 9, Frames: 8, Inputs: []uint64{0, 1, 300, 1<<64 - 1, 5, 6, 7, 8}, Sig: bytes.Repeat([]byte{1}, wire.SignatureSize)},
		"both": {From: 1 << 20, Echo: make([]byte, wire.EchoDigestSize), HasStatement: true, Machine: 7, Interval: 1<<32 - 1, Frames: 8,
			Inputs: make([]uint64, wire.StatementFrames), Sig: make([]byte, wire.SignatureSize)},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := wire.AppendControl(nil, m)
			require.NoError(t, err)
			var got wire.Attest
			require.NoError(t, wire.ParseControl(b, &got))
			if len(m.Echo) == 0 {
				got.Echo = m.Echo
			}
			assert.Equal(t, *m, got)
		})
	}
	k := &wire.Keys{Keys: bytes.Repeat([]byte{9}, 3*wire.SigningKeySize)}
	b, err := wire.AppendControl(nil, k)
	require.NoError(t, err)
	var got wire.Keys
	require.NoError(t, wire.ParseControl(b, &got))
	assert.Equal(t, *k, got)
}

// TestLargestAttestFits: for every count of players and width of input, a
// statement of the match's interval (StatementInterval) with the longest
// encoding of every input, and a full echo, fits a control message; one
// of an interval twice as long would not (but at 64 frames, the longest).
func TestLargestAttestFits(t *testing.T) {
	build := func(players, bits, frames int) *wire.Attest {
		in := make([]uint64, frames*players)
		for i := range in {
			in[i] = 1<<bits - 1
		}
		return &wire.Attest{Want: 1<<32 - 1, Have: make([]byte, wire.MaxEchoes), From: 1<<32 - 1, Echo: make([]byte, wire.MaxEchoes*wire.EchoDigestSize),
			HasStatement: true, Machine: wire.MaxMachines - 1, Interval: 1<<32 - 1, Frames: uint8(frames), Inputs: in, Sig: make([]byte, wire.SignatureSize)}
	}
	for players := 1; players <= wire.MaxStatementPlayers; players++ {
		for _, bits := range []int{1, 7, 8, 9, 16, 17, 32, 33, 64} {
			n := wire.StatementInterval(players, bits)
			b, err := wire.AppendControl(nil, build(players, bits, n))
			require.NoError(t, err, "%d players, %d bits, %d frames", players, bits, n)
			assert.LessOrEqual(t, len(b)+wire.SealOverhead, 1200, "a datagram")
			if n < wire.MaxStatementFrames {
				_, err := wire.AppendControl(nil, build(players, bits, 2*n))
				assert.Error(t, err, "%d players, %d bits: %d frames would fit", players, bits, 2*n)
			}
		}
	}
	// The arena's (one player a machine, 19 bits) is 64 frames; 6 players
	// of 64 bits, 16 as before intervals varied.
	assert.Equal(t, 64, wire.StatementInterval(1, 19))
	assert.Equal(t, 32, wire.StatementInterval(4, 19))
	assert.Equal(t, 16, wire.StatementInterval(6, 64))
	b, err := wire.AppendControl(nil, &wire.Keys{Keys: make([]byte, wire.MaxMachines*wire.SigningKeySize)})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), wire.MaxControlSize)
}

// TestAttestExact: an Attest is whole — a statement with its signature,
// or none and zero fields — and its lists are whole digests and keys.
func TestAttestExact(t *testing.T) {
	sig := "da0040" + hex.EncodeToString(make([]byte, 64))
	for _, tc := range []struct {
		name string
		body string
		msg  wire.Control
	}{
		{"nine fields", "99" + "00" + "a0" + "00" + "a0" + "c2" + "00" + "00" + "00" + "90", &wire.Attest{}},
		{"half a digest", "9a" + "00" + "a0" + "00" + "a3010203" + "c2" + "00" + "00" + "00" + "90" + "a0", &wire.Attest{}},
		{"statement without signature", "9a" + "00" + "a0" + "00" + "a0" + "c3" + "00" + "00" + "01" + "91" + "00" + "a0", &wire.Attest{}},
		{"signature without statement", "9a" + "00" + "a0" + "00" + "a0" + "c2" + "00" + "00" + "00" + "90" + sig, &wire.Attest{}},
		{"inputs without statement", "9a" + "00" + "a0" + "00" + "a0" + "c2" + "00" + "00" + "00" + "91" + "00" + "a0", &wire.Attest{}},
		{"frames without statement", "9a" + "00" + "a0" + "00" + "a0" + "c2" + "00" + "00" + "01" + "90" + "a0", &wire.Attest{}},
		{"machine 8", "9a" + "00" + "a0" + "00" + "a0" + "c3" + "08" + "00" + "01" + "91" + "00" + sig, &wire.Attest{}},
		{"short signature", "9a" + "00" + "a0" + "00" + "a0" + "c3" + "00" + "00" + "01" + "91" + "00" + "a201" + "02", &wire.Attest{}},
		{"no frames", "9a" + "00" + "a0" + "00" + "a0" + "c3" + "00" + "00" + "00" + "90" + sig, &wire.Attest{}},
		{"65 frames", "9a" + "00" + "a0" + "00" + "a0" + "c3" + "00" + "00" + "41" + "90" + sig, &wire.Attest{}},
		{"inputs not whole frames", "9a" + "00" + "a0" + "00" + "a0" + "c3" + "00" + "00" + "02" + "93" + "000000" + sig, &wire.Attest{}},
		{"385 inputs", "9a" + "00" + "a0" + "00" + "a0" + "c3" + "00" + "00" + "01" + "dc0181" + stringsRepeat("00", 385) + sig, &wire.Attest{}},
		{"nine intervals held", "9a" + "00" + "a9" + stringsRepeat("00", 9) + "00" + "a0" + "c2" + "00" + "00" + "00" + "90" + "a0", &wire.Attest{}},
		{"part of a key", "91" + "a3010203", &wire.Keys{}},
		{"nine keys", "91" + "da0120" + stringsRepeat("00", 288), &wire.Keys{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorIs(t, wire.ParseControl(unhex(t, tc.body), tc.msg), wire.ErrMalformed)
		})
	}
}

func stringsRepeat(s string, n int) string { return string(bytes.Repeat([]byte(s), n)) }

// TestStatementBytes pins what a machine signs: the domain, then the
// session, machine, interval, count and inputs, big-endian.
func TestStatementBytes(t *testing.T) {
	b := wire.AppendStatement(nil, 0x0102030405060708, 2, 9, []uint64{1, 1 << 63})
	want := hex.EncodeToString([]byte("rewind statement v1\x00")) + "0102030405060708" + "02" + "00000009" + "02" +
		"0000000000000001" + "8000000000000000"
	assert.Equal(t, want, hex.EncodeToString(b))
	other := wire.AppendStatement(nil, 0x0102030405060708, 2, 10, []uint64{1, 1 << 63})
	assert.NotEqual(t, b, other, "the interval is signed")
}

func FuzzKeys(f *testing.F) {
	fuzzControl(f, &wire.Keys{Keys: bytes.Repeat([]byte{7}, 3*wire.SigningKeySize)})
}

func FuzzAttest(f *testing.F) {
	fuzzControl(f, &wire.Attest{From: 3, Echo: make([]byte, wire.EchoDigestSize), HasStatement: true, Machine: 1,
		Interval: 4, Frames: 8, Inputs: []uint64{1, 2, 3, 4, 5, 6, 7, 8}, Sig: make([]byte, wire.SignatureSize)})
}
