// Package fixed is a fixed-point number type for game simulations: [Num],
// a signed Q32.32 number (32 integer bits, 32 fraction bits in an int64),
// whose every operation is integer arithmetic, so a simulation built on it
// computes the same bits on every architecture, compiler and build flag.
// Floating point does not: Go may fuse x*y + z into one FMA instruction on
// arm64, ppc64le, s390x, riscv64 and amd64 with GOAMD64=v3, and the math
// package's functions may differ in the last bit between platforms.
//
// # Why Q32.32
//
// A 60 Hz game works in small steps, and steps need fraction bits. With 16
// of them (16.16 in an int32, or Q48.16 in an int64, the other format
// considered) a frame's 1/60 s is 1092/65536, 0.024 % short, so a timer
// that adds it every frame runs 0.9 s slow an hour; a velocity of a
// thousandth of a unit a frame has 7 significant bits, and every drag
// factor applied to it rounds away a good part of them. With 32 fraction
// bits the step of the number line is 2⁻³² ≈ 2.3×10⁻¹⁰: 1/60 is
// 71582788/2³² and the timer is off by 14 µs an hour, that velocity keeps
// 22 bits, and Sin, Cos and Atan2 are accurate to that step (below). The
// price of the precision is the range of products: the square of a length
// above 46,340.95 does not fit (see Range and overflow), where Q48.16 would
// square lengths up to 11,863,283.
//
// Both 64-bit formats cost the same: a product needs the 128-bit
// intermediate of math/bits.Mul64 and a quotient bits.Div64, one
// instruction each on amd64 and arm64 (a few more on 32-bit targets and
// wasm, which compute the same bits). On this project's machine (amd64,
// BenchmarkMul and the others, next to float64) Mul takes 2 ns against
// float64's 0.6, Div 3 ns against 1.2, Sqrt 18 ns (a few Newton steps of
// Div64) against 2.4, and Sin and Atan2 8 and 17 ns, within a third of
// math.Sin and math.Atan2.
//
// # Arithmetic only through methods
//
// A Num is a struct holding its raw int64 (the number raw×2⁻³²), so Go's
// arithmetic operators do not compile on it: x*y on two Nums, which on a
// raw integer would be a product 2³² times too large, and x+y, which would
// wrap silently, are compile errors. The arithmetic is [Num.Add],
// [Num.Sub], [Num.Mul], [Num.Div], [Num.Neg], [Num.Abs], [Num.MulInt] and
// [Num.DivInt] (by an integer), [Num.Rem] and [Num.Mod]; the comparisons are
// [Num.Cmp], [Num.Less], [Num.LessEq], [Num.Greater], [Num.GreaterEq] and
// [Num.Sign]. == and != do compile and are exact (two Nums are equal when
// their raw values are), so a Num can be a map key; the zero value,
// Num{}, is 0. [FromInt], [Ratio] and [FromFloat] make a Num from a
// number, [FromRaw] and [Num.Raw] convert from and to the raw value (for
// serializing a Num, or bit tricks of your own), and [One], [Half], [Ulp],
// [Max], [Min] and [Pi] are the constants: variables, since Go has no
// constants of struct types. Never assign to them.
//
// A Num has the size and alignment of an int64 on every platform, so a
// state's layout does not change, and its methods compile to the
// instructions they had on a bare int64, but for register choice and
// branch order: the struct costs nothing.
//
// # Range and overflow
//
// Every operation either is exact, or rounds its result to the nearest
// Num, ties to even (Mul, Div, DivInt, [Ratio], [FromFloat], [Sqrt], [Hypot],
// [Radians], [Turns]); Round rounds halves away from zero, as
// math.Round does. Nothing in this package panics, whatever its arguments,
// and no operation allocates.
//
// Nothing wraps: a result beyond the range saturates, becoming [Max] or
// [Min], whichever is on its side (Add, Sub, Mul, MulInt, Div, DivInt, Neg,
// Abs, [FromInt], [FromFloat], [Ratio], Ceil, Round, [Hypot], [Radians]).
// Division by zero saturates too: x/0 is Max for x > 0, Min for x < 0, and
// 0 for 0. [Sqrt] of a negative number is 0, and x.Rem(0) and x.Mod(0) are
// 0. The other operations cannot overflow: Floor, Trunc, Frac, Rem, Mod,
// Int, [Sqrt], [Turns], [Sin], [Cos] and [Atan2].
//
// Saturation rather than wrapping, because an overflow then shows as a
// value stuck at the edge of the range, not as a body teleported to the
// other side of the world, and because saturating arithmetic keeps order:
// x ≤ y implies x+z ≤ y+z, so a clamp or a collision test still holds
// after an overflow. Either rule would be deterministic, which is all
// rollback needs; saturation is the one every method already had, and the
// raw + and - that wrapped are gone. Its price: saturated arithmetic is not
// associative, x.Add(y).Sub(y) is not x once x+y saturated. A quantity that
// should wrap, such as an angle that keeps turning, should be kept reduced
// (t = t.Add(dt).Frac(): Sin and Cos read only the fraction of a turn).
//
// The range, for the numbers a game holds:
//
//   - [Max] is 2³¹-2⁻³² (2,147,483,647.9999999998) and [Min] -2³¹; [Ulp],
//     the step between two Nums, is 2⁻³² ≈ 2.3×10⁻¹⁰. [FromInt] holds every
//     int32.
//   - x.Mul(y) fits while |x×y| < 2³¹. In particular x.Mul(x), a square,
//     fits for |x| ≤ 46,340.95 (46340.9500118 is the largest, just below
//     2^15.5 = √2³¹) and saturates above: a squared distance in a
//     collision test fits for distances up to 46,340, and [Hypot] computes
//     a length from its components without that limit (in 128 bits).
//   - x.Div(y) fits while |x/y| < 2³¹: One.Div(y) saturates for |y| ≤ 2⁻³¹
//     (two ulps).
//   - [Radians] fits for |t| up to 341,782,637.78 turns (Max/2π); [Turns],
//     [Sin], [Cos] and [Atan2] take any Num.
//
// # Angles
//
// [Sin], [Cos] and [Atan2] measure angles in turns: 1 is the whole circle,
// 1/4 a right angle (Atan2 returns a value in [-1/2, 1/2]). A turn makes
// the reduction of an angle to the circle exact, since it is the fraction
// bits of the Num: Sin(t+n) == Sin(t) for every integer n, however large,
// angles add without drift, and quantized angles map exactly (an 8-bit
// input angle a is Ratio(a, 256)). Radians would need 2π, which no binary
// fraction holds: reducing an angle by an approximation of 2π loses more
// bits the larger the angle, and the symmetries (Sin(t+1/4) == Cos(t),
// Sin(-t) == -Sin(t)) hold only approximately; here they hold exactly.
// [Radians] and [Turns] convert, with [Pi]; both are correctly rounded
// (the Num nearest to the exact product with 2π or 1/(2π), for every
// input: TestRadiansTurnsProof proves it from π's continued fraction, and
// TestRadiansTurns checks it at half a million inputs).
//
// Sin, Cos and Atan2 are within 2⁻³³+2⁻⁴⁰ of the true value: half an ulp
// (their final rounding) and a 128th of one (a series truncated at 2⁻⁴⁴
// and products in 64 fraction bits). Their tests measure it against
// math.Sin, math.Cos and math.Atan2 at two million points each: the
// worst errors are 0.50003, 0.50003 and 0.5000 ulp.
//
// # Floating point
//
// [FromFloat] and [Num.Float] are for the edges of the simulation: reading
// a configuration when the match is set up, and drawing the state. Never
// call them inside a game's Step, whose results must depend only on the
// state and the inputs, computed the same way on every machine.
package fixed

import (
	"math"
	"math/bits"
	"strconv"
)

// Num is a signed Q32.32 fixed-point number: the raw int64 r is the number
// r×2⁻³². The zero value is 0. Its arithmetic is its methods (Go's
// operators do not compile on it, except == and !=); see the package
// comment for their rounding and range.
type Num struct {
	v int64 // the raw value
}

// FracBits is the number of fraction bits.
const FracBits = 32

// The constants of the package, as Nums. They are variables because Go
// has no constants of struct types: never assign to them.
var (
	One  = Num{oneRaw}        // 1
	Half = Num{oneRaw / 2}    // 1/2
	Ulp  = Num{1}             // 2⁻³², the step between two Nums
	Max  = Num{math.MaxInt64} // 2³¹ - 2⁻³², the largest Num
	Min  = Num{math.MinInt64} // -2³¹, the smallest Num
	Pi   = Num{piRaw}         // π, rounded to the nearest Num
)

const (
	oneRaw   = int64(1) << FracBits // 1, raw
	piRaw    = 13493037705          // π, rounded to the nearest Num (checked by TestTables)
	fracMask = uint64(oneRaw - 1)   // the fraction bits of a raw value
	half64   = uint64(1) << 63      // 2⁶³, |Min| as a uint64
	maxInt   = math.MaxInt32        // the largest integer part
	minInt   = math.MinInt32        // the smallest integer part
	halfRaw  = uint64(oneRaw / 2)   // 2³¹
	maxRaw   = uint64(math.MaxInt64)
)

// FromRaw returns the Num whose raw value is r: the number r×2⁻³².
func FromRaw(r int64) Num { return Num{r} }

// Raw returns the raw value of x, x×2³²: FromRaw(x.Raw()) == x.
func (x Num) Raw() int64 { return x.v }

// FromInt returns i as a Num, saturated to [Min] or [Max] when i is outside
// [-2³¹, 2³¹).
func FromInt(i int) Num {
	switch {
	case int64(i) > maxInt:
		return Num{math.MaxInt64}
	case int64(i) < minInt:
		return Num{math.MinInt64}
	}
	return Num{int64(i) << FracBits}
}

// Ratio returns num/den rounded to the nearest Num (ties to even), without
// the range limit a [FromInt] of the two would put on num and den. A
// denominator of 0 and a quotient beyond the range saturate as [Num.Div]
// does. Ratio(1, 60) is a 60 Hz frame's length in seconds.
func Ratio(num, den int64) Num { return Num{num}.Div(Num{den}) }

// FromFloat returns f rounded to the nearest Num (ties to even), saturated
// to [Min] or [Max] beyond the range; NaN is 0. It is exact and the same on
// every platform, but it is for setting up a match and reading
// configuration, never for a game's Step.
func FromFloat(f float64) Num {
	if f != f {
		return Num{}
	}
	v := math.RoundToEven(f * (1 << FracBits)) // scaling by a power of two is exact
	switch {
	case v >= 1<<63:
		return Num{math.MaxInt64}
	case v < -(1 << 63):
		return Num{math.MinInt64}
	}
	return Num{int64(v)}
}

// Float returns x as the nearest float64 (ties to even), for rendering:
// never use it inside a game's Step.
func (x Num) Float() float64 { return float64(x.v) / (1 << FracBits) }

// Int returns the integer part of x, truncated toward zero as a
// conversion of a float to an int is: 2.75 → 2, -2.75 → -2.
func (x Num) Int() int { return int(x.v / oneRaw) }

// Add returns x + y, saturated to [Min] or [Max].
func (x Num) Add(y Num) Num {
	s := x.v + y.v
	if (s^x.v)&(s^y.v) < 0 { // x and y have one sign, and s the other
		return saturate(x.v < 0)
	}
	return Num{s}
}

// Sub returns x - y, saturated to [Min] or [Max].
func (x Num) Sub(y Num) Num {
	d := x.v - y.v
	if (x.v^y.v)&(x.v^d) < 0 { // x and y have different signs, and d has y's
		return saturate(x.v < 0)
	}
	return Num{d}
}

// Neg returns -x; -Min saturates to Max.
func (x Num) Neg() Num {
	if x.v == math.MinInt64 {
		return Num{math.MaxInt64}
	}
	return Num{-x.v}
}

// Abs returns |x|; |Min| saturates to Max.
func (x Num) Abs() Num {
	if x.v < 0 {
		return x.Neg()
	}
	return x
}

// Mul returns x×y rounded to the nearest Num (ties to even), saturated to
// [Min] or [Max]: it fits while |x×y| < 2³¹ (a square while |x| ≤
// 46,340.95).
func (x Num) Mul(y Num) Num {
	hi, lo := bits.Mul64(uint64(x.v), uint64(y.v))
	// The unsigned product of the two's complement values, corrected to
	// the signed 128-bit product.
	hi -= uint64(x.v>>63) & uint64(y.v)
	hi -= uint64(y.v>>63) & uint64(x.v)
	// The result is the product >> 32: it fits when bits 127 to 95 of
	// the product are all equal.
	if s := int64(hi); s>>31 != s>>63 {
		return saturate(s < 0)
	}
	q := int64(hi<<(64-FracBits) | lo>>FracBits)
	if r := lo & fracMask; r > halfRaw || r == halfRaw && q&1 != 0 {
		if q == math.MaxInt64 {
			return Num{math.MaxInt64}
		}
		q++
	}
	return Num{q}
}

// MulInt returns x×n, exact or saturated to [Min] or [Max]. It is
// x.Mul(FromInt(n)) without FromInt's limit on n (an int64, not an int,
// whose width would depend on the platform).
func (x Num) MulInt(n int64) Num {
	neg := (x.v < 0) != (n < 0)
	hi, lo := bits.Mul64(mag(x), magInt(n))
	if hi != 0 {
		return saturate(neg)
	}
	return fromMag(lo, neg)
}

// Div returns x/y rounded to the nearest Num (ties to even), saturated to
// [Min] or [Max]. Division by zero saturates: x/0 is Max for x > 0, Min for
// x < 0, and 0 for x == 0.
func (x Num) Div(y Num) Num {
	if y.v == 0 {
		return divZero(x)
	}
	neg := (x.v < 0) != (y.v < 0)
	a, b := mag(x), mag(y)
	hi, lo := a>>(64-FracBits), a<<FracBits // |x|×2³², the raw quotient's dividend
	if hi >= b {
		return saturate(neg) // the quotient is 2⁶⁴ or more
	}
	q, r := bits.Div64(hi, lo, b)
	if q > half64 {
		return saturate(neg)
	}
	if r > b-r || r == b-r && q&1 != 0 { // r > b/2, or a tie with an odd q
		q++
	}
	return fromMag(q, neg)
}

// DivInt returns x/n rounded to the nearest Num (ties to even), saturated
// to [Min] or [Max] (only Min.DivInt(-1) is beyond the range). It is
// x.Div(FromInt(n)) without FromInt's limit on n (an int64, as for
// MulInt); x.DivInt(0) saturates as x.Div of 0 does.
func (x Num) DivInt(n int64) Num {
	if n == 0 {
		return divZero(x)
	}
	neg := (x.v < 0) != (n < 0)
	a, b := mag(x), magInt(n)
	q, r := a/b, a%b
	if r > b-r || r == b-r && q&1 != 0 {
		q++
	}
	return fromMag(q, neg)
}

// Rem returns the remainder of x/y truncated toward zero, as Go's % on
// integers: x - y×Trunc(x/y), exact, with the sign of x and a magnitude
// below |y|. x.Rem(0) is 0.
func (x Num) Rem(y Num) Num {
	if y.v == 0 {
		return Num{}
	}
	return Num{x.v % y.v} // Min % -Ulp is 0 in Go: no overflow
}

// Mod returns x modulo y, the Euclidean remainder: x - |y|×⌊x/|y|⌋, exact,
// in [0, |y|). It wraps a position into a world of size y:
// FromInt(-1).Mod(FromInt(10)) is 9. x.Mod(0) is 0.
func (x Num) Mod(y Num) Num {
	if y.v == 0 {
		return Num{}
	}
	r := x.v % y.v
	if r < 0 {
		if y.v < 0 {
			r -= y.v
		} else {
			r += y.v
		}
	}
	return Num{r}
}

// Cmp returns -1 when x < y, 0 when x == y, and +1 when x > y.
func (x Num) Cmp(y Num) int {
	switch {
	case x.v < y.v:
		return -1
	case x.v > y.v:
		return 1
	}
	return 0
}

// Less reports whether x < y.
func (x Num) Less(y Num) bool { return x.v < y.v }

// LessEq reports whether x ≤ y.
func (x Num) LessEq(y Num) bool { return x.v <= y.v }

// Greater reports whether x > y.
func (x Num) Greater(y Num) bool { return x.v > y.v }

// GreaterEq reports whether x ≥ y.
func (x Num) GreaterEq(y Num) bool { return x.v >= y.v }

// Sign returns -1 when x < 0, 0 when x == 0, and +1 when x > 0.
func (x Num) Sign() int { return x.Cmp(Num{}) }

// Floor returns the greatest integer not above x.
func (x Num) Floor() Num { return Num{x.v &^ (oneRaw - 1)} }

// Ceil returns the least integer not below x; above the greatest integer,
// 2³¹-1, it saturates to [Max].
func (x Num) Ceil() Num {
	if f := x.Floor(); f != x {
		return f.Add(Num{oneRaw})
	}
	return x
}

// Trunc returns x with its fraction removed (rounded toward zero).
func (x Num) Trunc() Num {
	if x.v < 0 {
		return fromMag(mag(x)&^fracMask, true)
	}
	return x.Floor()
}

// Round returns the integer nearest to x, halves away from zero (as
// math.Round does); at 2³¹-1/2 and above it saturates to [Max].
func (x Num) Round() Num {
	if x.v >= 0 {
		if x.v > math.MaxInt64-oneRaw/2 {
			return Num{math.MaxInt64}
		}
		return Num{x.v + oneRaw/2}.Floor()
	}
	return fromMag((mag(x)+halfRaw)&^fracMask, true) // -Min+1/2 rounds to -Min
}

// Frac returns x - x.Floor(), the fraction of x: a value in [0, 1).
func (x Num) Frac() Num { return Num{x.v & (oneRaw - 1)} }

// String returns x in decimal with the fewest fraction digits (at most ten)
// that identify it: the Num nearest to the decimal is x. 1.5 is "1.5",
// -0.25 is "-0.25", Ulp is "0.0000000002".
func (x Num) String() string {
	var b [24]byte
	out := b[:0]
	if x.v < 0 {
		out = append(out, '-')
	}
	m := mag(x)
	out = strconv.AppendUint(out, m>>FracBits, 10)
	f := m & fracMask
	if f == 0 {
		return string(out)
	}
	p := uint64(1)
	for range 10 {
		p *= 10
		// f×p/2³² rounded; the decimal q/p is within half a step of x when
		// its error, err/(p×2³²), is below 2⁻³³.
		hi, lo := bits.Mul64(f, p)
		q, rem := hi<<(64-FracBits)|lo>>FracBits, lo&fracMask
		err := rem
		if rem >= halfRaw {
			q, err = q+1, uint64(oneRaw)-rem
		}
		if 2*err < p {
			var d [24]byte
			digits := strconv.AppendUint(d[:0], q+p, 10) // a leading 1 keeps the zeros
			for digits[len(digits)-1] == '0' {
				digits = digits[:len(digits)-1]
			}
			out = append(out, '.')
			return string(append(out, digits[1:]...))
		}
	}
	return string(out) // not reached: ten digits always identify x
}

// divZero returns x/0: Max for x > 0, Min for x < 0, 0 for 0.
func divZero(x Num) Num {
	switch {
	case x.v > 0:
		return Num{math.MaxInt64}
	case x.v < 0:
		return Num{math.MinInt64}
	}
	return Num{}
}

// saturate returns Min when neg, Max otherwise.
func saturate(neg bool) Num {
	if neg {
		return Num{math.MinInt64}
	}
	return Num{math.MaxInt64}
}

// mag returns |x| as a uint64 (|Min| is 2⁶³).
func mag(x Num) uint64 { return magInt(x.v) }

// magInt returns |i| as a uint64 (|math.MinInt64| is 2⁶³).
func magInt(i int64) uint64 {
	if i < 0 {
		return -uint64(i)
	}
	return uint64(i)
}

// fromMag returns the Num of magnitude m and sign neg, saturated.
func fromMag(m uint64, neg bool) Num {
	if neg {
		if m > half64 {
			return Num{math.MinInt64}
		}
		return Num{int64(-m)} // -2⁶³ wraps to Min, exactly
	}
	if m > maxRaw {
		return Num{math.MaxInt64}
	}
	return Num{int64(m)}
}
