package savestate_test

import (
	"math/rand/v2"
	"testing"

	"github.com/rewindgg/rewind/savestate"
)

// BenchmarkCopy measures a restore of a 1 MiB arena followed by what a
// re-simulation does first (one byte of 20 cache lines read and written),
// against the same work done with one built-in copy of the region, in the
// same run:
//
//   - restore-1MiB: Arena.Restore of a state that holds data;
//   - one-copy-1MiB: one copy of the same bytes between the same regions,
//     which Go's memmove (amd64) does with cache-bypassing stores from
//     1 MiB on. Restore copies in pieces below that (internal/memcopy) and
//     should stay well under it on amd64 (0.75× here); a ratio near 1
//     means the pieces are gone;
//   - restore-1MiB-zeros, one-copy-1MiB-zeros: the same of a state that
//     is all zero bytes, as a fresh arena is. On some machines (this one)
//     the cache-bypassing stores cost half as much when every line is
//     zero: a benchmark whose state is zeros measures a copy no game makes.
func BenchmarkCopy(b *testing.B) {
	b.Run("restore-1MiB", benchCopy(true, false))
	b.Run("one-copy-1MiB", benchCopy(true, true))
	b.Run("restore-1MiB-zeros", benchCopy(false, false))
	b.Run("one-copy-1MiB-zeros", benchCopy(false, true))
}

func benchCopy(data, oneCopy bool) func(b *testing.B) {
	return func(b *testing.B) {
		a, err := savestate.New(1 << 20)
		if err != nil {
			b.Fatal(err)
		}
		// The whole region in use: 16 bytes of header, 8 of record.
		h, err := savestate.Alloc[[1<<20 - 24]byte](a)
		if err != nil {
			b.Fatal(err)
		}
		st := h.Get(a)
		if data {
			_, _ = rand.NewChaCha8([32]byte{1}).Read(st[:])
		}
		if err := a.Save(0); err != nil {
			b.Fatal(err)
		}
		live := a.Bytes()
		if err := a.Enter(0); err != nil {
			b.Fatal(err)
		}
		snap := a.Bytes()
		a.Leave()
		b.SetBytes(int64(len(live)))
		f := 0
		for b.Loop() {
			if oneCopy {
				copy(live, snap)
			} else if err := a.Restore(0); err != nil {
				b.Fatal(err)
			}
			for range 20 {
				st[f*4099%len(st)] ^= byte(f)
				f++
			}
		}
	}
}
