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
// 22 bits, and Sin, Cos and Atan2 are accurate to that step (below). The 32 integer bits hold
// ±2,147,483,647 units: a world of two billion pixels, or metres. The price
// of the precision is the range of products: the square of a length above
// 46,340 units does not fit, where Q48.16 would square lengths up to
// 11,863,283. [Hypot] computes a length from its components without that
// limit (in 128 bits), and Mul saturates instead of wrapping (below), so
// an overflow shows as a value stuck at [Max], not as a body teleported to
// the other side of the world.
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
// # Arithmetic and rounding
//
// A Num is its raw int64: Num(r) is the number r×2⁻³², and the operators
// work on the raw value: + and - add and subtract exactly (wrapping on
// overflow, like int64), x*n multiplies by an integer n (wrapping too),
// x/n divides by one (truncating toward zero), and <, ==, min and max
// compare. A product or quotient of two Nums needs [Num.Mul] and
// [Num.Div]: x*y on two Nums is a raw integer product, 2³² times too
// large.
//
// Nothing in this package panics, whatever its arguments. A result that
// is not exactly representable is rounded to the nearest Num, ties to even
// (Mul, Div, [Ratio], [FromFloat], [Sqrt], [Hypot], [Radians], [Turns]);
// Round rounds halves away from zero, as math.Round does. A result beyond
// the range saturates: it becomes [Max] or [Min], whichever is on its side
// (Add, Sub, Mul, Div, Neg, Abs, [FromInt], Ceil, Round, Hypot, Radians).
// Division by zero saturates too: x/0 is Max for x > 0, Min for x < 0, and
// 0 for 0. [Sqrt] of a negative number is 0. No operation allocates.
//
// # Angles
//
// [Sin], [Cos] and [Atan2] measure angles in turns: 1 is the whole circle,
// 1/4 a right angle (Atan2 returns a value in [-1/2, 1/2]). A turn makes
// the reduction of an angle to the circle exact, since it is the fraction
// bits of the Num: Sin(t+n) == Sin(t) for every integer n, however large,
// angles add and wrap without drift, and quantized angles map exactly (an
// 8-bit input angle a is Ratio(a, 256)). Radians would need 2π, which no
// binary fraction holds: reducing an angle by an approximation of 2π
// loses more bits the larger the angle, and the symmetries (Sin(t+1/4) ==
// Cos(t), Sin(-t) == -Sin(t)) hold only approximately; here they hold
// exactly. [Radians] and [Turns] convert, with [Pi].
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

// Num is a signed Q32.32 fixed-point number: Num(r) is r×2⁻³². The zero
// value is 0. See the package comment for its operators and rounding.
type Num int64

// Constants.
const (
	FracBits     = 32              // the number of fraction bits
	One      Num = 1 << FracBits   // 1
	Half     Num = One / 2         // 1/2
	Ulp      Num = 1               // 2⁻³², the step between two Nums
	Max      Num = math.MaxInt64   // 2³¹ - 2⁻³², the largest Num
	Min      Num = math.MinInt64   // -2³¹, the smallest Num
	Pi       Num = 13493037705     // π, rounded to the nearest Num (checked by TestTables)
	fracMask     = uint64(One - 1) // the fraction bits of a raw value
	half64       = uint64(1) << 63 // 2⁶³, |Min| as a uint64
	maxInt       = math.MaxInt32   // the largest integer part
	minInt       = math.MinInt32   // the smallest integer part
	halfRaw      = uint64(Half)    // 2³¹
	oneRaw       = uint64(One)     // 2³²
	maxRaw       = uint64(Max)     // 2⁶³ - 1
)

// FromInt returns i as a Num, saturated to [Min] or [Max] when i is outside
// [-2³¹, 2³¹).
func FromInt(i int) Num {
	switch {
	case int64(i) > maxInt:
		return Max
	case int64(i) < minInt:
		return Min
	}
	return Num(int64(i) << FracBits)
}

// Ratio returns num/den rounded to the nearest Num (ties to even), without
// the range limit a [FromInt] of the two would put on num and den. A
// denominator of 0 and a quotient beyond the range saturate as [Num.Div]
// does. Ratio(1, 60) is a 60 Hz frame's length in seconds.
func Ratio(num, den int64) Num { return Num(num).Div(Num(den)) }

// FromFloat returns f rounded to the nearest Num (ties to even), saturated
// to [Min] or [Max] beyond the range; NaN is 0. It is exact and the same on
// every platform, but it is for setting up a match and reading
// configuration, never for a game's Step.
func FromFloat(f float64) Num {
	if f != f {
		return 0
	}
	v := math.RoundToEven(f * (1 << FracBits)) // scaling by a power of two is exact
	switch {
	case v >= 1<<63:
		return Max
	case v < -(1 << 63):
		return Min
	}
	return Num(v)
}

// Float returns x as the nearest float64 (ties to even), for rendering:
// never use it inside a game's Step.
func (x Num) Float() float64 { return float64(x) / (1 << FracBits) }

// Int returns the integer part of x, truncated toward zero as a
// conversion of a float to an int is: 2.75 → 2, -2.75 → -2.
func (x Num) Int() int { return int(x / One) }

// Add returns x + y, saturated to [Min] or [Max].
func (x Num) Add(y Num) Num {
	s := x + y
	if (s^x)&(s^y) < 0 { // x and y have one sign, and s the other
		return saturate(x < 0)
	}
	return s
}

// Sub returns x - y, saturated to [Min] or [Max].
func (x Num) Sub(y Num) Num {
	d := x - y
	if (x^y)&(x^d) < 0 { // x and y have different signs, and d has y's
		return saturate(x < 0)
	}
	return d
}

// Neg returns -x; -Min saturates to Max.
func (x Num) Neg() Num {
	if x == Min {
		return Max
	}
	return -x
}

// Abs returns |x|; |Min| saturates to Max.
func (x Num) Abs() Num {
	if x < 0 {
		return x.Neg()
	}
	return x
}

// Mul returns x×y rounded to the nearest Num (ties to even), saturated to
// [Min] or [Max].
func (x Num) Mul(y Num) Num {
	hi, lo := bits.Mul64(uint64(x), uint64(y))
	// The unsigned product of the two's complement values, corrected to
	// the signed 128-bit product.
	hi -= uint64(x>>63) & uint64(y)
	hi -= uint64(y>>63) & uint64(x)
	// The result is the product >> 32: it fits when bits 127 to 95 of
	// the product are all equal.
	if s := int64(hi); s>>31 != s>>63 {
		return saturate(s < 0)
	}
	q := int64(hi<<(64-FracBits) | lo>>FracBits)
	if r := lo & fracMask; r > halfRaw || r == halfRaw && q&1 != 0 {
		if q == math.MaxInt64 {
			return Max
		}
		q++
	}
	return Num(q)
}

// Div returns x/y rounded to the nearest Num (ties to even), saturated to
// [Min] or [Max]. Division by zero saturates: x/0 is Max for x > 0, Min for
// x < 0, and 0 for x == 0.
func (x Num) Div(y Num) Num {
	if y == 0 {
		switch {
		case x > 0:
			return Max
		case x < 0:
			return Min
		}
		return 0
	}
	neg := (x < 0) != (y < 0)
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

// Cmp returns -1 when x < y, 0 when x == y, and +1 when x > y.
func (x Num) Cmp(y Num) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// Sign returns -1 when x < 0, 0 when x == 0, and +1 when x > 0.
func (x Num) Sign() int { return x.Cmp(0) }

// Floor returns the greatest integer not above x.
func (x Num) Floor() Num { return x &^ (One - 1) }

// Ceil returns the least integer not below x; above the greatest integer,
// 2³¹-1, it saturates to [Max].
func (x Num) Ceil() Num {
	if f := x.Floor(); f != x {
		return f.Add(One)
	}
	return x
}

// Trunc returns x with its fraction removed (rounded toward zero).
func (x Num) Trunc() Num {
	if x < 0 {
		return fromMag(mag(x)&^fracMask, true)
	}
	return x.Floor()
}

// Round returns the integer nearest to x, halves away from zero (as
// math.Round does); at 2³¹-1/2 and above it saturates to [Max].
func (x Num) Round() Num {
	if x >= 0 {
		if x > Max-Half {
			return Max
		}
		return (x + Half).Floor()
	}
	return fromMag((mag(x)+halfRaw)&^fracMask, true) // -Min+1/2 rounds to -Min
}

// Frac returns x - x.Floor(), the fraction of x: a value in [0, 1).
func (x Num) Frac() Num { return x & (One - 1) }

// String returns x in decimal with the fewest fraction digits (at most ten)
// that identify it: the Num nearest to the decimal is x. 1.5 is "1.5",
// -0.25 is "-0.25", Ulp is "0.0000000002".
func (x Num) String() string {
	var b [24]byte
	out := b[:0]
	if x < 0 {
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
			q, err = q+1, oneRaw-rem
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

// saturate returns Min when neg, Max otherwise.
func saturate(neg bool) Num {
	if neg {
		return Min
	}
	return Max
}

// mag returns |x| as a uint64 (|Min| is 2⁶³).
func mag(x Num) uint64 {
	if x < 0 {
		return -uint64(x)
	}
	return uint64(x)
}

// fromMag returns the Num of magnitude m and sign neg, saturated.
func fromMag(m uint64, neg bool) Num {
	if neg {
		if m > half64 {
			return Min
		}
		return Num(-m) // -2⁶³ wraps to Min, exactly
	}
	if m > maxRaw {
		return Max
	}
	return Num(m)
}
