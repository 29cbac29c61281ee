// Package rng is a deterministic random number generator for game
// simulations: [Rand], a value of one uint64 and no pointers, so it lives
// in the game's state (a savestate arena), is copied with every snapshot and
// rolls back with it. A copy continues exactly as the original would have:
// that is what a rollback does.
//
// # Why SplitMix64
//
// Rand is SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
// number generators", OOPSLA 2014; the reference is Vigna's splitmix64.c,
// https://prng.di.unimi.it/splitmix64.c): the state advances by a fixed odd
// constant, and each output is the state put through a 64-bit mixing
// function (two xor-shift-multiplies and a final xor-shift). It was
// chosen over the others for what a game's state needs:
//
//   - The state is 8 bytes, one plain field. xoshiro256** needs 32 and
//     PCG-DXSM (math/rand/v2's PCG) 16, and every byte of the state is
//     copied by each snapshot and hashed by each checksum.
//   - Every seed is a good seed, 0 included, and two nearby seeds give
//     unrelated sequences: no seeding procedure to get wrong. (Seeds that
//     differ by a multiple of its increment give one sequence, shifted:
//     seed s+0x9e3779b97f4a7c15 is seed s after one draw.) xoshiro
//     must not start from an all-zero state (it is itself seeded with
//     SplitMix64), nor may xorshift64, whose first outputs after a small
//     seed are small numbers.
//   - An output costs an addition, two multiplications and three
//     xor-shifts (about a nanosecond), with no 128-bit arithmetic.
//   - It passes BigCrush (TestU01). Its period is 2⁶⁴: a game drawing a
//     million numbers a frame at 60 Hz would need ten thousand years to
//     exhaust it. Its one statistical blemish, that no 64-bit output
//     repeats within the period, shows only after billions of draws.
//
// [Rand.Uint64N] and [Rand.IntN] are unbiased (Lemire's multiply-shift
// method with rejection); [Rand.Perm] and [Rand.Shuffle] are Fisher-Yates.
// No method panics or allocates. The sequence of every method for a given
// seed is part of this package's contract: a change to it would change
// every replay recorded with it.
package rng

import "math/bits"

// Rand is a SplitMix64 generator. Its zero value is the generator seeded
// with 0. Copy it to fork the sequence; compare copies with ==.
type Rand struct {
	state uint64
}

// golden is SplitMix64's increment: 2⁶⁴/φ, rounded to odd.
const golden = 0x9e3779b97f4a7c15

// New returns a generator seeded with seed.
func New(seed uint64) Rand { return Rand{state: seed} }

// Seed resets r to the generator seeded with seed.
func (r *Rand) Seed(seed uint64) { r.state = seed }

// Uint64 returns a uniformly distributed 64-bit value.
func (r *Rand) Uint64() uint64 {
	r.state += golden
	z := r.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Uint32 returns a uniformly distributed 32-bit value: the upper half of
// the next Uint64.
func (r *Rand) Uint32() uint32 { return uint32(r.Uint64() >> 32) }

// Uint64N returns a uniformly distributed value in [0, n). For n == 0 it
// returns 0 and leaves r unchanged.
//
// It is Lemire's method ("Fast Random Integer Generation in an Interval",
// ACM TOMACS 29(1), 2019): the upper half of the 128-bit product of a
// draw and n, with the draws that would make some values more likely than
// others rejected (fewer than one in 2⁶⁴/n of them).
func (r *Rand) Uint64N(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	hi, lo := bits.Mul64(r.Uint64(), n)
	if lo < n {
		thresh := -n % n // 2⁶⁴ mod n: the products to reject
		for lo < thresh {
			hi, lo = bits.Mul64(r.Uint64(), n)
		}
	}
	return hi
}

// IntN returns a uniformly distributed value in [0, n). For n <= 0 it
// returns 0 and leaves r unchanged.
func (r *Rand) IntN(n int) int {
	if n <= 0 {
		return 0
	}
	return int(r.Uint64N(uint64(n)))
}

// Perm fills p with a uniformly distributed permutation of 0…len(p)-1
// (the inside-out Fisher-Yates shuffle: len(p)-1 draws, nothing
// allocated). An empty p draws nothing.
func (r *Rand) Perm(p []int) {
	for i := range p {
		j := 0
		if i > 0 {
			j = r.IntN(i + 1)
		}
		p[i] = p[j]
		p[j] = i
	}
}

// Shuffle permutes n elements uniformly: it calls swap(i, j) to exchange
// the elements at i and j, n-1 times (Fisher-Yates, from the last element
// down). For n <= 1 it draws nothing and never calls swap.
func (r *Rand) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.IntN(i+1))
	}
}
