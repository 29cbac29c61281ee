package replay

import (
	"errors"
	"fmt"
	"math"
)

// A block is decoded by hand rather than through the codec, so that what
// decoding allocates is known. The codec would take a list's length from
// the file and grow the list an element at a time past its first 64,
// allocating some 80 bytes for each byte of the file; here a list longer
// than any block holds is refused before anything is allocated for it, a
// list is never allocated beyond what the bytes left could hold, and the
// block's lists are reused from one block to the next. The record is still
// encoded again by the codec and compared with the file's bytes (see
// decoder.check), so what this accepts is exactly what the writer writes.

// errShort reports a record that runs past the end of the file.
var errShort = errors.New("short")

// unpacker reads msgpack values from b at off. The first error sticks:
// after it every read returns zero values.
type unpacker struct {
	b   []byte
	off int
	err error
}

func (u *unpacker) fail(err error) {
	if u.err == nil {
		u.err = err
	}
}

// take returns the next n bytes, or nil when they are not all there.
func (u *unpacker) take(n int) []byte {
	if u.err != nil {
		return nil
	}
	if n > len(u.b)-u.off {
		u.fail(errShort)
		u.off = len(u.b)
		return nil
	}
	s := u.b[u.off : u.off+n]
	u.off += n
	return s
}

// big reads an n-byte big-endian unsigned integer.
func (u *unpacker) big(n int) uint64 {
	var v uint64
	for _, c := range u.take(n) {
		v = v<<8 | uint64(c)
	}
	return v
}

// integer reads an integer in any of msgpack's encodings: a uint64, or,
// when neg, an int64 below zero (as its bits).
func (u *unpacker) integer() (v uint64, neg bool) {
	t := u.take(1)
	if t == nil {
		return 0, false
	}
	switch c := t[0]; {
	case c <= 0x7f: // positive fixint
		return uint64(c), false
	case c >= 0xe0: // negative fixint
		return uint64(int64(int8(c))), true
	case c >= 0xcc && c <= 0xcf: // uint 8, 16, 32, 64
		return u.big(1 << (c - 0xcc)), false
	case c >= 0xd0 && c <= 0xd3: // int 8, 16, 32, 64
		n := 1 << (c - 0xd0)
		shift := 64 - 8*n
		s := int64(u.big(n)<<shift) >> shift
		return uint64(s), s < 0
	default:
		u.fail(fmt.Errorf("byte %#x at offset %d: not an integer", c, u.off-1))
		return 0, false
	}
}

func (u *unpacker) uint64() uint64 {
	v, neg := u.integer()
	if neg {
		u.fail(fmt.Errorf("%d at offset %d: negative", int64(v), u.off-1))
		return 0
	}
	return v
}

func (u *unpacker) int32() int32 {
	v, neg := u.integer()
	if (neg && int64(v) < math.MinInt32) || (!neg && v > math.MaxInt32) {
		u.fail(fmt.Errorf("integer before offset %d out of range", u.off))
		return 0
	}
	return int32(v)
}

func (u *unpacker) bool() bool {
	t := u.take(1)
	if t != nil && t[0] != 0xc2 && t[0] != 0xc3 {
		u.fail(fmt.Errorf("byte %#x at offset %d: not a bool", t[0], u.off-1))
	}
	return t != nil && t[0] == 0xc3
}

// array reads an array's header: its length, or nil for msgpack's nil.
func (u *unpacker) array() (n uint64, isNil bool) {
	t := u.take(1)
	if t == nil {
		return 0, false
	}
	switch c := t[0]; {
	case c == 0xc0:
		return 0, true
	case c >= 0x90 && c <= 0x9f:
		return uint64(c & 0x0f), false
	case c == 0xdc:
		return u.big(2), false
	case c == 0xdd:
		return u.big(4), false
	default:
		u.fail(fmt.Errorf("byte %#x at offset %d: not an array", c, u.off-1))
		return 0, false
	}
}

// list reads an array of at most most elements (what, in an error) into
// s, reusing its storage; msgpack's nil gives a nil slice, an empty array
// an empty one, as the codec does.
func list[T any](u *unpacker, s []T, most int, what string, elem func(*unpacker) T) []T {
	n, isNil := u.array()
	switch {
	case u.err != nil:
		return s[:0]
	case isNil:
		return nil
	case n > uint64(most):
		u.fail(fmt.Errorf("%d %s: a block holds at most %d", n, what, most))
		return s[:0]
	case n > uint64(len(u.b)-u.off): // each element takes a byte at least
		u.fail(errShort)
		return s[:0]
	}
	if s == nil {
		s = make([]T, 0, n)
	}
	s = grow(s[:0], int(n))
	for range n {
		s = append(s, elem(u))
	}
	return s
}

// block reads a block of a replay of players players into b, reusing its
// lists' storage.
func (u *unpacker) block(b *block, players int) {
	if n, _ := u.array(); u.err == nil && n != 7 {
		u.fail(fmt.Errorf("an array of %d values, not a block's 7", n))
	}
	b.First = u.int32()
	b.Count = u.int32()
	b.Runs = list(u, b.Runs, 2*BlockFrames*players, "input values", (*unpacker).uint64)
	b.Left = list(u, b.Left, 2*players, "disconnect values", (*unpacker).int32)
	b.Sums = list(u, b.Sums, maxBlockSums, "checksum values", (*unpacker).uint64)
	b.End = u.bool()
	b.Hash = u.uint64()
}
