// Package floatgame is a small rollback game that is NOT deterministic
// across platforms, on purpose: it is the counter-example the determinism
// matrix (cmd/determinism) runs beside the fixed-point arena example.
//
// Two players steer gravity wells through a box of orbiting bodies; the
// whole state is float64 fields in a savestate arena. Its arithmetic is
// written in the x*y+z form that the Go specification lets a compiler fuse
// into one fused multiply-add, rounded once instead of twice. The Go
// compiler fuses it on arm64 (FMADDD, FMSUBD) and on amd64 built with
// GOAMD64=v3 (VFMADD231SD), never on default amd64 (v1), 386 (SSE2) or
// js/wasm: the same source, the same inputs, a different last bit. It
// also calls math.Sin, whose pure Go polynomial the compiler fuses the
// same way, and math.Exp, which is assembly on amd64 (with an FMA path
// taken when the CPU has FMA, whatever GOAMD64 says) and on arm64, and
// pure Go elsewhere. The orbits are chaotic, so a one-ulp difference
// grows instead of being rounded away, and every checksum of the state
// sees it.
//
// A match's [Mode] chooses which of these sources of divergence the
// simulation uses, so that the matrix can tell them apart: without
// [ModeFMA] every product is rounded explicitly (float64(x*y) + z, which
// the specification forbids fusing); without [ModeSin] or [ModeExp] the
// libm call is replaced by exact arithmetic.
package floatgame

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// ReplayName is the game name the float game records in replays.
const ReplayName = "floatgame"

// Layout is the input layout: steering angle (8 bits), throttle (4 bits),
// pulse (1 bit: the well's mass doubles while it is held).
var Layout = rollback.Layout{8, 4, 1}

// Mode selects the sources of cross-platform divergence a match uses.
type Mode uint8

// Modes, combined with |.
const (
	// ModeFMA writes the arithmetic as x*y+z, which arm64 and amd64 v3
	// fuse; without it every product is rounded first.
	ModeFMA Mode = 1 << iota
	// ModeSin drives the wells and a wobble of the bodies with math.Sin.
	ModeSin
	// ModeExp damps the bodies with math.Exp.
	ModeExp

	// ModeAll is every source at once.
	ModeAll = ModeFMA | ModeSin | ModeExp
)

// String names the sources in m, such as "fma+sin+exp", or "none".
func (m Mode) String() string {
	s := ""
	for _, n := range []struct {
		bit  Mode
		name string
	}{{ModeFMA, "fma"}, {ModeSin, "sin"}, {ModeExp, "exp"}} {
		if m&n.bit != 0 {
			if s != "" {
				s += "+"
			}
			s += n.name
		}
	}
	if s == "" {
		return "none"
	}
	return s
}

// Game sizes.
const (
	MaxPlayers = 2
	Bodies     = 24
)

// Physics constants. Every one is exactly representable, and so is every
// product of two of them computed below without ModeFMA's help.
const (
	dt      = 1.0 / 64 // a power of two: multiplying by it is exact
	box     = 8.0      // bodies bounce inside [-box, box]²
	soft    = 0.0625   // softening: no force is infinite
	sunMass = 2.0
	wellMax = 6.0 // wells stay inside [-wellMax, wellMax]²
)

// Body is one orbiting body.
type Body struct {
	X, Y, VX, VY float64
}

// Well is one player's gravity well.
type Well struct {
	X, Y, Mass, Phase float64
}

// World is the whole game state; it lives in the arena. Every field is 8
// bytes, so its layout (and every checksum of it) is the same on 32-bit and
// 64-bit platforms.
type World struct {
	Frame   int64
	Players int64
	Mode    uint64
	Wells   [MaxPlayers]Well
	Bodies  [Bodies]Body
	Energy  float64 // the bodies' kinetic energy, summed over the match
}

// Game is the float game; it implements rollback.Game.
type Game struct {
	arena *savestate.Arena
	world savestate.Handle[World]
}

var _ rollback.Game = (*Game)(nil)

// Params encodes a match's mode and seed as a replay's game parameters.
func Params(mode Mode, seed uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte{byte(mode)}, seed)
}

// ParseParams decodes what [Params] encoded.
func ParseParams(p []byte) (Mode, uint64, error) {
	if len(p) != 9 || Mode(p[0])&^ModeAll != 0 {
		return 0, 0, fmt.Errorf("floatgame: bad parameters (%d bytes)", len(p))
	}
	return Mode(p[0]), binary.LittleEndian.Uint64(p[1:]), nil
}

// New allocates a world for players wells (1 or 2) in a, with the bodies
// placed from seed, and returns the game.
func New(a *savestate.Arena, players int, mode Mode, seed uint64) (*Game, error) {
	if players < 1 || players > MaxPlayers {
		return nil, fmt.Errorf("floatgame: %d players (want 1 to %d)", players, MaxPlayers)
	}
	if mode&^ModeAll != 0 {
		return nil, fmt.Errorf("floatgame: unknown mode %#x", uint8(mode))
	}
	h, err := savestate.Alloc[World](a)
	if err != nil {
		return nil, err
	}
	g := &Game{arena: a, world: h}
	w := g.World()
	w.Players, w.Mode = int64(players), uint64(mode)
	// The start is exact on every platform: multiples of 1/64 from the
	// seed's bits, no arithmetic that rounds.
	x := seed | 1
	coord := func(span float64) float64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return float64(int64(x>>40)%int64(2*span*64)-int64(span*64)) / 64
	}
	for i := range w.Bodies {
		w.Bodies[i] = Body{X: coord(box - 1), Y: coord(box - 1), VX: coord(1), VY: coord(1)}
	}
	for p := range w.Wells {
		w.Wells[p] = Well{X: float64(4*p - 2), Y: 0, Mass: 1}
	}
	return g, nil
}

// World returns the live world; it sees every restore.
func (g *Game) World() *World { return g.world.Get(g.arena) }

// Unpack splits an input into its fields.
func Unpack(in rollback.Input) (angle, throttle uint8, pulse bool) {
	return uint8(in), uint8(in>>8) & 15, in>>12&1 != 0
}

// Pack builds an input from its fields.
func Pack(angle, throttle uint8, pulse bool) rollback.Input {
	in := rollback.Input(angle) | rollback.Input(throttle&15)<<8
	if pulse {
		in |= 1 << 12
	}
	return in
}

// madd returns x*y + z. With fuse, written so that the compiler may fuse
// it (and does on arm64 and amd64 v3); without, the product is rounded on
// its own first (an explicit conversion forbids fusing).
func madd(x, y, z float64, fuse bool) float64 {
	if fuse {
		return x*y + z
	}
	return float64(x*y) + z
}

// msub returns z - x*y, fused or not as madd (FMSUBD on arm64).
func msub(x, y, z float64, fuse bool) float64 {
	if fuse {
		return z - x*y
	}
	return z - float64(x*y)
}

// Step advances the world by one frame.
func (g *Game) Step(f rollback.Frame, in []rollback.PlayerInput) {
	w := g.World()
	mode := Mode(w.Mode)
	fuse := mode&ModeFMA != 0
	t := float64(w.Frame) * dt
	for p := range min(len(in), int(w.Players)) {
		var input rollback.Input
		if in[p].Status != rollback.Disconnected {
			input = in[p].Input
		}
		angle, throttle, pulse := Unpack(input)
		wl := &w.Wells[p]
		var dx, dy float64
		if mode&ModeSin != 0 {
			a := madd(float64(angle), 2*math.Pi/256, wl.Phase, fuse)
			dx, dy = math.Sin(a+math.Pi/2), math.Sin(a)
			wl.Phase = madd(float64(throttle), dt/8, wl.Phase, fuse)
		} else {
			// A direction from the angle's two nibbles, exactly.
			dx, dy = float64(int(angle&15)-8)/8, float64(int(angle>>4)-8)/8
		}
		speed := float64(throttle) / 4
		wl.X = clamp(madd(dx*speed, dt, wl.X, fuse), wellMax)
		wl.Y = clamp(madd(dy*speed, dt, wl.Y, fuse), wellMax)
		wl.Mass = 1
		if pulse {
			wl.Mass = 2
		}
	}
	players := int(w.Players)
	for i := range w.Bodies {
		b := &w.Bodies[i]
		// The sun at the centre, then each well.
		ax, ay := pull(b, 0, 0, sunMass, 0, 0, fuse)
		for p := range players {
			wl := &w.Wells[p]
			ax, ay = pull(b, wl.X, wl.Y, wl.Mass, ax, ay, fuse)
		}
		if mode&ModeSin != 0 {
			// A wobble, each body at its own phase.
			ph := madd(float64(i), 0.7, t, fuse)
			ax = madd(0.25, math.Sin(ph), ax, fuse)
			ay = msub(0.25, math.Sin(madd(ph, 1.3, 0.5, fuse)), ay, fuse)
		}
		b.VX = madd(ax, dt, b.VX, fuse)
		b.VY = madd(ay, dt, b.VY, fuse)
		v2 := madd(b.VX, b.VX, float64(b.VY*b.VY), fuse)
		if mode&ModeExp != 0 {
			// Drag that grows with speed.
			k := math.Exp(msub(v2, 0.001, 0, fuse))
			b.VX, b.VY = b.VX*k, b.VY*k
		} else if v2 > 64 {
			b.VX, b.VY = b.VX*0.5, b.VY*0.5 // exact
		}
		b.X = madd(b.VX, dt, b.X, fuse)
		b.Y = madd(b.VY, dt, b.Y, fuse)
		b.X, b.VX = bounce(b.X, b.VX)
		b.Y, b.VY = bounce(b.Y, b.VY)
		w.Energy = madd(v2, dt/2, w.Energy, fuse)
	}
	w.Frame = int64(f) + 1
}

// pull adds to (ax, ay) the acceleration of b towards a mass m at (x, y):
// m·d/(|d|²+soft)^(3/2).
func pull(b *Body, x, y, m, ax, ay float64, fuse bool) (float64, float64) {
	dx, dy := x-b.X, y-b.Y
	r2 := madd(dx, dx, madd(dy, dy, soft, fuse), fuse)
	inv := m / (r2 * math.Sqrt(r2)) // Sqrt is correctly rounded everywhere
	return madd(dx, inv, ax, fuse), madd(dy, inv, ay, fuse)
}

// bounce reflects a coordinate that left the box, exactly.
func bounce(x, v float64) (float64, float64) {
	switch {
	case x > box:
		return 2*box - x, -v
	case x < -box:
		return -2*box - x, -v
	}
	return x, v
}

func clamp(x, m float64) float64 { return max(-m, min(m, x)) }

// fusedProbe holds values that the compiler cannot see: x*x + z is 2^-60
// when fused and 0 when the product is rounded first.
var fusedProbe = struct{ x, z float64 }{1 + 0x1p-30, -(1 + 0x1p-29)}

// Fuses reports whether this build fuses the float game's x*y+z (the
// arithmetic of [ModeFMA]): true on arm64 and amd64 v3, false on amd64
// v1, 386 and js/wasm.
func Fuses() bool { return fusedMadd(fusedProbe.x, fusedProbe.x, fusedProbe.z) != 0 }

// fusedMadd is madd, fused where the compiler fuses, on operands in
// registers: inlined, the compiler would fold the load of z into the
// addition (ADDSD from memory on amd64), which it never fuses.
//
//go:noinline
func fusedMadd(x, y, z float64) float64 { return madd(x, y, z, true) }

// Bot produces input for one well: it holds an input for a while, then
// turns, changes throttle and pulses now and then. Its randomness is its
// own, seeded, so the same seed plays the same match.
type Bot struct {
	rng  *rand.Rand
	cur  rollback.Input
	hold int
}

// NewBot returns a bot seeded with seed.
func NewBot(seed uint64) *Bot { return &Bot{rng: rand.New(rand.NewPCG(seed, 0xf10a7))} }

// Next returns the bot's input for the next frame.
func (b *Bot) Next() rollback.Input {
	if b.hold > 0 {
		b.hold--
		return b.cur
	}
	angle, _, _ := Unpack(b.cur)
	angle += uint8(b.rng.IntN(61) - 30)
	b.cur = Pack(angle, uint8(b.rng.IntN(16)), b.rng.IntN(4) == 0)
	b.hold = 4 + b.rng.IntN(40)
	return b.cur
}
