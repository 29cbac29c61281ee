package fixed

import "math/bits"

// Sqrt returns the square root of x rounded to the nearest Num (it is
// exact: the result is the Num nearest to the true root). The square root
// of a negative number is 0.
func Sqrt(x Num) Num {
	if x.v <= 0 {
		return Num{}
	}
	// √(r×2⁻³²) = √(r×2³²)×2⁻³²: the root of the raw value shifted by 32.
	return Num{int64(sqrtRound(uint64(x.v)>>(64-FracBits), uint64(x.v)<<FracBits))} // < 2⁴⁸: no overflow
}

// Hypot returns √(x²+y²), the length of the vector (x, y), rounded to the
// nearest Num and saturated to [Max]. The squares are computed in 128 bits,
// so it is exact where x.Mul(x).Add(y.Mul(y)) would saturate (for lengths
// above 46,340.95).
func Hypot(x, y Num) Num {
	a, b := mag(x), mag(y)
	h1, l1 := bits.Mul64(a, a)
	h2, l2 := bits.Mul64(b, b)
	lo, c := bits.Add64(l1, l2, 0)
	hi := h1 + h2 + c // at most 2¹²⁷: no overflow
	return fromMag(sqrtRound(hi, lo), false)
}

// sqrtRound returns √n rounded to the nearest integer, for n = hi×2⁶⁴+lo
// below 2¹²⁷ (so the result is below 2⁶⁴ - 1).
func sqrtRound(hi, lo uint64) uint64 {
	s := isqrt(hi, lo)
	// Round up when n > s² + s (n - s² is at most 2s, and never exactly
	// s + 1/2 for an integer n: no ties).
	th, tl := bits.Mul64(s, s)
	tl, c := bits.Add64(tl, s, 0)
	th += c
	if hi > th || hi == th && lo > tl {
		s++
	}
	return s
}

// isqrt returns ⌊√n⌋ for n = hi×2⁶⁴+lo below 2¹²⁷: Newton's iteration
// y ← (y + n/y)/2 from a seed at or above the root, which decreases to
// ⌊√n⌋ and stops there.
func isqrt(hi, lo uint64) uint64 {
	if hi == 0 && lo == 0 {
		return 0
	}
	// The seed: the top 7 or 8 bits of n, shifted by an even 2s, give
	// √n < √(top+1)×2ˢ ≤ seedRoot[top]×2ˢ, within an eighth above.
	n := 128 - bits.LeadingZeros64(hi)
	if hi == 0 {
		n = 64 - bits.LeadingZeros64(lo)
	}
	s := max(0, (n-7)/2)
	var top uint64
	switch {
	case 2*s >= 64:
		top = hi >> (2*s - 64)
	case s == 0:
		top = lo
	default:
		top = lo>>(2*s) | hi<<(64-2*s)
	}
	y := uint64(seedRoot[top&0xff]) << s
	for {
		// n/y < 2⁶⁴, so Div64 does not overflow: y ≥ ⌊√n⌋ gives
		// n/y < y + 3, and y < 2⁶⁴ - 3 since n < 2¹²⁷.
		q, _ := bits.Div64(hi, lo, y)
		sum, c := bits.Add64(y, q, 0)
		z := sum>>1 | c<<63
		if z >= y {
			return y
		}
		y = z
	}
}

// seedRoot[t] is ⌈√(t+1)⌉, computed with integers.
var seedRoot = func() (r [256]uint8) {
	for t := range r {
		v := 0
		for v*v < t+1 {
			v++
		}
		r[t] = uint8(v)
	}
	return r
}()
