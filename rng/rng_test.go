package rng_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rng"
	"github.com/rewindgg/rewind/savestate"
)

// TestKnownAnswers: the outputs of the reference implementation,
// splitmix64.c (https://prng.di.unimi.it/splitmix64.c, with x set to the
// seed). Those of seed 1234567 are also the published ones of Rosetta
// Code's "Pseudo-random numbers/Splitmix64" task.
func TestKnownAnswers(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		want []uint64
	}{
		{1234567, []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423,
			4593380528125082431, 16408922859458223821}},
		{0, []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f, 0xf88bb8a8724c81ec,
			0x1b39896a51a8749b}},
		{math.MaxUint64, []uint64{0xe4d971771b652c20, 0xe99ff867dbf682c9, 0x382ff84cb27281e9,
			0x6d1db36ccba982d2, 0xb4a0472e578069ae}},
	} {
		r := rng.New(c.seed)
		var got []uint64
		for range c.want {
			got = append(got, r.Uint64())
		}
		assert.Equal(t, c.want, got, "seed %d", c.seed)
		var s rng.Rand
		s.Seed(c.seed)
		assert.Equal(t, c.want[0], s.Uint64(), "Seed(%d)", c.seed)
	}
	var zero rng.Rand
	assert.Equal(t, uint64(0xe220a8397b1dcdaf), zero.Uint64(), "the zero value is seed 0")
	shifted := rng.New(1234567 + 0x9e3779b97f4a7c15)
	assert.Equal(t, uint64(3203168211198807973), shifted.Uint64(), "seed s+increment is seed s after a draw")
	r := rng.New(1234567)
	assert.Equal(t, uint32(6457827717110365317>>32), r.Uint32(), "the upper half")
}

// TestCopyContinues: a copy of a generator, taken at any point, continues
// with the same values as the original, through every method; that is
// what a rollback does to a generator in the game state.
func TestCopyContinues(t *testing.T) {
	r := rng.New(42)
	for range 1000 {
		r.Uint64()
	}
	c := r
	require.Equal(t, r, c)
	draw := func(g *rng.Rand) []uint64 {
		var out []uint64
		for i := range 300 {
			out = append(out, g.Uint64(), uint64(g.Uint32()), g.Uint64N(uint64(i)+1), uint64(g.IntN(7)))
		}
		p := make([]int, 20)
		g.Perm(p)
		g.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
		for _, v := range p {
			out = append(out, uint64(v))
		}
		return out
	}
	a := draw(&r)
	b := draw(&c)
	assert.Equal(t, a, b)
	assert.Equal(t, r, c, "and they end in the same state")
	// The same through a savestate arena: save, draw, restore, draw.
	ar, err := savestate.New(4096)
	require.NoError(t, err)
	h, err := savestate.Alloc[struct {
		Frame int32
		Rand  rng.Rand
	}](ar)
	require.NoError(t, err)
	h.Get(ar).Rand = rng.New(7)
	require.NoError(t, ar.Save(0))
	first := draw(&h.Get(ar).Rand)
	require.NoError(t, ar.Restore(0))
	assert.Equal(t, first, draw(&h.Get(ar).Rand), "a restored generator repeats itself")
}

func TestNonPositive(t *testing.T) {
	r := rng.New(5)
	before := r
	assert.Zero(t, r.Uint64N(0))
	assert.Zero(t, r.IntN(0))
	assert.Zero(t, r.IntN(-3))
	assert.Zero(t, r.IntN(math.MinInt))
	r.Perm(nil)
	r.Shuffle(0, func(i, j int) { t.Fatal("swap called") })
	r.Shuffle(1, func(i, j int) { t.Fatal("swap called") })
	r.Shuffle(-5, func(i, j int) { t.Fatal("swap called") })
	p := []int{9}
	r.Perm(p)
	assert.Equal(t, []int{0}, p)
	assert.Equal(t, before, r, "nothing was drawn")
	assert.Zero(t, r.Uint64N(1))
	assert.Zero(t, r.IntN(1))
	assert.NotEqual(t, before, r, "n == 1 draws")
}

// chiSquare returns Pearson's statistic of counts against a uniform
// distribution.
func chiSquare(counts []int) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	e := float64(total) / float64(len(counts))
	x := 0.0
	for _, c := range counts {
		x += (float64(c) - e) * (float64(c) - e) / e
	}
	return x
}

// TestUniform: with fixed seeds (so the test is deterministic), the
// results are as uniform as chance allows. Each bound is the 0.1 %
// critical value of its χ² distribution, or five standard deviations of
// a proportion: a correct generator fails none of them at these seeds,
// and a biased method fails by far more.
func TestUniform(t *testing.T) {
	r := rng.New(2024)
	counts := make([]int, 10)
	for range 100000 {
		counts[r.IntN(10)]++
	}
	assert.Less(t, chiSquare(counts), 27.88, "IntN(10): %v", counts) // 9 degrees of freedom

	// Bits: each of the 64 is set half the time.
	ones := make([]int, 64)
	const draws = 100000
	for range draws {
		v := r.Uint64()
		for b := range ones {
			ones[b] += int(v >> b & 1)
		}
	}
	for b, n := range ones {
		assert.InDelta(t, 0.5, float64(n)/draws, 5*math.Sqrt(0.25/draws), "bit %d", b)
	}

	// n = 3×2⁶²: x mod n would return values below 2⁶² half the time
	// (2⁶⁴ = n + 2⁶²), and a multiply-shift without rejection would
	// return multiples of 3 half the time. Unbiased, each is a third.
	const n = 3 << 62
	low, mult3 := 0, 0
	for range draws {
		v := r.Uint64N(n)
		require.Less(t, v, uint64(n))
		if v < 1<<62 {
			low++
		}
		if v%3 == 0 {
			mult3++
		}
	}
	sd := 5 * math.Sqrt(2.0/9/draws)
	assert.InDelta(t, 1.0/3, float64(low)/draws, sd, "values below 2⁶²")
	assert.InDelta(t, 1.0/3, float64(mult3)/draws, sd, "multiples of 3")
}

// TestPermShuffleUniform: each of the 24 orders of 4 elements is as likely.
func TestPermShuffleUniform(t *testing.T) {
	index := func(p []int) int { // p's rank among the 24 orders (its Lehmer code)
		k, seen := 0, 0
		for i, v := range p {
			smaller := 0
			for _, w := range p[i+1:] {
				if w < v {
					smaller++
				}
			}
			k = k*(len(p)-i) + smaller
			seen |= 1 << v
		}
		require.Equal(t, 0b1111, seen, "%v is not a permutation", p)
		return k
	}
	r := rng.New(99)
	perm, shuf := make([]int, 24), make([]int, 24)
	p := make([]int, 4)
	for range 120000 {
		r.Perm(p)
		perm[index(p)]++
		q := [4]int{0, 1, 2, 3}
		r.Shuffle(len(q), func(i, j int) { q[i], q[j] = q[j], q[i] })
		shuf[index(q[:])]++
	}
	// 23 degrees of freedom: 49.73 at 0.1 %.
	assert.Less(t, chiSquare(perm), 49.73, "Perm: %v", perm)
	assert.Less(t, chiSquare(shuf), 49.73, "Shuffle: %v", shuf)
}

func TestAllocs(t *testing.T) {
	r := rng.New(1)
	p := make([]int, 64)
	var sink uint64
	n := testing.AllocsPerRun(100, func() {
		sink += r.Uint64() + uint64(r.Uint32()) + r.Uint64N(1000) + uint64(r.IntN(10))
		r.Perm(p)
		r.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	})
	assert.Zero(t, n)
	_ = sink
}
