package rollback

import (
	"fmt"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// Layout gives the bit widths of an [Input]'s fields, lowest bits first.
// The INVERSUS input, for example, is Layout{3, 8, 8}: fire direction,
// thrust angle, thrust magnitude. Fields are delta-coded on the wire, so a
// layout that mirrors the game's controls keeps packets small. A layout has
// 1 to 64 fields of 1 to 64 bits, 64 bits in all at most.
type Layout []uint8

// Check reports whether l is a valid layout: an invalid one is a
// [*ConfigError] for Field "Layout".
func (l Layout) Check() error {
	if err := wire.Layout(l).Check(); err != nil {
		return cfgErr("Layout", "%v", err)
	}
	return nil
}

// Bits returns the total width of an input of this layout.
func (l Layout) Bits() int { return wire.Layout(l).Bits() }

// Mask returns the bits an input of this layout may use.
func (l Layout) Mask() Input { return Input(wire.Layout(l).Mask()) }

// Pack packs one value per field (fields[i] in the lowest bits after the
// fields before it) into an Input. It returns a [*ConfigError] when the
// layout is invalid, and an error wrapping [ErrInput] when
// the count of values differs from the layout's or a value does not fit its
// field.
func (l Layout) Pack(fields ...uint64) (Input, error) {
	if err := l.Check(); err != nil {
		return 0, err
	}
	if len(fields) != len(l) {
		return 0, fmt.Errorf("%w: %d values for %d layout fields", ErrInput, len(fields), len(l))
	}
	var in Input
	shift := 0
	for i, v := range fields {
		w := int(l[i])
		if w < 64 && v>>w != 0 {
			return 0, fmt.Errorf("%w: layout field %d value %d does not fit %d bits", ErrInput, i, v, w)
		}
		in |= Input(v) << shift
		shift += w
	}
	return in, nil
}

// Unpack appends the value of each field of in to dst and returns it; bits
// outside the layout are ignored. An invalid layout appends nothing.
func (l Layout) Unpack(dst []uint64, in Input) []uint64 {
	if l.Check() != nil {
		return dst
	}
	for _, w := range l {
		if w >= 64 {
			return append(dst, uint64(in))
		}
		dst = append(dst, uint64(in)&(1<<w-1))
		in >>= w
	}
	return dst
}
