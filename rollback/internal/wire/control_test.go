package wire_test

import (
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

func TestControlRoundTrip(t *testing.T) {
	cases := []struct {
		kind     wire.Kind
		msg, out wire.Control
	}{
		{wire.KindQuality, &wire.Quality{Sent: 123456789012, Frame: 600}, &wire.Quality{}},
		{wire.KindQualityReply, &wire.QualityReply{Echo: -5, Frame: 1 << 23}, &wire.QualityReply{}},
		{wire.KindDisconnect, &wire.Disconnect{Frame: 3600}, &wire.Disconnect{}},
		{wire.KindReady, &wire.Ready{RTT: []uint32{0, 180000, 42}}, &wire.Ready{}},
		{wire.KindStart, &wire.Start{Mesh: []uint32{0, 1, 2, 3}}, &wire.Start{}},
		{wire.KindGo, &wire.Go{}, &wire.Go{}},
		{wire.KindChecksum, &wire.Checksum{Frame: 1500, Sum: 1<<64 - 1}, &wire.Checksum{}},
		{wire.KindState, &wire.State{Frame: 1500, Total: 9000, Offset: 320, Done: true, Data: []byte{1, 2, 3}}, &wire.State{}},
	}
	for _, tc := range cases {
		t.Run(tc.kind.String(), func(t *testing.T) {
			b, err := wire.AppendControl([]byte("x"), tc.msg)
			require.NoError(t, err)
			require.Equal(t, byte('x'), b[0])
			require.NoError(t, wire.ParseControl(b[1:], tc.out))
			assert.Equal(t, tc.msg, tc.out)
			assert.LessOrEqual(t, len(b)-1, 40, "control messages stay small")
		})
	}
}

func TestControlDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, wire.MaxControlSize)
	q := wire.Quality{Sent: 123456789, Frame: 77}
	st := wire.State{Frame: 5, Total: 3, Data: []byte{1, 2, 3}}
	var out wire.Quality
	outSt := wire.State{Data: make([]byte, 0, wire.MaxStateData)}
	allocs := testing.AllocsPerRun(200, func() {
		var err error
		if buf, err = wire.AppendControl(buf[:0], &q); err != nil {
			t.Fatal(err)
		}
		if err := wire.ParseControl(buf, &out); err != nil {
			t.Fatal(err)
		}
		if buf, err = wire.AppendControl(buf[:0], &st); err != nil {
			t.Fatal(err)
		}
		if err := wire.ParseControl(buf, &outSt); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
	assert.Equal(t, q, out)
	assert.Equal(t, st, outSt)
}

// TestChecksumGolden pins the checksum message of docs/protocol.md.
func TestChecksumGolden(t *testing.T) {
	b, err := wire.AppendControl(nil, &wire.Checksum{Frame: 500, Sum: 0x0123456789abcdef})
	require.NoError(t, err)
	assert.Equal(t, "92"+"d101f4"+"cf0123456789abcdef", hex.EncodeToString(b))
}

// TestControlGolden pins every control message's bytes, as listed in
// docs/protocol.md ("Worked examples"); each must also parse back.
func TestControlGolden(t *testing.T) {
	for _, tc := range []struct {
		kind wire.Kind
		msg  wire.Control
		hex  string
	}{
		{wire.KindQuality, &wire.Quality{Sent: 1500000000, Frame: 600}, "92" + "d259682f00" + "d10258"},
		{wire.KindQualityReply, &wire.QualityReply{Echo: 1500000000, Frame: 598}, "92" + "d259682f00" + "d10256"},
		{wire.KindDisconnect, &wire.Disconnect{Frame: 1234}, "91" + "d104d2"},
		{wire.KindReady, &wire.Ready{RTT: []uint32{0, 41000}}, "91" + "92" + "00" + "cda028"},
		{wire.KindStart, &wire.Start{Mesh: []uint32{0, 41000, 41000, 0}}, "91" + "94" + "00" + "cda028" + "cda028" + "00"},
		{wire.KindGo, &wire.Go{}, "91" + "00"},
		{wire.KindState, &wire.State{Frame: 1300, Total: 700, Offset: 640, Done: true, Data: []byte{1, 2, 3}},
			"95" + "d10514" + "cd02bc" + "cd0280" + "c3" + "a3010203"},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			b, err := wire.AppendControl(nil, tc.msg)
			require.NoError(t, err)
			assert.Equal(t, tc.hex, hex.EncodeToString(b))
			back := reflect.New(reflect.TypeOf(tc.msg).Elem()).Interface().(wire.Control)
			require.NoError(t, wire.ParseControl(b, back))
			assert.Equal(t, tc.msg, back)
		})
	}
}

func TestControlErrors(t *testing.T) {
	good, err := wire.AppendControl(nil, &wire.Quality{Sent: 99, Frame: 3})
	require.NoError(t, err)
	var q wire.Quality
	cases := map[string][]byte{
		"empty":          nil,
		"short":          good[:2],
		"truncated body": good[:len(good)-1],
		"trailing byte":  append(append([]byte{}, good...), 0),
		"not msgpack":    {0xc1},
		"a map body":     {0x81, 0xa1, 'x', 1},
		"huge array":     {0xdd, 0xff, 0xff, 0xff, 0xff},
		"oversized":      append([]byte{0x92}, make([]byte, wire.MaxControlSize)...),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, wire.ParseControl(b, &q), wire.ErrMalformed)
		})
	}
	assert.ErrorIs(t, wire.ParseControl(good, &wire.Disconnect{}), wire.ErrMalformed, "another message's body")
	_, err = wire.AppendControl(nil, &wire.State{Data: make([]byte, wire.MaxControlSize)})
	assert.Error(t, err, "too large to send")
}

func fuzzControl[T any, PT interface {
	*T
	wire.Control
}](f *testing.F, seed PT) {
	b, err := wire.AppendControl(nil, seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		// ParseControlPrefix takes what ParseControl takes, and leaves
		// what follows the message.
		var mp T
		rest, perr := wire.ParseControlPrefix(b, PT(&mp))
		var m T
		err := wire.ParseControl(b, PT(&m))
		if (err == nil) != (perr == nil && len(rest) == 0) {
			t.Fatalf("ParseControl: %v; ParseControlPrefix: %v with %d bytes after", err, perr, len(rest))
		}
		if perr == nil && len(rest) > 0 {
			var whole T
			if err := wire.ParseControl(b[:len(b)-len(rest)], PT(&whole)); err != nil || !reflect.DeepEqual(whole, mp) {
				t.Fatalf("the prefix alone: %v, %+v against %+v", err, whole, mp)
			}
		}
		if err != nil {
			return
		}
		enc, err := wire.AppendControl(nil, PT(&m))
		if err != nil {
			t.Fatalf("accepted message does not re-encode: %v", err)
		}
		var m2 T
		if err := wire.ParseControl(enc, PT(&m2)); err != nil {
			t.Fatalf("re-encoding rejected: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("changed in a round trip: %+v vs %+v", m, m2)
		}
	})
}

// The control fuzzers' seed corpora are in testdata/fuzz/Fuzz<Message>.
func FuzzQuality(f *testing.F) { fuzzControl(f, &wire.Quality{Sent: 1e9, Frame: 60}) }
func FuzzQualityReply(f *testing.F) {
	fuzzControl(f, &wire.QualityReply{Echo: 1e9, Frame: 60})
}
func FuzzDisconnect(f *testing.F) { fuzzControl(f, &wire.Disconnect{Frame: 61}) }
func FuzzReady(f *testing.F) {
	fuzzControl(f, &wire.Ready{RTT: []uint32{0, 90000, 120000}})
}
func FuzzStart(f *testing.F) {
	fuzzControl(f, &wire.Start{Mesh: []uint32{0, 90000, 90000, 0}})
}
func FuzzGo(f *testing.F) { fuzzControl(f, &wire.Go{}) }
func FuzzState(f *testing.F) {
	fuzzControl(f, &wire.State{Frame: 500, Total: 700, Offset: 320, Data: []byte("state")})
}

func TestFullStateChunkFits(t *testing.T) {
	m := &wire.State{Frame: 1<<31 - 1, Total: 1<<32 - 1, Offset: 1<<32 - 1, Done: true, Data: make([]byte, wire.MaxStateData)}
	b, err := wire.AppendControl(nil, m)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), wire.MaxControlSize)
}

func FuzzChecksum(f *testing.F) {
	fuzzControl(f, &wire.Checksum{Frame: 500, Sum: 0x0123456789abcdef})
}

func TestStartForEightMachinesFits(t *testing.T) {
	mesh := make([]uint32, wire.MaxMachines*wire.MaxMachines)
	for i := range mesh {
		mesh[i] = 1<<32 - 1 // the longest encoding of every entry
	}
	b, err := wire.AppendControl(nil, &wire.Start{Mesh: mesh})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), wire.MaxControlSize)
}

// TestControlExact: a body must be exactly the message's array — as many
// elements as the message has fields, each of the field's msgpack family
// and range — and decoding never keeps anything of the value it decodes
// into. Each case was accepted before the codec was made exact (a
// 2-element State kept the previous Data; the handshake's cases are in
// TestHandshakeExact).
func TestControlExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		msg  wire.Control
	}{
		{"empty disconnect", "90", &wire.Disconnect{}},
		{"long disconnect", "92" + "01" + "02", &wire.Disconnect{}},
		{"nil frame", "91" + "c0", &wire.Disconnect{}},
		{"float frame", "91" + "ca3f800000", &wire.Disconnect{}},
		{"string frame", "91" + "a131", &wire.Disconnect{}},
		{"frame past 31 bits", "91" + "ce80000000", &wire.Disconnect{}},
		{"negative sum", "92" + "01" + "ff", &wire.Checksum{}},
		{"bool sum", "92" + "01" + "c3", &wire.Checksum{}},
		{"two-element state", "92" + "d10514" + "cd02bc", &wire.State{}},
		{"int for done", "95" + "d10514" + "cd02bc" + "cd0280" + "01" + "a3010203", &wire.State{}},
		{"int for data", "95" + "d10514" + "cd02bc" + "cd0280" + "c3" + "03", &wire.State{}},
		{"nil data", "95" + "d10514" + "cd02bc" + "cd0280" + "c3" + "c0", &wire.State{}},
		{"map for rtt", "91" + "81" + "00" + "00", &wire.Ready{}},
		{"string in rtt", "91" + "92" + "00" + "a131", &wire.Ready{}},
		{"go of two", "92" + "00" + "00", &wire.Go{}},
		{"go not zero", "91" + "01", &wire.Go{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorIs(t, wire.ParseControl(unhex(t, tc.body), tc.msg), wire.ErrMalformed)
		})
	}

	// A fresh value every decode: what the destination held never shows.
	var got wire.State
	got.Data = []byte("stale bytes that must not survive")
	b, err := wire.AppendControl(nil, &wire.State{Frame: 9, Total: 3, Offset: 0, Data: []byte{7}})
	require.NoError(t, err)
	require.NoError(t, wire.ParseControl(b, &got))
	assert.Equal(t, wire.State{Frame: 9, Total: 3, Data: []byte{7}}, got)
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

func FuzzWatch(f *testing.F) {
	fuzzControl(f, &wire.Watch{State: 1200, Have: 3, Mask: 0b101, Next: -1})
}
func FuzzSnap(f *testing.F) {
	fuzzControl(f, &wire.Snap{Frame: 1200, Size: 65536, Sum: 0xfeedface, Total: 9000, Piece: 2, Data: []byte("piece")})
}
func FuzzJoin(f *testing.F) {
	fuzzControl(f, &wire.Join{Op: wire.JoinReady, Take: 4800, Frame: 4790, Sum: 0xfeedface, Playing: 0b1011, Keys: make([]byte, 4*wire.SigningKeySize)})
}

// TestJoinMessagesFit: the longest Watch, a full Snap and the longest
// Join fit a control body.
func TestJoinMessagesFit(t *testing.T) {
	for _, m := range []wire.Control{
		&wire.Watch{State: 1<<31 - 1, Have: wire.MaxSnapPieces, Mask: 1<<64 - 1, Next: 1<<31 - 1},
		&wire.Snap{Frame: 1<<31 - 1, Size: 1<<32 - 1, Sum: 1<<64 - 1, Total: wire.MaxSnapPieces * wire.MaxSnapData,
			Piece: wire.MaxSnapPieces - 1, Data: make([]byte, wire.MaxSnapData)},
		&wire.Join{Op: wire.JoinReady, Take: 1<<31 - 1, Frame: 1<<31 - 1, Sum: 1<<64 - 1, Playing: 0xff, Keys: make([]byte, wire.MaxJoinKeys)},
	} {
		b, err := wire.AppendControl(nil, m)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(b), wire.MaxControlSize)
		assert.Less(t, len(b)+wire.SealOverhead, 1200)
	}
	for name, m := range map[string]wire.Control{
		"piece past the last": &wire.Snap{Piece: wire.MaxSnapPieces},
		"negative frame":      &wire.Snap{Frame: -1},
		"state below -1":      &wire.Watch{State: -2},
		"too many pieces":     &wire.Watch{Have: wire.MaxSnapPieces + 1},
		"no operation":        &wire.Join{Take: 1},
		"unknown operation":   &wire.Join{Op: wire.JoinAbsent + 1},
		"too many keys":       &wire.Join{Op: wire.JoinAccept, Keys: make([]byte, wire.MaxJoinKeys+1)},
	} {
		b, err := wire.AppendControl(nil, m)
		require.NoError(t, err)
		assert.ErrorIs(t, wire.ParseControl(b, m), wire.ErrMalformed, name)
	}
}

// TestJoinAbsent: a joining machine's answer to another's proposal
// round-trips; it was an unknown operation before version 5.
func TestJoinAbsent(t *testing.T) {
	b, err := wire.AppendControl(nil, &wire.Join{Op: wire.JoinAbsent, Take: 480})
	require.NoError(t, err)
	var m wire.Join
	require.NoError(t, wire.ParseControl(b, &m))
	assert.Equal(t, wire.JoinAbsent, m.Op)
	assert.Equal(t, int32(480), m.Take)
}
