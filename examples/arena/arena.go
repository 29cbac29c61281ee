// Package arena is a small INVERSUS-like arena game built to be driven by a
// rollback session: up to eight ships thrust around a square arena and shoot
// in the four cardinal directions; a hit ship explodes and respawns a second
// later at a pseudo-random spot.
//
// It shows what a game must do to be rollback-ready. Its whole state is one
// [World] value allocated in a savestate.Arena, so a snapshot is a copy; the
// simulation uses 16.16 fixed-point integers only (no floats, no maps, no
// time, no global randomness), so every peer computes the same bits; and
// inputs arrive already quantized in the INVERSUS layout (fire direction 3
// bits, thrust angle 8 bits, thrust magnitude 8 bits). [Bot] plays it with
// human-like input so that matches really mispredict.
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

	"github.com/rewindgg/rewind/replay"
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

// Game constants, in 16.16 fixed point where they are lengths.
const (
	MaxShips = 8
	MaxShots = 64
	one      = 1 << 16
	Size     = 1024 * one // the arena is Size×Size, wrapping for ships
	shipR    = 12 * one   // hit radius
	shotV    = 10 * one   // shot speed per frame
	shotTTL  = 90
	cooldown = 12
	respawn  = 60
	thrust   = 96 // full thrust accelerates 96×255/65536 ≈ 0.37 units per frame²
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
	X, Y, VX, VY int32 // 16.16 fixed point
	Alive        bool
	Cooldown     uint8
	RespawnIn    uint16
	Score        int32
	Deaths       int32
	Engine       sound.Instance // the thrust loop, while it plays
}

// Shot is a projectile.
type Shot struct {
	X, Y, VX, VY int32
	TTL          uint16
	Owner        int8
	Live         bool
}

// World is the whole game state. It lives in the arena.
type World struct {
	Frame   int32
	Players int32
	Rand    uint64 // xorshift state; part of the state, so it rolls back
	Hits    int32
	Ships   [MaxShips]Ship
	Shots   [MaxShots]Shot
	Sounds  sound.Scene // the Stateful sounds: they roll back with the rest
}

// Game is the arena game; it implements rollback.Game.
type Game struct {
	arena *savestate.Arena
	world savestate.Handle[World]
	sound *sound.Ledger
}

var (
	_ rollback.Game           = (*Game)(nil)
	_ rollback.PartialStepper = (*Game)(nil)
)

// SetLedger makes the game trigger its Event sounds through l; nil (the
// default) is silent. Give the same ledger to the session as its Observer.
func (g *Game) SetLedger(l *sound.Ledger) { g.sound = l }

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
	w.Rand = seed | 1
	for i := range players {
		g.spawn(&w.Ships[i])
	}
	return g, nil
}

// World returns the live world; it sees every restore.
func (g *Game) World() *World { return g.world.Get(g.arena) }

// Step advances the world by one frame.
func (g *Game) Step(f rollback.Frame, in []rollback.PlayerInput) { g.advance(f, in, one) }

// StepPartial implements rollback.PartialStepper: the same game logic, with
// every motion scaled by fraction, for a render between two frames. Ships
// may fire and shots may hit in it (the session suppresses their sounds);
// the state is thrown away.
func (g *Game) StepPartial(f rollback.Frame, in []rollback.PlayerInput, fraction float64) {
	g.advance(f, in, int32(fraction*one))
}

// advance runs frame f with motion scaled by part (16.16; one for a whole
// frame, which moves by exactly the velocity).
func (g *Game) advance(f rollback.Frame, in []rollback.PlayerInput, part int32) {
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
		s.X = wrap(s.X + scale(s.VX, part))
		s.Y = wrap(s.Y + scale(s.VY, part))
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
	for j := range w.Shots {
		sh := &w.Shots[j]
		if !sh.Live {
			continue
		}
		sh.X += scale(sh.VX, part)
		sh.Y += scale(sh.VY, part)
		if sh.TTL--; sh.TTL == 0 || sh.X < 0 || sh.Y < 0 || sh.X >= Size || sh.Y >= Size {
			sh.Live = false
			continue
		}
		for i := range int(w.Players) {
			s := &w.Ships[i]
			if i == int(sh.Owner) || !s.Alive || abs(s.X-sh.X) > shipR || abs(s.Y-sh.Y) > shipR {
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
	w.Frame = int32(f) + 1
}

// accelerate applies thrust and drag to a velocity.
func accelerate(vx, vy int32, angle, mag uint8) (int32, int32) {
	// (unit vector in 8.8) × magnitude (0…255) / 256 × thrust, in 16.16.
	vx += (cosine(angle) >> 8) * int32(mag) >> 8 * thrust
	vy += (sine(angle) >> 8) * int32(mag) >> 8 * thrust
	return vx - vx>>4, vy - vy>>4 // drag
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

// scale returns v × part in 16.16 fixed point: v itself when part is one.
func scale(v, part int32) int32 { return int32(int64(v) * int64(part) >> 16) }

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
			sh.VX = -shotV
		case FireRight:
			sh.VX = shotV
		case FireUp:
			sh.VY = -shotV
		case FireDown:
			sh.VY = shotV
		}
		return
	}
}

func (g *Game) spawn(s *Ship) {
	w := g.World()
	*s = Ship{Score: s.Score, Deaths: s.Deaths, Alive: true,
		X: int32(w.next() % uint64(Size)), Y: int32(w.next() % uint64(Size))}
}

// next is xorshift64: deterministic randomness that lives in the state.
func (w *World) next() uint64 {
	x := w.Rand
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	w.Rand = x
	return x
}

func wrap(v int32) int32 {
	v %= Size
	if v < 0 {
		v += Size
	}
	return v
}

func abs(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
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
