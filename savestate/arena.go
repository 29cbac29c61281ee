// Package savestate holds a game's whole simulation state in one contiguous
// arena, so that saving and restoring it is a memory copy.
//
// An [Arena] is one allocation split into three regions of equal size: the
// live region, where the game's state lives and changes, and two snapshot
// regions; each further snapshot region (a rollback session uses a third
// with three or more machines, and a ring of them when its adaptive
// snapshot policy saves often) is allocated on its first [Arena.Save].
// [Alloc] places pointer-free values in the live region and returns
// a [Handle], an offset that stays valid across [Arena.Save] and
// [Arena.Restore]. Because nothing in the arena is a Go pointer, a restore can
// never leave a dangling reference and the garbage collector never scans it.
//
// [Arena.Enter] points the arena at a snapshot region instead of the live
// one, so that a game can be stepped inside a snapshot: a rollback session
// uses it to move its oldest snapshot forward without copying. [Arena.Fork]
// points it at a throwaway copy of the live state, to render a frame
// extrapolated ahead without a restore afterwards. A game must
// therefore fetch its values through handles at the start of each step and
// not keep Go pointers into the arena from one step to the next.
//
// The arena records every allocation (its type, offset and size) inside the
// live region itself, so its bookkeeping rolls back with the state, and so a
// byte offset can be named as a field path such as "World.Ships[1].X" when two
// peers' states differ.
package savestate

import (
	"errors"
	"fmt"
	"github.com/rewindgg/rewind/internal/memcopy"
	"reflect"
	"unsafe"
)

// DefaultSize is the size of the live region when [New] is given 0: 1 MiB.
const DefaultSize = 1 << 20

// Slots is the number of snapshot regions an arena can hold: the first
// two are part of the arena's one allocation, each of the others is
// allocated on its first [Arena.Save], so an arena costs only the regions
// it uses. 67 is enough for a ring saved every frame of a rollback
// session's longest rollback (64 frames) and its two kept snapshots.
const Slots = 67

// inline is the number of snapshot regions allocated with the arena.
const inline = 2

const (
	// header layout, little-endian uint32s at the start of the live region:
	// magic, used (bytes of the region in use, header included).
	headerSize = 16
	recordSize = 8 // per allocation: type index uint32, data size uint32
	align      = 8
	magic      = 0x52574e44 // "RWND"
	minSize    = 64
)

// Errors returned by the package.
var (
	ErrSize       = errors.New("savestate: size out of range")
	ErrFull       = errors.New("savestate: arena full")
	ErrSlot       = errors.New("savestate: snapshot slot out of range")
	ErrNotSaved   = errors.New("savestate: snapshot slot never saved")
	ErrNotPointer = errors.New("savestate: type holds pointers")
	ErrEntered    = errors.New("savestate: arena is inside a snapshot")
)

// PointerError reports a type that cannot live in an arena because it holds
// a pointer-like value. Path names the offending field, for example
// "Ship.Name" for a string field; Kind is that field's kind.
type PointerError struct {
	Type string
	Path string
	Kind reflect.Kind
}

func (e *PointerError) Error() string {
	return fmt.Sprintf("savestate: %s cannot live in an arena: %s is a %s", e.Type, e.Path, e.Kind)
}

// Unwrap returns [ErrNotPointer], so errors.Is(err, ErrNotPointer) holds.
func (e *PointerError) Unwrap() error { return ErrNotPointer }

// Arena is one contiguous block holding a live region and [Slots] snapshot
// regions. The zero value is not usable; create arenas with [New].
// An Arena is not safe for concurrent use.
type Arena struct {
	mem     []byte
	size    int
	reg     []byte   // the current region: the live one unless inside Enter or Fork
	scratch []byte   // Fork's region, allocated on its first use
	extra   [][]byte // the other snapshot regions, each allocated on its first Save (and the list as far as the highest)
	saved   [Slots]bool
	types   []reflect.Type // index recorded in the arena; append-only, never rolled back
}

// New returns an arena whose live region (and each snapshot region) is size
// bytes; 0 means [DefaultSize]. The arena is one allocation of 3×size bytes
// (the live region and two snapshot regions); each further snapshot region
// is allocated on its first [Arena.Save].
func New(size int) (*Arena, error) {
	if size == 0 {
		size = DefaultSize
	}
	if size < minSize || size > 1<<30 || size%align != 0 {
		return nil, fmt.Errorf("%w: %d (want a multiple of %d between %d and 1 GiB)", ErrSize, size, align, minSize)
	}
	a := &Arena{mem: make([]byte, (1+inline)*size), size: size}
	a.reg = a.mem[:size:size]
	a.put32(0, magic)
	a.put32(4, headerSize)
	return a, nil
}

// Size returns the size of the live region in bytes.
func (a *Arena) Size() int { return a.size }

// Used returns how many bytes of the current region are in use, the
// arena's own header and allocation records included. Save, Restore and
// [Arena.Bytes] touch only these bytes.
func (a *Arena) Used() int { return int(a.get32(4)) }

// Bytes returns the used part of the current region. The slice aliases the
// arena; it is meant for checksums and state dumps and must not be retained
// across allocations.
func (a *Arena) Bytes() []byte { return a.reg[:a.Used()] }

// Enter makes snapshot slot i the current region: until [Arena.Leave],
// handles, [Alloc], [Arena.Bytes] and [Arena.FieldPath] refer to the
// snapshot, so stepping the game advances the snapshot in place. Save and
// Restore fail with [ErrEntered] meanwhile.
func (a *Arena) Enter(i int) error {
	if i < 0 || i >= Slots {
		return ErrSlot
	}
	if !a.saved[i] {
		return ErrNotSaved
	}
	a.reg = a.region(1 + i)
	return nil
}

// Fork copies the used part of the live region into a scratch region and
// makes it current, like [Arena.Enter]: until [Arena.Leave], the game can
// step and read a throwaway copy of its state while the live region and the
// snapshots stay untouched. The scratch region is allocated on the first
// Fork (the size of the live region) and reused after that. Fork fails with
// [ErrEntered] when the live region is not current.
func (a *Arena) Fork() error {
	if !a.live() {
		return ErrEntered
	}
	if a.scratch == nil {
		a.scratch = make([]byte, a.size)
	}
	n := a.Used()
	memcopy.Copy(a.scratch[:n], a.mem[:n])
	a.reg = a.scratch
	return nil
}

// Leave makes the live region current again, after [Arena.Enter] or
// [Arena.Fork].
func (a *Arena) Leave() { a.reg = a.region(0) }

// region returns region i: 0 is the live one, 1 to Slots the snapshots
// (nil for one past the inline ones before its first Save).
func (a *Arena) region(i int) []byte {
	if i > inline {
		if k := i - 1 - inline; k < len(a.extra) {
			return a.extra[k]
		}
		return nil
	}
	return a.mem[i*a.size : (i+1)*a.size : (i+1)*a.size]
}

// live reports whether the live region is current.
func (a *Arena) live() bool { return &a.reg[0] == &a.mem[0] }

// Save copies the live region into snapshot slot i (0 to Slots-1).
func (a *Arena) Save(i int) error {
	if i < 0 || i >= Slots {
		return ErrSlot
	}
	if !a.live() {
		return ErrEntered
	}
	if k := i - inline; k >= 0 {
		for len(a.extra) <= k {
			a.extra = append(a.extra, nil)
		}
		if a.extra[k] == nil {
			a.extra[k] = make([]byte, a.size)
		}
	}
	n := a.Used()
	memcopy.Copy(a.region(1 + i)[:n], a.mem[:n])
	a.saved[i] = true
	return nil
}

// Restore copies snapshot slot i back over the live region. Bytes beyond the
// snapshot's used size are left as they are; they are unreachable, and
// [Alloc] clears memory before handing it out.
func (a *Arena) Restore(i int) error {
	if i < 0 || i >= Slots {
		return ErrSlot
	}
	if !a.saved[i] {
		return ErrNotSaved
	}
	if !a.live() {
		return ErrEntered
	}
	r := a.region(1 + i)
	n := int(le32(r[4:]))
	memcopy.Copy(a.mem[:n], r[:n])
	return nil
}

// Handle refers to a value of type T allocated in an arena. It is a byte
// offset into the live region, so it survives save and restore and may itself
// be stored inside the arena. The zero Handle refers to nothing.
type Handle[T any] struct{ off uint32 }

// IsZero reports whether h is the zero Handle.
func (h Handle[T]) IsZero() bool { return h.off == 0 }

// Offset returns the byte offset of the value in the live region.
func (h Handle[T]) Offset() int { return int(h.off) }

// Get returns a pointer to the value in a's current region (the live one
// unless inside [Arena.Enter]). The pointer sees every later Restore, but
// points into the region that was current when Get was called: fetch it
// again after Enter or Leave. Get on the zero Handle, or on a handle beyond
// the region's used bytes, returns nil. For a zero-size T (see [Alloc]) it
// returns a non-nil pointer that points at no byte of the arena: there is
// nothing to read or write through it.
func (h Handle[T]) Get(a *Arena) *T {
	var p *T // sized through a pointer: a zero T of a large type would escape to the heap
	size := int(unsafe.Sizeof(*p))
	if h.off == 0 || int(h.off)+size > a.Used() {
		return nil
	}
	if size == 0 {
		// A zero-size value may start at the very end of the region, which
		// has no byte there to point at.
		return (*T)(unsafe.Pointer(&zeroSized))
	}
	return (*T)(unsafe.Pointer(&a.reg[h.off]))
}

// zeroSized is where every zero-size value of every arena points, as the
// Go runtime points every zero-size allocation at one variable.
var zeroSized uint64

// Alloc places a zeroed T in a's live region and returns its handle. T must
// hold no pointers, slices, maps, strings, interfaces, channels or funcs,
// at any depth; otherwise Alloc returns a [*PointerError] naming the field.
// It returns [ErrFull] when the live region has no room left.
//
// A zero-size T (struct{}, [0]int, an array of a constant length that is 0
// for now) is allowed, as new(struct{}) is: it costs its 8-byte allocation
// record only, and its handle's Get returns a non-nil pointer, wherever in
// the region it sits.
func Alloc[T any](a *Arena) (Handle[T], error) {
	t := reflect.TypeFor[T]()
	if err := CheckType(t); err != nil {
		return Handle[T]{}, err
	}
	// Go never aligns a type to more than 8 bytes and used is a multiple of
	// 8, so the record sits right before the data and the list can be walked.
	used := a.Used()
	data := used + recordSize
	if t.Size() > uintptr(a.size) || data+int(t.Size()) > a.size {
		return Handle[T]{}, fmt.Errorf("%w: %s needs %d bytes, %d free", ErrFull, t, t.Size(), max(0, a.size-data))
	}
	end := data + int(t.Size())
	a.put32(used, uint32(a.typeIndex(t)))
	a.put32(used+4, uint32(t.Size()))
	clear(a.reg[data:end])
	a.put32(4, uint32(roundUp(end, align)))
	return Handle[T]{off: uint32(data)}, nil
}

func (a *Arena) typeIndex(t reflect.Type) int {
	for i, u := range a.types {
		if u == t {
			return i
		}
	}
	a.types = append(a.types, t)
	return len(a.types) - 1
}

// CheckType reports whether values of t may live in an arena: it returns nil
// for pointer-free types and a [*PointerError] naming the first offending
// field otherwise.
func CheckType(t reflect.Type) error {
	if t == nil {
		return &PointerError{Type: "<nil>", Path: "<nil>", Kind: reflect.Interface}
	}
	if path, k, ok := findPointer(t, t.String()); !ok {
		return &PointerError{Type: t.String(), Path: path, Kind: k}
	}
	return nil
}

func findPointer(t reflect.Type, path string) (string, reflect.Kind, bool) {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return "", 0, true
	case reflect.Array:
		return findPointer(t.Elem(), path+"[0]")
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if p, k, ok := findPointer(f.Type, path+"."+f.Name); !ok {
				return p, k, false
			}
		}
		return "", 0, true
	default: // pointers, unsafe pointers, uintptr, slices, maps, strings, interfaces, chans, funcs
		return path, t.Kind(), false
	}
}

// Allocation describes one value allocated in an arena.
type Allocation struct {
	Type   reflect.Type
	Offset int // byte offset of the value in the live region
	Size   int
}

// Allocations returns the arena's allocation records in allocation order,
// read from the current region (so they reflect the last restore).
func (a *Arena) Allocations() []Allocation {
	return allocations(a.Bytes(), a.types)
}

func allocations(region []byte, types []reflect.Type) []Allocation {
	var out []Allocation
	off := headerSize
	for off+recordSize <= len(region) {
		ti, size := int(le32(region[off:])), int(le32(region[off+4:]))
		if ti >= len(types) {
			break
		}
		data := off + recordSize
		if data+size > len(region) {
			break
		}
		out = append(out, Allocation{Type: types[ti], Offset: data, Size: size})
		off = roundUp(data+size, align)
	}
	return out
}

// FieldPath names the field that holds byte off of the current region, such as
// "arena.World.Ships[1].X". It returns "" for bytes that belong to the
// arena's header, its allocation records or padding.
func (a *Arena) FieldPath(off int) string {
	f, _ := a.Field(off)
	return f.Path
}

// Field is a scalar field of a value in an arena: the innermost field
// holding some byte.
type Field struct {
	Path   string       // such as "arena.World.Ships[1].X"
	Offset int          // where the field starts in the region
	Type   reflect.Type // the field's type: a bool, integer or float kind, or a struct's padding (nil)
}

// Field returns the scalar field that holds byte off of the current region.
// ok is false for the arena's header and allocation records; padding
// inside a value has a Path ending in ".<padding>" and a nil Type.
func (a *Arena) Field(off int) (Field, bool) { return a.FieldIn(a.Bytes(), off) }

// FieldIn is [Arena.Field] for region, a copy of one of a's regions (such as
// a state saved for a desync report, or a peer's): it reads the allocation
// records inside region itself.
func (a *Arena) FieldIn(region []byte, off int) (f Field, ok bool) {
	for _, al := range allocations(region, a.types) {
		if off >= al.Offset && off < al.Offset+al.Size {
			f = fieldAt(al.Type, off-al.Offset, al.Type.String())
			f.Offset += al.Offset
			return f, true
		}
	}
	return Field{}, false
}

func fieldAt(t reflect.Type, off int, path string) Field {
	switch t.Kind() {
	case reflect.Array:
		es := int(t.Elem().Size())
		if es == 0 {
			return Field{Path: path, Type: t}
		}
		i := off / es
		f := fieldAt(t.Elem(), off-i*es, fmt.Sprintf("%s[%d]", path, i))
		f.Offset += i * es
		return f
	case reflect.Struct:
		for i := range t.NumField() {
			sf := t.Field(i)
			if off >= int(sf.Offset) && off < int(sf.Offset+sf.Type.Size()) {
				f := fieldAt(sf.Type, off-int(sf.Offset), path+"."+sf.Name)
				f.Offset += int(sf.Offset)
				return f
			}
		}
		return Field{Path: path + ".<padding>", Offset: off}
	default:
		return Field{Path: path, Type: t}
	}
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

func le32(b []byte) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// get32 and put32 address the current region.
func (a *Arena) get32(off int) uint32 { return le32(a.reg[off:]) }

func (a *Arena) put32(off int, v uint32) {
	b := a.reg[off : off+4]
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// ErrState is returned by [Arena.Load] for bytes that are not a state of
// this arena.
var ErrState = errors.New("savestate: not a state of this arena")

// Load replaces the live region's state with b, the [Arena.Bytes] of an
// arena whose game allocated the same types (another machine's state, sent
// to a machine joining a match in progress). b is a claim, not a fact: it
// is checked first — the header, every allocation record's type (known to
// this arena, with its size) — and an error wrapping [ErrState] leaves the
// live region as it was. Load fails with [ErrEntered] inside Enter or Fork.
func (a *Arena) Load(b []byte) error {
	if !a.live() {
		return ErrEntered
	}
	if len(b) < headerSize || len(b) > a.size || len(b)%align != 0 {
		return fmt.Errorf("%w: %d bytes (this arena holds %d)", ErrState, len(b), a.size)
	}
	if le32(b) != magic || int(le32(b[4:])) != len(b) {
		return fmt.Errorf("%w: bad header", ErrState)
	}
	off := headerSize
	for off < len(b) {
		if off+recordSize > len(b) {
			return fmt.Errorf("%w: truncated record at byte %d", ErrState, off)
		}
		ti, size := int(le32(b[off:])), int(le32(b[off+4:]))
		if ti >= len(a.types) || uintptr(size) != a.types[ti].Size() {
			return fmt.Errorf("%w: allocation at byte %d of a type this arena never allocated", ErrState, off)
		}
		data := off + recordSize
		if data+size > len(b) {
			return fmt.Errorf("%w: allocation at byte %d overruns the state", ErrState, off)
		}
		off = roundUp(data+size, align)
	}
	copy(a.mem, b)
	return nil
}
