package play

import (
	"math"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
)

// Keys is what one player holds down: four keys to thrust, four to fire.
type Keys struct {
	Up, Down, Left, Right                 bool
	FireUp, FireDown, FireLeft, FireRight bool
}

// Input quantises the keys into the arena's input, exactly the bits the
// network sends (Layout {3, 8, 8}: fire direction, thrust angle, thrust
// magnitude): a thrust direction from the arrow-like keys at full
// magnitude (opposite keys cancel), and one fire direction (up, down,
// left, right in that priority when several are held).
func (k Keys) Input() rollback.Input {
	var fire uint8
	switch {
	case k.FireUp:
		fire = arena.FireUp
	case k.FireDown:
		fire = arena.FireDown
	case k.FireLeft:
		fire = arena.FireLeft
	case k.FireRight:
		fire = arena.FireRight
	}
	x, y := axis(k.Left, k.Right), axis(k.Up, k.Down)
	if x == 0 && y == 0 {
		return arena.Pack(fire, 0, 0)
	}
	return arena.Pack(fire, keyAngles[x+1][y+1], 255)
}

// keyAngles[x+1][y+1] is the thrust angle of the key direction (x, y): the
// arena has 256 steps a turn, 0 to the right and 64 down (screen
// coordinates).
var keyAngles = [3][3]uint8{{160, 128, 96}, {192, 0, 64}, {224, 0, 32}}

func axis(neg, pos bool) int {
	switch {
	case neg && !pos:
		return -1
	case pos && !neg:
		return 1
	}
	return 0
}

// Deadzone is the stick deflection (0 to 1) below which a gamepad stick
// counts as centred.
const Deadzone = 0.2

// Pad is one gamepad's state: the left stick thrusts, the right stick
// (or the face buttons) fires.
type Pad struct {
	LX, LY, RX, RY float64 // -1 to 1, y down
	// Buttons in the standard layout's right cluster: bottom, right,
	// left, top.
	A, B, X, Y bool
}

// Input quantises the pad like Keys.Input: the left stick's angle into
// 256 steps and its deflection past the dead zone into 0 to 255, and the
// right stick's dominant direction (or a face button) into a fire
// direction. Floats are fine here: only the quantised bits leave this
// machine, and Step sees only them.
func (p Pad) Input() rollback.Input {
	var fire uint8
	switch {
	case math.Hypot(p.RX, p.RY) >= 0.5 && math.Abs(p.RX) > math.Abs(p.RY):
		fire = arena.FireRight
		if p.RX < 0 {
			fire = arena.FireLeft
		}
	case math.Hypot(p.RX, p.RY) >= 0.5:
		fire = arena.FireDown
		if p.RY < 0 {
			fire = arena.FireUp
		}
	case p.Y:
		fire = arena.FireUp
	case p.A:
		fire = arena.FireDown
	case p.X:
		fire = arena.FireLeft
	case p.B:
		fire = arena.FireRight
	}
	d := math.Min(1, math.Hypot(p.LX, p.LY))
	if d < Deadzone {
		return arena.Pack(fire, 0, 0)
	}
	turn := math.Atan2(p.LY, p.LX) / (2 * math.Pi) // -0.5 to 0.5
	angle := uint8(int(math.Round(turn*256)) & 0xff)
	mag := uint8(math.Round((d - Deadzone) / (1 - Deadzone) * 255))
	return arena.Pack(fire, angle, mag)
}

// Binding names the keys of one player, by the names Ebitengine gives
// them (ebiten.Key.String).
type Binding struct {
	Up, Down, Left, Right                 string
	FireUp, FireDown, FireLeft, FireRight string
}

// Bindings: Solo is one player on the keyboard (WASD to thrust, the
// arrows to fire, twin-stick style); two players sharing it take Left
// (WASD, and T F G H to fire) and Right (I J K L, and the arrows).
var (
	Solo  = Binding{"W", "S", "A", "D", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"}
	Left  = Binding{"W", "S", "A", "D", "T", "G", "F", "H"}
	Right = Binding{"I", "K", "J", "L", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"}
)

// Read returns the keys of b held down, as pressed reports them.
func (b Binding) Read(pressed func(name string) bool) Keys {
	return Keys{pressed(b.Up), pressed(b.Down), pressed(b.Left), pressed(b.Right),
		pressed(b.FireUp), pressed(b.FireDown), pressed(b.FireLeft), pressed(b.FireRight)}
}
