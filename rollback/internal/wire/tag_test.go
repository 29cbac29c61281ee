package wire

import (
	"encoding/binary"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tagByHand is SessionTag's rule written out: the low 16 bits of xxhash64 over
// the session id and the two nonces, smaller first, little-endian.
func tagByHand(session uint64, lo, hi uint32) uint16 {
	b := binary.LittleEndian.AppendUint64(nil, session)
	b = binary.LittleEndian.AppendUint32(b, lo)
	b = binary.LittleEndian.AppendUint32(b, hi)
	return uint16(xxhash.Sum64(b))
}

// TestSessionTag: the same tag on both sides, whichever nonce is whose, and
// never 0 (reserved for handshakes).
func TestSessionTag(t *testing.T) {
	cases := []struct {
		session uint64
		a, b    uint32
	}{
		{session: 1, a: 7, b: 9},
		{session: 1, a: 9, b: 7},
		{session: 0xdeadbeef, a: 1, b: 1<<32 - 1},
		{session: 0, a: 42, b: 42},
	}
	for _, tc := range cases {
		got := SessionTag(tc.session, tc.a, tc.b)
		assert.Equal(t, got, SessionTag(tc.session, tc.b, tc.a), "symmetric: %+v", tc)
		assert.Equal(t, tagByHand(tc.session, min(tc.a, tc.b), max(tc.a, tc.b)), got, "%+v", tc)
		assert.NotZero(t, got)
	}
	assert.NotEqual(t, SessionTag(1, 7, 9), SessionTag(2, 7, 9), "the session id counts")
	assert.NotEqual(t, SessionTag(1, 7, 9), SessionTag(1, 7, 10), "each nonce counts")

	// Find nonces whose hash has 16 zero low bits: the tag is 1 instead.
	found := false
	for n := uint32(1); n < 1<<22 && !found; n++ {
		if tagByHand(5, 3, n+3) == 0 {
			found = true
			assert.Equal(t, uint16(1), SessionTag(5, 3, n+3))
			assert.Equal(t, uint16(1), SessionTag(5, n+3, 3))
		}
	}
	require.True(t, found, "no nonce pair with a zero hash found")
}
