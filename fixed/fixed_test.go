package fixed_test

import (
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unsafe"

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
	specials = rawNums(0, 1, -1, 2, -2, 3, half, -half, half+1, half-1,
		one, -one, one+1, one-1, -one+1, -one-1,
		2*one, -2*one, 3*one, 46340*one, 46341*one,
		maxRaw, minRaw, maxRaw-1, minRaw+1, maxRaw/2, minRaw/2,
		piRaw, -piRaw, maxRaw-half, maxRaw-half+1, minRaw+half)
)

// Raw values, for writing tests in them.
const (
	one    = int64(1) << 32
	half   = one / 2
	maxRaw = int64(math.MaxInt64)
	minRaw = int64(math.MinInt64)
	piRaw  = 13493037705
)

// num returns the Num of raw value r, and rawNums those of raw values rs.
func num(r int64) fixed.Num { return fixed.FromRaw(r) }

func rawNums(rs ...int64) []fixed.Num {
	ns := make([]fixed.Num, len(rs))
	for i, r := range rs {
		ns[i] = num(r)
	}
	return ns
}

func raw(x fixed.Num) *big.Int { return big.NewInt(x.Raw()) }

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
	return num(q.Int64())
}

// sample returns a Num from a mixture that covers the whole range, small
// values, integers and their neighbours, powers of two (ties) and the
// special values.
func sample(r *rand.Rand) fixed.Num {
	switch r.IntN(7) {
	case 0:
		return num(int64(r.Uint64()))
	case 1:
		return num(int64(r.Uint64()) >> r.IntN(64))
	case 2:
		return num(r.Int64N(1<<40) - 1<<39) // |x| < 128
	case 3:
		return fixed.FromInt(r.IntN(2001) - 1000).Add(num(int64(r.IntN(5) - 2)))
	case 4:
		return num((r.Int64N(1<<20) - 1<<19) << r.IntN(44))
	case 5:
		return num(int64(r.IntN(64) - 32))
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
		if y.Sign() == 0 {
			want := map[int]fixed.Num{1: fixed.Max, -1: fixed.Min, 0: {}}[x.Sign()]
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
			assert.Equal(t, num(n).Div(fixed.Num{}), got)
			continue
		}
		if want := nearest(new(big.Int).Lsh(big.NewInt(n), 32), big.NewInt(d)); got != want {
			t.Fatalf("Ratio(%d, %d) = %d, want %d", n, d, got, want)
		}
	}
	assert.Equal(t, num(71582788), fixed.Ratio(1, 60)) // 2³²/60 = 71582788.27
	assert.Equal(t, num(3<<24), fixed.Ratio(3, 256))
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
		assert.Equal(t, num(int64(i)<<32), fixed.FromInt(i))
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
		if x.Sign() < 0 {
			round.Neg(round)
		}
		require.Equal(t, clamp(floor), x.Floor(), "Floor(%d)", x)
		require.Equal(t, clamp(ceil), x.Ceil(), "Ceil(%d)", x)
		require.Equal(t, clamp(trunc), x.Trunc(), "Trunc(%d)", x)
		require.Equal(t, clamp(round), x.Round(), "Round(%d)", x)
		require.Equal(t, num(m.Int64()), x.Frac(), "Frac(%v)", x)
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
			want = fixed.Num{}
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
		if x.Raw() > -one<<20 && x.Raw() < one<<20 { // 52 bits: exact both ways
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
		var want fixed.Num
		if x.Sign() > 0 {
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
		check(num(int64(i)))
		s := int64(r.Int64N(1 << 47))
		check(num(s * s >> 32))
		check(num(s*s>>32 + 1))
		check(num(s*s>>32 - 1))
	}
	assert.Equal(t, fixed.FromInt(3), fixed.Sqrt(fixed.FromInt(9)))
	assert.Equal(t, num(1<<16), fixed.Sqrt(fixed.Ulp), "√2⁻³² = 2⁻¹⁶")
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
		{}: "0", fixed.One: "1", num(-one): "-1", fixed.Half: "0.5", num(-one / 4): "-0.25",
		num(1000*one + one/8): "1000.125", fixed.Ulp: "0.0000000002", num(-1): "-0.0000000002",
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
	ulp, zero := fixed.Ulp, fixed.Num{}
	mulp := num(-1)
	for _, c := range []struct {
		name      string
		got, want fixed.Num
	}{
		{"Max+ulp", fixed.Max.Add(ulp), fixed.Max},
		{"Min-ulp", fixed.Min.Sub(ulp), fixed.Min},
		{"Min+(-ulp)", fixed.Min.Add(mulp), fixed.Min},
		{"Max-(-ulp)", fixed.Max.Sub(mulp), fixed.Max},
		{"Max+Max", fixed.Max.Add(fixed.Max), fixed.Max},
		{"Min+Min", fixed.Min.Add(fixed.Min), fixed.Min},
		{"Max+Min", fixed.Max.Add(fixed.Min), mulp},
		{"Min-Max", fixed.Min.Sub(fixed.Max), fixed.Min},
		{"(Max+1)-1 (not associative)", fixed.Max.Add(fixed.One).Sub(fixed.One), num(maxRaw - one)},
		{"-Min", fixed.Min.Neg(), fixed.Max},
		{"-Max", fixed.Max.Neg(), num(minRaw + 1)},
		{"|Min|", fixed.Min.Abs(), fixed.Max},
		{"|-ulp|", mulp.Abs(), ulp},
		{"Max×Max", fixed.Max.Mul(fixed.Max), fixed.Max},
		{"Min×Min", fixed.Min.Mul(fixed.Min), fixed.Max},
		{"Min×Max", fixed.Min.Mul(fixed.Max), fixed.Min},
		{"Min×-1", fixed.Min.Mul(num(-one)), fixed.Max},
		{"Min×1", fixed.Min.Mul(fixed.One), fixed.Min},
		{"Min/-1", fixed.Min.Div(num(-one)), fixed.Max},
		{"Min/1", fixed.Min.Div(fixed.One), fixed.Min},
		{"1/0", fixed.One.Div(zero), fixed.Max},
		{"-ulp/0", mulp.Div(zero), fixed.Min},
		{"0/0", zero.Div(zero), zero},
		{"ulp/Max", ulp.Div(fixed.Max), zero},
		{"Max/ulp", fixed.Max.Div(ulp), fixed.Max},
		{"1/(2ulp) = 2³¹ saturates", fixed.One.Div(num(2)), fixed.Max},
		{"1/(3ulp) fits", fixed.One.Div(num(3)), num(6148914691236517205)}, // 2⁶⁴/3, rounded
		{"-1/(2ulp) = -2³¹ fits", num(-one).Div(num(2)), fixed.Min},
		{"-ulp×1/2 (a tie, to even 0)", mulp.Mul(fixed.Half), zero},
		{"3ulp×1/2 (a tie, to even 2ulp)", num(3).Mul(fixed.Half), num(2)},
		{"-3ulp/2 (a tie, to even -2ulp)", num(-3).Div(num(2 * one)), num(-2)},
		{"Max×2", fixed.Max.MulInt(2), fixed.Max},
		{"Min×-1 (int)", fixed.Min.MulInt(-1), fixed.Max},
		{"ulp×MinInt64", ulp.MulInt(math.MinInt64), fixed.Min},
		{"-ulp×MinInt64", mulp.MulInt(math.MinInt64), fixed.Max},
		{"Max/-1", fixed.Max.DivInt(-1), num(-maxRaw)},
		{"Min/-1 (int)", fixed.Min.DivInt(-1), fixed.Max},
		{"1/0 (int)", fixed.One.DivInt(0), fixed.Max},
		{"-ulp/0 (int)", mulp.DivInt(0), fixed.Min},
		{"3ulp/2 (a tie, to even 2ulp)", num(3).DivInt(2), num(2)},
		{"5ulp/2 (a tie, to even 2ulp)", num(5).DivInt(2), num(2)},
		{"-5ulp/2 (a tie, to even -2ulp)", num(-5).DivInt(2), num(-2)},
		{"7ulp/-4 (-1.75: -2ulp)", num(7).DivInt(-4), num(-2)},
		{"Min rem -ulp", fixed.Min.Rem(mulp), zero},
		{"Min mod -ulp", fixed.Min.Mod(mulp), zero},
		{"Min rem Max", fixed.Min.Rem(fixed.Max), mulp},
		{"Min mod Max", fixed.Min.Mod(fixed.Max), num(maxRaw - 1)},
		{"x rem 0", fixed.Pi.Rem(zero), zero},
		{"x mod 0", fixed.Pi.Mod(zero), zero},
		{"-1 mod 10", fixed.FromInt(-1).Mod(fixed.FromInt(10)), fixed.FromInt(9)},
		{"-1 mod -10", fixed.FromInt(-1).Mod(fixed.FromInt(-10)), fixed.FromInt(9)},
		{"-1 rem 10", fixed.FromInt(-1).Rem(fixed.FromInt(10)), fixed.FromInt(-1)},
		{"-ulp mod 1", mulp.Mod(fixed.One), num(one - 1)},
		{"⌊-ulp⌋", mulp.Floor(), num(-one)},
		{"⌈-ulp⌉", mulp.Ceil(), zero},
		{"round(-ulp)", mulp.Round(), zero},
		{"trunc(-ulp)", mulp.Trunc(), zero},
		{"round(-1/2)", num(-half).Round(), num(-one)},
		{"round(1/2)", fixed.Half.Round(), fixed.One},
		{"⌈Max⌉", fixed.Max.Ceil(), fixed.Max},
		{"round(Max)", fixed.Max.Round(), fixed.Max},
		{"⌊Min⌋", fixed.Min.Floor(), fixed.Min},
		{"round(Min)", fixed.Min.Round(), fixed.Min},
		{"√-ulp", fixed.Sqrt(mulp), zero},
		{"√Min", fixed.Sqrt(fixed.Min), zero},
		{"√0", fixed.Sqrt(zero), zero},
		{"hypot(Min, Min)", fixed.Hypot(fixed.Min, fixed.Min), fixed.Max},
		{"hypot(0, -ulp)", fixed.Hypot(zero, mulp), ulp},
		{"FromFloat(-0.5ulp)", fixed.FromFloat(-0x1p-33), zero},
		{"FromFloat(2³¹)", fixed.FromFloat(0x1p31), fixed.Max},
		{"FromInt(-2³¹)", fixed.FromInt(-1 << 31), fixed.Min}, // beyond: TestIntConversions, on 64-bit platforms
		{"Ratio(1, 0)", fixed.Ratio(1, 0), fixed.Max},
		{"Ratio(MinInt64, -1)", fixed.Ratio(math.MinInt64, -1), fixed.Max},
	} {
		assert.Equal(t, c.want, c.got, c.name)
	}
	assert.Equal(t, 0, mulp.Int())
	assert.Equal(t, -1, num(-one-1).Int())
	assert.Equal(t, math.MinInt32, fixed.Min.Int())
	assert.Equal(t, math.MaxInt32, fixed.Max.Int())
}

// TestRange pins the range the package comment gives a game developer:
// the largest square, Radians' limit, and the constants.
func TestRange(t *testing.T) {
	// The largest Num whose square fits: 46340.9500118 (raw 199032864766430).
	sq := num(199032864766430)
	assert.NotEqual(t, fixed.Max, sq.Mul(sq))
	assert.NotEqual(t, fixed.Max, sq.Neg().Mul(sq.Neg()))
	assert.Equal(t, fixed.Max, sq.Add(fixed.Ulp).Mul(sq.Add(fixed.Ulp)))
	assert.Equal(t, fixed.Min, sq.Add(fixed.Ulp).Mul(sq.Add(fixed.Ulp).Neg()))
	assert.Equal(t, "46340.9500118415", sq.String())
	assert.Equal(t, fixed.FromInt(46340*46340), fixed.FromInt(46340).Mul(fixed.FromInt(46340)))
	assert.Equal(t, fixed.Max, fixed.FromInt(46341).Mul(fixed.FromInt(46341)))
	assert.Equal(t, fixed.FromInt(46341), fixed.Hypot(fixed.FromInt(46341), fixed.Num{}), "Hypot has no such limit")
	// Radians fits up to Max/2π turns, 341,782,637.78.
	limit := fixed.FromFloat(341782637.78)
	assert.NotEqual(t, fixed.Max, fixed.Radians(limit))
	assert.NotEqual(t, fixed.Min, fixed.Radians(limit.Neg()))
	assert.Equal(t, fixed.Max, fixed.Radians(fixed.FromFloat(341782637.79)))
	assert.Equal(t, fixed.Min, fixed.Radians(fixed.FromFloat(-341782637.79)))
	// Turns never saturates.
	assert.Equal(t, fixed.FromFloat(-math.Ldexp(1, 31)/(2*math.Pi)).Round(), fixed.Turns(fixed.Min).Round())
	// The constants.
	assert.Equal(t, maxRaw, fixed.Max.Raw())
	assert.Equal(t, minRaw, fixed.Min.Raw())
	assert.Equal(t, one, fixed.One.Raw())
	assert.Equal(t, half, fixed.Half.Raw())
	assert.Equal(t, int64(1), fixed.Ulp.Raw())
	assert.Equal(t, "2147483647.9999999998", fixed.Max.String())
	assert.Equal(t, 32, fixed.FracBits)
}

// TestNoOperators: a Num is a struct, on which Go's arithmetic and
// ordering operators do not compile, with the size and alignment of the
// int64 it holds (a game's state laid out with int64s keeps its layout).
func TestNoOperators(t *testing.T) {
	typ := reflect.TypeFor[fixed.Num]()
	require.Equal(t, reflect.Struct, typ.Kind(), "x*y and x+y compile on a Num of kind %v", typ.Kind())
	require.Equal(t, 1, typ.NumField())
	assert.Equal(t, reflect.Int64, typ.Field(0).Type.Kind())
	assert.False(t, typ.Field(0).IsExported(), "the raw value is reachable without Raw")
	assert.Equal(t, unsafe.Sizeof(int64(0)), unsafe.Sizeof(fixed.Num{}))
	assert.Equal(t, unsafe.Alignof(int64(0)), unsafe.Alignof(fixed.Num{}))
	assert.True(t, typ.Comparable(), "== compiles")
}

// TestMethods checks the methods that replace the operators against the
// raw arithmetic they stand for: MulInt and DivInt against exact products
// and rounded quotients, Rem and Mod against Go's % on the raw values, and
// the comparisons against < on them.
func TestMethods(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	ints := []int64{0, 1, -1, 2, -2, 3, 7, -7, 60, 256, 1 << 20, math.MaxInt32, math.MinInt32,
		math.MaxInt64, math.MinInt64, 1 << 40, -1 << 40}
	pairs(50000, func(x, y fixed.Num) {
		n := ints[r.IntN(len(ints))]
		if r.IntN(2) == 0 {
			n = int64(r.Uint64()) >> r.IntN(64)
		}
		if got, want := x.MulInt(n), clamp(new(big.Int).Mul(raw(x), big.NewInt(n))); got != want {
			t.Fatalf("%d.MulInt(%d) = %d, want %d", x.Raw(), n, got.Raw(), want.Raw())
		}
		if n != 0 {
			if got, want := x.DivInt(n), nearest(raw(x), big.NewInt(n)); got != want {
				t.Fatalf("%d.DivInt(%d) = %d, want %d", x.Raw(), n, got.Raw(), want.Raw())
			}
		}
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			if x.MulInt(n) != x.Mul(fixed.FromInt(int(n))) || x.DivInt(n) != x.Div(fixed.FromInt(int(n))) {
				t.Fatalf("%d: MulInt or DivInt(%d) differ from Mul or Div of FromInt", x.Raw(), n)
			}
		}
		if y.Sign() != 0 {
			rem := new(big.Int).Rem(raw(x), raw(y)) // truncated, as Go's %
			if got := x.Rem(y); got.Raw() != rem.Int64() {
				t.Fatalf("%d.Rem(%d) = %d, want %v", x.Raw(), y.Raw(), got.Raw(), rem)
			}
			mod := new(big.Int).Mod(raw(x), raw(y)) // Euclidean
			if got := x.Mod(y); got.Raw() != mod.Int64() {
				t.Fatalf("%d.Mod(%d) = %d, want %v", x.Raw(), y.Raw(), got.Raw(), mod)
			}
		}
		c := raw(x).Cmp(raw(y))
		if x.Less(y) != (c < 0) || x.LessEq(y) != (c <= 0) || x.Greater(y) != (c > 0) || x.GreaterEq(y) != (c >= 0) || (x == y) != (c == 0) {
			t.Fatalf("the comparisons of %d and %d", x.Raw(), y.Raw())
		}
		if fixed.FromRaw(x.Raw()) != x {
			t.Fatalf("FromRaw(%d.Raw())", x.Raw())
		}
	})
}

func TestAllocs(t *testing.T) {
	x, y := fixed.Pi, fixed.FromInt(-3)
	var sink fixed.Num
	n := testing.AllocsPerRun(100, func() {
		sink = sink.Add(x.Mul(y)).Add(x.Div(y)).Add(x.Add(y)).Add(fixed.Sqrt(x)).Add(fixed.Hypot(x, y)).
			Add(fixed.Sin(x)).Add(fixed.Cos(y)).Add(fixed.Atan2(y, x)).Add(x.Round()).Add(fixed.Radians(x)).
			Add(fixed.Turns(y)).Add(x.MulInt(3)).Add(x.DivInt(7)).Add(x.Mod(y)).Add(x.Rem(y))
	})
	assert.Zero(t, n)
	_ = sink
}
