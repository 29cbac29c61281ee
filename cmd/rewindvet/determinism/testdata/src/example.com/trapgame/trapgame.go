// Package trapgame is a game that hides determinism traps the way real
// games do: entities behind interfaces, systems as function values, tables
// built in init, helpers in another package, generics. Every trap's line
// is marked "trap:<category>", every harmless look-alike's line
// "fine:<category>"; TestTrapGame checks that the analyzer reports each
// trap and no look-alike, and reports its recall.
package trapgame

import (
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"example.com/trapgame/helpers"
	"github.com/rewindgg/rewind/rollback"
)

// World is the game state, in the arena.
type World struct {
	X, Y, VX, VY, Drag float64
	Cell, Count        int32
	Tick, Energy       int64
	Hash               uint64
	Scores             map[int32]int32
	Weights            map[int32]float64
	Names              map[string]int32
	Rng                rand.PCG
	Log                []int32
}

// Entity is one thing in the world; the game holds them behind it.
type Entity interface {
	Update(w *World)
}

// Walker moves in integer steps: harmless.
type Walker struct{ Speed int32 }

// Update walks.
func (k *Walker) Update(w *World) { w.Cell += k.Speed } // fine:interface

// Drone hovers on a sine.
type Drone struct{}

// Update hovers.
func (d *Drone) Update(w *World) {
	w.Y = math.Sin(w.X) // trap:interface
}

// Spawner spawns what is pending, in map order.
type Spawner struct{ pending map[int32]int32 }

// Update spawns.
func (s *Spawner) Update(w *World) {
	for id := range s.pending { // trap:interface-maprange
		w.Log = append(w.Log, id)
	}
}

// Mine is updated through a type parameter.
type Mine struct{}

// Update arms the mine at random.
func (Mine) Update(w *World) {
	w.Count += rand.Int32N(3) // trap:generic
}

// Sign is updated through a type parameter too: harmless.
type Sign struct{}

// Update counts.
func (Sign) Update(w *World) { w.Count++ } // fine:generic

// each updates every entity of a slice through the type parameter.
func each[T Entity](xs []T, w *World) {
	for _, x := range xs {
		x.Update(w)
	}
}

// total sums integers: harmless.
func total[T ~int32 | ~int64](xs []T) T {
	var s T
	for _, x := range xs {
		s += x
	}
	return s
}

// gravity is a system: harmless.
func gravity(w *World) { w.VY -= 1 } // fine:funcvalue

// jitter is a system with global randomness.
func jitter(w *World) {
	w.VX += rand.Float64() // trap:funcvalue
}

// wallClock is a clock whose method value is stored in init.
type wallClock struct{ start time.Time }

// Elapsed reads the clock.
func (c *wallClock) Elapsed() int64 {
	return time.Since(c.start).Milliseconds() // trap:init-methodvalue
}

var clock = &wallClock{}

// elapsed is set in init to a method value.
var elapsed func() int64

// curve is a platform-dependent math function held in a variable.
var curve = math.Log

// straight is an exact math function held in a variable: harmless.
var straight = math.Sqrt

// sinTable is filled with math.Sin in init.
var sinTable [256]float64

// cubes is filled with integer arithmetic in init: harmless.
var cubes [256]int64

// cosTable is built at its declaration with math.Cos.
var cosTable = buildCos()

func buildCos() [16]float64 {
	var t [16]float64
	for i := range t {
		t[i] = math.Cos(float64(i)) // trap:init-table
	}
	return t
}

// ticks is advanced by a goroutine started in init.
var ticks int64

func init() {
	for i := range sinTable {
		sinTable[i] = math.Sin(float64(i) / 40) // trap:init-table
	}
	for i := range cubes {
		cubes[i] = int64(i) * int64(i) * int64(i) // fine:init-table
	}
	elapsed = clock.Elapsed
	go pump() // trap:init-goroutine
}

func pump() {
	for {
		ticks++
	}
}

// nextSeed is a generator whose state is a closure's captured variable.
var nextSeed = func() func() uint64 {
	s := uint64(1)
	return func() uint64 {
		s = s*6364136223846793005 + 1442695040888963407 // trap:closure
		return s
	}
}()

// counter returns a closure that counts outside the arena.
func counter() func() int32 {
	n := int32(0)
	return func() int32 {
		n++ // trap:closure
		return n
	}
}

// Game steps a World.
type Game struct {
	W        World
	entities []Entity
	systems  []func(*World)
	movers   []helpers.Mover
	mines    []Mine
	signs    []Sign
	now      func() time.Time
	ease     func(float64) float64
	smooth   func(float64) float64
	nextID   func() int32
	seed     maphash.Seed
	cache    sync.Map
	pool     *sync.Pool
	cfg      rollback.Config
}

var _ rollback.Game = (*Game)(nil)

// New builds a game.
func New() *Game {
	g := &Game{
		entities: []Entity{&Walker{Speed: 1}, &Drone{}, &Spawner{}},
		systems:  []func(*World){gravity, jitter},
		movers:   []helpers.Mover{helpers.Drift{}, helpers.Step{DX: 1}},
		ease:     helpers.Ease,
		smooth:   helpers.Linear,
		nextID:   counter(),
		seed:     maphash.MakeSeed(),
		pool:     &sync.Pool{New: func() any { return new(World) }},
	}
	g.now = time.Now
	g.cfg = rollback.Config{Players: 2, StandIn: g.standIn}
	return g
}

// standIn plays for an absent player.
func (g *Game) standIn(f rollback.Frame, p rollback.PlayerID) rollback.Input {
	if os.Getenv("BOT_AGGRESSIVE") != "" { // trap:standin
		return 1
	}
	return rollback.Input(g.W.Cell & 1) // fine:standin
}

// Step advances the world by one frame.
func (g *Game) Step(f rollback.Frame, in []rollback.PlayerInput) {
	w := &g.W
	for _, e := range g.entities {
		e.Update(w)
	}
	each(g.mines, w)
	each(g.signs, w)
	for _, sys := range g.systems {
		sys(w)
	}
	for _, m := range g.movers {
		w.Cell, w.Count = m.Move(w.Cell, w.Count) // trap:helper-interface
	}
	w.Tick = g.now().UnixNano()      // trap:funcvalue-field
	w.X = curve(w.X + 1)             // trap:funcvalue-var
	w.Y = straight(w.Y * w.Y)        // fine:funcvalue-var
	w.Energy += elapsed()            // (the hazard is in Elapsed)
	w.VX = g.ease(w.VX)              // trap:helper-funcvalue
	w.VY = g.smooth(w.VY)            // fine:helper-funcvalue
	w.Count += g.nextID()            // (the hazard is in the closure)
	w.Hash ^= nextSeed()             // (the hazard is in the closure)
	w.X += sinTable[f&255]           // (the hazard is in init)
	w.Y += cosTable[f&15]            // (the hazard is in buildCos)
	w.Tick += cubes[f&255]           // fine:init-table
	w.Tick += ticks                  // trap:init-goroutine-read
	w.X += helpers.Sin(int32(f))     // trap:helper-init-table
	w.Cell += helpers.Square(w.Cell) // fine:helper-init-table
	w.Cell = helpers.Clamp(w.Cell, 0, 100)

	g.library(w)
	g.conversions(w, f)
	g.mapRanges(w)
	g.closures(w)
	w.Count += total(w.Log) // fine:generic
}

// library calls the standard library functions that differ per run.
func (g *Game) library(w *World) {
	w.Count += int32(runtime.NumGoroutine()) // trap:runtime
	w.Count += int32(runtime.NumCPU())       // trap:runtime
	w.Count += int32(runtime.GOMAXPROCS(0))  // trap:runtime
	if v, ok := os.LookupEnv("SPEED"); ok {  // trap:env
		w.Count += int32(len(v))
	}
	w.Count += int32(len(os.Environ()))   // trap:env
	w.Hash ^= maphash.String(g.seed, "x") // trap:maphash
	var h maphash.Hash
	h.WriteString("y")                           // trap:maphash
	w.Hash ^= h.Sum64()                          // trap:maphash
	iter := reflect.ValueOf(w.Scores).MapRange() // trap:reflect
	for iter.Next() {
		w.Log = append(w.Log, int32(iter.Key().Int()))
	}
	for _, k := range reflect.ValueOf(w.Names).MapKeys() { // trap:reflect
		w.Log = append(w.Log, int32(len(k.String())))
	}
	w.Hash ^= uint64(reflect.ValueOf(w).Pointer())                // trap:reflect
	w.Hash ^= uint64(uintptr(reflect.ValueOf(w).UnsafePointer())) // trap:reflect
	w.Count += int32(len(fmt.Sprintf("%p", w)))                   // trap:fmt-p
	w.Count += int32(len(fmt.Sprintf("%d%%p", w.Count)))          // fine:fmt
	g.cache.Range(func(k, v any) bool {                           // trap:syncmap
		w.Log = append(w.Log, int32(len(fmt.Sprint(k))))
		return true
	})
	tmp := g.pool.Get().(*World) // trap:syncpool
	w.Count += tmp.Count
	w.Tick += int64(reflect.TypeOf(w).Size())             // fine:reflect
	w.Count += int32(time.Second / 60 / time.Millisecond) // fine:time
	w.Tick += int64(w.Rng.Uint64() & 7)                   // fine:rand
}

const cellSize = 16.0

// conversions converts between floats and integers.
func (g *Game) conversions(w *World, f rollback.Frame) {
	w.Cell = int32(w.X / cellSize)                    // trap:float2int
	w.Energy = int64(w.VX * 100)                      // trap:float2int
	w.Hash ^= math.Float64bits(w.X / w.Y)             // trap:nanbits
	w.Hash ^= uint64(math.Float32bits(float32(w.VY))) // trap:nanbits
	idx := int(w.Tick) % len(sinTable)                // trap:narrow
	w.Log = append(w.Log, int32(idx))
	var big uint64 = w.Hash
	w.Count += int32(int(big) >> 40)                        // trap:narrow
	w.Cell = int32(cellSize)                                // fine:const-conversion
	w.Energy = int64(w.Count)                               // fine:widen
	w.X = float64(w.Cell) / 3                               // fine:int2float
	w.Hash ^= math.Float64bits(1.5)                         // fine:const-bits
	w.X = math.Float64frombits(w.Hash & 0x3ff)              // fine:frombits
	w.Log = append(w.Log, int32(int(w.Cell)))               // fine:widen
	w.Count += int32(int(w.Hash%64) + 1)                    // fine:narrow-mod
	w.X = float64(w.VX*w.Drag) + w.X                        // fine:fma-converted
	w.Y = math.Floor(w.Y) + math.Abs(w.X) + math.Sqrt(w.VY) // fine:exact-math
	w.X += w.VX                                             // fine:float-add
	w.Tick += int64(f)                                      // fine:widen
}

// mapRanges ranges over maps, some in ways whose result depends on order.
func (g *Game) mapRanges(w *World) {
	keys := make([]int32, 0, len(w.Scores))
	for k := range w.Scores { // fine:sorted-keys
		keys = append(keys, k)
	}
	slices.Sort(keys)
	names := make([]string, 0, len(w.Names))
	for name := range w.Names { // fine:sorted-keys
		names = append(names, name)
	}
	sort.Strings(names)
	ids := make([]int32, 0, len(w.Scores))
	for id := range w.Scores { // fine:sorted-keys
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var sum int64
	for _, v := range w.Scores { // fine:int-sum
		sum += int64(v)
	}
	var n int32
	for _, v := range w.Scores { // fine:count
		if v > 10 {
			n++
		}
	}
	var x uint64
	for k, v := range w.Scores { // fine:xor
		x ^= uint64(k)*31 + uint64(v)
	}
	var best int32
	for _, v := range w.Scores { // fine:max
		if v > best {
			best = v
		}
	}
	var low int32 = math.MaxInt32
	for _, v := range w.Scores { // fine:min
		low = min(low, v)
	}
	copyOf := make(map[int32]int32, len(w.Scores))
	for k, v := range w.Scores { // fine:map-copy
		copyOf[k] = v * 2
	}
	var fsum float64
	for _, v := range w.Weights { // trap:maprange-floatsum
		fsum += v
	}
	var order []int32
	for k := range w.Scores { // trap:maprange-unsorted
		order = append(order, k)
	}
	for k, v := range w.Scores { // trap:maprange-call
		g.emit(w, k, v)
	}
	firsts := slices.Collect(maps.Values(w.Scores)) // trap:maprange-values
	w.Tick += sum + int64(n) + int64(x) + int64(best) + int64(low) + int64(len(copyOf)) + int64(fsum) + int64(len(order)) + int64(len(firsts)) + int64(len(keys)) + int64(len(names)) + int64(len(ids))
}

func (g *Game) emit(w *World, k, v int32) { w.Log = append(w.Log, k, v) }

// closures uses closures that write captured variables created here:
// harmless, they live for one Step.
func (g *Game) closures(w *World) {
	sum := int32(0)
	add := func(v int32) { sum += v } // fine:closure-local
	for _, v := range w.Log {
		add(v)
	}
	sort.Slice(w.Log, func(i, j int) bool { return w.Log[i] < w.Log[j] }) // fine:closure-sort
	w.Count += sum
}
