package wire_test

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

func testHandshake() wire.Handshake {
	h := wire.Handshake{Version: wire.Version, SessionID: 1 << 60, Nonce: 0xdeadbeefcafe, Echo: 7,
		Terms: wire.Terms{Players: 2, Owners: []uint8{0, 1}, Layout: []uint8{3, 8, 8}, Mode: 1, TickRate: 60, ChecksumEvery: 500, StartDelay: true},
		Local: []uint8{1}}
	for i := range h.Key {
		h.Key[i] = byte(i)
	}
	return h
}

func TestHandshakeRoundTrip(t *testing.T) {
	auth, err := wire.NewHandshakeAuth([]byte("lobby secret"))
	require.NoError(t, err)
	for _, a := range []*wire.HandshakeAuth{nil, auth} {
		h := testHandshake()
		b, err := wire.AppendHandshake([]byte("x"), &h, a)
		require.NoError(t, err)
		require.Equal(t, byte('x'), b[0])
		assert.Equal(t, byte(wire.KindHandshake), b[1])
		assert.Zero(t, b[1]>>4, "no sealed datagram starts with a high nibble of 0")
		var back wire.Handshake
		require.NoError(t, wire.ParseHandshake(b[1:], &back, a))
		assert.Equal(t, h, back)

		h.Local = []uint8{} // a spectator's: no players
		b, err = wire.AppendHandshake(nil, &h, a)
		require.NoError(t, err)
		require.NoError(t, wire.ParseHandshake(b, &back, a))
		assert.Empty(t, back.Local)
	}
}

// TestHandshakeGolden pins the layout of docs/protocol.md: the kind byte,
// then a 7-element array.
func TestHandshakeGolden(t *testing.T) {
	h := wire.Handshake{Version: 2, SessionID: 42, Nonce: 0x0102030405060708, Echo: 0,
		Terms: wire.Terms{Players: 2, Owners: []uint8{0, 1}, Layout: []uint8{4}, Mode: 1, TickRate: 60, ChecksumEvery: 500, StartDelay: true},
		Local: []uint8{0}}
	b, err := wire.AppendHandshake(nil, &h, nil)
	require.NoError(t, err)
	want := "02" + "98" + "02" + "2a" + "cf0102030405060708" + "00" +
		"c420" + hex.EncodeToString(make([]byte, 32)) +
		"97" + "02" + "c4020001" + "c40104" + "01" + "3c" + "d101f4" + "c3" +
		"c40100" + "c400"
	assert.Equal(t, want, hex.EncodeToString(b))
}

// TestHandshakeAuth: with a secret, only a handshake made with the same
// secret parses; without one, a handshake must carry no Auth.
func TestHandshakeAuth(t *testing.T) {
	a, err := wire.NewHandshakeAuth([]byte("lobby secret"))
	require.NoError(t, err)
	other, err := wire.NewHandshakeAuth([]byte("another lobby"))
	require.NoError(t, err)
	none, err := wire.NewHandshakeAuth(nil)
	require.NoError(t, err)
	require.Nil(t, none)
	h := testHandshake()
	signed, err := wire.AppendHandshake(nil, &h, a)
	require.NoError(t, err)
	plain, err := wire.AppendHandshake(nil, &h, nil)
	require.NoError(t, err)
	var back wire.Handshake
	assert.ErrorIs(t, wire.ParseHandshake(signed, &back, other), wire.ErrAuth, "another secret")
	assert.ErrorIs(t, wire.ParseHandshake(signed, &back, nil), wire.ErrAuth, "we have no secret")
	assert.ErrorIs(t, wire.ParseHandshake(plain, &back, a), wire.ErrAuth, "it has no secret")
	// Every byte the MAC covers is bound to it: change one, the check fails
	// (or the message no longer parses at all).
	for i := range len(signed) - wire.HandshakeAuthSize - 2 {
		c := bytes.Clone(signed)
		c[i] ^= 0x01
		assert.Error(t, wire.ParseHandshake(c, &back, a), "byte %d", i)
	}
}

// TestHandshakeExact: the handshake is read as exactly as the control
// messages: each case would have been taken by the old decoder (its empty
// array `02 00 00 90` kept the previous handshake's session id, nonce and
// echo), and each is now rejected.
func TestHandshakeExact(t *testing.T) {
	h := testHandshake()
	good, err := wire.AppendHandshake(nil, &h, nil)
	require.NoError(t, err)
	key := "c420" + hex.EncodeToString(h.Key[:])
	terms := "97" + "02" + "c4020001" + "c403030808" + "01" + "3c" + "d101f4" + "c3"
	local := "c40101"
	for _, tc := range []struct{ name, hex string }{
		{"empty array", "02" + "90"},
		{"old three-field handshake", "02" + "93" + "2a" + "01" + "02"},
		{"seven elements", "02" + "97" + "02" + "2a" + "01" + "02" + key + terms + "c400"},
		{"nine elements", "02" + "99" + "02" + "2a" + "01" + "02" + key + terms + local + "c400" + "00"},
		{"nil session id", "02" + "98" + "02" + "c0" + "01" + "02" + key + terms + local + "c400"},
		{"string nonce", "02" + "98" + "02" + "2a" + "a131" + "02" + key + terms + local + "c400"},
		{"negative echo", "02" + "98" + "02" + "2a" + "01" + "ff" + key + terms + local + "c400"},
		{"short key", "02" + "98" + "02" + "2a" + "01" + "02" + "c41f" + hex.EncodeToString(h.Key[:31]) + terms + local + "c400"},
		{"key as str", "02" + "98" + "02" + "2a" + "01" + "02" + "b0" + hex.EncodeToString(h.Key[:16]) + terms + local + "c400"},
		{"no players", "02" + "98" + "02" + "2a" + "01" + "02" + key + "97" + "00" + "c400" + "c403030808" + "01" + "3c" + "d101f4" + "c3" + local + "c400"},
		{"owners not one per player", "02" + "98" + "02" + "2a" + "01" + "02" + key + "97" + "02" + "c40100" + "c403030808" + "01" + "3c" + "d101f4" + "c3" + local + "c400"},
		{"empty layout", "02" + "98" + "02" + "2a" + "01" + "02" + key + "97" + "02" + "c4020001" + "c400" + "01" + "3c" + "d101f4" + "c3" + local + "c400"},
		{"int for start delay", "02" + "98" + "02" + "2a" + "01" + "02" + key + "97" + "02" + "c4020001" + "c403030808" + "01" + "3c" + "d101f4" + "01" + local + "c400"},
		{"trailing byte", hex.EncodeToString(good) + "00"},
		{"truncated", hex.EncodeToString(good[:len(good)-1])},
		{"sealed kind", "12" + hex.EncodeToString(good[1:])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var back wire.Handshake
			assert.ErrorIs(t, wire.ParseHandshake(unhex(t, tc.hex), &back, nil), wire.ErrMalformed)
		})
	}
	// A fresh value every decode.
	back := wire.Handshake{Terms: wire.Terms{Owners: []uint8{9, 9, 9, 9}, Layout: []uint8{1, 1, 1, 1}}}
	require.NoError(t, wire.ParseHandshake(good, &back, nil))
	assert.Equal(t, h, back)
}

// TestTermsDigest: every field of the terms changes the digest.
func TestTermsDigest(t *testing.T) {
	base := testHandshake().Terms
	d := base.Digest()
	for name, edit := range map[string]func(t *wire.Terms){
		"players":        func(t *wire.Terms) { t.Players = 3; t.Owners = []uint8{0, 1, 1} },
		"owners":         func(t *wire.Terms) { t.Owners = []uint8{0, 0} },
		"layout":         func(t *wire.Terms) { t.Layout = []uint8{3, 8} },
		"mode":           func(t *wire.Terms) { t.Mode = 2 },
		"tick rate":      func(t *wire.Terms) { t.TickRate = 30 },
		"checksum every": func(t *wire.Terms) { t.ChecksumEvery = -1 },
		"start delay":    func(t *wire.Terms) { t.StartDelay = false },
	} {
		c := base
		edit(&c)
		assert.NotEqual(t, d, c.Digest(), name)
	}
	same := base
	same.Owners, same.Layout = bytes.Clone(base.Owners), bytes.Clone(base.Layout)
	assert.Equal(t, d, same.Digest())
}

// FuzzHandshake: whatever parses re-encodes to a datagram that parses to
// the same handshake (its seed corpus is in testdata/fuzz/FuzzHandshake).
func FuzzHandshake(f *testing.F) {
	h := testHandshake()
	b, err := wire.AppendHandshake(nil, &h, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var m wire.Handshake
		if err := wire.ParseHandshake(b, &m, nil); err != nil {
			return
		}
		enc, err := wire.AppendHandshake(nil, &m, nil)
		if err != nil {
			t.Fatalf("accepted handshake does not re-encode: %v", err)
		}
		var m2 wire.Handshake
		if err := wire.ParseHandshake(enc, &m2, nil); err != nil {
			t.Fatalf("re-encoding rejected: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("changed in a round trip: %+v vs %+v", m, m2)
		}
	})
}
