package relay

import (
	"encoding/binary"
	"errors"
)

// An envelope is one datagram between a machine and the relay. Its first
// byte is envelopeKind; then come records, each
//
//	1 byte:   a slot (the destination, from a machine; the sender, from the relay)
//	uvarint:  the length of the datagram, 1 to MaxDatagram
//	…         the datagram, byte for byte as the session sealed it
//
// and nothing after the last. An envelope is checked whole before any of
// its records is used: one that ends early, names a slot out of range (or
// its own sender's), or holds an empty record is dropped.
const envelopeKind = 0xe1

// recordOverhead is the most an envelope adds to a datagram it carries: the
// slot and a two-byte length (a datagram of 128 bytes or more).
const recordOverhead = 3

// MaxDatagram is the largest envelope the relay and its clients send, and
// so the largest datagram a Client carries (less envelopeOverhead).
// rollback sessions send at most 1,200 bytes; the UDP transport and netsim
// carry 1,400.
const MaxDatagram = 1400

// maxPayload is the largest datagram one envelope can carry.
const maxPayload = MaxDatagram - 1 - recordOverhead

// MaxSlots bounds a relay's machines: a slot is one byte.
const MaxSlots = 255

// Errors returned by the package.
var (
	// ErrSlot: a slot or peer out of range.
	ErrSlot = errors.New("relay: no such slot")
	// ErrTooLarge: a datagram longer than a Client can carry.
	ErrTooLarge = errors.New("relay: datagram too large")
	// ErrConfig: an invalid Config.
	ErrConfig = errors.New("relay: invalid config")
)

// appendRecord appends one record to an envelope being built.
func appendRecord(env []byte, slot int, b []byte) []byte {
	env = append(env, byte(slot))
	env = binary.AppendUvarint(env, uint64(len(b)))
	return append(env, b...)
}

// nextRecord reads the record at the start of rest, an envelope's body
// past its kind byte: its slot, its datagram and what follows it. ok is
// false when rest does not start with a well-formed record whose slot is
// below slots and is not self.
func nextRecord(rest []byte, slots, self int) (slot int, b, after []byte, ok bool) {
	if len(rest) < 2 {
		return 0, nil, nil, false
	}
	slot = int(rest[0])
	n, w := binary.Uvarint(rest[1:])
	// Only the shortest form of the length: one envelope, one reading.
	if w <= 0 || w > 2 || n == 0 || n > maxPayload || (w == 2 && n < 0x80) || uint64(len(rest)-1-w) < n {
		return 0, nil, nil, false
	}
	if slot >= slots || slot == self {
		return 0, nil, nil, false
	}
	start := 1 + w
	return slot, rest[start : start+int(n)], rest[start+int(n):], true
}

// checkEnvelope reports whether env is a well-formed envelope with at least
// one record, every slot below slots and none self.
func checkEnvelope(env []byte, slots, self int) bool {
	if len(env) < 1 || env[0] != envelopeKind {
		return false
	}
	rest := env[1:]
	if len(rest) == 0 {
		return false
	}
	for len(rest) > 0 {
		var ok bool
		if _, _, rest, ok = nextRecord(rest, slots, self); !ok {
			return false
		}
	}
	return true
}
