package trapgame

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"example.com/trapgame/helpers"
	"github.com/rewindgg/rewind/rollback"
)

// Bomb is kept in a generic store.
type Bomb struct{ Fuse int32 }

// Update lights the fuse at random.
func (b *Bomb) Update(w *World) {
	b.Fuse = rand.N(int32(10)) // trap:generic-store
}

// Store holds entities of one type.
type Store[T Entity] struct{ items []T }

// UpdateAll updates every item through the constraint's method.
func (s *Store[T]) UpdateAll(w *World) {
	for _, it := range s.items {
		it.Update(w)
	}
}

// Turret aims with a platform-dependent arc tangent.
type Turret struct{}

// Update aims.
func (Turret) Update(w *World) {
	w.VX = math.Atan2(w.Y, w.X) // trap:embedded-interface
}

// Boss embeds an Entity: its Update is the embedded one's.
type Boss struct{ Entity }

// Radar is registered in init as a handler.
type Radar struct{}

// Scan reads the clock.
func (Radar) Scan(w *World) {
	w.Tick = time.Now().Unix() // trap:init-handler
}

var handlers []func(*World)

func init() {
	handlers = append(handlers, Radar{}.Scan)
}

// squares2 is an integer table; bootTime is only logged.
var (
	squares2 [16]int32
	bootTime int64
)

// jitterTable is filled from a seed that init reads from the clock.
var jitterTable [8]int64

func init() {
	for i := range squares2 {
		squares2[i] = int32(i * i)
	}
	bootTime = time.Now().Unix()  // fine:init-unread
	seed := time.Now().UnixNano() // trap:init-local-dep
	for i := range jitterTable {
		jitterTable[i] = seed >> i
	}
}

// scored is an entry of a ranking.
type scored struct {
	ID    int32
	Score int32
}

// Arena is a second game in the package: a ranking, bosses and handlers.
type Arena struct {
	W       World
	bombs   Store[*Bomb]
	boss    Boss
	drift   helpers.Mover
	onHit   func()
	mark    func(int32)
	onScore func(int32)
	count   func() int32
	scale   func(int64) int64
	mu      sync.Mutex
}

// NewArena sets an arena up.
func NewArena() *Arena {
	a := &Arena{boss: Boss{Entity: Turret{}}, drift: helpers.NewDrift()}
	hits := 0
	a.onHit = func() {
		hits++ // trap:closure-field
	}
	seen := map[int32]bool{}
	a.mark = func(id int32) {
		seen[id] = true // trap:closure-map
	}
	a.onScore = func(n int32) {
		a.W.Count += n // fine:closure-pointer
	}
	_ = helpers.Difficulty()
	a.count = helpers.NewCounter()
	a.scale = helpers.Scale(3)
	var cfg rollback.Config
	cfg.StandIn = func(f rollback.Frame, p rollback.PlayerID) rollback.Input {
		return rollback.Input(runtime.NumCPU()) // trap:standin-assigned
	}
	_ = cfg
	return a
}

// Step advances the arena.
func (a *Arena) Step(f rollback.Frame, in []rollback.PlayerInput) {
	w := &a.W
	a.bombs.UpdateAll(w)
	a.boss.Update(w)
	for _, h := range handlers {
		h(w)
	}
	w.Cell, w.Count = a.drift.Move(w.Cell, w.Count) // trap:helper-constructor
	a.onHit()
	a.mark(w.Cell)
	a.onScore(1)
	w.Count += a.count()         // trap:helper-closure
	w.Tick = a.scale(w.Tick)     // fine:helper-closure
	if runtime.GOARCH == "386" { // trap:goarch
		w.Count++
	}
	if h, err := os.Hostname(); err == nil { // trap:env
		w.Count += int32(len(h))
	}
	w.Count += int32(int(uint32(w.Hash)) % 7) // trap:narrow-uint32
	w.Cell = helpers.Cell(w.X)                // trap:helper-float2int
	a.rank(w)
	a.fine(w)
	a.more(w)
	a.events(&bus{})
	a.reductions(w, nil)
	a.callbacks(w, nil)
	a.deferred(w)
	_ = a.ranking(w)
	a.queue(w, nil)
	w.Count += squares2[w.Cell&15]
	w.Tick += jitterTable[w.Cell&7]
}

// rank ranks the scores, in ways that depend on the map's order.
func (a *Arena) rank(w *World) {
	var best, bestID int32
	for id, s := range w.Scores { // trap:argmax-ties
		if s > best {
			best = s
			bestID = id
		}
	}
	var list []scored
	for id, s := range w.Scores { // trap:sort-ties
		list = append(list, scored{id, s})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Score > list[j].Score })
	w.Cell = bestID + int32(len(list))
}

// fine does what looks like a trap and is not one.
func (a *Arena) fine(w *World) {
	keys := slices.Collect(maps.Keys(w.Scores)) // fine:collect-sort
	slices.Sort(keys)
	var t int64
	for k := range maps.Keys(w.Scores) { // fine:keys-sum
		t += int64(k)
	}
	found := false
	for _, v := range w.Scores { // fine:flag
		if v < 0 {
			found = true
		}
	}
	for _, v := range w.Scores { // fine:field-sum
		w.Energy += int64(v) * w.Tick
	}
	for k, v := range w.Scores { // fine:delete
		if v == 0 {
			delete(w.Scores, k)
		}
	}
	w.Count += int32(int(w.Hash >> 33))   // fine:narrow-shift
	w.Count += int32(int(w.Hash & 0xfff)) // fine:narrow-mask
	x := w.X
	if x != x {
		x = 0
	} else if x < 0 {
		x = 0
	} else if x > 1000 {
		x = 1000
	}
	w.Cell = int32(x) // fine:float2int-guarded
	y := w.Y
	if math.IsNaN(y) {
		y = 0
	}
	w.Hash ^= math.Float64bits(y)               // fine:nanbits-guarded
	w.Count += int32(len(fmt.Sprint(w.Scores))) // fine:fmt-map
	runtime.KeepAlive(w)                        // fine:runtime
	a.mu.Lock()                                 // fine:mutex
	a.mu.Unlock()
	w.Count += int32(len(fmt.Sprintf("%v", w.Cell))) // fine:fmt
	if found {
		w.Tick += t + int64(len(keys))
	}
}

func init() {
	go func() { // trap:init-goroutine-detached
		for {
			runtime.Gosched()
		}
	}()
}

// more holds a few more traps and look-alikes.
func (a *Arena) more(w *World) {
	hist := make(map[int32]int32)
	for _, v := range w.Scores { // fine:histogram
		hist[v%4]++
	}
	id := w.Cell
	w.Log = append(w.Log, int32(len(fmt.Sprint(&id)))) // trap:fmt-pointer
	w.Log = append(w.Log, int32(len(fmt.Sprint(w))))   // fine:fmt-struct-pointer
	w.Count += int32(len(hist))
}

// bus keeps subscribers.
type bus struct{ subs []func(int32) }

// subscribe stores f.
func (b *bus) subscribe(f func(int32)) { b.subs = append(b.subs, f) }

// run calls f now.
func run(f func()) { f() }

// cost is a pure method.
func (s scored) cost() int64 { return int64(s.Score) * 3 }

// mix is a pure hash.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	return x ^ x>>33
}

// events wires a subscriber whose count is a captured variable.
func (a *Arena) events(b *bus) {
	seen := int32(0)
	b.subscribe(func(n int32) {
		seen += n // trap:closure-subscribed
	})
	total := int32(0)
	run(func() {
		total++ // fine:closure-called
	})
	a.W.Count += total
}

// reductions are order-free loops that call pure functions.
func (a *Arena) reductions(w *World, ranks map[int32]scored) {
	var h uint64
	for k := range w.Scores { // fine:xor-pure-call
		h ^= mix(uint64(k))
	}
	var c int64
	for _, s := range ranks { // fine:sum-pure-method
		c += s.cost()
	}
	w.Hash ^= h + uint64(c)
	r := rand.New(rand.NewPCG(uint64(w.Tick), 7))
	w.Count += r.Int32N(6) // fine:fresh-rand
}

// byDist sorts scores by a distance.
type byDist []scored

func (s byDist) Len() int      { return len(s) }
func (s byDist) Swap(i, j int) { s[i], s[j] = s[j], s[i] }
func (s byDist) Less(i, j int) bool {
	return math.Hypot(float64(s[i].ID), float64(s[i].Score)) < math.Hypot(float64(s[j].ID), float64(s[j].Score)) // trap:sort-interface
}

// wobble is a mover of the game's own, called by helpers.MoveAll.
type wobble struct{}

// Move wobbles at random.
func (wobble) Move(x, y int32) (int32, int32) {
	return x + rand.Int32N(3), y // trap:helper-callback
}

// callbacks hands the game's own types to code that calls their methods.
func (a *Arena) callbacks(w *World, list []scored) {
	sort.Sort(byDist(list))
	w.Cell, w.Count = helpers.MoveAll([]helpers.Mover{wobble{}}, w.Cell, w.Count)
}

// deferred runs closures it collects in a local slice: harmless.
func (a *Arena) deferred(w *World) {
	total := int32(0)
	var fns []func()
	for i := range int32(3) {
		fns = append(fns, func() {
			total += i // fine:closure-local-slice
		})
	}
	for _, f := range fns {
		f()
	}
	w.Count += total
}

// queue keeps closures in the game for later frames.
func (a *Arena) queue(w *World, later *[]func()) {
	pending := int32(0)
	*later = append(*later, func() {
		pending++ // trap:closure-queued
	})
	w.Count += pending
}

// ranking sorts entries by score, ties broken by the key: a total order.
func (a *Arena) ranking(w *World) []scored {
	var list []scored
	for id, s := range w.Scores { // fine:sort-key-tiebreak
		list = append(list, scored{ID: id, Score: s})
	}
	slices.SortFunc(list, func(x, y scored) int {
		if x.Score != y.Score {
			return int(y.Score - x.Score)
		}
		return int(x.ID - y.ID)
	})
	return list
}
