package offpath_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/rollbacktest/offpath"
)

const forgeSession = 0xfeed

// handshake returns a genuine-looking handshake datagram from a machine
// with the given nonce, echoing echo.
func handshake(t *testing.T, nonce, echo uint64) []byte {
	t.Helper()
	b, err := wire.AppendHandshake(nil, &wire.Handshake{Version: wire.Version, SessionID: forgeSession, Nonce: nonce, Echo: echo,
		Terms: wire.Terms{Players: 2, Owners: []uint8{0, 1}, Layout: []uint8{3, 8, 8}, Mode: 1, TickRate: 60, ChecksumEvery: 500, StartDelay: true},
		Local: []uint8{0}}, nil)
	require.NoError(t, err)
	return b
}

// sealed returns a datagram shaped like a sealed one: kind, packet
// number, body, and a MAC that differs from datagram to datagram.
func sealed(pn int) []byte {
	mac := uint32(pn+1) * 0x9e3779b1
	return []byte{byte(wire.KindInput)<<4 | byte(pn>>8&0x0f), byte(pn), 1, 2, 3, 4, 5, 6, 7, 8,
		byte(mac >> 24), byte(mac >> 16), byte(mac >> 8), byte(mac)}
}

// feed shows f a genuine exchange on link 0→1 and an earlier match's.
func feed(t *testing.T, f *offpath.Forger) (genuine [][]byte) {
	t.Helper()
	genuine = append(genuine, handshake(t, 111, 0))
	for pn := range 40 {
		genuine = append(genuine, sealed(pn))
	}
	for _, b := range genuine {
		f.Observe(0, 1, b)
	}
	f.LoadEarlier(0, 1, handshake(t, 999, 0))
	for pn := range 100 {
		b := sealed(pn)
		b[len(b)-1] ^= 0x55 // other keys
		f.LoadEarlier(0, 1, b)
	}
	return genuine
}

// TestForgerMakesEveryKind: with material, the kinds come in turn, each of
// its shape, and none is a genuine datagram.
func TestForgerMakesEveryKind(t *testing.T) {
	f, err := offpath.NewForger(1, 2, forgeSession)
	require.NoError(t, err)
	genuine := feed(t, f)
	const rounds = 2000
	var h wire.Handshake
	for i := range rounds * offpath.NumForgeKinds {
		b, k := f.Next(0, 1)
		require.Equal(t, offpath.ForgeKind(i%offpath.NumForgeKinds+1), k, "datagram %d", i)
		for _, g := range genuine {
			require.False(t, bytes.Equal(b, g), "a %v is an exact copy of a genuine datagram", k)
		}
		switch k {
		case offpath.ForgeRandom:
			assert.True(t, len(b) >= 1 && len(b) <= 1200, "random length %d", len(b))
		case offpath.ForgeTruncate:
			assert.Less(t, len(b), 14)
		case offpath.ForgeReplay:
			if wire.Kind(b[0]) != wire.KindHandshake {
				e := sealed(int(b[0]&0x0f)<<8 | int(b[1]))
				e[len(e)-1] ^= 0x55
				assert.Equal(t, e, b, "not from the earlier match")
			}
		case offpath.ForgeHandshake:
			require.NoError(t, wire.ParseHandshake(b, &h, nil))
			assert.Equal(t, uint64(forgeSession), h.SessionID)
			assert.NotZero(t, h.Nonce)
			assert.NotEqual(t, uint64(111), h.Echo, "echoes a nonce only the receiver knows")
			assert.Equal(t, []uint8{3, 8, 8}, h.Terms.Layout, "the terms are the genuine handshake's")
		}
	}
	for k := range offpath.NumForgeKinds {
		assert.Equal(t, int64(rounds), f.Count(offpath.ForgeKind(k+1)), offpath.ForgeKind(k+1).String())
	}
	assert.Equal(t, int64(rounds*offpath.NumForgeKinds), f.Total())
	assert.Zero(t, f.Count(0))
}

// TestForgerIsSeeded: the same seed and the same traffic give the same
// forgeries; another seed other ones.
func TestForgerIsSeeded(t *testing.T) {
	run := func(seed uint64) [][]byte {
		f, err := offpath.NewForger(seed, 2, forgeSession)
		require.NoError(t, err)
		feed(t, f)
		var out [][]byte
		for range 60 {
			b, _ := f.Next(0, 1)
			out = append(out, bytes.Clone(b))
		}
		return out
	}
	assert.Equal(t, run(7), run(7))
	assert.NotEqual(t, run(7), run(8))
}

// TestForgerWithoutMaterial: with nothing observed, the copies give way to
// kinds it can make; a handshake that echoes a nonce is never kept to
// copy, since an off-path attacker could not have it.
func TestForgerWithoutMaterial(t *testing.T) {
	f, err := offpath.NewForger(1, 3, forgeSession)
	require.NoError(t, err)
	f.Observe(0, 1, handshake(t, 111, 222))
	for range 600 {
		b, k := f.Next(0, 1)
		require.NotNil(t, b)
		assert.Contains(t, []offpath.ForgeKind{offpath.ForgeRandom, offpath.ForgeHandshake}, k)
	}
	assert.Positive(t, f.Count(offpath.ForgeRandom))
	assert.Positive(t, f.Count(offpath.ForgeHandshake))
	assert.Equal(t, int64(600), f.Total())
}

// TestForgerBadInput: nodes out of range are refused without a panic.
func TestForgerBadInput(t *testing.T) {
	_, err := offpath.NewForger(1, 1, 0)
	require.ErrorIs(t, err, netsim.ErrNodes)
	f, err := offpath.NewForger(1, 2, 0)
	require.NoError(t, err)
	for _, p := range [][2]int{{-1, 0}, {0, 2}, {1, 1}, {5, -3}} {
		f.Observe(p[0], p[1], []byte{1, 2, 3})
		f.LoadEarlier(p[0], p[1], []byte{1, 2, 3})
		b, k := f.Next(p[0], p[1])
		assert.Nil(t, b)
		assert.Zero(t, k)
	}
	f.Observe(0, 1, nil)
	f.Observe(0, 1, make([]byte, netsim.MTU+1))
	f.Observe(0, 1, []byte{byte(wire.KindHandshake), 0x97}) // a broken handshake
	assert.Zero(t, f.Total())
	assert.Equal(t, "invalid", offpath.ForgeKind(0).String())
}
