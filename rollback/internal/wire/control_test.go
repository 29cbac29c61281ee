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
		msg, out any
	}{
		{wire.KindHandshake, &wire.Handshake{SessionID: 1 << 60, Nonce: 0xdeadbeef, Echo: 7}, &wire.Handshake{}},
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
			b, err := wire.AppendControl([]byte("x"), tc.kind, 0xabcd, tc.msg)
			require.NoError(t, err)
			require.Equal(t, byte('x'), b[0])
			tag, err := wire.ParseControl(b[1:], tc.kind, tc.out)
			require.NoError(t, err)
			assert.Equal(t, uint16(0xabcd), tag)
			assert.Equal(t, tc.msg, tc.out)
			assert.LessOrEqual(t, len(b)-1, 40, "control messages stay small")
		})
	}
}

func TestControlCodecDoesNotAllocate(t *testing.T) {
	c := wire.NewControlCodec()
	buf := make([]byte, 0, wire.MaxControlSize)
	q := wire.Quality{Sent: 123456789, Frame: 77}
	var out wire.Quality
	allocs := testing.AllocsPerRun(200, func() {
		var err error
		if buf, err = c.Append(buf[:0], wire.KindQuality, 9, &q); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Parse(buf, wire.KindQuality, &out); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
	assert.Equal(t, q, out)
}

// TestHandshakeGolden pins the msgpack layout: a 3-element array of
// uint64, uint32, uint32.
func TestHandshakeGolden(t *testing.T) {
	b, err := wire.AppendControl(nil, wire.KindHandshake, 0, &wire.Handshake{SessionID: 42, Nonce: 0x01020304, Echo: 0})
	require.NoError(t, err)
	assert.Equal(t, "020000"+"93"+"2a"+"ce01020304"+"00", hex.EncodeToString(b))
}

// TestChecksumGolden pins the checksum message of docs/protocol.md.
func TestChecksumGolden(t *testing.T) {
	b, err := wire.AppendControl(nil, wire.KindChecksum, 0x1234, &wire.Checksum{Frame: 500, Sum: 0x0123456789abcdef})
	require.NoError(t, err)
	assert.Equal(t, "091234"+"92"+"d101f4"+"cf0123456789abcdef", hex.EncodeToString(b))
}

// TestControlGolden pins every control message's bytes, as listed in
// docs/protocol.md ("Worked examples"); each must also parse back.
func TestControlGolden(t *testing.T) {
	for _, tc := range []struct {
		kind wire.Kind
		msg  any
		hex  string
	}{
		{wire.KindQuality, &wire.Quality{Sent: 1500000000, Frame: 600}, "031234" + "92" + "d259682f00" + "d10258"},
		{wire.KindQualityReply, &wire.QualityReply{Echo: 1500000000, Frame: 598}, "041234" + "92" + "d259682f00" + "d10256"},
		{wire.KindDisconnect, &wire.Disconnect{Frame: 1234}, "051234" + "91" + "d104d2"},
		{wire.KindReady, &wire.Ready{RTT: []uint32{0, 41000}}, "061234" + "91" + "92" + "00" + "cda028"},
		{wire.KindStart, &wire.Start{Mesh: []uint32{0, 41000, 41000, 0}}, "071234" + "91" + "94" + "00" + "cda028" + "cda028" + "00"},
		{wire.KindGo, &wire.Go{}, "081234" + "91" + "00"},
		{wire.KindState, &wire.State{Frame: 1300, Total: 700, Offset: 640, Done: true, Data: []byte{1, 2, 3}},
			"0a1234" + "95" + "d10514" + "cd02bc" + "cd0280" + "c3" + "a3010203"},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			b, err := wire.AppendControl(nil, tc.kind, 0x1234, tc.msg)
			require.NoError(t, err)
			assert.Equal(t, tc.hex, hex.EncodeToString(b))
			back := reflect.New(reflect.TypeOf(tc.msg).Elem()).Interface()
			tag, err := wire.ParseControl(b, tc.kind, back)
			require.NoError(t, err)
			assert.Equal(t, uint16(0x1234), tag)
			assert.Equal(t, tc.msg, back)
		})
	}
}

func TestControlErrors(t *testing.T) {
	good, err := wire.AppendControl(nil, wire.KindQuality, 1, &wire.Quality{Sent: 99, Frame: 3})
	require.NoError(t, err)
	var q wire.Quality
	cases := map[string][]byte{
		"empty":          nil,
		"short":          good[:2],
		"wrong kind":     append([]byte{byte(wire.KindDisconnect)}, good[1:]...),
		"truncated body": good[:len(good)-1],
		"trailing byte":  append(append([]byte{}, good...), 0),
		"not msgpack":    {byte(wire.KindQuality), 0, 1, 0xc1},
		"a map body":     {byte(wire.KindQuality), 0, 1, 0x81, 0xa1, 'x', 1},
		"huge array":     {byte(wire.KindQuality), 0, 1, 0xdd, 0xff, 0xff, 0xff, 0xff},
		"oversized":      append([]byte{byte(wire.KindQuality), 0, 1}, make([]byte, wire.MaxControlSize)...),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := wire.ParseControl(b, wire.KindQuality, &q)
			assert.Error(t, err)
		})
	}
	_, err = wire.ParseControl(good, wire.KindQuality, &wire.Disconnect{})
	assert.ErrorIs(t, err, wire.ErrMalformed, "message type must match the kind")
	_, err = wire.AppendControl(nil, wire.KindQuality, 0, &wire.Disconnect{})
	assert.Error(t, err)
}

func fuzzControl[T any](f *testing.F, kind wire.Kind, seed *T) {
	b, err := wire.AppendControl(nil, kind, 0x1234, seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var m T
		tag, err := wire.ParseControl(b, kind, &m)
		if err != nil {
			return
		}
		enc, err := wire.AppendControl(nil, kind, tag, &m)
		if err != nil {
			t.Fatalf("accepted message does not re-encode: %v", err)
		}
		var m2 T
		if _, err := wire.ParseControl(enc, kind, &m2); err != nil {
			t.Fatalf("re-encoding rejected: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("changed in a round trip: %+v vs %+v", m, m2)
		}
	})
}

// The control fuzzers' seed corpora are in testdata/fuzz/Fuzz<Message>.
func FuzzHandshake(f *testing.F) {
	fuzzControl(f, wire.KindHandshake, &wire.Handshake{SessionID: 9, Nonce: 1, Echo: 2})
}
func FuzzQuality(f *testing.F) { fuzzControl(f, wire.KindQuality, &wire.Quality{Sent: 1e9, Frame: 60}) }
func FuzzQualityReply(f *testing.F) {
	fuzzControl(f, wire.KindQualityReply, &wire.QualityReply{Echo: 1e9, Frame: 60})
}
func FuzzDisconnect(f *testing.F) { fuzzControl(f, wire.KindDisconnect, &wire.Disconnect{Frame: 61}) }
func FuzzReady(f *testing.F) {
	fuzzControl(f, wire.KindReady, &wire.Ready{RTT: []uint32{0, 90000, 120000}})
}
func FuzzStart(f *testing.F) {
	fuzzControl(f, wire.KindStart, &wire.Start{Mesh: []uint32{0, 90000, 90000, 0}})
}
func FuzzGo(f *testing.F) { fuzzControl(f, wire.KindGo, &wire.Go{}) }
func FuzzState(f *testing.F) {
	fuzzControl(f, wire.KindState, &wire.State{Frame: 500, Total: 700, Offset: 320, Data: []byte("state")})
}

func TestFullStateChunkFits(t *testing.T) {
	m := &wire.State{Frame: 1<<31 - 1, Total: 1<<32 - 1, Offset: 1<<32 - 1, Done: true, Data: make([]byte, wire.MaxStateData)}
	b, err := wire.AppendControl(nil, wire.KindState, 0xffff, m)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), wire.MaxControlSize)
}

func FuzzChecksum(f *testing.F) {
	fuzzControl(f, wire.KindChecksum, &wire.Checksum{Frame: 500, Sum: 0x0123456789abcdef})
}

func TestStartForEightMachinesFits(t *testing.T) {
	mesh := make([]uint32, wire.MaxMachines*wire.MaxMachines)
	for i := range mesh {
		mesh[i] = 1<<32 - 1 // the longest encoding of every entry
	}
	b, err := wire.AppendControl(nil, wire.KindStart, 1, &wire.Start{Mesh: mesh})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), wire.MaxControlSize)
}
