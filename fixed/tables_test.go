package fixed

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// prec is the number of fraction bits the generator computes with: far
// more than the 64 of the tables, so that its own truncation errors (a
// few units of 2⁻²⁵⁶ a term) never reach a rounded constant.
const prec = 256

// atanRat returns atan(p/q)×2^prec (p, q > 0) by Euler's series,
//
//	atan(x) = Σₙ (2²ⁿ(n!)²/(2n+1)!) x²ⁿ⁺¹/(1+x²)ⁿ⁺¹,
//
// whose term ratio is 2n/(2n+1) × x²/(1+x²): at least a bit a term for
// x ≤ 1. Integers only.
func atanRat(p, q int64) *big.Int {
	pp := big.NewInt(p * p)
	den := big.NewInt(p*p + q*q)
	t := new(big.Int).Lsh(big.NewInt(p*q), prec)
	t.Quo(t, den)
	sum := new(big.Int).Set(t)
	for n := int64(1); t.Sign() != 0; n++ {
		t.Mul(t, big.NewInt(2*n))
		t.Mul(t, pp)
		t.Quo(t, new(big.Int).Mul(big.NewInt(2*n+1), den))
		sum.Add(sum, t)
	}
	return sum
}

// piFixed returns π×2^prec: 4 atan(1).
func piFixed() *big.Int { return new(big.Int).Lsh(atanRat(1, 1), 2) }

// roundShift returns v/2ˢ rounded to the nearest integer (v ≥ 0).
func roundShift(v *big.Int, s uint) *big.Int {
	r := new(big.Int).Add(v, new(big.Int).Lsh(big.NewInt(1), s-1))
	return r.Rsh(r, s)
}

// tables computes every constant of trig.go and Pi.
type tables struct {
	pi       uint64
	sinCoef  [7]uint64
	cosCoef  [8]uint64
	atan     [17]uint64
	invTwoPi uint64
	// The constants of Radians and Turns, most significant word first.
	invTwoPi192 [3]uint64
	twoPi192    [3]uint64
}

// words splits v (below 2¹⁹²) into three words, most significant first.
func words(v *big.Int) (w [3]uint64) {
	mask := new(big.Int).SetUint64(^uint64(0))
	for i := range w {
		w[2-i] = new(big.Int).And(new(big.Int).Rsh(v, uint(64*i)), mask).Uint64()
	}
	return w
}

func generate() tables {
	var g tables
	pi := piFixed()
	g.pi = roundShift(pi, prec-FracBits).Uint64()
	// (π/4)^k/k! for k = 0…15, in Q(prec).
	quarter := new(big.Int).Rsh(pi, 2)
	term := new(big.Int).Lsh(big.NewInt(1), prec)
	for k := 0; k < 16; k++ {
		if k > 0 {
			term.Mul(term, quarter)
			term.Rsh(term, prec)
			term.Quo(term, big.NewInt(int64(k)))
		}
		v := roundShift(term, prec-63).Uint64()
		switch {
		case k%2 == 1 && k/2 < len(g.sinCoef):
			g.sinCoef[k/2] = v
		case k%2 == 0 && k/2 < len(g.cosCoef):
			g.cosCoef[k/2] = v
		}
	}
	// atan(i/16)/(2π) in Q64: atan×2^prec × 2⁶³ / (π×2^prec).
	for i := range g.atan {
		if i == 0 {
			continue
		}
		a := new(big.Int).Lsh(atanRat(int64(i), 16), 63+1)
		a.Quo(a, pi) // ×2 for rounding
		a.Add(a, big.NewInt(1))
		g.atan[i] = a.Rsh(a, 1).Uint64()
	}
	inv := new(big.Int).Lsh(big.NewInt(1), 63+prec+1) // 2⁶⁴/(2π) = 2⁶³/π, ×2 for rounding
	inv.Quo(inv, pi)
	inv.Add(inv, big.NewInt(1))
	g.invTwoPi = inv.Rsh(inv, 1).Uint64()
	inv192 := new(big.Int).Lsh(big.NewInt(1), 191+prec+1) // 2¹⁹²/(2π) = 2¹⁹¹/π, ×2 for rounding
	inv192.Quo(inv192, pi)
	inv192.Add(inv192, big.NewInt(1))
	g.invTwoPi192 = words(inv192.Rsh(inv192, 1))
	g.twoPi192 = words(roundShift(pi, prec-190)) // 2π×2¹⁸⁹ = π×2¹⁹⁰
	return g
}

func (g tables) source() string {
	var b strings.Builder
	hex := func(vs []uint64) {
		for i, v := range vs {
			if i%4 == 0 {
				b.WriteString("\n\t")
			} else {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%#016x,", v)
		}
		b.WriteString("\n}\n")
	}
	fmt.Fprintf(&b, "Pi Num = %d\n", g.pi)
	b.WriteString("var sinCoef = [7]uint64{")
	hex(g.sinCoef[:])
	b.WriteString("var cosCoef = [8]uint64{")
	hex(g.cosCoef[:])
	b.WriteString("var atanTurns = [17]uint64{")
	hex(g.atan[:])
	fmt.Fprintf(&b, "invTwoPi = %#016x\n", g.invTwoPi)
	fmt.Fprintf(&b, "invTwoPi192h, invTwoPi192m, invTwoPi192l = %#016x, %#016x, %#016x\n", g.invTwoPi192[0], g.invTwoPi192[1], g.invTwoPi192[2])
	fmt.Fprintf(&b, "twoPi192h, twoPi192m, twoPi192l = %#016x, %#016x, %#016x\n", g.twoPi192[0], g.twoPi192[1], g.twoPi192[2])
	return b.String()
}

// TestTables is the generator of the tables in trig.go and of Pi: it
// computes them again from π (integers only, math/big) and fails, printing
// the source to paste, if a literal differs.
func TestTables(t *testing.T) {
	want := generate()
	got := tables{pi: uint64(Pi.v), sinCoef: sinCoef, cosCoef: cosCoef, atan: atanTurns,
		invTwoPi:    invTwoPi,
		invTwoPi192: [3]uint64{invTwoPi192h, invTwoPi192m, invTwoPi192l},
		twoPi192:    [3]uint64{twoPi192h, twoPi192m, twoPi192l}}
	if got != want {
		t.Errorf("the tables differ from the generator's; want:\n%s", want.source())
	}
	// A check of the generator itself: π's first 30 decimal digits.
	pi := piFixed()
	digits := new(big.Int).Mul(pi, new(big.Int).Exp(big.NewInt(10), big.NewInt(29), nil))
	digits.Rsh(digits, prec)
	if s := digits.String(); s != "314159265358979323846264338327" {
		t.Errorf("π×10²⁹ = %s", s)
	}
	// And of the table's ends: atan(0) and atan(1) = 1/8 turn exactly.
	if want.atan[0] != 0 || want.atan[16] != 1<<61 {
		t.Errorf("atan table ends %#x, %#x", want.atan[0], want.atan[16])
	}
}

// piBounds returns two rationals around π: piFixed truncates each term of
// its series, so it is below π×2^prec by a few thousand units at most,
// and 2²⁰ units either side hold π by far.
func piBounds() (lo, hi *big.Rat) {
	pi := piFixed()
	den := new(big.Int).Lsh(big.NewInt(1), prec)
	slack := big.NewInt(1 << 20)
	return new(big.Rat).SetFrac(new(big.Int).Sub(pi, slack), den), new(big.Rat).SetFrac(new(big.Int).Add(pi, slack), den)
}

// convergent returns p/q, the continued-fraction convergent of θ with the
// largest denominator q ≤ n, for any θ in [lo, hi]: it computes the
// continued fractions of both ends and fails unless they agree up to the
// convergent after p/q, whose denominator is above n. By the
// best-approximation property of convergents, |mθ - j| ≥ |qθ - p| for
// every 0 < m ≤ n and every integer j.
func convergent(t *testing.T, lo, hi *big.Rat, n *big.Int) (p, q *big.Int) {
	t.Helper()
	ends := [2][2]*big.Int{ // each end's remainder, numerator and denominator
		{new(big.Int).Set(lo.Num()), new(big.Int).Set(lo.Denom())},
		{new(big.Int).Set(hi.Num()), new(big.Int).Set(hi.Denom())},
	}
	p0, q0, p1, q1 := big.NewInt(0), big.NewInt(1), big.NewInt(1), big.NewInt(0)
	for {
		var a [2]*big.Int
		for i, e := range ends {
			if e[1].Sign() == 0 {
				t.Fatal("a continued fraction ended: θ's interval is too wide")
			}
			a[i] = new(big.Int).Quo(e[0], e[1]) // ⌊x⌋, x > 0
			ends[i] = [2]*big.Int{e[1], new(big.Int).Sub(e[0], new(big.Int).Mul(a[i], e[1]))}
		}
		if a[0].Cmp(a[1]) != 0 {
			t.Fatal("the ends' continued fractions differ: θ's interval is too wide")
		}
		p2 := new(big.Int).Add(new(big.Int).Mul(a[0], p1), p0)
		q2 := new(big.Int).Add(new(big.Int).Mul(a[0], q1), q0)
		if q2.Cmp(n) > 0 {
			return p1, q1
		}
		p0, q0, p1, q1 = p1, q1, p2, q2
	}
}

// word192 returns the 192-bit integer of three words, most significant
// first.
func word192(w [3]uint64) *big.Int {
	v := new(big.Int)
	for _, x := range w {
		v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(x))
	}
	return v
}

func log2(r *big.Rat) float64 {
	f, _ := r.Float64()
	return math.Log2(f)
}

// conversions describes Radians and Turns for their tests: the exact raw
// result of a raw input m is m×α, α in [lo, hi]; the proof covers inputs
// up to n (beyond, Radians saturates); the constant is α in Q(shift).
type conversion struct {
	name     string
	f        func(Num) Num
	lo, hi   *big.Rat
	n        *big.Int
	constant [3]uint64
	shift    uint
}

func conversions() []conversion {
	piLo, piHi := piBounds()
	two := big.NewRat(2, 1)
	twoPiLo, twoPiHi := new(big.Rat).Mul(two, piLo), new(big.Rat).Mul(two, piHi)
	two63 := new(big.Int).Lsh(big.NewInt(1), 63)
	// Radians(m) saturates for m above 2⁶³/(2π): nR is at least that.
	q := new(big.Rat).Quo(new(big.Rat).SetInt(two63), twoPiLo)
	nR := new(big.Int).Quo(q.Num(), q.Denom())
	nR.Add(nR, big.NewInt(1))
	return []conversion{
		{"Turns", Turns, new(big.Rat).Inv(twoPiHi), new(big.Rat).Inv(twoPiLo), two63,
			[3]uint64{invTwoPi192h, invTwoPi192m, invTwoPi192l}, 192},
		{"Radians", Radians, twoPiLo, twoPiHi, nR, [3]uint64{twoPi192h, twoPi192m, twoPi192l}, 189},
	}
}

// TestRadiansTurnsProof proves that Radians and Turns are correctly
// rounded for every input, as mul192's comment argues: for raw inputs m
// up to n, the exact result m×α comes no closer to a rounding boundary (a
// half-integer) than |qθ - p|/2, for θ = 2α and p/q its convergent with
// the largest q ≤ n, while the computed product is within n×|c/2ˢ - α| of
// the exact one: the first must exceed the second.
func TestRadiansTurnsProof(t *testing.T) {
	two := big.NewRat(2, 1)
	for _, c := range conversions() {
		p, q := convergent(t, new(big.Rat).Mul(two, c.lo), new(big.Rat).Mul(two, c.hi), c.n)
		var dist, worst *big.Rat
		k := new(big.Rat).SetFrac(word192(c.constant), new(big.Int).Lsh(big.NewInt(1), c.shift))
		signs := 0
		for _, a := range []*big.Rat{c.lo, c.hi} {
			d := new(big.Rat).Mul(new(big.Rat).SetInt(q), new(big.Rat).Mul(two, a))
			d.Sub(d, new(big.Rat).SetInt(p))
			signs += d.Sign()
			d.Abs(d).Quo(d, two)
			if dist == nil || d.Cmp(dist) < 0 {
				dist = d
			}
			e := new(big.Rat).Sub(k, a)
			e.Abs(e).Mul(e, new(big.Rat).SetInt(c.n))
			if worst == nil || e.Cmp(worst) > 0 {
				worst = e
			}
		}
		if signs == 0 {
			t.Fatalf("%s: qθ - p changes sign in θ's interval", c.name)
		}
		n, _ := new(big.Float).SetInt(c.n).Float64()
		t.Logf("%s: for raw inputs up to 2^%.2f, exact results come no closer than 2^%.2f ulp to a rounding boundary (at %d); the computed product is within 2^%.2f ulp of the exact one",
			c.name, math.Log2(n), log2(dist), q, log2(worst))
		if worst.Cmp(dist) >= 0 {
			t.Errorf("%s: the constant's error can reach a rounding boundary", c.name)
		}
	}
}

// TestRadiansTurns compares Radians and Turns with their exact results,
// rounded to the nearest Num and saturated, at half a million inputs: the
// specials, a spread of every size, random ones, and the inputs whose
// results come nearest a rounding boundary (the convergents'
// denominators, their multiples and neighbours). It measures the worst
// error, in ulps: correct rounding is at most 1/2.
func TestRadiansTurns(t *testing.T) {
	const k = 200 // the reference's fraction bits
	pi := piFixed()
	refs := map[string]*big.Int{ // α×2ᵏ, rounded: within 2⁶³⁻ᵏ ulp for every input
		"Turns":   roundShift(new(big.Int).Quo(new(big.Int).Lsh(big.NewInt(1), prec+k), pi), 1), // 2ᵏ/π = 2×2ᵏ/(2π)
		"Radians": roundShift(pi, prec-k-1),                                                     // 2π×2ᵏ = π×2ᵏ⁺¹
	}
	two := big.NewRat(2, 1)
	one := int64(1) << FracBits
	base := []int64{0, 1, -1, 2, 3, -3, one, -one, one / 2, -one / 2, piRaw, -piRaw, math.MaxInt64, math.MinInt64,
		math.MaxInt64 / 7, math.MinInt64 / 7, math.MaxInt64 / 6, math.MinInt64 / 6, 1 << 62, -1 << 62}
	for i := range 1 << 17 {
		v := uint64(i+1) * 0x9e3779b97f4a7c15 // a spread of raw values, of every size
		base = append(base, int64(v)>>(i%64))
	}
	r := rand.New(rand.NewPCG(31, 32))
	for range 1 << 17 {
		base = append(base, int64(r.Uint64())>>r.IntN(64))
	}
	for _, c := range conversions() {
		xs := append([]int64(nil), base...)
		// The inputs nearest a boundary: the denominators of every
		// convergent of 2α up to n, a few multiples, ±2 around each.
		for e := new(big.Int).Set(c.n); e.Sign() > 0; e.Rsh(e, 1) {
			_, q := convergent(t, new(big.Rat).Mul(two, c.lo), new(big.Rat).Mul(two, c.hi), e)
			for j := int64(1); j <= 8; j++ {
				m := new(big.Int).Mul(q, big.NewInt(j))
				if m.Cmp(c.n) > 0 || !m.IsInt64() {
					break
				}
				for d := int64(-2); d <= 2; d++ {
					xs = append(xs, m.Int64()+d, -m.Int64()-d)
				}
			}
		}
		// And Radians' saturation edge.
		xs = append(xs, c.n.Int64(), -c.n.Int64(), c.n.Int64()-1, -c.n.Int64()+1, c.n.Int64()-2, -c.n.Int64()+2)
		ref := refs[c.name]
		half := new(big.Int).Lsh(big.NewInt(1), k-1)
		margin := new(big.Int).Lsh(big.NewInt(1), 64) // the reference's error bound, 2⁶³⁻ᵏ ulp, ×2
		var worst float64
		nearest := math.Inf(1)
		for _, x := range xs {
			m := new(big.Int).Abs(big.NewInt(x))
			v := new(big.Int).Mul(m, ref) // |x|×α×2ᵏ, within 2⁶³ of the exact
			q, rem := new(big.Int).QuoRem(v, new(big.Int).Lsh(big.NewInt(1), k), new(big.Int))
			off := new(big.Int).Sub(rem, half) // from the boundary
			if new(big.Int).Abs(off).Cmp(margin) <= 0 {
				t.Fatalf("%s(%d): too near a boundary for the reference", c.name, x)
			}
			if off.Sign() > 0 {
				q.Add(q, big.NewInt(1))
			}
			if x < 0 {
				q.Neg(q)
			}
			want := Num{}
			switch {
			case q.Cmp(big.NewInt(math.MaxInt64)) > 0:
				want = Max
			case q.Cmp(big.NewInt(math.MinInt64)) < 0:
				want = Min
			default:
				want = Num{q.Int64()}
			}
			got := c.f(Num{x})
			if got != want {
				t.Fatalf("%s(%d) = %d, want %d", c.name, x, got.v, want.v)
			}
			o, _ := new(big.Float).SetInt(off).Float64()
			nearest = min(nearest, math.Abs(math.Ldexp(o, -k)))
			if got == Max || got == Min {
				continue // saturated: no error to measure
			}
			d := new(big.Int).Lsh(big.NewInt(got.v), k)
			if x < 0 {
				v.Neg(v)
			}
			f, _ := new(big.Float).SetInt(d.Sub(d, v)).Float64()
			worst = max(worst, math.Abs(math.Ldexp(f, -k)))
		}
		t.Logf("%s: %d inputs, worst error %.12f ulp (1/2 less the nearest approach to a boundary, 2^%.2f ulp)", c.name, len(xs), worst, math.Log2(nearest))
		if worst > 0.5 {
			t.Errorf("%s: an error of %g ulp", c.name, worst)
		}
	}
	if got := Radians(Half); got != Pi {
		t.Errorf("Radians(1/2) = %v, want Pi", got)
	}
	if got := Turns(Pi); got != Half {
		t.Errorf("Turns(Pi) = %v, want 1/2", got)
	}
}
