package wire

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// SessionTag derives the 16-bit session tag that every datagram after the
// handshake carries, from the session id and both machines' nonces (in
// either order); 0 is reserved for handshakes.
func SessionTag(session uint64, a, b uint32) uint16 {
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:], session)
	binary.LittleEndian.PutUint32(buf[8:], min(a, b))
	binary.LittleEndian.PutUint32(buf[12:], max(a, b))
	t := uint16(xxhash.Sum64(buf[:]))
	if t == 0 {
		t = 1
	}
	return t
}
