// Package traps is a rollback game that is wrong on purpose, for the
// analyzer rewindvet (cmd/rewindvet): its Step falls into every
// determinism trap of docs/integration.md, section 2, exactly once. Each
// trap's line is marked with a comment "trap: NAME", and the analyzer's
// test checks that it reports every marked line once and nothing else.
// Do not copy anything from it: examples/arena is the game to follow.
package traps

import (
	crand "crypto/rand"
	"maps"
	"math"
	"math/rand"
	"time"
	"unsafe"

	"github.com/rewindgg/rewind/examples/traps/wallclock"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// World is the game state.
type World struct {
	X, VX, Drag float64
	Seen        map[int32]bool
	Tick        int64
}

// Game steps a World.
type Game struct {
	W      World
	rng    *rand.Rand
	events chan int
}

var _ rollback.Game = (*Game)(nil)

// spawned counts spawns outside the state.
//
//lint:ignore U1000 Step's globalvar trap writes it; nothing reads it.
var spawned int

// Step advances the world by one frame, wrongly.
func (g *Game) Step(f rollback.Frame, in []rollback.PlayerInput) {
	w := &g.W
	for id := range w.Seen { // trap: maprange
		w.Tick += int64(id)
	}
	for id := range maps.Keys(w.Seen) { // trap: mapkeys
		w.Tick -= int64(id)
	}
	w.Tick += time.Now().UnixNano()    // trap: time
	w.Tick += int64(rand.Intn(6))      // trap: rand
	w.Tick += int64(g.rng.Intn(6))     // trap: randmethod
	_, _ = crand.Read(make([]byte, 8)) // trap: cryptorand
	go g.spawn()                       // trap: goroutine
	g.events <- int(f)                 // trap: send
	w.Tick += int64(<-g.events)        // trap: receive
	select {                           // trap: select
	case e := <-g.events:
		w.Tick += int64(e)
	default:
	}
	close(g.events)         // trap: close
	w.X = w.VX*w.Drag + w.X // trap: fma
	slowed := w.VX * w.Drag
	w.VX = w.VX - slowed                             // trap: fmalocal
	w.X = math.Sin(w.X)                              // trap: math
	spawned++                                        // trap: globalvar
	w.Tick += int64(unsafe.Sizeof(*w))               // trap: unsafe
	w.Tick += wallclock.Seconds()                    // trap: crosspkg
	w.Tick = 0                                       /* trap: allow */ //rewind:allow
	w.Tick += time.Since(time.Time{}).Milliseconds() //rewind:allow silenced on purpose: the test checks that this is not reported
}

func (g *Game) spawn() { g.W.Tick++ }

// Score is a state whose layout differs between 32- and 64-bit
// platforms: an int is 4 bytes on 386 and arm, 8 elsewhere.
type Score struct {
	Round  int32
	Points int
}

// NewScore allocates a Score in the arena.
func NewScore(a *savestate.Arena) (savestate.Handle[Score], error) {
	return savestate.Alloc[Score](a) // trap: layout
}
