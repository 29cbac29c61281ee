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
		frac := float64(uint32(x)) / (1 << 32) // the fraction of the turn, exactly
		s := math.Abs(fixed.Sin(x).Float()-math.Sin(2*math.Pi*frac)) * (1 << 32)
		c := math.Abs(fixed.Cos(x).Float()-math.Cos(2*math.Pi*frac)) * (1 << 32)
		worstSin, worstCos = max(worstSin, s), max(worstCos, c)
	}
	for u := range 1 << 20 { // every 4096th angle of the circle
		check(fixed.Num(u << 12))
	}
	r := rand.New(rand.NewPCG(21, 22))
	for range 1 << 20 { // and random ones, with random whole turns
		check(fixed.Num(r.Uint64()))
	}
	t.Logf("worst error: Sin %.7f ulp, Cos %.7f ulp", worstSin, worstCos)
	assert.LessOrEqual(t, worstSin, bound)
	assert.LessOrEqual(t, worstCos, bound)
}

// TestSinCosExact: the values and symmetries that hold exactly in turns.
func TestSinCosExact(t *testing.T) {
	q := fixed.One / 4
	assert.Equal(t, fixed.Num(0), fixed.Sin(0))
	assert.Equal(t, fixed.One, fixed.Sin(q))
	assert.Equal(t, fixed.Num(0), fixed.Sin(2*q))
	assert.Equal(t, -fixed.One, fixed.Sin(3*q))
	assert.Equal(t, fixed.One, fixed.Cos(0))
	assert.Equal(t, -fixed.One, fixed.Cos(fixed.Half))
	assert.Equal(t, fixed.Sin(fixed.One/8), fixed.Cos(fixed.One/8))
	r := rand.New(rand.NewPCG(23, 24))
	for range 100000 {
		x := fixed.Num(r.Uint64())
		n := fixed.FromInt(r.IntN(1<<20) - 1<<19)
		s := fixed.Sin(x)
		if fixed.Sin(x+n) != s || fixed.Sin(-x) != -s || fixed.Sin(fixed.Half-x) != s ||
			fixed.Cos(x) != fixed.Sin(x+q) || fixed.Cos(-x) != fixed.Cos(x) {
			t.Fatalf("a symmetry fails at %d", x)
		}
		if s > fixed.One || s < -fixed.One {
			t.Fatalf("Sin(%d) = %v", x, s)
		}
	}
}

func TestAtan2Accuracy(t *testing.T) {
	var worst float64
	check := func(y, x fixed.Num) {
		got := fixed.Atan2(y, x)
		want := math.Atan2(float64(y), float64(x)) / (2 * math.Pi)
		if x == 0 && y == 0 {
			want = 0
		}
		if got < -fixed.Half || got > fixed.Half || got == -fixed.Half && y >= 0 {
			t.Fatalf("Atan2(%d, %d) = %v, outside [-1/2, 1/2]", y, x, got)
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
		check(fixed.Num(l*math.Sin(a)), fixed.Num(l*math.Cos(a)))
	}
	t.Logf("worst error: Atan2 %.7f ulp", worst)
	assert.LessOrEqual(t, worst, bound)
}

func TestAtan2Exact(t *testing.T) {
	one := fixed.One
	for _, c := range []struct{ y, x, want fixed.Num }{
		{0, 0, 0}, {0, one, 0}, {one, 0, one / 4}, {0, -one, one / 2}, {-one, 0, -one / 4},
		{one, one, one / 8}, {one, -one, 3 * one / 8}, {-one, -one, -3 * one / 8}, {-one, one, -one / 8},
		{fixed.Min, fixed.Min, -3 * one / 8}, {fixed.Max, fixed.Max, one / 8}, {0, fixed.Min, one / 2},
		{fixed.Ulp, 0, one / 4}, {0, -fixed.Ulp, one / 2},
	} {
		assert.Equal(t, c.want, fixed.Atan2(c.y, c.x), "Atan2(%v, %v)", c.y, c.x)
	}
	// The angle of a point on the circle is its angle, to an ulp or two
	// (each coordinate is itself rounded).
	r := rand.New(rand.NewPCG(27, 28))
	for range 100000 {
		a := fixed.Num(r.Int64N(int64(fixed.One))) - fixed.Half + 1 // (-1/2, 1/2)
		l := fixed.FromInt(1 + r.IntN(1000))
		got := fixed.Atan2(fixed.Sin(a).Mul(l), fixed.Cos(a).Mul(l))
		if d := got - a; d > 3 || d < -3 {
			t.Fatalf("Atan2 of the point at %d turns = %d", a, got)
		}
		y, x := fixed.Num(r.Uint64()), fixed.Num(r.Uint64())
		if y != fixed.Min && y != 0 && fixed.Atan2(-y, x) != -fixed.Atan2(y, x) {
			t.Fatalf("Atan2(-y, x) != -Atan2(y, x) at %d, %d", y, x)
		}
	}
}
