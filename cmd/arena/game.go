package main

import (
	"errors"
	"image/color"
	"sync"
	"time"

	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/inpututil"

	"github.com/rewindgg/rewind/cmd/arena/internal/audio"
	"github.com/rewindgg/rewind/cmd/arena/internal/draw"
	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/rollback"
)

// screenSize is the window's side in pixels; the arena (1024 units) is
// scaled into it.
const screenSize = draw.ScreenSize

// game is the Ebitengine side: Update runs the match at 60 Hz, Draw
// renders it at the display's rate.
type game struct {
	// mu serializes the session's users: Update and Draw (on Ebitengine's
	// goroutine) and keepAlive.
	mu     sync.Mutex
	left   bool // keepAlive ended the match: the loop stood still too long, or Idle failed
	o      options
	m      *play.Match
	mixer  *audio.Mixer
	humans int
	keys   map[string]ebiten.Key

	last      time.Time // when Update last advanced the match: Draw extrapolates from it
	overlay   bool
	keyFrames int
	draws     int
	perf      drawStats
	nextDraw  time.Time   // with -max-fps: when the next frame is due
	atlas     *atlas      // made before the game loop starts
	frame     *draw.Frame // each Draw's vertices, reused
	// The overlay's lines, made again when the frame changes.
	overlayLines []string
	overlayFrame rollback.Frame
	shotPath     string
	err          error
	inputs       []rollback.Input
	pads         []ebiten.GamepadID
	bindings     []play.Binding // the keyboard's, by person
}

// Update is called 60 times a second (Ebitengine's default TPS, the
// arena's frame rate; after a hitch it is called several times in a
// row to catch up, as a rollback session expects).
func (g *game) Update() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.perf.enter()
	if g.left {
		return ebiten.Termination
	}
	if g.last.IsZero() {
		g.overlay = g.o.overlay
	}
	if inpututil.IsKeyJustPressed(ebiten.KeyTab) {
		g.overlay = !g.overlay
	}
	if ebiten.IsWindowBeingClosed() || inpututil.IsKeyJustPressed(ebiten.KeyEscape) {
		return ebiten.Termination
	}
	if err := g.m.Tick(g.readInputs()); err != nil {
		g.err = err
		return err
	}
	g.last = time.Now()
	g.perf.tick()
	showFrame(g.m.Frame())
	if g.m.Done() {
		return ebiten.Termination
	}
	return nil
}

// While the game loop stands still (a browser calls neither Update nor
// Draw in a hidden tab), keepAlive keeps the match going for the others:
// it answers the peers (play.Match.Idle) so that they stall rather than
// see this machine go silent, and everyone carries on when the loop runs
// again. A stall may not outlast the peers' play.DisconnectTimeout (the
// session disconnects a peer that keeps it waiting longer, whatever that
// peer sends), so past leaveAfter keepAlive leaves the match itself: the
// peers learn it at once, agree on the frame it left at, and play on
// without this machine, which ends its run with errStoodStill.
const (
	standStill = 100 * time.Millisecond
	leaveAfter = play.DisconnectTimeout - 2*time.Second
)

// errStoodStill is the run's error when keepAlive left the match.
var errStoodStill = errors.New("left the match: the game stood still (a hidden tab?) for longer than " + leaveAfter.String())

// keepAlive runs until stop is closed.
func (g *game) keepAlive(stop <-chan struct{}) {
	t := time.NewTicker(standStill)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		g.mu.Lock()
		switch since := time.Since(g.last); {
		case g.last.IsZero() || g.left || g.err != nil || since < standStill:
		case since > leaveAfter:
			g.left = true
			g.err = errStoodStill
			if err := g.m.Close(); err != nil {
				g.err = errors.Join(errStoodStill, err)
			}
		default:
			if err := g.m.Idle(); err != nil {
				g.err, g.left = err, true
			}
		}
		g.mu.Unlock()
	}
}

// readInputs reads each person's controls: person k plays with gamepad k
// when one is connected, else with the keyboard.
func (g *game) readInputs() []rollback.Input {
	g.inputs = g.inputs[:0]
	g.pads = ebiten.AppendGamepadIDs(g.pads[:0])
	for k := range g.humans {
		var in rollback.Input
		if k < len(g.pads) && ebiten.IsStandardGamepadLayoutAvailable(g.pads[k]) {
			in = readPad(g.pads[k]).Input()
		} else {
			in = g.bindings[k].Read(g.pressed).Input()
		}
		if in != 0 {
			g.keyFrames++
		}
		g.inputs = append(g.inputs, in)
	}
	return g.inputs
}

// pressed reports whether the key Ebitengine names name is held down.
func (g *game) pressed(name string) bool { return ebiten.IsKeyPressed(g.keys[name]) }

func readPad(id ebiten.GamepadID) play.Pad {
	axis := func(a ebiten.StandardGamepadAxis) float64 { return ebiten.StandardGamepadAxisValue(id, a) }
	button := func(b ebiten.StandardGamepadButton) bool { return ebiten.IsStandardGamepadButtonPressed(id, b) }
	return play.Pad{
		LX: axis(ebiten.StandardGamepadAxisLeftStickHorizontal), LY: axis(ebiten.StandardGamepadAxisLeftStickVertical),
		RX: axis(ebiten.StandardGamepadAxisRightStickHorizontal), RY: axis(ebiten.StandardGamepadAxisRightStickVertical),
		A: button(ebiten.StandardGamepadButtonRightBottom), B: button(ebiten.StandardGamepadButtonRightRight),
		X: button(ebiten.StandardGamepadButtonRightLeft), Y: button(ebiten.StandardGamepadButtonRightTop),
	}
}

// keyNames maps Ebitengine's key names (what play.Binding holds) to keys.
func keyNames() map[string]ebiten.Key {
	m := map[string]ebiten.Key{}
	for k := ebiten.Key(0); k <= ebiten.KeyMax; k++ {
		m[k.String()] = k
	}
	return m
}

// Draw renders the match once per displayed frame. Between two 60 Hz
// updates the world is extrapolated by the time since the last one, so a
// 144 Hz display shows motion, not repeated frames. Everything but the
// background is one DrawTriangles call (package draw).
func (g *game) Draw(screen *ebiten.Image) {
	g.perf.enter() // a wait for -max-fps is not the frame before's rendering
	g.limitFPS()
	g.mu.Lock()
	defer g.mu.Unlock()
	start := g.perf.begin()
	g.draws++
	f := g.frame
	if f.Reset() {
		screen.Fill(draw.Background)
	}
	fraction := 0.0
	if !g.last.IsZero() {
		fraction = float64(time.Since(g.last)) / float64(play.Tick)
	}
	if err := g.m.Render(fraction, f.World); err != nil {
		g.err = err
	}
	// Where the prediction had drawn a ship before a correction moved it:
	// rollback, made visible.
	f.Ghosts(g.m.Ghosts())
	f.Scores(g.m.World())
	if g.overlay {
		// The overlay's text changes once a tick at most.
		if fr := g.m.Frame(); g.overlayLines == nil || fr != g.overlayFrame {
			g.overlayLines, g.overlayFrame = g.m.Overlay().Lines(), fr
		}
		for i, line := range g.overlayLines {
			f.Text(line, 8, screenSize-16*(5-i), overlayText)
		}
	}
	g.atlas.draw(screen, f)
	g.perf.end(start) // the screenshot's reading back and encoding is not drawing
	if g.o.screenshot != "" && g.shotPath == "" && int(g.m.Frame()) >= g.o.screenshotAt {
		g.save(screen)
	}
}

var overlayText = color.RGBA{255, 255, 255, 255}

// limitFPS waits, with -max-fps, until the next frame is due. A display's
// vsync paces Draw by itself; a display without one (Xvfb) would have
// the game draw as fast as the CPU goes, taking it from everything else.
func (g *game) limitFPS() {
	if g.o.maxFPS <= 0 {
		return
	}
	period := time.Second / time.Duration(g.o.maxFPS)
	now := time.Now()
	if d := g.nextDraw.Sub(now); d > 0 {
		time.Sleep(d)
		now = g.nextDraw
	}
	// On time, the next frame is due a period later; late, it is due now
	// (one frame to catch up, not a burst).
	if g.nextDraw = g.nextDraw.Add(period); g.nextDraw.Before(now) {
		g.nextDraw = now
	}
}

// Layout keeps the arena square at screenSize, whatever the window.
func (g *game) Layout(int, int) (int, int) { return screenSize, screenSize }
