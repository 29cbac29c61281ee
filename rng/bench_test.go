package rng_test

import (
	"math/rand/v2"
	"testing"

	"github.com/rewindgg/rewind/rng"
)

// The math/rand/v2 generators are the reference: PCG (16 bytes of state)
// and ChaCha8 (a cryptographic generator, 300 bytes).

var sink uint64

func BenchmarkUint64(b *testing.B) {
	b.Run("rng", func(b *testing.B) {
		b.ReportAllocs()
		r := rng.New(1)
		for range b.N {
			sink += r.Uint64()
		}
	})
	b.Run("rand.PCG", func(b *testing.B) {
		b.ReportAllocs()
		r := rand.NewPCG(1, 2)
		for range b.N {
			sink += r.Uint64()
		}
	})
	b.Run("rand.ChaCha8", func(b *testing.B) {
		b.ReportAllocs()
		r := rand.NewChaCha8([32]byte{1})
		for range b.N {
			sink += r.Uint64()
		}
	})
}

func BenchmarkIntN(b *testing.B) {
	b.Run("rng", func(b *testing.B) {
		b.ReportAllocs()
		r := rng.New(1)
		for i := range b.N {
			sink += uint64(r.IntN(i&1023 + 1))
		}
	})
	b.Run("rand.PCG", func(b *testing.B) {
		b.ReportAllocs()
		r := rand.New(rand.NewPCG(1, 2))
		for i := range b.N {
			sink += uint64(r.IntN(i&1023 + 1))
		}
	})
}

func BenchmarkShuffle64(b *testing.B) {
	b.ReportAllocs()
	r := rng.New(1)
	var a [64]int
	for range b.N {
		r.Shuffle(len(a), func(i, j int) { a[i], a[j] = a[j], a[i] })
	}
	sink += uint64(a[0])
}

func BenchmarkPerm64(b *testing.B) {
	b.ReportAllocs()
	r := rng.New(1)
	p := make([]int, 64)
	for range b.N {
		r.Perm(p)
	}
	sink += uint64(p[0])
}
