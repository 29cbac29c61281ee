// Package game is a rollback game full of determinism traps, for the
// analyzer's tests: every reported line has a want comment.
package game

import (
	crand "crypto/rand"
	"maps"
	"math"
	"math/rand"
	"slices"
	"time"
	"unsafe"

	"example.com/lib"
	"github.com/rewindgg/rewind/rollback"
)

type World struct {
	X, Y, VX, VY float64
	Score        map[int]int
}

type Game struct {
	w   World
	rng *rand.Rand
	ch  chan int
}

var counter int

var table = [4]int{1, 2, 3, 4} // read-only: fine

var setOnce int

func init() { setOnce = 3 } // init is initialisation: fine

var hook = func() int64 {
	return time.Now().Unix() // want `time.Now: the wall clock`
}

func (g *Game) Step(f rollback.Frame, in []rollback.PlayerInput) { // want Step:"hazards"
	for k := range g.w.Score { // want `range over a map: iteration order is randomised per run, and the loop assigns g.w.Y, and the last entry to do so, in that order, wins; use an array, or range over slices.Sorted\(maps.Keys\(m\)\)`
		g.w.Y = float64(k) // the last key wins
	}
	for range g.w.Score { // counting only: fine
	}
	for _, k := range slices.Sorted(maps.Keys(g.w.Score)) {
		_ = k
	}
	for k := range maps.Keys(g.w.Score) { // want `maps.Keys outside slices.Sorted: iteration order is randomised`
		g.w.Y = float64(k)
	}
	_ = time.Now()    // want `time.Now: the wall clock differs per machine and per re-simulation; count frames: f ticks of 1/60 s`
	time.Sleep(0)     // want `time.Sleep: the wall clock`
	_ = rand.Intn(3)  // want `rand.Intn: the global generator is shared, seeded per process and not in the arena; keep a generator's state in the arena`
	_ = g.rng.Intn(3) // want `\(\*rand.Rand\).Intn: a \*rand.Rand keeps its state on the heap`
	_ = rand.New(rand.NewSource(int64(f)))
	var b [8]byte
	_, _ = crand.Read(b[:]) // want `crypto/rand.Read: it differs on every machine and every call`
	go func() {}()          // want `go statement: goroutine scheduling order is not deterministic; simulate on one goroutine`
	g.ch <- 1               // want `channel send: it waits on other goroutines`
	<-g.ch                  // want `channel receive: it waits on other goroutines`
	select {                // want `select: select picks a random ready case`
	case v := <-g.ch:
		_ = v
	default:
	}
	close(g.ch)                            // want `close of a channel: it waits`
	g.w.X = g.w.VX*g.w.VY + g.w.X          // want `g.w.VX\*g.w.VY \+ g.w.X: the compiler may fuse it into one FMA instruction \(.*arm64.*\), which rounds differently; write float64\(g.w.VX\*g.w.VY\) \+ g.w.X, or use fixed point`
	g.w.Y = float64(g.w.VX*g.w.VY) + g.w.Y // converted: fine
	g.w.Y += g.w.VX * g.w.VY               // want `g.w.Y \+= g.w.VX \* g.w.VY: the compiler may fuse`
	g.w.X = g.w.X - (g.w.VX * g.w.Y)       // want `g.w.X - \(g.w.VX \* g.w.Y\): the compiler may fuse`
	t := g.w.VX * g.w.VY
	g.w.X = t - g.w.X // want `t - g.w.X \(t holds the unrounded product g.w.VX \* g.w.VY at game.go:73\): the compiler may fuse it into one FMA instruction .*; convert the product where it is computed, float64\(g.w.VX \* g.w.VY\)`
	u := float64(g.w.VX * g.w.VY)
	g.w.X = u + g.w.X      // converted where computed: fine
	_ = math.Sin(g.w.X)    // want `math.Sin: it is assembly on s390x and its Go code has multiply-adds the compiler may fuse on .*arm64.*, so its last bit may differ between platforms; use fixed point`
	_ = math.Sqrt(g.w.X)   // exactly rounded: fine
	_ = math.Floor(g.w.X)  // exact: fine
	counter++              // want `package variable counter \(written at game.go:80\): it is outside the arena, so a rollback does not restore it; keep it in the arena`
	_ = table[f&3]         // read-only: fine
	_ = setOnce            // written only in init: fine
	_ = unsafe.Sizeof(g.w) // want `use of package unsafe: memory layout and addresses differ`
	_ = time.Now()         //rewind:allow the test says so
	//rewind:allow alone on the line above, with a reason
	_ = time.Now()
	_ = 1 /* want `//rewind:allow without a reason: an exemption must say why the code is deterministic; write //rewind:allow <reason>` */ //rewind:allow
	g.helper()
	fn := g.viaValue
	fn()
	_ = hook()
	_ = sum(g.w.X, g.w.Y, g.w.VX)
	_ = addTo(g.w.X*g.w.Y, 1)
	_ = mul(g.w.X, g.w.Y) + g.w.Y // want `mul\(g.w.X, g.w.Y\) \+ g.w.Y \(mul\(g.w.X, g.w.Y\) holds the unrounded product a \* b at game.go:\d+\)`
	lib.Shuffle(nil)              // want `calls lib.Shuffle, which calls rand.Shuffle at lib.go:\d+ \(in lib.Shuffle\): the global generator is shared`
	_ = lib.SortedKeys(nil)       // want `calls lib.SortedKeys, which ranges over a map at lib.go:26 \(in lib.keys\): iteration order is randomised per run`
	_ = lib.Pure(1)
	_ = lib.Allowed()                 // silenced where it is: fine
	_ = lib.Mul(g.w.X, g.w.Y) + g.w.Y // want `lib.Mul\(g.w.X, g.w.Y\) \+ g.w.Y \(lib.Mul\(g.w.X, g.w.Y\) holds the unrounded product a \* b at lib.go:38\)`
	_ = lib.Counter                   // want `package variable lib.Counter \(written at lib.go:16\)`
	_ = lib.Table[0]                  // fine
	lib.Bump()                        // want `calls lib.Bump, which uses package variable lib.Counter \(written at lib.go:16\) at lib.go:16 \(in lib.Bump\)`
}

// StepPartial is checked too.
func (g *Game) StepPartial(f rollback.Frame, in []rollback.PlayerInput, fraction float64) { // want StepPartial:"hazards\\(time\\)"
	_ = time.Since(time.Time{}) // want `time.Since`
}

func (g *Game) helper() {
	for k, v := range g.w.Score { // want `range over a map`
		_, _ = k, v
	}
	func() {
		_ = time.Until(time.Time{}) // want `time.Until`
	}()
}

func (g *Game) viaValue() {
	_ = rand.Float64() // want `rand.Float64`
}

func sum[T ~float64](a, b, c T) T {
	return a*b + c // want `a\*b \+ c: the compiler may fuse it.*; write T\(a\*b\) \+ c`
}

func addTo(a, z float64) float64 {
	return a + z // want `a \+ z \(a holds the unrounded product g.w.X \* g.w.Y at game.go:\d+\)`
}

func mul(a, b float64) float64 { return a * b }

// NotCalled is not reachable from Step: not reported, though its fact
// lists its hazard for other packages.
func (g *Game) NotCalled() { // want NotCalled:"hazards\\(maprange\\)"
	for k := range g.w.Score {
		g.w.Y = float64(k)
	}
}

func unused() {
	_ = time.Now()
	go func() {}()
}

// Fake has a Step method that does not implement rollback.Game.
type Fake struct{}

func (Fake) Step(f int, in []rollback.PlayerInput) { // want Step:"hazards\\(time\\)"
	_ = time.Now()
}

// Fake2's Step returns a value: not rollback.Game either.
type Fake2 struct{}

func (Fake2) Step(f rollback.Frame, in []rollback.PlayerInput) int { // want Step:"hazards\\(time\\)"
	_ = time.Now()
	return 0
}

// Value is a game with a value receiver.
type Value struct{ n int }

func (v Value) Step(f rollback.Frame, in []rollback.PlayerInput) { // want Step:"hazards\\(globalvar\\)"
	counter = v.n // want `package variable counter`
}

// Embedded is a game whose Step is lib.Base's.
type Embedded struct { // want `Embedded.Step is lib.Base.Step, which calls time.Now at lib.go:\d+ \(in lib.Base.Step\): the wall clock differs`
	lib.Base
}

var (
	_ = rollback.GameFunc(func(f rollback.Frame, in []rollback.PlayerInput) {
		_ = time.Now() // want `time.Now`
	})
	_ = rollback.GameFunc(stepFunc)
)

func stepFunc(f rollback.Frame, in []rollback.PlayerInput) {
	_ = rand.Int() // want `rand.Int:`
}

// The Go spec's own examples of fusion across statements.
func specExamples(x, y, z float64, p *float64) (r float64) {
	r = z
	r += x * y // want `r \+= x \* y: the compiler may fuse`
	*p = x * y
	r = *p + z // want `\*p \+ z \(\*p holds the unrounded product x \* y`
	r = z
	r += float64(x * y)
	t := float64(x * y)
	r = t + z
	return r
}

var _ = rollback.GameFunc(func(f rollback.Frame, in []rollback.PlayerInput) { specExamples(1, 2, 3, new(float64)) })
