package play

import (
	"testing"

	"github.com/rewindgg/rewind/examples/arena"
)

func TestKeys(t *testing.T) {
	for _, c := range []struct {
		k                Keys
		fire, angle, mag uint8
	}{
		{Keys{}, arena.FireNone, 0, 0},
		{Keys{Right: true}, arena.FireNone, 0, 255},
		{Keys{Down: true}, arena.FireNone, 64, 255},
		{Keys{Left: true}, arena.FireNone, 128, 255},
		{Keys{Up: true}, arena.FireNone, 192, 255},
		{Keys{Up: true, Right: true}, arena.FireNone, 224, 255},
		{Keys{Down: true, Left: true}, arena.FireNone, 96, 255},
		{Keys{Left: true, Right: true}, arena.FireNone, 0, 0}, // opposite keys cancel
		{Keys{Left: true, Right: true, Up: true}, arena.FireNone, 192, 255},
		{Keys{FireLeft: true}, arena.FireLeft, 0, 0},
		{Keys{FireLeft: true, FireUp: true, Down: true}, arena.FireUp, 64, 255}, // up first
	} {
		fire, angle, mag := arena.Unpack(c.k.Input())
		if fire != c.fire || angle != c.angle || mag != c.mag {
			t.Errorf("%+v: fire %d angle %d magnitude %d, want %d %d %d", c.k, fire, angle, mag, c.fire, c.angle, c.mag)
		}
	}
}

func TestPad(t *testing.T) {
	for _, c := range []struct {
		p                Pad
		fire, angle, mag uint8
	}{
		{Pad{}, arena.FireNone, 0, 0},
		{Pad{LX: 0.1, LY: 0.1}, arena.FireNone, 0, 0}, // inside the dead zone
		{Pad{LX: 1}, arena.FireNone, 0, 255},
		{Pad{LY: 1}, arena.FireNone, 64, 255},
		{Pad{LX: -1}, arena.FireNone, 128, 255},
		{Pad{LY: -1}, arena.FireNone, 192, 255},
		{Pad{LX: 0.68}, arena.FireNone, 0, 153},     // (0.68-0.2)/0.8 = 0.6 of full thrust
		{Pad{LX: 3, LY: 0}, arena.FireNone, 0, 255}, // clamped
		{Pad{RX: -0.9, RY: 0.2}, arena.FireLeft, 0, 0},
		{Pad{RX: 0.1, RY: 0.8}, arena.FireDown, 0, 0},
		{Pad{RX: 0.3}, arena.FireNone, 0, 0}, // not far enough
		{Pad{Y: true}, arena.FireUp, 0, 0},
		{Pad{B: true}, arena.FireRight, 0, 0},
	} {
		fire, angle, mag := arena.Unpack(c.p.Input())
		if fire != c.fire || angle != c.angle || mag != c.mag {
			t.Errorf("%+v: fire %d angle %d magnitude %d, want %d %d %d", c.p, fire, angle, mag, c.fire, c.angle, c.mag)
		}
	}
}

func TestBindings(t *testing.T) {
	held := map[string]bool{"W": true, "ArrowLeft": true, "I": true}
	pressed := func(name string) bool { return held[name] }
	if got := Solo.Read(pressed); got != (Keys{Up: true, FireLeft: true}) {
		t.Errorf("solo: %+v", got)
	}
	if got := Left.Read(pressed); got != (Keys{Up: true}) {
		t.Errorf("left: %+v", got)
	}
	if got := Right.Read(pressed); got != (Keys{Up: true, FireLeft: true}) {
		t.Errorf("right: %+v", got)
	}
}
