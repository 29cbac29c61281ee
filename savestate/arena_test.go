package savestate_test

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/savestate"
)

type vec struct{ X, Y int32 }

type ship struct {
	Pos, Vel vec
	Alive    bool
	Score    int16
}

type world struct {
	Frame int32
	Ships [4]ship
	Next  savestate.Handle[ship]
}

func TestSaveRestoreRoundTrip(t *testing.T) {
	a, err := savestate.New(4096)
	require.NoError(t, err)
	h, err := savestate.Alloc[world](a)
	require.NoError(t, err)
	w := h.Get(a)
	w.Frame = 7
	w.Ships[1].Pos.X = 100
	require.NoError(t, a.Save(0))

	w.Frame = 8
	w.Ships[1].Pos.X = -5
	require.NoError(t, a.Save(1))

	w.Frame = 99
	require.NoError(t, a.Restore(0))
	assert.Equal(t, int32(7), w.Frame, "the pointer sees the restored value")
	assert.Equal(t, int32(100), w.Ships[1].Pos.X)
	require.NoError(t, a.Restore(1))
	assert.Equal(t, int32(8), w.Frame)
	assert.Equal(t, int32(-5), w.Ships[1].Pos.X)
}

// TestLastSlot: the last snapshot region is allocated on its first Save
// only, and then behaves as the others (save, restore, step in place).
func TestLastSlot(t *testing.T) {
	const size = 1 << 16
	a, err := savestate.New(size)
	require.NoError(t, err)
	h, err := savestate.Alloc[world](a)
	require.NoError(t, err)
	last := savestate.Slots - 1
	assert.ErrorIs(t, a.Restore(last), savestate.ErrNotSaved)
	assert.ErrorIs(t, a.Enter(last), savestate.ErrNotSaved)
	assert.Zero(t, testing.AllocsPerRun(5, func() { _ = a.Save(0) }), "the inline slots never allocate")

	h.Get(a).Frame = 3
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	require.NoError(t, a.Save(last))
	runtime.ReadMemStats(&ms1)
	assert.GreaterOrEqual(t, ms1.TotalAlloc-ms0.TotalAlloc, uint64(size), "the first Save allocates the region")
	assert.Zero(t, testing.AllocsPerRun(5, func() { _ = a.Save(last) }), "and only the first")

	h.Get(a).Frame = 4
	require.NoError(t, a.Enter(last))
	assert.Equal(t, int32(3), h.Get(a).Frame)
	h.Get(a).Frame = 5 // stepped in place
	a.Leave()
	assert.Equal(t, int32(4), h.Get(a).Frame, "the live region is untouched")
	require.NoError(t, a.Restore(last))
	assert.Equal(t, int32(5), h.Get(a).Frame)
}

func TestRestoreRollsBackAllocations(t *testing.T) {
	a, err := savestate.New(4096)
	require.NoError(t, err)
	_, err = savestate.Alloc[world](a)
	require.NoError(t, err)
	require.NoError(t, a.Save(0))
	used := a.Used()

	h, err := savestate.Alloc[ship](a)
	require.NoError(t, err)
	h.Get(a).Score = 42
	require.Len(t, a.Allocations(), 2)

	require.NoError(t, a.Restore(0))
	assert.Equal(t, used, a.Used())
	assert.Len(t, a.Allocations(), 1, "the allocation records live in the arena and roll back")
	assert.Nil(t, h.Get(a), "a handle beyond the restored region resolves to nil")

	h2, err := savestate.Alloc[ship](a)
	require.NoError(t, err)
	assert.Equal(t, h.Offset(), h2.Offset())
	assert.Zero(t, h2.Get(a).Score, "re-allocated memory is cleared, not stale")
}

func TestSaveCopiesOnlyUsedBytes(t *testing.T) {
	a, err := savestate.New(1 << 16)
	require.NoError(t, err)
	h, err := savestate.Alloc[int64](a)
	require.NoError(t, err)
	*h.Get(a) = 1
	assert.Less(t, a.Used(), 64)
	assert.Len(t, a.Bytes(), a.Used())
}

func TestRestoreErrors(t *testing.T) {
	a, err := savestate.New(0)
	require.NoError(t, err)
	assert.Equal(t, savestate.DefaultSize, a.Size())
	assert.ErrorIs(t, a.Restore(0), savestate.ErrNotSaved)
	assert.ErrorIs(t, a.Save(savestate.Slots), savestate.ErrSlot)
	assert.ErrorIs(t, a.Save(-1), savestate.ErrSlot)
	assert.ErrorIs(t, a.Restore(savestate.Slots), savestate.ErrSlot)
	assert.ErrorIs(t, a.Restore(5), savestate.ErrNotSaved, "a slot past the inline ones, never saved")
}

func TestNewSize(t *testing.T) {
	for _, n := range []int{-1, 1, 63, 100, 1<<30 + 8} {
		_, err := savestate.New(n)
		assert.ErrorIs(t, err, savestate.ErrSize, "size %d", n)
	}
}

func TestAllocFull(t *testing.T) {
	a, err := savestate.New(128)
	require.NoError(t, err)
	_, err = savestate.Alloc[[64]byte](a)
	require.NoError(t, err)
	_, err = savestate.Alloc[[64]byte](a)
	assert.ErrorIs(t, err, savestate.ErrFull)
	_, err = savestate.Alloc[[1 << 20]byte](a)
	assert.ErrorIs(t, err, savestate.ErrFull)
}

type withString struct {
	A    int
	Name string
}

type nested struct {
	Ok    [2]vec
	Inner [3]struct{ P *int }
}

func TestAllocRejectsPointers(t *testing.T) {
	cases := []struct {
		name  string
		alloc func(*savestate.Arena) error
		path  string
		kind  reflect.Kind
	}{
		{"string field", allocOf[withString], "savestate_test.withString.Name", reflect.String},
		{"nested pointer", allocOf[nested], "savestate_test.nested.Inner[0].P", reflect.Pointer},
		{"slice", allocOf[[]int], "[]int", reflect.Slice},
		{"map", allocOf[struct{ M map[int]int }], "struct { M map[int]int }.M", reflect.Map},
		{"interface", allocOf[struct{ I any }], "struct { I interface {} }.I", reflect.Interface},
		{"func", allocOf[struct{ F func() }], "struct { F func() }.F", reflect.Func},
		{"chan", allocOf[[2]chan int], "[2]chan int[0]", reflect.Chan},
		{"unsafe pointer", allocOf[struct{ U unsafe.Pointer }], "struct { U unsafe.Pointer }.U", reflect.UnsafePointer},
		{"uintptr", allocOf[struct{ U uintptr }], "struct { U uintptr }.U", reflect.Uintptr},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := savestate.New(1024)
			require.NoError(t, err)
			used := a.Used()
			err = tc.alloc(a)
			var pe *savestate.PointerError
			require.ErrorAs(t, err, &pe)
			assert.ErrorIs(t, err, savestate.ErrNotPointer)
			assert.Equal(t, tc.path, pe.Path)
			assert.Equal(t, tc.kind, pe.Kind)
			assert.Contains(t, err.Error(), tc.path)
			assert.Equal(t, used, a.Used(), "a rejected allocation takes no space")
		})
	}
}

func allocOf[T any](a *savestate.Arena) error {
	_, err := savestate.Alloc[T](a)
	return err
}

func TestFieldPath(t *testing.T) {
	a, err := savestate.New(4096)
	require.NoError(t, err)
	_, err = savestate.Alloc[int64](a)
	require.NoError(t, err)
	h, err := savestate.Alloc[world](a)
	require.NoError(t, err)
	w := h.Get(a)
	base := uintptr(unsafe.Pointer(w))
	off := func(p unsafe.Pointer) int { return h.Offset() + int(uintptr(p)-base) }

	assert.Equal(t, "savestate_test.world.Frame", a.FieldPath(off(unsafe.Pointer(&w.Frame))))
	assert.Equal(t, "savestate_test.world.Ships[2].Vel.Y", a.FieldPath(off(unsafe.Pointer(&w.Ships[2].Vel.Y))+1))
	assert.Equal(t, "savestate_test.world.Ships[3].Score", a.FieldPath(off(unsafe.Pointer(&w.Ships[3].Score))))
	assert.Equal(t, "savestate_test.world.Ships[0].<padding>", a.FieldPath(off(unsafe.Pointer(&w.Ships[0].Alive))+1))
	assert.Empty(t, a.FieldPath(0), "header bytes belong to no field")

	allocs := a.Allocations()
	require.Len(t, allocs, 2)
	assert.Equal(t, reflect.TypeFor[world](), allocs[1].Type)
	assert.Equal(t, h.Offset(), allocs[1].Offset)
}

func ExampleAlloc() {
	type Ship struct{ X, Y int32 }
	a, _ := savestate.New(1024)
	h, _ := savestate.Alloc[Ship](a)
	h.Get(a).X = 10
	_ = a.Save(0)
	h.Get(a).X = 99
	_ = a.Restore(0)
	fmt.Println(h.Get(a).X)

	_, err := savestate.Alloc[struct{ Name string }](a)
	fmt.Println(errors.Is(err, savestate.ErrNotPointer))
	// Output:
	// 10
	// true
}

func TestEnterStepsASnapshotInPlace(t *testing.T) {
	a, err := savestate.New(4096)
	require.NoError(t, err)
	h, err := savestate.Alloc[world](a)
	require.NoError(t, err)
	h.Get(a).Frame = 1
	require.NoError(t, a.Save(1))
	h.Get(a).Frame = 50 // the live state moves on

	require.NoError(t, a.Enter(1))
	assert.ErrorIs(t, a.Save(0), savestate.ErrEntered)
	assert.ErrorIs(t, a.Restore(1), savestate.ErrEntered)
	assert.Equal(t, int32(1), h.Get(a).Frame, "handles resolve in the snapshot")
	h.Get(a).Frame++ // "step" the snapshot
	extra, err := savestate.Alloc[ship](a)
	require.NoError(t, err)
	extra.Get(a).Score = 9
	snapUsed := a.Used()
	a.Leave()

	assert.Equal(t, int32(50), h.Get(a).Frame, "the live region was not touched")
	assert.Len(t, a.Allocations(), 1)
	require.NoError(t, a.Restore(1))
	assert.Equal(t, int32(2), h.Get(a).Frame, "restoring brings back the stepped snapshot")
	assert.Equal(t, int16(9), extra.Get(a).Score)
	assert.Equal(t, snapUsed, a.Used())

	assert.ErrorIs(t, a.Enter(0), savestate.ErrNotSaved)
	assert.ErrorIs(t, a.Enter(savestate.Slots), savestate.ErrSlot)
}

func TestGetDoesNotAllocateForLargeTypes(t *testing.T) {
	a, err := savestate.New(1 << 20)
	require.NoError(t, err)
	h, err := savestate.Alloc[[1<<20 - 64]byte](a)
	require.NoError(t, err)
	assert.Zero(t, testing.AllocsPerRun(10, func() { h.Get(a)[5]++ }))
}

func TestForkStepsAThrowawayCopy(t *testing.T) {
	a, err := savestate.New(4096)
	require.NoError(t, err)
	h, err := savestate.Alloc[world](a)
	require.NoError(t, err)
	h.Get(a).Frame = 7
	require.NoError(t, a.Save(0))
	live := append([]byte(nil), a.Bytes()...)

	require.NoError(t, a.Fork())
	assert.Equal(t, int32(7), h.Get(a).Frame, "the fork starts as a copy of the live state")
	h.Get(a).Frame = 99
	_, err = savestate.Alloc[ship](a)
	require.NoError(t, err, "a forked step may allocate")
	assert.ErrorIs(t, a.Save(1), savestate.ErrEntered)
	assert.ErrorIs(t, a.Restore(0), savestate.ErrEntered)
	assert.ErrorIs(t, a.Fork(), savestate.ErrEntered)
	a.Leave()

	assert.Equal(t, live, a.Bytes(), "the live region is bit-for-bit unchanged")
	require.NoError(t, a.Enter(0))
	assert.Equal(t, int32(7), h.Get(a).Frame, "the snapshot is unchanged")
	assert.ErrorIs(t, a.Fork(), savestate.ErrEntered)
	a.Leave()

	// A second fork starts again from the live state, and reuses the region.
	require.NoError(t, a.Fork())
	assert.Equal(t, int32(7), h.Get(a).Frame)
	a.Leave()
	assert.Zero(t, testing.AllocsPerRun(10, func() {
		_ = a.Fork()
		h.Get(a).Frame++
		a.Leave()
	}))
}

// A zero-size value (struct{}, [0]T) is valid: it costs its allocation
// record only, and its Get returns a non-nil pointer wherever it sits,
// even when it exactly fills the region and so starts at its very end
// (there Get used to index one past the region and panic).
func TestAllocZeroSize(t *testing.T) {
	for _, size := range []int{64, 128} {
		for fill := 0; fill+16+8 <= size; fill += 8 {
			a, err := savestate.New(size)
			require.NoError(t, err)
			for range fill / 8 { // zero-size values: 8 bytes each
				_, err := savestate.Alloc[[0]uint32](a)
				require.NoError(t, err)
			}
			require.NoError(t, a.Save(0))
			before := a.Used()
			h, err := savestate.Alloc[struct{}](a)
			require.NoError(t, err, "size %d, %d used", size, before)
			assert.Equal(t, before+8, a.Used(), "a zero-size value costs its record only")
			assert.NotNil(t, h.Get(a), "size %d, %d used", size, before)
			h2, err := savestate.Alloc[[0]int64](a)
			if before+16 <= size {
				require.NoError(t, err)
				assert.NotNil(t, h2.Get(a))
			} else {
				assert.ErrorIs(t, err, savestate.ErrFull)
			}
			require.NoError(t, a.Save(1))
			require.NoError(t, a.Enter(1))
			assert.NotNil(t, h.Get(a), "inside the snapshot")
			a.Leave()
			require.NoError(t, a.Fork())
			assert.NotNil(t, h.Get(a), "inside a fork")
			a.Leave()
			require.NoError(t, a.Restore(0))
			assert.Nil(t, h.Get(a), "restored to before the allocation")
		}
	}

	// The exact fit: a 64-byte arena's header (16 bytes), a 32-byte value
	// and its record leave 8 bytes, the zero-size value's record.
	a, err := savestate.New(64)
	require.NoError(t, err)
	_, err = savestate.Alloc[[32]byte](a)
	require.NoError(t, err)
	h, err := savestate.Alloc[struct{}](a)
	require.NoError(t, err)
	assert.Equal(t, 64, a.Used())
	assert.Equal(t, 64, h.Offset())
	assert.NotPanics(t, func() { assert.NotNil(t, h.Get(a)) })
	_, err = savestate.Alloc[struct{}](a)
	assert.ErrorIs(t, err, savestate.ErrFull, "no room for another record")
	assert.Equal(t, "", a.FieldPath(63))
}

// TestLoad: another arena's state with the same allocations loads whole;
// anything else is refused and leaves the live region as it was.
func TestLoad(t *testing.T) {
	newWorld := func() (*savestate.Arena, *world) {
		a, err := savestate.New(4096)
		require.NoError(t, err)
		h, err := savestate.Alloc[world](a)
		require.NoError(t, err)
		_, err = savestate.Alloc[[3]int64](a)
		require.NoError(t, err)
		return a, h.Get(a)
	}
	src, sw := newWorld()
	sw.Frame, sw.Ships[2].Score = 41, 7
	dst, dw := newWorld()
	dw.Frame = 3
	require.NoError(t, dst.Load(src.Bytes()))
	assert.Equal(t, src.Bytes(), dst.Bytes())
	assert.Equal(t, int32(41), dw.Frame)
	assert.Equal(t, int16(7), dw.Ships[2].Score)

	good := append([]byte(nil), src.Bytes()...)
	dw.Frame = 5
	bad := map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-8],
		"odd size":  good[:len(good)-1],
		"magic":     append([]byte{0}, good[1:]...),
		"too large": make([]byte, 8192),
	}
	unknown := append([]byte(nil), good...)
	unknown[16] = 9 // the first record's type index
	bad["unknown type"] = unknown
	resized := append([]byte(nil), good...)
	resized[20]++ // the first record's size
	bad["wrong size"] = resized
	for name, b := range bad {
		err := dst.Load(b)
		assert.ErrorIs(t, err, savestate.ErrState, name)
		assert.Equal(t, int32(5), dw.Frame, "%s: the live region is unchanged", name)
	}
	require.NoError(t, dst.Save(0))
	require.NoError(t, dst.Enter(0))
	assert.ErrorIs(t, dst.Load(good), savestate.ErrEntered)
	dst.Leave()
}

// FuzzLoad: Load either refuses bytes or takes them whole, never panics,
// and a state it takes has exactly the arena's used bytes.
func FuzzLoad(f *testing.F) {
	src, err := savestate.New(4096)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := savestate.Alloc[world](src); err != nil {
		f.Fatal(err)
	}
	if _, err := savestate.Alloc[[3]int64](src); err != nil {
		f.Fatal(err)
	}
	f.Add(append([]byte(nil), src.Bytes()...))
	f.Fuzz(func(t *testing.T, b []byte) {
		dst, err := savestate.New(4096)
		require.NoError(t, err)
		_, err = savestate.Alloc[world](dst)
		require.NoError(t, err)
		_, err = savestate.Alloc[[3]int64](dst)
		require.NoError(t, err)
		before := append([]byte(nil), dst.Bytes()...)
		if err := dst.Load(b); err != nil {
			require.ErrorIs(t, err, savestate.ErrState)
			require.Equal(t, before, dst.Bytes(), "a refused state changes nothing")
			return
		}
		require.Equal(t, b, dst.Bytes())
		dst.Allocations() // walks the records it took
	})
}
