package fixed

import (
	"fmt"
	"math/big"
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
	twoPi    uint64
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
	g.twoPi = roundShift(pi, prec-62).Uint64() // 2π×2⁶¹ = π×2⁶²
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
	fmt.Fprintf(&b, "invTwoPi = %#016x\ntwoPi    = %#016x\n", g.invTwoPi, g.twoPi)
	return b.String()
}

// TestTables is the generator of the tables in trig.go and of Pi: it
// computes them again from π (integers only, math/big) and fails, printing
// the source to paste, if a literal differs.
func TestTables(t *testing.T) {
	want := generate()
	got := tables{pi: uint64(Pi), sinCoef: sinCoef, cosCoef: cosCoef, atan: atanTurns,
		invTwoPi: invTwoPi, twoPi: twoPi}
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

// TestRadiansTurns checks the two conversions against exact products with
// their constants (TestTables checks the constants), rounded to nearest,
// ties to even, and saturated.
func TestRadiansTurns(t *testing.T) {
	ref := func(x Num, c uint64, shift uint) Num {
		n := new(big.Int).Mul(big.NewInt(int64(x)), new(big.Int).SetUint64(c))
		d := new(big.Int).Lsh(big.NewInt(1), shift)
		q, m := new(big.Int).DivMod(n, d, new(big.Int))
		if c := new(big.Int).Lsh(m, 1).Cmp(d); c > 0 || c == 0 && q.Bit(0) == 1 {
			q.Add(q, big.NewInt(1))
		}
		switch {
		case !q.IsInt64():
			if q.Sign() < 0 {
				return Min
			}
			return Max
		}
		return Num(q.Int64())
	}
	xs := []Num{0, 1, -1, One, -One, Half, Pi, -Pi, Max, Min, Max / 7, Min / 7, Max / 6, Min / 6, 3, -3}
	for i := range 100000 {
		v := uint64(i+1) * 0x9e3779b97f4a7c15 // a spread of raw values, of every size
		xs = append(xs, Num(v)>>(i%64))
	}
	for _, x := range xs {
		if got, want := Radians(x), ref(x, twoPi, 61); got != want {
			t.Fatalf("Radians(%d) = %d, want %d", x, got, want)
		}
		if got, want := Turns(x), ref(x, invTwoPi, 64); got != want {
			t.Fatalf("Turns(%d) = %d, want %d", x, got, want)
		}
	}
	if got := Radians(One / 2); got != Pi {
		t.Errorf("Radians(1/2) = %d, want Pi", got)
	}
	if got := Turns(Pi); got != One/2 {
		t.Errorf("Turns(Pi) = %d, want 1/2", got)
	}
}
