package fixed

import "math/bits"

// The trigonometric functions compute in unsigned Q63 (2⁶³ is 1) and Q64
// (2⁶⁴ is one turn) with truncating 64×64→128-bit products, whose errors
// (2⁻⁶³ each) are far below the 2⁻³³ of the final rounding. The constants
// are integer literals; TestTables recomputes every one of them from π
// with math/big integers and fails if one differs.

// sinCoef[k] is (π/4)^(2k+1)/(2k+1)! in Q63: the Taylor series of
// sin(π/4×z) in z ∈ [0, 1], an eighth of a turn.
var sinCoef = [7]uint64{
	0x6487ed5110b4611a, 0x0a55de7312df295f, 0x00519af19dd6ab87, 0x000132d2cce62bd8,
	0x000002a0f0690fdd, 0x00000003c60e9fbd, 0x0000000003d1e86a,
}

// cosCoef[k] is (π/4)^(2k)/(2k)! in Q63: the Taylor series of cos(π/4×z).
var cosCoef = [8]uint64{
	0x8000000000000000, 0x277a79937c8bbcb5, 0x020783e1036b5876, 0x000aae9e3f1e5ffd,
	0x00001e1f506891bb, 0x00000034da3e5441, 0x000000003f3a7147, 0x000000000036dc4a,
}

// atanTurns[i] is atan(i/16) in turns, Q64.
var atanTurns = [17]uint64{
	0x0000000000000000, 0x028b0d430e589aed, 0x051111d41ddd9a1b, 0x078d3fce842e72ec,
	0x09fb385b5ee39e8e, 0x0c57342a84c77619, 0x0e9e1d24179d5a77, 0x10cd98d1293ee442,
	0x12e4051d9df30866, 0x14e06a7aa3c7ddee, 0x16c266f6edfc1e3e, 0x188a15bbbca863e4,
	0x1a37f5c4c419ef33, 0x1bccd1dfdd02723f, 0x1d49ab3ac8b1bb50, 0x1eafa71eebf23a7b,
	0x2000000000000000,
}

// invTwoPi is 1/(2π) in Q64 (radians to turns), as Atan2 uses it.
const invTwoPi = 0x28be60db9391054a

// The constants of Radians and Turns, 192 bits each (three words, the
// most significant first): invTwoPi192 is 1/(2π) in Q192 and twoPi192 2π
// in Q189, both rounded to nearest.
const (
	invTwoPi192h, invTwoPi192m, invTwoPi192l = 0x28be60db9391054a, 0x7f09d5f47d4d3770, 0x36d8a5664f10e410
	twoPi192h, twoPi192m, twoPi192l          = 0xc90fdaa22168c234, 0xc4c6628b80dc1cd1, 0x29024e088a67cc74
)

// The Taylor series of atan near 0, in Q63.
const (
	atan3 uint64 = (1 << 63) / 3
	atan5 uint64 = (1 << 63) / 5
	atan7 uint64 = (1 << 63) / 7
)

// mul63 returns a×b in Q63 (truncated), for a×b below 2¹²⁷.
func mul63(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi<<1 | lo>>63
}

// Sin returns the sine of t turns (of 2π×t radians), within 2⁻³³+2⁻⁴⁰ of
// the true value: half an ulp and a 128th (TestSinCosAccuracy measures
// it). Only the fraction of t matters: Sin(t+n) == Sin(t) for an integer
// n, and Sin(-t) == -Sin(t), Sin(1/2-t) == Sin(t) exactly.
func Sin(t Num) Num { return sinTurn(uint32(t.v)) }

// Cos returns the cosine of t turns: Sin(t + 1/4), exactly.
func Cos(t Num) Num { return sinTurn(uint32(t.v) + 1<<30) }

// sinTurn returns sin(2π×u/2³²).
func sinTurn(u uint32) Num {
	quadrant, f := u>>30, u&(1<<30-1) // f/2³² ∈ [0, 1/4) turn
	cos := quadrant&1 == 1            // sin(1/4+f) = cos(f)
	if f > 1<<29 {                    // past the eighth: the complement
		f, cos = 1<<30-f, !cos
	}
	z := uint64(f) << 34 // f/2²⁹ in Q63: z ∈ [0, 1] eighths of a turn
	w := mul63(z, z)
	var v uint64
	if cos {
		v = cosCoef[7]
		for k := 6; k >= 0; k-- {
			v = cosCoef[k] - mul63(w, v)
		}
	} else {
		v = sinCoef[6]
		for k := 5; k >= 0; k-- {
			v = sinCoef[k] - mul63(w, v)
		}
		v = mul63(z, v)
	}
	r := int64((v + 1<<30) >> 31) // Q63 to Q32.32, rounded
	if quadrant >= 2 {
		return Num{-r}
	}
	return Num{r}
}

// Atan2 returns the angle of the vector (x, y) in turns, in [-1/2, 1/2]:
// the counterclockwise angle from the positive x axis, as math.Atan2(y,
// x)/(2π). Atan2(0, x) is 1/2 for x < 0 (a Num has no -0), and -1/2 only
// when y < 0 and the angle rounds to it; Atan2(0, 0) is 0. It is within
// 2⁻³³+2⁻⁴⁰ of the true angle (TestAtan2Accuracy measures it).
func Atan2(y, x Num) Num {
	a, b := mag(x), mag(y)
	if a == 0 && b == 0 {
		return Num{}
	}
	// θ in the first octant: atan(r) for r = min/max ∈ [0, 1].
	swap := b > a
	if swap {
		a, b = b, a
	}
	r, _ := bits.Div64(b>>1, b<<63, a) // b/a in Q63: b>>1 < a
	// atan(r) = atan(c) + atan((r-c)/(1+rc)) for c = i/16, the nearest
	// sixteenth, so |(r-c)/(1+rc)| ≤ 1/32 and four terms of its series
	// are exact to 2⁻³⁸ radians.
	i := (r + 1<<58) >> 59
	c := i << 59
	d, neg := r-c, r < c
	if neg {
		d = c - r
	}
	den := 1<<62 + mul63(r, c)>>1 // (1+rc) in Q62
	e, _ := bits.Div64(d>>2, d<<62, den)
	e2 := mul63(e, e)
	p := atan7
	p = atan5 - mul63(e2, p)
	p = atan3 - mul63(e2, p)
	p = 1<<63 - mul63(e2, p)
	p = mul63(mul63(e, p), invTwoPi) // atan(|d'|) in turns, Q64
	theta := atanTurns[i]
	if neg {
		theta -= p
	} else {
		theta += p
	}
	if swap {
		theta = 1<<62 - theta // a quarter turn minus it
	}
	if x.v < 0 {
		theta = 1<<63 - theta // a half turn minus it
	}
	res := int64((theta + 1<<31) >> 32) // Q64 turns to Q32.32, rounded
	if y.v < 0 {
		return Num{-res}
	}
	return Num{res}
}

// Radians returns t turns in radians, t×2π, correctly rounded (the Num
// nearest to the exact product) and saturated to [Min] or [Max] beyond
// |t| = 341,782,637.78 turns.
func Radians(t Num) Num {
	hi, mid := mul192(mag(t), twoPi192h, twoPi192m, twoPi192l)
	if hi >= 1<<60 { // the product >> 189 is 2⁶³ or more: Max, or Min (exact or saturated)
		return saturate(t.v < 0)
	}
	q := hi<<3 | mid>>61 // the product >> 189: at most 2⁶³ - 1
	q += mid >> 60 & 1   // rounded to nearest (never a tie: see mul192)
	return fromMag(q, t.v < 0)
}

// Turns returns rad radians in turns, rad/(2π), correctly rounded (the
// Num nearest to the exact quotient).
func Turns(rad Num) Num {
	hi, mid := mul192(mag(rad), invTwoPi192h, invTwoPi192m, invTwoPi192l)
	q := hi + mid>>63 // the product >> 192 (below 2⁶¹), rounded to nearest
	return fromMag(q, rad.v < 0)
}

// mul192 returns the top two words of the 256-bit product of m and the
// 192-bit constant c = ch×2¹²⁸ + cm×2⁶⁴ + cl.
//
// Radians and Turns are correctly rounded because the constant's error is
// far smaller than the closest any exact result comes to a rounding
// boundary. The raw result is m×α for α = 2π or 1/(2π) and the raw input
// m; its constant, c/2ˢ, is within 2⁻ˢ⁻¹ of α, so the computed product is
// within m×2⁻ˢ⁻¹ ulp of m×α: below 2⁻¹²⁹ ulp for every m ≤ 2⁶³ (s = 192
// for 1/(2π), and 189 for 2π with m ≤ 2⁶³/2π, beyond which Radians
// saturates). A rounding boundary is a half-integer h/2 (h odd), and
// |m×α - h/2| = |m×2α - h|/2 is at least half the distance of m×2α from
// the nearest integer, which for m up to N is smallest at the largest
// continued-fraction convergent denominator of 2α not above N: the
// bound is 2^-68.84 ulp for 1/π and m ≤ 2⁶³, and 2^-65.19 for 4π and
// m ≤ 2⁶³/2π (TestRadiansTurnsProof computes both from π). The computed product therefore lies on the same
// side of every boundary as the exact one, and rounding it rounds m×α
// (a tie cannot happen: the computed product is more than 2⁻⁶⁶ from
// every boundary).
func mul192(m, ch, cm, cl uint64) (hi, mid uint64) {
	h0, _ := bits.Mul64(m, cl)
	h1, l1 := bits.Mul64(m, cm)
	h2, l2 := bits.Mul64(m, ch)
	_, c := bits.Add64(h0, l1, 0)
	mid, c = bits.Add64(h1, l2, c)
	return h2 + c, mid
}
