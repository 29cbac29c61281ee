package wire

import (
	"encoding/binary"
	"fmt"
)

// The control messages' bodies are msgpack arrays. This file is the small,
// strict subset of msgpack they use: integers (written in their smallest
// form), booleans, byte strings and arrays of unsigned integers. The
// reader accepts an integer in any of msgpack's integer forms but nothing
// else where an integer belongs (no nil, float, string or bool), checks
// every value against the field's range, and never allocates.

var (
	errType  = fmt.Errorf("%w: wrong msgpack type", ErrMalformed)
	errRange = fmt.Errorf("%w: value out of the field's range", ErrMalformed)
	errArity = fmt.Errorf("%w: array of the wrong length", ErrMalformed)
)

func appendInt(b []byte, v int64) []byte {
	switch {
	case v >= 0 && v <= 0x7f, v < 0 && v >= -32:
		return append(b, byte(v))
	case v >= -1<<7 && v < 1<<7:
		return append(b, 0xd0, byte(v))
	case v >= -1<<15 && v < 1<<15:
		return append(b, 0xd1, byte(v>>8), byte(v))
	case v >= -1<<31 && v < 1<<31:
		return append(b, 0xd2, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
}

func appendUint(b []byte, v uint64) []byte {
	switch {
	case v <= 0x7f:
		return append(b, byte(v))
	case v <= 0xff:
		return append(b, 0xcc, byte(v))
	case v <= 0xffff:
		return append(b, 0xcd, byte(v>>8), byte(v))
	case v <= 0xffffffff:
		return append(b, 0xce, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), v)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 0xc3)
	}
	return append(b, 0xc2)
}

// appendArray appends an array header of n elements.
func appendArray(b []byte, n int) []byte {
	if n < 16 {
		return append(b, 0x90|byte(n))
	}
	return append(b, 0xdc, byte(n>>8), byte(n))
}

// appendBytes appends a byte string (as a msgpack str, as the protocol has
// always written it); at most 65535 bytes.
func appendBytes(b, v []byte) []byte {
	if len(v) < 32 {
		b = append(b, 0xa0|byte(len(v)))
	} else {
		b = append(b, 0xda, byte(len(v)>>8), byte(len(v)))
	}
	return append(b, v...)
}

func appendUints(b []byte, v []uint32) []byte {
	b = appendArray(b, len(v))
	for _, x := range v {
		b = appendUint(b, uint64(x))
	}
	return b
}

// reader decodes a body; the first error sticks and every later read
// returns zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.fail(errTruncated)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if v := r.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) big(n int) uint64 {
	var v uint64
	for _, c := range r.take(n) {
		v = v<<8 | uint64(c)
	}
	return v
}

// array reads an array header of exactly n elements.
func (r *reader) array(n int) {
	if r.arrayLen(n) != n {
		r.fail(errArity)
	}
}

// arrayLen reads an array header of at most max elements.
func (r *reader) arrayLen(max int) int {
	var n int
	switch c := r.byte(); {
	case r.err != nil:
		return 0
	case c&0xf0 == 0x90:
		n = int(c & 0x0f)
	case c == 0xdc:
		n = int(r.big(2))
	default:
		r.fail(errType)
		return 0
	}
	if n > max {
		r.fail(errArity)
		return 0
	}
	return n
}

// integer reads any msgpack integer as a sign and magnitude.
func (r *reader) integer() (neg bool, mag uint64) {
	c := r.byte()
	switch {
	case r.err != nil:
		return false, 0
	case c <= 0x7f:
		return false, uint64(c)
	case c >= 0xe0:
		return true, uint64(-int64(int8(c)))
	case c >= 0xcc && c <= 0xcf:
		return false, r.big(1 << (c - 0xcc))
	case c >= 0xd0 && c <= 0xd3:
		v := r.big(1 << (c - 0xd0))
		shift := 64 - 8*(1<<(c-0xd0))
		s := int64(v<<shift) >> shift // sign-extend
		if s < 0 {
			return true, uint64(-s)
		}
		return false, uint64(s)
	}
	r.fail(errType)
	return false, 0
}

// uint reads an unsigned integer of at most max.
func (r *reader) uint(max uint64) uint64 {
	neg, v := r.integer()
	if neg && v != 0 || v > max {
		r.fail(errRange)
		return 0
	}
	return v
}

// int reads a signed integer in [min, max].
func (r *reader) int(min, max int64) int64 {
	neg, m := r.integer()
	if r.err != nil {
		return 0
	}
	if !neg && m > uint64(max) || neg && m > uint64(-min) {
		r.fail(errRange)
		return 0
	}
	if neg {
		return -int64(m)
	}
	return int64(m)
}

func (r *reader) bool() bool {
	switch c := r.byte(); {
	case r.err != nil:
		return false
	case c == 0xc2 || c == 0xc3:
		return c == 0xc3
	}
	r.fail(errType)
	return false
}

// bytes reads a byte string (msgpack str or bin) of at most max bytes; the
// result aliases the datagram.
func (r *reader) bytes(max int) []byte {
	var n int
	switch c := r.byte(); {
	case r.err != nil:
		return nil
	case c&0xe0 == 0xa0:
		n = int(c & 0x1f)
	case c == 0xd9 || c == 0xc4:
		n = int(r.big(1))
	case c == 0xda || c == 0xc5:
		n = int(r.big(2))
	default:
		r.fail(errType)
		return nil
	}
	if n > max {
		r.fail(errRange)
		return nil
	}
	return r.take(n)
}

// uints reads an array of at most max unsigned 32-bit integers into dst.
func (r *reader) uints(dst []uint32, max int) []uint32 {
	n := r.arrayLen(max)
	dst = dst[:0]
	for range n {
		dst = append(dst, uint32(r.uint(1<<32-1)))
	}
	return dst
}
