package fixed_test

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/fixed"
)

// The arithmetic is checked against exact references: math/big computes
// each true result as a rational, and nearest rounds it as the package
// says it does (to the nearest raw value, ties to even, saturated).

var (
	two32    = new(big.Int).Lsh(big.NewInt(1), 32)
	bigMax   = big.NewInt(math.MaxInt64)
	bigMin   = big.NewInt(math.MinInt64)
	specials = []fixed.Num{0, 1, -1, 2, -2, 3, fixed.Half, -fixed.Half, fixed.Half + 1, fixed.Half - 1,
		fixed.One, -fixed.One, fixed.One + 1, fixed.One - 1, -fixed.One + 1, -fixed.One - 1,
		2 * fixed.One, -2 * fixed.One, 3 * fixed.One, 46340 * fixed.One, 46341 * fixed.One,
		fixed.Max, fixed.Min, fixed.Max - 1, fixed.Min + 1, fixed.Max / 2, fixed.Min / 2,
		fixed.Pi, -fixed.Pi, fixed.Max - fixed.Half, fixed.Max - fixed.Half + 1, fixed.Min + fixed.Half}
)

func raw(x fixed.Num) *big.Int { return big.NewInt(int64(x)) }

// nearest returns the integer nearest to n/d (d ≠ 0), ties to even,
// clamped to the int64 range, as a Num.
func nearest(n, d *big.Int) fixed.Num {
	if d.Sign() < 0 {
		n, d = new(big.Int).Neg(n), new(big.Int).Neg(d)
	}
	q, m := new(big.Int).DivMod(n, d, new(big.Int)) // Euclidean: q = ⌊n/d⌋, m ≥ 0
	switch c := new(big.Int).Lsh(m, 1).Cmp(d); {
	case c > 0, c == 0 && q.Bit(0) == 1:
		q.Add(q, big.NewInt(1))
	}
	return clamp(q)
}

func clamp(q *big.Int) fixed.Num {
	switch {
	case q.Cmp(bigMax) > 0:
		return fixed.Max
	case q.Cmp(bigMin) < 0:
		return fixed.Min
	}
	return fixed.Num(q.Int64())
}

// sample returns a Num from a mixture that covers the whole range, small
// values, integers and their neighbours, powers of two (ties) and the
// special values.
func sample(r *rand.Rand) fixed.Num {
	switch r.IntN(7) {
	case 0:
		return fixed.Num(r.Uint64())
	case 1:
		return fixed.Num(int64(r.Uint64()) >> r.IntN(64))
	case 2:
		return fixed.Num(r.Int64N(1<<40) - 1<<39) // |x| < 128
	case 3:
		return fixed.FromInt(r.IntN(2001)-1000) + fixed.Num(r.IntN(5)-2)
	case 4:
		return fixed.Num(r.Int64N(1<<20)-1<<19) << r.IntN(44)
	case 5:
		return fixed.Num(r.IntN(64) - 32)
	}
	return specials[r.IntN(len(specials))]
}

// pairs calls f with every pair of specials and n random pairs.
func pairs(n int, f func(x, y fixed.Num)) {
	for _, x := range specials {
		for _, y := range specials {
			f(x, y)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		f(sample(r), sample(r))
	}
}

func TestAddSub(t *testing.T) {
	pairs(50000, func(x, y fixed.Num) {
		if got, want := x.Add(y), clamp(new(big.Int).Add(raw(x), raw(y))); got != want {
			t.Fatalf("%d.Add(%d) = %d, want %d", x, y, got, want)
		}
		if got, want := x.Sub(y), clamp(new(big.Int).Sub(raw(x), raw(y))); got != want {
			t.Fatalf("%d.Sub(%d) = %d, want %d", x, y, got, want)
		}
	})
}

func TestMul(t *testing.T) {
	ties := 0
	pairs(100000, func(x, y fixed.Num) {
		p := new(big.Int).Mul(raw(x), raw(y))
		if new(big.Int).Mod(p, two32).Cmp(big.NewInt(1<<31)) == 0 {
			ties++
		}
		if got, want := x.Mul(y), nearest(p, two32); got != want {
			t.Fatalf("%d.Mul(%d) = %d, want %d", x, y, got, want)
		}
	})
	assert.Greater(t, ties, 100, "the samples hold ties")
}

func TestDiv(t *testing.T) {
	ties := 0
	pairs(100000, func(x, y fixed.Num) {
		got := x.Div(y)
		if y == 0 {
			want := map[int]fixed.Num{1: fixed.Max, -1: fixed.Min, 0: 0}[x.Sign()]
			if got != want {
				t.Fatalf("%d.Div(0) = %d, want %d", x, got, want)
			}
			return
		}
		n := new(big.Int).Lsh(raw(x), 32)
		if new(big.Int).Mod(new(big.Int).Lsh(n, 1), raw(y)).Sign() == 0 && new(big.Int).Mod(n, raw(y)).Sign() != 0 {
			ties++
		}
		if want := nearest(n, raw(y)); got != want {
			t.Fatalf("%d.Div(%d) = %d, want %d", x, y, got, want)
		}
	})
	assert.Greater(t, ties, 100, "the samples hold ties")
}

func TestRatio(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 50000 {
		n, d := int64(r.Uint64())>>r.IntN(64), int64(r.Uint64())>>r.IntN(64)
		if i%10 == 0 {
			n, d = int64(r.IntN(2001)-1000), int64(r.IntN(201)-100)
		}
		got := fixed.Ratio(n, d)
		if d == 0 {
			assert.Equal(t, fixed.Num(0).Div(0)+fixed.Num(n).Div(0), got)
			continue
		}
		if want := nearest(new(big.Int).Lsh(big.NewInt(n), 32), big.NewInt(d)); got != want {
			t.Fatalf("Ratio(%d, %d) = %d, want %d", n, d, got, want)
		}
	}
	assert.Equal(t, fixed.Num(71582788), fixed.Ratio(1, 60)) // 2³²/60 = 71582788.27
	assert.Equal(t, fixed.One/256*3, fixed.Ratio(3, 256))
}

func TestNegAbsCmpSign(t *testing.T) {
	pairs(20000, func(x, y fixed.Num) {
		assert.Equal(t, clamp(new(big.Int).Neg(raw(x))), x.Neg())
		assert.Equal(t, clamp(new(big.Int).Abs(raw(x))), x.Abs())
		assert.Equal(t, raw(x).Cmp(raw(y)), x.Cmp(y))
		assert.Equal(t, raw(x).Sign(), x.Sign())
	})
}

func TestIntConversions(t *testing.T) {
	for _, i := range []int{0, 1, -1, 7, -7, math.MaxInt32, math.MinInt32} {
		assert.Equal(t, fixed.Num(int64(i)<<32), fixed.FromInt(i))
		assert.Equal(t, i, fixed.FromInt(i).Int())
	}
	if math.MaxInt > math.MaxInt32 { // 64-bit int: beyond the range saturates
		big := int64(math.MaxInt32) + 1
		assert.Equal(t, fixed.Max, fixed.FromInt(int(big)))
		assert.Equal(t, fixed.Min, fixed.FromInt(int(-big-1)))
		assert.Equal(t, fixed.Max, fixed.FromInt(math.MaxInt))
		assert.Equal(t, fixed.Min, fixed.FromInt(math.MinInt))
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		x := sample(r)
		want := new(big.Int).Quo(raw(x), two32) // truncated toward zero
		require.Equal(t, int(want.Int64()), x.Int(), "%d", x)
	}
}

func TestFloorCeilRoundTrunc(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 50000 + len(specials) {
		var x fixed.Num
		if i < len(specials) {
			x = specials[i]
		} else {
			x = sample(r)
		}
		q, m := new(big.Int).DivMod(raw(x), two32, new(big.Int)) // ⌊x⌋, its fraction
		floor := new(big.Int).Mul(q, two32)
		ceil := new(big.Int).Set(floor)
		if m.Sign() != 0 {
			ceil.Add(ceil, two32)
		}
		trunc := new(big.Int).Mul(new(big.Int).Quo(raw(x), two32), two32)
		// Round, halves away from zero: ⌊|x| + 1/2⌋ with x's sign.
		round := new(big.Int).Add(new(big.Int).Abs(raw(x)), big.NewInt(1<<31))
		round.Mul(round.Quo(round, two32), two32)
		if x < 0 {
			round.Neg(round)
		}
		require.Equal(t, clamp(floor), x.Floor(), "Floor(%d)", x)
		require.Equal(t, clamp(ceil), x.Ceil(), "Ceil(%d)", x)
		require.Equal(t, clamp(trunc), x.Trunc(), "Trunc(%d)", x)
		require.Equal(t, clamp(round), x.Round(), "Round(%d)", x)
		require.Equal(t, fixed.Num(m.Int64()), x.Frac(), "Frac(%d)", x)
	}
}

func TestFloatConversions(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1.5, 2.5, -2.5, 0x1p-33, 0x1p-32, 3 * 0x1p-33,
		-0x1p-33, 0x1p31, -0x1p31, 0x1p31 - 0x1p-32, 0x1p31 - 0x1p-33, -0x1p31 - 0x1p-33,
		math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64, -math.MaxFloat64, 5e-324, math.Pi}
	for range 50000 {
		floats = append(floats, math.Float64frombits(r.Uint64()), r.NormFloat64()*float64(int64(1)<<r.IntN(40)))
	}
	for _, f := range floats {
		var want fixed.Num
		switch {
		case math.IsNaN(f):
			want = 0
		case math.IsInf(f, 1):
			want = fixed.Max
		case math.IsInf(f, -1):
			want = fixed.Min
		default:
			v := new(big.Rat).SetFloat64(f)
			v.Mul(v, new(big.Rat).SetInt(two32))
			want = nearest(v.Num(), v.Denom())
		}
		require.Equal(t, want, fixed.FromFloat(f), "FromFloat(%g)", f)
	}
	for range 50000 {
		x := sample(r)
		want, _ := new(big.Rat).SetFrac(raw(x), two32).Float64() // the nearest float64
		require.Equal(t, want, x.Float(), "%d", x)
		if x > -fixed.One<<20 && x < fixed.One<<20 { // 52 bits: exact both ways
			require.Equal(t, x, fixed.FromFloat(x.Float()))
		}
	}
}

// sqrtRef returns √n rounded to the nearest integer, by big.Int.Sqrt.
func sqrtRef(n *big.Int) *big.Int {
	s := new(big.Int).Sqrt(n)
	rem := new(big.Int).Sub(n, new(big.Int).Mul(s, s))
	if rem.Cmp(s) > 0 {
		s.Add(s, big.NewInt(1))
	}
	return s
}

func TestSqrt(t *testing.T) {
	check := func(x fixed.Num) {
		want := fixed.Num(0)
		if x > 0 {
			want = clamp(sqrtRef(new(big.Int).Lsh(raw(x), 32)))
		}
		if got := fixed.Sqrt(x); got != want {
			t.Fatalf("Sqrt(%d) = %d, want %d", x, got, want)
		}
	}
	for _, x := range specials {
		check(x)
	}
	r := rand.New(rand.NewPCG(11, 12))
	for range 100000 {
		check(sample(r))
	}
	for i := range 100000 { // small values, and squares and their neighbours
		check(fixed.Num(i))
		s := int64(r.Int64N(1 << 47))
		check(fixed.Num(s * s >> 32))
		check(fixed.Num(s*s>>32 + 1))
		check(fixed.Num(s*s>>32 - 1))
	}
	assert.Equal(t, fixed.FromInt(3), fixed.Sqrt(fixed.FromInt(9)))
	assert.Equal(t, fixed.Num(1<<16), fixed.Sqrt(fixed.Ulp), "√2⁻³² = 2⁻¹⁶")
}

func TestHypot(t *testing.T) {
	pairs(100000, func(x, y fixed.Num) {
		n := new(big.Int).Mul(raw(x), raw(x))
		n.Add(n, new(big.Int).Mul(raw(y), raw(y)))
		if got, want := fixed.Hypot(x, y), clamp(sqrtRef(n)); got != want {
			t.Fatalf("Hypot(%d, %d) = %d, want %d", x, y, got, want)
		}
	})
	assert.Equal(t, fixed.FromInt(5), fixed.Hypot(fixed.FromInt(3), fixed.FromInt(-4)))
	assert.Equal(t, fixed.FromInt(50000), fixed.Hypot(fixed.FromInt(30000), fixed.FromInt(40000)),
		"beyond the range of a squared Num")
}

func TestString(t *testing.T) {
	known := map[fixed.Num]string{
		0: "0", fixed.One: "1", -fixed.One: "-1", fixed.Half: "0.5", -fixed.One / 4: "-0.25",
		fixed.FromInt(1000) + fixed.One/8: "1000.125", fixed.Ulp: "0.0000000002", -fixed.Ulp: "-0.0000000002",
		fixed.Min: "-2147483648", fixed.Max: "2147483647.9999999998", fixed.Pi: "3.1415926537",
	}
	for x, want := range known {
		assert.Equal(t, want, x.String())
	}
	// Every string names its Num (the Num nearest to the decimal is x), and
	// no decimal with one digit less does.
	r := rand.New(rand.NewPCG(13, 14))
	for i := range 50000 {
		x := sample(r)
		if i < len(specials) {
			x = specials[i]
		}
		s := x.String()
		v, ok := new(big.Rat).SetString(s)
		require.True(t, ok, s)
		v.Mul(v, new(big.Rat).SetInt(two32))
		require.Equal(t, x, nearest(v.Num(), v.Denom()), "%d is %s", x, s)
		_, frac, found := strings.Cut(s, ".")
		if !found {
			continue
		}
		// The two decimals of len(frac)-1 digits around x are both farther
		// than half a step (2⁻³³) from it, or x would have used one.
		scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac)-1)), nil)
		lo := new(big.Int).Mul(raw(x), scale)
		lo.Div(lo, two32) // ⌊x×10^(d-1)⌋ (Euclidean: floor for negative x too)
		for _, c := range []*big.Int{lo, new(big.Int).Add(lo, big.NewInt(1))} {
			// |c/10^(d-1) - x| ≥ 2⁻³³ ⇔ |c×2³³ - 2x×10^(d-1)| ≥ 10^(d-1)
			diff := new(big.Int).Sub(new(big.Int).Lsh(c, 33), new(big.Int).Lsh(new(big.Int).Mul(raw(x), scale), 1))
			require.GreaterOrEqual(t, diff.Abs(diff).Cmp(scale), 0, "%d: %s is not the shortest", x, s)
		}
	}
}

// TestEdges pins the saturation, zero and one-ulp behaviours the package
// comment documents.
func TestEdges(t *testing.T) {
	const ulp = fixed.Ulp
	for _, c := range []struct {
		name      string
		got, want fixed.Num
	}{
		{"Max+ulp", fixed.Max.Add(ulp), fixed.Max},
		{"Min-ulp", fixed.Min.Sub(ulp), fixed.Min},
		{"Min+(-ulp)", fixed.Min.Add(-ulp), fixed.Min},
		{"Max-(-ulp)", fixed.Max.Sub(-ulp), fixed.Max},
		{"-Min", fixed.Min.Neg(), fixed.Max},
		{"|Min|", fixed.Min.Abs(), fixed.Max},
		{"|-ulp|", (-ulp).Abs(), ulp},
		{"Max×Max", fixed.Max.Mul(fixed.Max), fixed.Max},
		{"Min×Min", fixed.Min.Mul(fixed.Min), fixed.Max},
		{"Min×Max", fixed.Min.Mul(fixed.Max), fixed.Min},
		{"Min×-1", fixed.Min.Mul(-fixed.One), fixed.Max},
		{"Min×1", fixed.Min.Mul(fixed.One), fixed.Min},
		{"Min/-1", fixed.Min.Div(-fixed.One), fixed.Max},
		{"Min/1", fixed.Min.Div(fixed.One), fixed.Min},
		{"1/0", fixed.One.Div(0), fixed.Max},
		{"-ulp/0", (-ulp).Div(0), fixed.Min},
		{"0/0", fixed.Num(0).Div(0), 0},
		{"ulp/Max", ulp.Div(fixed.Max), 0},
		{"Max/ulp", fixed.Max.Div(ulp), fixed.Max},
		{"-ulp×1/2 (a tie, to even 0)", (-ulp).Mul(fixed.Half), 0},
		{"3ulp×1/2 (a tie, to even 2ulp)", (3 * ulp).Mul(fixed.Half), 2 * ulp},
		{"-3ulp/2 (a tie, to even -2ulp)", (-3 * ulp).Div(2 * fixed.One), -2 * ulp},
		{"⌊-ulp⌋", (-ulp).Floor(), -fixed.One},
		{"⌈-ulp⌉", (-ulp).Ceil(), 0},
		{"round(-ulp)", (-ulp).Round(), 0},
		{"trunc(-ulp)", (-ulp).Trunc(), 0},
		{"round(-1/2)", (-fixed.Half).Round(), -fixed.One},
		{"round(1/2)", fixed.Half.Round(), fixed.One},
		{"⌈Max⌉", fixed.Max.Ceil(), fixed.Max},
		{"round(Max)", fixed.Max.Round(), fixed.Max},
		{"⌊Min⌋", fixed.Min.Floor(), fixed.Min},
		{"round(Min)", fixed.Min.Round(), fixed.Min},
		{"√-ulp", fixed.Sqrt(-ulp), 0},
		{"√Min", fixed.Sqrt(fixed.Min), 0},
		{"√0", fixed.Sqrt(0), 0},
		{"hypot(Min, Min)", fixed.Hypot(fixed.Min, fixed.Min), fixed.Max},
		{"hypot(0, -ulp)", fixed.Hypot(0, -ulp), ulp},
		{"FromFloat(-0.5ulp)", fixed.FromFloat(-0x1p-33), 0},
	} {
		assert.Equal(t, c.want, c.got, c.name)
	}
	assert.Equal(t, 0, (-ulp).Int())
	assert.Equal(t, -1, (-fixed.One - ulp).Int())
	assert.Equal(t, math.MinInt32, fixed.Min.Int())
	assert.Equal(t, math.MaxInt32, fixed.Max.Int())
}

func TestAllocs(t *testing.T) {
	x, y := fixed.Pi, fixed.FromInt(-3)
	var sink fixed.Num
	n := testing.AllocsPerRun(100, func() {
		sink += x.Mul(y) + x.Div(y) + x.Add(y) + fixed.Sqrt(x) + fixed.Hypot(x, y) +
			fixed.Sin(x) + fixed.Cos(y) + fixed.Atan2(y, x) + x.Round() + fixed.Radians(x) + fixed.Turns(y)
	})
	assert.Zero(t, n)
	_ = sink
}
