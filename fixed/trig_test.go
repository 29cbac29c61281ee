package fixed_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rewindgg/rewind/fixed"
)

// bound is the documented accuracy of Sin, Cos and Atan2, in ulps (2⁻³²):
// 2⁻³³+2⁻⁴⁰, half an ulp (the final rounding) plus a 128th for the
// truncated series and the intermediate products.
const bound = 0.5 + 1.0/128

// The references are math.Sin, math.Cos and math.Atan2 in float64, whose
// own errors (about 2⁻⁵² of the angle) are some 2⁻²⁰ ulp of a Num.

func TestSinCosAccuracy(t *testing.T) {
	var worstSin, worstCos float64
	check := func(x fixed.Num) {
		frac := float64(uint32(x.Raw())) / (1 << 32) // the fraction of the turn, exactly
		s := math.Abs(fixed.Sin(x).Float()-math.Sin(2*math.Pi*frac)) * (1 << 32)
		c := math.Abs(fixed.Cos(x).Float()-math.Cos(2*math.Pi*frac)) * (1 << 32)
		worstSin, worstCos = max(worstSin, s), max(worstCos, c)
	}
	for u := range 1 << 20 { // every 4096th angle of the circle
		check(num(int64(u) << 12))
	}
	r := rand.New(rand.NewPCG(21, 22))
	for range 1 << 20 { // and random ones, with random whole turns
		check(num(int64(r.Uint64())))
	}
	t.Logf("worst error: Sin %.7f ulp, Cos %.7f ulp", worstSin, worstCos)
	assert.LessOrEqual(t, worstSin, bound)
	assert.LessOrEqual(t, worstCos, bound)
}

// TestSinCosExact: the values and symmetries that hold exactly in turns.
func TestSinCosExact(t *testing.T) {
	q, zero, mone := num(one/4), fixed.Num{}, num(-one)
	assert.Equal(t, zero, fixed.Sin(zero))
	assert.Equal(t, fixed.One, fixed.Sin(q))
	assert.Equal(t, zero, fixed.Sin(num(2*one/4)))
	assert.Equal(t, mone, fixed.Sin(num(3*one/4)))
	assert.Equal(t, fixed.One, fixed.Cos(zero))
	assert.Equal(t, mone, fixed.Cos(fixed.Half))
	assert.Equal(t, fixed.Sin(num(one/8)), fixed.Cos(num(one/8)))
	r := rand.New(rand.NewPCG(23, 24))
	for range 100000 {
		// The raw arithmetic wraps, as an angle may: only its fraction counts.
		xr := int64(r.Uint64())
		x := num(xr)
		n := int64(r.IntN(1<<20)-1<<19) << 32
		s := fixed.Sin(x)
		if fixed.Sin(num(xr+n)) != s || fixed.Sin(num(-xr)) != num(-s.Raw()) || fixed.Sin(num(half-xr)) != s ||
			fixed.Cos(x) != fixed.Sin(num(xr+one/4)) || fixed.Cos(num(-xr)) != fixed.Cos(x) {
			t.Fatalf("a symmetry fails at %d", xr)
		}
		if s.Greater(fixed.One) || s.Less(mone) {
			t.Fatalf("Sin(%d) = %v", xr, s)
		}
	}
}

func TestAtan2Accuracy(t *testing.T) {
	var worst float64
	check := func(y, x fixed.Num) {
		got := fixed.Atan2(y, x)
		want := math.Atan2(float64(y.Raw()), float64(x.Raw())) / (2 * math.Pi)
		if x.Sign() == 0 && y.Sign() == 0 {
			want = 0
		}
		if got.Raw() < -half || got.Raw() > half || got.Raw() == -half && y.Sign() >= 0 {
			t.Fatalf("Atan2(%v, %v) = %v, outside [-1/2, 1/2]", y, x, got)
		}
		worst = max(worst, math.Abs(got.Float()-want)*(1<<32))
	}
	for _, y := range specials {
		for _, x := range specials {
			check(y, x)
		}
	}
	r := rand.New(rand.NewPCG(25, 26))
	for range 1 << 20 {
		check(sample(r), sample(r))
	}
	for range 1 << 20 { // vectors at every angle, of every length
		a := r.Float64() * 2 * math.Pi
		l := math.Ldexp(1, r.IntN(60))
		check(num(int64(l*math.Sin(a))), num(int64(l*math.Cos(a))))
	}
	t.Logf("worst error: Atan2 %.7f ulp", worst)
	assert.LessOrEqual(t, worst, bound)
}

func TestAtan2Exact(t *testing.T) {
	for _, c := range []struct{ y, x, want int64 }{ // raw values
		{0, 0, 0}, {0, one, 0}, {one, 0, one / 4}, {0, -one, one / 2}, {-one, 0, -one / 4},
		{one, one, one / 8}, {one, -one, 3 * one / 8}, {-one, -one, -3 * one / 8}, {-one, one, -one / 8},
		{minRaw, minRaw, -3 * one / 8}, {maxRaw, maxRaw, one / 8}, {0, minRaw, one / 2},
		{1, 0, one / 4}, {0, -1, one / 2},
	} {
		assert.Equal(t, num(c.want), fixed.Atan2(num(c.y), num(c.x)), "Atan2(%d, %d)", c.y, c.x)
	}
	// The angle of a point on the circle is its angle, to an ulp or two
	// (each coordinate is itself rounded).
	r := rand.New(rand.NewPCG(27, 28))
	for range 100000 {
		a := num(r.Int64N(one) - half + 1) // (-1/2, 1/2)
		l := fixed.FromInt(1 + r.IntN(1000))
		got := fixed.Atan2(fixed.Sin(a).Mul(l), fixed.Cos(a).Mul(l))
		if d := got.Sub(a).Raw(); d > 3 || d < -3 {
			t.Fatalf("Atan2 of the point at %v turns = %v", a, got)
		}
		y, x := num(int64(r.Uint64())), num(int64(r.Uint64()))
		if y != fixed.Min && y.Sign() != 0 && fixed.Atan2(y.Neg(), x) != fixed.Atan2(y, x).Neg() {
			t.Fatalf("Atan2(-y, x) != -Atan2(y, x) at %v, %v", y, x)
		}
	}
}
