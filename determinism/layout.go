package determinism

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/rewindgg/rewind/savestate"
)

// stateLayout describes where an arena's scalar fields are, so that a state
// written by another platform, whose Go struct layout may differ (386
// aligns 64-bit fields to 4 bytes, amd64 to 8), can be compared with this
// platform's field by field rather than byte by byte.
type stateLayout struct {
	BigEndian bool        `json:"big_endian,omitempty"`
	Used      int         `json:"used"`   // the arena's used bytes
	Allocs    []allocDesc `json:"allocs"` // in allocation order
	Fields    []scalar    `json:"fields"` // in region order
}

// allocDesc is one allocation of an arena.
type allocDesc struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
}

// scalar is one scalar field of an arena's values: its path as
// savestate names it ("arena.World.Ships[1].X"), its offset in the region,
// its size and kind.
type scalar struct {
	Path string `json:"p"`
	Off  int    `json:"o"`
	Size int    `json:"s"`
	Kind string `json:"k"` // "int", "uint", "float" or "bool" (a complex number is two floats)
}

// Describe returns the layout of a's current region.
func describe(a *savestate.Arena) stateLayout {
	var probe [2]byte
	binary.NativeEndian.PutUint16(probe[:], 1)
	l := stateLayout{BigEndian: probe[0] == 0, Used: a.Used()}
	for _, al := range a.Allocations() {
		l.Allocs = append(l.Allocs, allocDesc{Type: al.Type.String(), Offset: al.Offset, Size: al.Size})
		flatten(al.Type, al.Offset, al.Type.String(), &l.Fields)
	}
	return l
}

func flatten(t reflect.Type, off int, path string, out *[]scalar) {
	switch t.Kind() {
	case reflect.Array:
		es := int(t.Elem().Size())
		for i := range t.Len() {
			flatten(t.Elem(), off+i*es, fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			flatten(f.Type, off+int(f.Offset), path+"."+f.Name, out)
		}
	default:
		kind := ""
		switch t.Kind() {
		case reflect.Bool:
			kind = "bool"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			kind = "int"
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			kind = "uint"
		case reflect.Float32, reflect.Float64:
			kind = "float"
		case reflect.Complex64, reflect.Complex128:
			h := int(t.Size()) / 2 // two floats
			*out = append(*out, scalar{Path: path + ".real", Off: off, Size: h, Kind: "float"},
				scalar{Path: path + ".imag", Off: off + h, Size: h, Kind: "float"})
			return
		default:
			return // savestate admits no other kind
		}
		*out = append(*out, scalar{Path: path, Off: off, Size: int(t.Size()), Kind: kind})
	}
}

// Same reports whether two layouts place every field alike: then states
// can be compared byte by byte.
func (l stateLayout) Same(o stateLayout) bool {
	return l.BigEndian == o.BigEndian && l.Used == o.Used && slices.Equal(l.Allocs, o.Allocs) && slices.Equal(l.Fields, o.Fields)
}

// Differences describes how o, another platform's layout, differs from
// l's: the first allocation whose size or place differs, or "".
func (l stateLayout) Differences(o stateLayout) string {
	for i := range min(len(l.Allocs), len(o.Allocs)) {
		if a, b := l.Allocs[i], o.Allocs[i]; a != b {
			return fmt.Sprintf("%s is %d bytes at offset %d here, %d bytes at %d on the host", a.Type, a.Size, a.Offset, b.Size, b.Offset)
		}
	}
	if len(l.Allocs) != len(o.Allocs) {
		return fmt.Sprintf("%d allocations here, %d on the host", len(l.Allocs), len(o.Allocs))
	}
	if l.BigEndian != o.BigEndian {
		return "byte order differs"
	}
	for i := range min(len(l.Fields), len(o.Fields)) {
		if a, b := l.Fields[i], o.Fields[i]; a != b {
			return fmt.Sprintf("%s is %d bytes at offset %d here, %d bytes at %d on the host", a.Path, a.Size, a.Off, b.Size, b.Off)
		}
	}
	return ""
}

// fieldComparer compares states of two layouts field by field, by path.
type fieldComparer struct {
	local, ref stateLayout
	pairs      []fieldPair // in the reference's field order
	extra      int         // local fields the reference lacks
}

type fieldPair struct {
	ref, local scalar
	present    bool // local is there
	ok         bool // and of the same kind
}

// newFieldComparer prepares the comparison of states in layout local with
// states in layout ref (the host's).
func newFieldComparer(local, ref stateLayout) *fieldComparer {
	c := &fieldComparer{local: local, ref: ref}
	mine := make(map[string]scalar, len(local.Fields))
	for _, s := range local.Fields {
		mine[s.Path] = s
	}
	seen := 0
	for _, r := range ref.Fields {
		s, ok := mine[r.Path]
		if ok {
			seen++
		}
		c.pairs = append(c.pairs, fieldPair{ref: r, local: s, present: ok, ok: ok && s.Kind == r.Kind})
	}
	c.extra = len(local.Fields) - seen
	return c
}

// Compare compares local, a state in the local layout, with ref, one in
// the reference's, field by field (padding ignored), and returns the first
// field that differs, as desync.Compare does ("path: ours vs theirs"), and
// how many differ.
func (c *fieldComparer) Compare(local, ref []byte) (first string, fields int) {
	for _, p := range c.pairs {
		if p.ok {
			a, aok := p.local.bits(local, c.local.BigEndian)
			b, bok := p.ref.bits(ref, c.ref.BigEndian)
			if aok && bok && a == b {
				continue
			}
		}
		fields++
		if first != "" {
			continue
		}
		here := "(absent here)"
		if p.present {
			here = p.local.format(local, c.local.BigEndian)
		}
		first = fmt.Sprintf("%s: %s vs %s", p.ref.Path, here, p.ref.format(ref, c.ref.BigEndian))
	}
	if c.extra > 0 {
		fields += c.extra
		if first == "" {
			first = fmt.Sprintf("%d fields here that the host does not have", c.extra)
		}
	}
	return first, fields
}

// bits reads the field from region as a number whose equality is the
// field's: integers sign- or zero-extended to 64 bits (so an int of 4
// bytes equals one of 8 with the same value), floats as float64 bits.
func (s scalar) bits(region []byte, big bool) (uint64, bool) {
	switch {
	case s.Size != 1 && s.Size != 2 && s.Size != 4 && s.Size != 8, s.Off < 0, s.Off > len(region)-s.Size:
		return 0, false // (a layout from a file is a claim: never trusted to index)
	}
	var order binary.ByteOrder = binary.LittleEndian
	if big {
		order = binary.BigEndian
	}
	b := region[s.Off : s.Off+s.Size]
	word := func(b []byte) uint64 {
		switch len(b) {
		case 1:
			return uint64(b[0])
		case 2:
			return uint64(order.Uint16(b))
		case 4:
			return uint64(order.Uint32(b))
		case 8:
			return order.Uint64(b)
		}
		return 0
	}
	switch s.Kind {
	case "int":
		shift := 64 - 8*uint(s.Size)
		return uint64(int64(word(b)<<shift) >> shift), true
	case "float":
		if s.Size == 4 {
			return math.Float64bits(float64(math.Float32frombits(uint32(word(b))))), true
		}
		return word(b), true
	case "bool":
		if word(b) != 0 {
			return 1, true
		}
		return 0, true
	}
	return word(b), true
}

// format prints the field's value in region.
func (s scalar) format(region []byte, big bool) string {
	v, ok := s.bits(region, big)
	if !ok {
		return "?"
	}
	switch s.Kind {
	case "int":
		return fmt.Sprint(int64(v))
	case "float":
		return fmt.Sprint(math.Float64frombits(v))
	case "bool":
		return fmt.Sprint(v != 0)
	}
	return fmt.Sprint(v)
}
