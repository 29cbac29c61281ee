// Package arena is a small INVERSUS-like arena game built to be driven by a
// rollback session: up to eight ships thrust around a square arena and shoot
// in the four cardinal directions; a hit ship explodes and respawns a second
// later at a pseudo-random spot.
//
// It shows what a game must do to be rollback-ready. Its whole state is one
// [World] value allocated in a savestate.Arena, so a snapshot is a copy; the
// simulation computes with fixed-point numbers only (package fixed: no
// floats, no maps, no time) and draws its randomness from a generator in
// the state (package rng: no global randomness), so every peer computes
// the same bits; and inputs arrive already quantized in the INVERSUS
// layout (fire direction 3 bits, thrust angle 8 bits, thrust magnitude 8
// bits). [Bot] plays it with human-like input so that matches really
// mispredict.
//
// It uses the three categories of rollback-safe sound (package sound): a
// shot and an explosion are Event sounds, triggered from Step through the
// game's sound.Ledger ([Game.SetLedger]); each ship's thrust is a Stateful
// loop in the world's sound.Scene, started, turned up or down and stopped
// by Step; the match music ([SoundMusic]) is a Global sound that the code
// around the session plays. And it opts in to extrapolated rendering with
// [Game.StepPartial], which runs the same logic on part of a frame.
package arena

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/fixed"
	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rng"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
	"github.com/rewindgg/rewind/sound"
)

// Layout is the input layout: fire direction, thrust angle, thrust magnitude.
var Layout = rollback.Layout{3, 8, 8}

// Fire directions.
const (
	FireNone  = 0
	FireLeft  = 1
	FireRight = 2
	FireUp    = 3
	FireDown  = 4
)

// Game constants. Lengths are in units (the arena is 1024 units wide), and
// speeds per frame.
const (
	MaxShips = 8
	MaxShots = 64
	shotTTL  = 90
	cooldown = 12
	respawn  = 60
)

// The game's fixed-point constants (variables: Go has no constants of
// struct types; never assigned).
var (
	Size  = fixed.FromInt(1024) // the arena is Size×Size, wrapping for ships
	shipR = fixed.FromInt(12)   // hit radius
	shotV = fixed.FromInt(10)   // shot speed per frame
	// thrust is the acceleration per step of the thrust magnitude, in units
	// per frame²: full thrust (255) accelerates 255×96/65536 ≈ 0.37.
	thrust = fixed.Ratio(96, 65536)
	// drag is what a velocity keeps each frame.
	drag = fixed.Ratio(15, 16)
)

// Sounds. A ship's sounds add its index to the base, so two ships' shots on
// one frame are two sounds.
const (
	SoundMusic     sound.ID = 1     // the match music (Global)
	SoundShot      sound.ID = 0x100 // + the shooter (Event)
	SoundExplosion sound.ID = 0x200 // + the ship destroyed (Event)
	SoundThrust    sound.ID = 0x300 // + the ship (Stateful loop)
)

// minThrust is the thrust magnitude below which a ship's engine is silent.
const minThrust = 32

// Pack builds an input from its three fields.
func Pack(fire, angle, magnitude uint8) rollback.Input {
	return rollback.Input(uint64(fire&7) | uint64(angle)<<3 | uint64(magnitude)<<11)
}

// Unpack splits an input into its three fields.
func Unpack(in rollback.Input) (fire, angle, magnitude uint8) {
	return uint8(in & 7), uint8(in >> 3), uint8(in >> 11)
}

// Ship is one player's ship.
type Ship struct {
	X, Y, VX, VY fixed.Num // position in [0, Size), velocity per frame
	Alive        bool
	Cooldown     uint8
	RespawnIn    uint16
	Score        int32
	Deaths       int32
	Engine       sound.Instance // the thrust loop, while it plays
}

// Shot is a projectile.
type Shot struct {
	X, Y, VX, VY fixed.Num
	TTL          uint16
	Owner        int8
	Live         bool
	_            [4]byte // see worldSize
}

// World is the whole game state. It lives in the arena.
type World struct {
	Frame   int32
	Players int32
	Rand    rng.Rand // part of the state, so it rolls back
	Hits    int32
	_       [4]byte // see worldSize
	Ships   [MaxShips]Ship
	Shots   [MaxShots]Shot
	Sounds  sound.Scene // the Stateful sounds: they roll back with the rest
}

// worldSize is World's size on every platform. The checksums hash the
// state's bytes, so its layout must not depend on the platform: 32-bit
// platforms (386, arm) align 64-bit fields (fixed.Num, rng.Rand) to 4
// bytes, not 8, and would leave out the padding a 64-bit platform adds
// after Hits and at the end of Shot. The blank fields put it there by
// hand; these constants do not compile where the size differs (make cross
// builds this package for 386).
const worldSize = 3288

const (
	_ = uint(worldSize - unsafe.Sizeof(World{}))
	_ = uint(unsafe.Sizeof(World{}) - worldSize)
)

// Game is the arena game; it implements rollback.Game.
type Game struct {
	arena *savestate.Arena
	world savestate.Handle[World]
	sound *sound.Ledger
	marks *desync.Marks // its systems' marks ("ships", "shots"); nil: none
	fault fault         // SetFault's
}

// fault is a deliberate desync inside one system (SetFault).
type fault struct {
	system string
	frame  rollback.Frame
	fn     func(*World)
}

var (
	_ rollback.Game           = (*Game)(nil)
	_ rollback.PartialStepper = (*Game)(nil)
)

// SetLedger makes the game trigger its Event sounds through l; nil (the
// default) is silent. Give the same ledger to the session as its Observer.
func (g *Game) SetLedger(l *sound.Ledger) { g.sound = l }

// SetMarks makes the game mark its systems, "ships" (movement and fire)
// and "shots" (flight and hits), in m: give the same marks to the session
// (rollback.Config.Marks) and a desync names the system whose output
// differed first. nil (the default) marks nothing.
func (g *Game) SetMarks(m *desync.Marks) { g.marks = m }

// SetFault makes the game call fn with the world inside its system named
// system ("ships" or "shots") of frame f, at the system's end, each time
// it simulates f: a deliberate desync inside a named system, for tests and
// the soak (-inject-desync-system), which a desync bundle's marks must
// name. nil fn (the default) does nothing.
func (g *Game) SetFault(system string, f rollback.Frame, fn func(*World)) {
	g.fault = fault{system: system, frame: f, fn: fn}
}

// mark ends system in frame f's step: the fault, if it is this one, then
// the mark.
func (g *Game) mark(f rollback.Frame, w *World, system string) {
	if g.fault.fn != nil && g.fault.frame == f && g.fault.system == system {
		g.fault.fn(w)
	}
	g.marks.Mark(system)
}

// Scene returns the live world's Stateful sounds, for sound.Ledger.Update.
func (g *Game) Scene() *sound.Scene { return &g.World().Sounds }

// New allocates a world for players ships (1 to MaxShips) in a, seeded with
// seed, and returns the game.
func New(a *savestate.Arena, players int, seed uint64) (*Game, error) {
	if players < 1 || players > MaxShips {
		return nil, fmt.Errorf("arena: %d players (want 1 to %d)", players, MaxShips)
	}
	h, err := savestate.Alloc[World](a)
	if err != nil {
		return nil, err
	}
	g := &Game{arena: a, world: h}
	w := g.World()
	w.Players = int32(players)
	w.Rand = rng.New(seed)
	for i := range players {
		g.spawn(&w.Ships[i])
	}
	return g, nil
}

// World returns the live world; it sees every restore.
func (g *Game) World() *World { return g.world.Get(g.arena) }

// Step advances the world by one frame.
func (g *Game) Step(f rollback.Frame, in []rollback.PlayerInput) { g.advance(f, in, fixed.One) }

// StepPartial implements rollback.PartialStepper: the same game logic, with
// every motion scaled by fraction, for a render between two frames. Ships
// may fire and shots may hit in it (the session suppresses their sounds);
// the state is thrown away. The fraction is a float for the renderer;
// the logic sees it as the nearest fixed.Num.
func (g *Game) StepPartial(f rollback.Frame, in []rollback.PlayerInput, fraction float64) {
	g.advance(f, in, fixed.FromFloat(fraction))
}

// advance runs frame f with motion scaled by part (fixed.One for a whole
// frame, which moves by exactly the velocity).
func (g *Game) advance(f rollback.Frame, in []rollback.PlayerInput, part fixed.Num) {
	w := g.World()
	for i := range min(len(in), int(w.Players)) {
		s := &w.Ships[i]
		if !s.Alive {
			if s.RespawnIn--; s.RespawnIn == 0 {
				g.spawn(s)
			}
			continue
		}
		fire, angle, mag := Unpack(in[i].Input)
		s.VX, s.VY = accelerate(s.VX, s.VY, angle, mag)
		s.X = s.X.Add(s.VX.Mul(part)).Mod(Size) // wrapped into [0, Size)
		s.Y = s.Y.Add(s.VY.Mul(part)).Mod(Size)
		g.engine(w, f, i, mag)
		if s.Cooldown > 0 {
			s.Cooldown--
		}
		if fire != FireNone && fire <= FireDown && s.Cooldown == 0 {
			g.shoot(w, i, fire)
			s.Cooldown = cooldown
			g.sound.Trigger(SoundShot+sound.ID(i), sound.FullVolume)
		}
	}
	g.mark(f, w, "ships")
	for j := range w.Shots {
		sh := &w.Shots[j]
		if !sh.Live {
			continue
		}
		sh.X = sh.X.Add(sh.VX.Mul(part))
		sh.Y = sh.Y.Add(sh.VY.Mul(part))
		if sh.TTL--; sh.TTL == 0 || sh.X.Sign() < 0 || sh.Y.Sign() < 0 || sh.X.GreaterEq(Size) || sh.Y.GreaterEq(Size) {
			sh.Live = false
			continue
		}
		for i := range int(w.Players) {
			s := &w.Ships[i]
			if i == int(sh.Owner) || !s.Alive || s.X.Sub(sh.X).Abs().Greater(shipR) || s.Y.Sub(sh.Y).Abs().Greater(shipR) {
				continue
			}
			s.Alive, s.RespawnIn = false, respawn
			s.Deaths++
			w.Ships[sh.Owner].Score++
			w.Hits++
			sh.Live = false
			w.Sounds.Stop(s.Engine)
			s.Engine = 0
			g.sound.Trigger(SoundExplosion+sound.ID(i), sound.FullVolume)
			break
		}
	}
	g.mark(f, w, "shots")
	w.Frame = int32(f) + 1
}

// accelerate applies thrust and drag to a velocity. The input's angle is
// in 256ths of a turn, from +x toward +y.
func accelerate(vx, vy fixed.Num, angle, mag uint8) (fixed.Num, fixed.Num) {
	turn := fixed.Ratio(int64(angle), 256)
	a := thrust.Mul(fixed.FromInt(int(mag)))
	vx = vx.Add(fixed.Cos(turn).Mul(a))
	vy = vy.Add(fixed.Sin(turn).Mul(a))
	return vx.Mul(drag), vy.Mul(drag)
}

// engine keeps ship i's thrust loop in step with its thrust: playing, as
// loud as the thrust, while the thrust is at least minThrust.
func (g *Game) engine(w *World, f rollback.Frame, i int, mag uint8) {
	s := &w.Ships[i]
	switch {
	case mag < minThrust:
		w.Sounds.Stop(s.Engine)
		s.Engine = 0
	case w.Sounds.Playing(s.Engine, f):
		w.Sounds.SetVolume(s.Engine, sound.Volume(mag)*257)
	default:
		s.Engine = w.Sounds.Start(f, SoundThrust+sound.ID(i), sound.Volume(mag)*257, 0)
	}
}

func (g *Game) shoot(w *World, owner int, dir uint8) {
	for j := range w.Shots {
		sh := &w.Shots[j]
		if sh.Live {
			continue
		}
		s := &w.Ships[owner]
		*sh = Shot{X: s.X, Y: s.Y, TTL: shotTTL, Owner: int8(owner), Live: true}
		switch dir {
		case FireLeft:
			sh.VX = shotV.Neg()
		case FireRight:
			sh.VX = shotV
		case FireUp:
			sh.VY = shotV.Neg()
		case FireDown:
			sh.VY = shotV
		}
		return
	}
}

func (g *Game) spawn(s *Ship) {
	w := g.World()
	*s = Ship{Score: s.Score, Deaths: s.Deaths, Alive: true, X: randomPos(w), Y: randomPos(w)}
}

// randomPos returns a position in [0, Size), uniform over its raw values.
func randomPos(w *World) fixed.Num {
	return fixed.FromRaw(int64(w.Rand.Uint64N(uint64(Size.Raw()))))
}

// ReplayName is the game name the arena example records in replays.
const ReplayName = "arena"

// ReplayParams encodes a match's seed as a replay's game parameters.
func ReplayParams(seed uint64) []byte { return binary.LittleEndian.AppendUint64(nil, seed) }

// VerifyReplay re-simulates a replay of the arena game in a fresh arena
// of size bytes and verifies its checksums (see replay.Replay.Verify).
func VerifyReplay(rp *replay.Replay, size int) (replay.Report, error) {
	if rp.Game != ReplayName || len(rp.Params) != 8 {
		return replay.Report{}, fmt.Errorf("arena: not a replay of this game (game %q, %d bytes of parameters)", rp.Game, len(rp.Params))
	}
	a, err := savestate.New(size)
	if err != nil {
		return replay.Report{}, err
	}
	g, err := New(a, rp.Players, binary.LittleEndian.Uint64(rp.Params))
	if err != nil {
		return replay.Report{}, err
	}
	return rp.Verify(a, g, nil)
}
