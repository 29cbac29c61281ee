package netlog

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// A line is read by hand rather than by json.Unmarshal, once json.Valid
// (which allocates nothing) has accepted it: Unmarshal allocates some 150
// bytes a call whatever the line, 50 times the size of a line "{}", and
// would decode lists nobody reads (a send record's inputs). Here a line
// costs what Read keeps of it and nothing more. It reads what Unmarshal
// would into the fields below, with the same rules (a name matches
// whatever its case, the last of a name counts, a value of the wrong type
// is an error): a test compares the two on the fuzzer's lines.

// record is what Read takes from a line: the raw values (as in the line)
// of the members it knows, nil for those absent, and the first value of
// the wrong type.
type record struct {
	msg, frame, in, st, sum, peer, local, remote, to []byte
	err                                              error
}

// parse fills r from b, which json.Valid accepted; it returns false if b
// is not an object (or null, which Unmarshal takes for an empty one). A
// value of the wrong type leaves r.err set.
func (r *record) parse(b []byte) bool {
	*r = record{}
	i := space(b, 0)
	if i < len(b) && b[i] == 'n' {
		return true
	}
	if i == len(b) || b[i] != '{' {
		return false
	}
	for i = space(b, i+1); b[i] != '}'; i = space(b, i) {
		if b[i] == ',' {
			i = space(b, i+1)
		}
		k := i
		i = endString(b, i)
		key := b[k+1 : i-1]
		i = space(b, space(b, i)+1) // past the colon
		v := i
		i = endValue(b, i)
		r.set(key, b[v:i])
	}
	return true
}

// set records the value of the member named key (as in the line, escapes
// and all), as Unmarshal would into the record's fields: a string or an
// int (msg, st, sum, local, remote, to) keeps its value through a null, a
// pointer (frame, peer) or a list (in) does not.
func (r *record) set(key, val []byte) {
	var buf [64]byte
	if bytes.IndexByte(key, '\\') >= 0 {
		if len(key) > len(buf) {
			return // not one of the names below, however escaped
		}
		key = unescape(buf[:0], key)
	}
	for _, m := range [...]struct {
		name   string
		val    *[]byte
		ok     func([]byte) bool
		byNull bool // a null clears it
	}{
		{"msg", &r.msg, isString, false}, {"frame", &r.frame, isInt, true}, {"in", &r.in, isUints, true},
		{"st", &r.st, isString, false}, {"sum", &r.sum, isString, false}, {"peer", &r.peer, isInt, true},
		{"local", &r.local, isString, false}, {"remote", &r.remote, isString, false}, {"to", &r.to, isInt, false},
	} {
		if !bytes.EqualFold(key, []byte(m.name)) {
			continue
		}
		switch {
		case !m.ok(val):
			if r.err == nil {
				r.err = fmt.Errorf("%q is %s, not of its type", m.name, kind(val))
			}
		case isNull(val) && !m.byNull:
		default:
			*m.val = val
		}
		return
	}
}

// kind names the kind of a JSON value.
func kind(v []byte) string {
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a bool"
	case 'n':
		return "null"
	default:
		return "the number " + strconv.Quote(string(v[:min(len(v), 32)]))
	}
}

func isNull(v []byte) bool   { return v[0] == 'n' }
func isString(v []byte) bool { return isNull(v) || v[0] == '"' }

func isInt(v []byte) bool {
	_, _, ok := integer(v)
	return ok
}

func isUints(v []byte) bool {
	return isNull(v) || (v[0] == '[' && eachUint(v, func(uint64) {}) >= 0)
}

// text returns a string value (null: ""), unescaped.
func text(v []byte) string {
	if v == nil || isNull(v) {
		return ""
	}
	s := v[1 : len(v)-1]
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s)
	}
	return string(unescape(make([]byte, 0, len(s)), s))
}

// integer returns an int value; present is false for null (or absent).
func integer(v []byte) (n int, present, ok bool) {
	if v == nil || isNull(v) {
		return 0, false, true
	}
	n, err := strconv.Atoi(string(v))
	return n, true, err == nil
}

// eachUint calls f with each element of an array of unsigned integers
// (null: none) and returns their number, or -1 if an element is not one.
func eachUint(v []byte, f func(uint64)) int {
	if isNull(v) {
		return 0
	}
	n := 0
	for i := space(v, 1); v[i] != ']'; i = space(v, i) {
		if v[i] == ',' {
			i = space(v, i+1)
		}
		e := i
		i = endValue(v, i)
		u, err := strconv.ParseUint(string(v[e:i]), 10, 64)
		if err != nil && !isNull(v[e:i]) { // Unmarshal leaves a null element zero
			return -1
		}
		f(u)
		n++
	}
	return n
}

// space returns the offset of the first byte from i on that is not JSON
// white space.
func space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// endString returns the offset after the string starting at b[i].
func endString(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// endValue returns the offset after the value starting at b[i].
func endValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return endString(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = endString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	default: // a number, true, false or null
		for i < len(b) && strings.IndexByte(",}] \t\n\r", b[i]) < 0 {
			i++
		}
		return i
	}
}

// unescape appends the string s (between its quotes) to dst, unescaped as
// Unmarshal does: a bad surrogate or bad UTF-8 becomes U+FFFD.
func unescape(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			e := s[i+1]
			i += 2
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(s[i:])
				i += 4
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						r2 = hex4(s[i+2:])
					}
					if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
						r = d
						i += 6
					} else {
						r = unicode.ReplacementChar
					}
				}
				dst = utf8.AppendRune(dst, r)
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = utf8.AppendRune(dst, r)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
		}
	}
	return dst
}

// hex4 decodes the four hex digits that start s (the scanner has checked
// them), or returns -1 if s is shorter.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	v, err := strconv.ParseUint(string(s[:4]), 16, 32)
	if err != nil {
		return -1
	}
	return rune(v)
}
