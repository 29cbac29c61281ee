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
// and nothing after the last. From a machine, a record may instead be a
// copy record, which spells its datagram partly as a copy of bytes earlier
// in the same envelope (the same signed statement a session sends every
// peer, under each pair's seal):
//
//	1 byte:   copySlot
//	1 byte:   the destination's slot
//	uvarint:  the length of the rest of the record
//	uvarint:  p, then p bytes: the datagram's first bytes
//	uvarint:  back, the distance from this record's first byte back to the copy's first
//	uvarint:  n, the copy's length, 1 to back: the datagram's next n bytes
//	…         the datagram's last bytes (the rest of the record)
//
// A copy record whose length is 0 is a reseal record instead:
//
//	1 byte:   copySlot
//	1 byte:   the destination's slot
//	1 byte:   0
//	2 bytes:  the datagram's first two bytes
//	4 bytes:  its last four
//
// and the datagram between them is the previous record's, which must be a
// plain or reseal record of at least resealEnds+1 bytes: a sealed datagram
// (header, then body, then MAC) whose body is the same for several peers,
// as a session's input packets often are. A short reseal record is the
// same for the slot after the previous record's (the sender's own
// skipped), as a session's next peer is:
//
//	1 byte:   resealNext
//	2 bytes:  the datagram's first two bytes
//	4 bytes:  its last four
//
// The relay rebuilds the datagram byte for byte and forwards it as a plain
// record: the session's seal covers it, so a wrong rebuild is a datagram
// the receiver drops, never one it takes. The relay never sends copy
// records. An envelope is checked whole before any of its records is used:
// one that ends early, names a slot out of range (or its own sender's),
// holds an empty record, uses a longer form of a number than needed, or a
// copy that does not lie before its record (or, to a machine, any copy
// record) is dropped.
const envelopeKind = 0xe1

// copySlot marks a copy record, resealNext a short reseal record: never
// slots (MaxSlots is 254, so slots are 0 to 253).
const (
	copySlot   = 0xff
	resealNext = 0xfe
)

// resealHead and resealTail are the bytes a reseal record replaces at
// either end of the previous datagram: a sealed datagram's header and MAC
// (rollback/internal/wire, seal.go); resealEnds both.
const (
	resealHead     = 2
	resealTail     = 4
	resealEnds     = resealHead + resealTail
	resealSize     = 3 + resealEnds // a reseal record's length
	resealNextSize = 1 + resealEnds // a short one's
)

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

// MaxSlots bounds a relay's machines: a slot is one byte, and 0xfe and
// 0xff mark other records.
const MaxSlots = 254

// Errors returned by the package.
var (
	// ErrSlot: a slot or peer out of range.
	ErrSlot = errors.New("relay: no such slot")
	// ErrTooLarge: a datagram longer than a Client can carry.
	ErrTooLarge = errors.New("relay: datagram too large")
	// ErrConfig: an invalid Config.
	ErrConfig = errors.New("relay: invalid config")
)

// record is one record of an envelope: its slot and its datagram, which is
// lit, then src, then tail (a plain record's is lit alone; a copy record's
// src aliases the envelope's earlier bytes).
type record struct {
	slot           int
	lit, src, tail []byte
	reseal         bool // a reseal record: src is the previous datagram's middle
}

// middle returns what a reseal record after r takes of r's datagram, given
// mid, what it would take of the record before r; nil for nothing.
func (r *record) middle(mid []byte) []byte {
	switch {
	case r.reseal:
		return mid
	case r.src == nil && len(r.lit) > resealEnds:
		return r.lit[resealHead : len(r.lit)-resealTail]
	}
	return nil
}

// size is the length of r's datagram.
func (r *record) size() int { return len(r.lit) + len(r.src) + len(r.tail) }

// appendRecord appends one plain record to an envelope being built.
func appendRecord(env []byte, slot int, b []byte) []byte {
	env = append(env, byte(slot))
	env = binary.AppendUvarint(env, uint64(len(b)))
	return append(env, b...)
}

// appendRebuilt appends record r as a plain record from slot: its datagram
// rebuilt whole.
func appendRebuilt(env []byte, slot int, r *record) []byte {
	env = append(env, byte(slot))
	env = binary.AppendUvarint(env, uint64(r.size()))
	return append(append(append(env, r.lit...), r.src...), r.tail...)
}

// uvarintLen is the length of v's uvarint.
func uvarintLen(v int) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// appendCopy appends a copy record to env for slot: datagram b spelled as
// b[:j], then env[at:at+n], then b[j+n:].
func appendCopy(env []byte, slot int, b []byte, j, at, n int) []byte {
	back := len(env) - at
	rest := uvarintLen(j) + j + uvarintLen(back) + uvarintLen(n) + len(b) - j - n
	env = append(env, copySlot, byte(slot))
	env = binary.AppendUvarint(env, uint64(rest))
	env = binary.AppendUvarint(env, uint64(j))
	env = append(env, b[:j]...)
	env = binary.AppendUvarint(env, uint64(back))
	env = binary.AppendUvarint(env, uint64(n))
	return append(env, b[j+n:]...)
}

// copySize is the length of the copy record appendCopy would append for a
// datagram of size bytes at position pos of an envelope.
func copySize(size, j, at, n, pos int) int {
	rest := uvarintLen(j) + j + uvarintLen(pos-at) + uvarintLen(n) + size - j - n
	return 2 + uvarintLen(rest) + rest
}

// uvarint reads a number of at most two bytes at the start of b, in its
// shortest form only (one envelope, one reading); w is 0 when there is
// none.
func uvarint(b []byte) (v, w int) {
	switch {
	case len(b) >= 1 && b[0] < 0x80:
		return int(b[0]), 1
	case len(b) >= 2 && b[1] < 0x80 && b[1] != 0:
		return int(b[0]&0x7f) | int(b[1])<<7, 2
	}
	return 0, 0
}

// nextRecord reads the record at position pos of envelope env into r and
// returns the position after it. ok is false when no well-formed record
// starts there whose slot is below slots and is not self, or when it is a
// copy or reseal record and copies is false. mid is the previous record's
// middle (record.middle), prev its slot (-1 for none).
func nextRecord(env []byte, pos, slots, self int, copies bool, mid []byte, prev int, r *record) (next int, ok bool) {
	if len(env)-pos < 2 {
		return 0, false
	}
	slot := int(env[pos])
	if slot == resealNext && copies {
		slot = nextSlot(prev, self)
		if prev < 0 || slot >= slots || mid == nil || len(env)-pos < resealNextSize {
			return 0, false
		}
		*r = record{slot: slot, lit: env[pos+1 : pos+1+resealHead], src: mid, tail: env[pos+1+resealHead : pos+resealNextSize], reseal: true}
		return pos + resealNextSize, true
	}
	if slot == copySlot && copies {
		return nextCopy(env, pos, slots, self, mid, r)
	}
	n, w := uvarint(env[pos+1:])
	start := pos + 1 + w
	if w == 0 || n == 0 || n > maxPayload || len(env)-start < n || slot >= slots || slot == self {
		return 0, false
	}
	*r = record{slot: slot, lit: env[start : start+n]}
	return start + n, true
}

// nextSlot is the slot a short reseal record after a record for slot prev
// goes to, from the machine in slot self.
func nextSlot(prev, self int) int {
	if prev+1 == self {
		return prev + 2
	}
	return prev + 1
}

// nextCopy is nextRecord for a copy or reseal record.
func nextCopy(env []byte, pos, slots, self int, mid []byte, r *record) (next int, ok bool) {
	rest := env[pos:]
	if len(rest) < 3 {
		return 0, false
	}
	slot := int(rest[1])
	size, w := uvarint(rest[2:])
	if w == 0 || len(rest)-2-w < size || slot >= slots || slot == self {
		return 0, false
	}
	if size == 0 { // a reseal record
		if len(rest) < resealSize || mid == nil {
			return 0, false
		}
		*r = record{slot: slot, lit: rest[3 : 3+resealHead], src: mid, tail: rest[3+resealHead : resealSize], reseal: true}
		return pos + resealSize, true
	}
	next = pos + 2 + w + size
	body := rest[2+w : 2+w+size]
	p, w := uvarint(body)
	if w == 0 || len(body)-w < p {
		return 0, false
	}
	lit, body := body[w:w+p], body[w+p:]
	back, w := uvarint(body)
	if w == 0 {
		return 0, false
	}
	n, w2 := uvarint(body[w:])
	// The copy is whole, and lies before its record and after the kind byte.
	if w2 == 0 || n == 0 || n > back || back > pos-1 {
		return 0, false
	}
	*r = record{slot: slot, lit: lit, src: env[pos-back : pos-back+n], tail: body[w+w2:]}
	if r.size() > maxPayload {
		return 0, false
	}
	return next, true
}

// checkEnvelope reports whether env is a well-formed envelope with at least
// one record (none is allowed after a clock section), every slot below
// slots and none self; copy records only when copies, and then its
// datagrams, rebuilt, at most maxRebuilt(slots, len(env)) bytes in all.
// It returns the clock section (nil for an envelope without one) and the
// position of the first record.
func checkEnvelope(env []byte, slots, self int, copies bool) (sec []byte, start int, ok bool) {
	if len(env) < 2 {
		return nil, 0, false
	}
	switch env[0] {
	case envelopeKind:
		start = 1
	case clockKind:
		n, w := uvarint(env[1:])
		if w == 0 || len(env)-1-w < n {
			return nil, 0, false
		}
		start = 1 + w + n
		sec = env[1+w : start]
	default:
		return nil, 0, false
	}
	if start == len(env) && env[0] == envelopeKind {
		return nil, 0, false
	}
	var mid []byte
	var r record
	total, prev := 0, -1
	for pos := start; pos < len(env); {
		next, ok := nextRecord(env, pos, slots, self, copies, mid, prev, &r)
		if !ok {
			return nil, 0, false
		}
		pos, mid, prev, total = next, r.middle(mid), r.slot, total+r.size()
	}
	return sec, start, !copies || total <= maxRebuilt(slots, len(env))
}

// maxRebuilt bounds what the relay sends for an envelope of n bytes from
// a machine of a match of slots machines: each of the others once. So the
// relay never sends on a machine's behalf more than the machine would have
// sent them in the mesh: copies are no amplifier (a reseal record of 7
// bytes may stand for 1,396).
func maxRebuilt(slots, n int) int { return (slots - 1) * n }
