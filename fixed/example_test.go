package fixed_test

import (
	"fmt"

	"github.com/rewindgg/rewind/fixed"
)

// A projectile fired at an eighth of a turn (45°) at 12 units a second,
// stepped at 60 Hz under a gravity of 9 units/s² until it lands: only
// integer arithmetic, so every machine lands it on the same bits.
func Example() {
	dt := fixed.Ratio(1, 60)
	g := fixed.FromInt(-9)
	speed := fixed.FromInt(12)
	angle := fixed.Ratio(1, 8) // turns
	vx, vy := fixed.Cos(angle).Mul(speed), fixed.Sin(angle).Mul(speed)
	var x, y fixed.Num
	frames := 0
	for y.Sign() >= 0 {
		vy = vy.Add(g.Mul(dt))
		x, y = x.Add(vx.Mul(dt)), y.Add(vy.Mul(dt))
		frames++
	}
	fmt.Println("landed after", frames, "frames, at x =", x.Round())
	fmt.Println("heading", fixed.Atan2(vy, vx).Mul(fixed.FromInt(360)).Round(), "degrees")
	fmt.Println("√2 =", fixed.Sqrt(fixed.FromInt(2)))
	// Output:
	// landed after 113 frames, at x = 16
	// heading -45 degrees
	// √2 = 1.4142135624
}

// Nothing wraps: a sum beyond the range stays at Max, and a square beyond
// 46,340.95 saturates, where Hypot does not.
func ExampleNum_Add() {
	fmt.Println(fixed.Max.Add(fixed.One) == fixed.Max)
	big := fixed.FromInt(50000)
	fmt.Println(big.Mul(big) == fixed.Max, fixed.Hypot(big, big))
	// Output:
	// true
	// true 70710.6781186548
}

// Mod wraps a position into a world of a given size, always into [0, size).
func ExampleNum_Mod() {
	size := fixed.FromInt(1024)
	fmt.Println(fixed.FromInt(-3).Mod(size), fixed.FromInt(1030).Mod(size), fixed.FromInt(-3).Rem(size))
	// Output: 1021 6 -3
}
