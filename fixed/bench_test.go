package fixed_test

import (
	"math"
	"testing"

	"github.com/rewindgg/rewind/fixed"
)

// Each benchmark runs the fixed-point operation and, as the reference, the
// same operation on float64, over 256 operands (so that no result is
// computed at compile time or hoisted out of the loop). The fixed-point
// loops sum the raw values of the results, as int64s.

var (
	nums   [256]fixed.Num
	floats [256]float64
	sinkN  int64
	sinkF  float64
)

func init() {
	x := uint64(0x9e3779b97f4a7c15)
	for i := range nums {
		x = x*6364136223846793005 + 1442695040888963407
		nums[i] = fixed.FromRaw(int64(x>>1) >> 20) // ±2¹¹: the scale of a game's positions and velocities
		if nums[i] == (fixed.Num{}) {
			nums[i] = fixed.One
		}
		floats[i] = nums[i].Float()
	}
}

func BenchmarkMul(b *testing.B) {
	b.Run("fixed", func(b *testing.B) {
		b.ReportAllocs()
		var s int64
		for i := range b.N {
			s += nums[i&255].Mul(nums[(i+1)&255]).Raw()
		}
		sinkN = s
	})
	b.Run("float64", func(b *testing.B) {
		b.ReportAllocs()
		s := 0.0
		for i := range b.N {
			s += floats[i&255] * floats[(i+1)&255]
		}
		sinkF = s
	})
}

func BenchmarkDiv(b *testing.B) {
	b.Run("fixed", func(b *testing.B) {
		b.ReportAllocs()
		var s int64
		for i := range b.N {
			s += nums[i&255].Div(nums[(i+1)&255]).Raw()
		}
		sinkN = s
	})
	b.Run("float64", func(b *testing.B) {
		b.ReportAllocs()
		s := 0.0
		for i := range b.N {
			s += floats[i&255] / floats[(i+1)&255]
		}
		sinkF = s
	})
}

func BenchmarkSqrt(b *testing.B) {
	b.Run("fixed", func(b *testing.B) {
		b.ReportAllocs()
		var s int64
		for i := range b.N {
			s += fixed.Sqrt(nums[i&255].Abs()).Raw()
		}
		sinkN = s
	})
	b.Run("float64", func(b *testing.B) {
		b.ReportAllocs()
		s := 0.0
		for i := range b.N {
			s += math.Sqrt(math.Abs(floats[i&255]))
		}
		sinkF = s
	})
}

func BenchmarkSin(b *testing.B) {
	b.Run("fixed", func(b *testing.B) {
		b.ReportAllocs()
		var s int64
		for i := range b.N {
			s += fixed.Sin(nums[i&255]).Raw() // turns
		}
		sinkN = s
	})
	b.Run("float64", func(b *testing.B) {
		b.ReportAllocs()
		s := 0.0
		for i := range b.N {
			s += math.Sin(floats[i&255]) // radians
		}
		sinkF = s
	})
}

func BenchmarkAtan2(b *testing.B) {
	b.Run("fixed", func(b *testing.B) {
		b.ReportAllocs()
		var s int64
		for i := range b.N {
			s += fixed.Atan2(nums[i&255], nums[(i+7)&255]).Raw()
		}
		sinkN = s
	})
	b.Run("float64", func(b *testing.B) {
		b.ReportAllocs()
		s := 0.0
		for i := range b.N {
			s += math.Atan2(floats[i&255], floats[(i+7)&255])
		}
		sinkF = s
	})
}

// BenchmarkAdd, BenchmarkTurns and BenchmarkRadians have no float64
// reference: they are here to compare the methods across changes.

func BenchmarkAdd(b *testing.B) {
	b.ReportAllocs()
	var s int64
	for i := range b.N {
		s += nums[i&255].Add(nums[(i+1)&255]).Raw()
	}
	sinkN = s
}

func BenchmarkTurns(b *testing.B) {
	b.ReportAllocs()
	var s int64
	for i := range b.N {
		s += fixed.Turns(nums[i&255]).Raw()
	}
	sinkN = s
}

func BenchmarkRadians(b *testing.B) {
	b.ReportAllocs()
	var s int64
	for i := range b.N {
		s += fixed.Radians(nums[i&255]).Raw()
	}
	sinkN = s
}
