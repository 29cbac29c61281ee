package main

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"slices"
	"sync"
	"time"

	"github.com/hajimehoshi/ebiten/v2"
	ebaudio "github.com/hajimehoshi/ebiten/v2/audio"
	"github.com/hajimehoshi/ebiten/v2/inpututil"

	"github.com/rewindgg/rewind/cmd/arena/internal/audio"
	"github.com/rewindgg/rewind/cmd/arena/internal/draw"
	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/examples/arena"
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
	past   *play.Match // the match left for the title screen, for the result while none plays
	flow   play.Flow   // leaving for the title screen; the frame limit's standings
	mixer  *audio.Mixer
	player *ebaudio.Player // plays mixer: made with the first match's sound, kept for the next
	humans int
	keys   map[string]ebiten.Key

	last      time.Time // when Update last advanced the match: Draw extrapolates from it
	overlay   bool
	keyFrames int
	draws     int
	perf      drawStats
	nextDraw  time.Time   // with -max-fps: when the next frame is due
	atlas     *atlas      // made before the game loop starts
	frame     *draw.Frame // each Draw's vertices, reused: DrawFinalScreen draws them
	painted   bool        // this Draw's frame is on the offscreen image too (paint)
	// The overlay's lines, made again when the frame changes.
	overlayLines []string
	overlayFrame rollback.Frame
	shotPath     string
	shots        []string // the screenshots saved (-shots, -screenshot)
	err          error
	closeNet     func() // closes what the match's transport stands on

	menu        titleMenu
	setup       chan setupResult // the title screen's choice being set up; nil when none is
	cancelSetup context.CancelFunc
	cancelled   bool // Escape cancelled the setup
	titleDraws  int
	roundOver   bool    // the round-end screen showed in the last Draw
	endDraws    int     // Draws of the round-end screen since it showed
	finalDraws  int     // Draws of the match's standings (the frame limit ended it)
	winners     []int32 // each round's winner, by its number, as its round-end screen showed it (-2: not shown)
	ends        int     // round-end screens shown
	rate        rateMeter
	hud         []string // the status lines shown over the match
	inputs      []rollback.Input
	pads        []ebiten.GamepadID
	bindings    []play.Binding // the keyboard's, by person
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
	if ebiten.IsWindowBeingClosed() {
		return ebiten.Termination
	}
	esc := inpututil.IsKeyJustPressed(ebiten.KeyEscape)
	if esc && g.m == nil {
		if g.setup == nil {
			return ebiten.Termination // Escape on the title screen quits
		}
		// On the title screen while a choice is set up: cancel it.
		g.cancelled = true
		g.cancelSetup()
	}
	if g.m == nil {
		return g.updateTitle()
	}
	// Escape in a match leaves it for the title screen; so does every
	// other machine leaving at the round-end screen; the frame limit's
	// standings show, then the game ends (play.Flow).
	switch g.flow.Update(g.m, esc) {
	case play.Title:
		g.toTitle()
		return nil
	case play.Close:
		return ebiten.Termination
	}
	if g.last.IsZero() {
		g.overlay = g.o.overlay
	}
	if inpututil.IsKeyJustPressed(ebiten.KeyTab) {
		g.overlay = !g.overlay
	}
	if inpututil.IsKeyJustPressed(ebiten.KeyEnter) || inpututil.IsKeyJustPressed(ebiten.KeyNumpadEnter) {
		g.m.Rematch()
	}
	if err := g.m.Tick(g.readInputs()); err != nil {
		g.err = err
		return err
	}
	g.last = time.Now()
	g.perf.tick()
	g.rate.tick(g.last)
	showFrame(g.m.Frame())
	return nil
}

// toTitle leaves the match for the title screen: it tells the peers,
// closes the transport, fades the sound out, and the title screen says
// why (play.Flow's Notice; the status says "title" again once it is
// drawn).
func (g *game) toTitle() {
	if err := g.m.Close(); err != nil {
		g.menu.err = err.Error()
	}
	if g.closeNet != nil {
		g.closeNet()
		g.closeNet = nil
	}
	if g.mixer != nil {
		g.mixer.FadeAll(200 * time.Millisecond)
	}
	g.menu.notice = g.flow.Notice
	g.past, g.m, g.flow = g.m, nil, play.Flow{}
	g.last, g.roundOver, g.endDraws, g.finalDraws, g.titleDraws, g.overlayLines = time.Time{}, false, 0, 0, 0, nil
	g.humans, g.bindings = 0, []play.Binding{play.Solo}
	board.clear()
	ebiten.SetWindowTitle("Rewind arena")
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

// errSetUp ends the game loop when the title screen's choice could not
// start its match; g.err says why.
var errSetUp = errors.New("the match could not start")

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
		case g.m == nil || g.last.IsZero() || g.left || g.err != nil || since < standStill:
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
// 144 Hz display shows motion, not repeated frames. Draw builds the
// frame's quads (package draw); DrawFinalScreen, which Ebitengine calls
// next, draws them onto the window in one DrawTriangles call over the
// background.
func (g *game) Draw(screen *ebiten.Image) {
	g.perf.enter() // a wait for -max-fps is not the frame before's rendering
	g.limitFPS()
	g.mu.Lock()
	defer g.mu.Unlock()
	start := g.perf.begin()
	g.draws++
	g.rate.draw(start)
	f := g.frame
	f.Reset()
	g.painted = false
	// The frame goes to the window in DrawFinalScreen; Ebitengine calls
	// it (and presents) only while Draw changes the offscreen image.
	screen.Set(0, 0, draw.Background)
	if g.m == nil {
		f.Title(g.menu.view(g.o, g.setup != nil))
		g.perf.end(start)
		switch g.titleDraws++; g.titleDraws {
		case 2:
			// Update has run and Draw has drawn the menu: a key pressed now
			// is read. (A page's tests wait for this before pressing one.)
			if g.setup == nil {
				showStatus(stateTitle, g.menu.notice)
			}
		case 30:
			if !slices.Contains(g.shots, g.o.shots+"title.png") {
				g.shoot(screen, "title.png")
			}
		}
		return
	}
	fraction := 0.0
	if !g.last.IsZero() {
		fraction = float64(time.Since(g.last)) / float64(play.Tick)
	}
	local := g.m.Humans() // the ships to mark "you": people's, not this machine's bots
	if err := g.m.Render(fraction, func(w *arena.World) {
		f.World(w)
		f.Marks(w, local)
	}); err != nil {
		g.err = err
	}
	// Where the prediction had drawn a ship before a correction moved it:
	// rollback, made visible.
	f.Ghosts(g.m.Ghosts())
	w := g.m.World()
	f.Scores(w, local)
	rd := g.m.Round()
	f.Timer(rd, g.m.Rules(), g.m.Frame())
	f.Status(g.statusLines())
	over := g.m.RoundOver()
	if over {
		if !g.roundOver {
			g.endDraws = 0
			g.ends++
			// By number: a round-end screen shorter than a drawn frame
			// (every machine asked for the rematch at once) is not
			// shown, and its round's entry stays -2.
			for len(g.winners) < int(rd.Number) {
				g.winners = append(g.winners, -2)
			}
			if rd.Number > 0 {
				g.winners[rd.Number-1] = rd.Winner
			}
		}
		g.endDraws++
		final, closesIn := g.flow.Final()
		if !final {
			closesIn = play.FinalTicks
		}
		f.RoundEnd(draw.RoundEnd{Round: rd, Players: int(w.Players), Local: local,
			RematchIn: max(play.RematchFrames-int(g.m.Frame()-rollback.Frame(rd.End)), 0), Asked: g.m.RematchAsked(),
			Leave: "Esc: leave the match for the title screen", ClosesIn: closesIn, Close: closeHint})
		if final {
			g.finalDraws++
		}
	}
	g.roundOver = over
	if g.overlay {
		// The overlay's text changes once a tick at most.
		if fr := g.m.Frame(); g.overlayLines == nil || fr != g.overlayFrame {
			o := g.m.Overlay()
			o.FPS, o.TicksPerSec = g.rate.fps, g.rate.tps
			g.overlayLines, g.overlayFrame = o.Lines(), fr
		}
		for i, line := range g.overlayLines {
			f.Text(line, 8, screenSize-16*(len(g.overlayLines)+1-i), overlayText)
		}
	}
	g.perf.end(start) // the screenshot's reading back and encoding is not drawing
	if g.o.screenshot != "" && g.shotPath == "" && int(g.m.Frame()) >= g.o.screenshotAt {
		g.save(screen, g.o.screenshot)
		g.shotPath = g.o.screenshot
	}
	if g.o.shots != "" && !slices.Contains(g.shots, g.o.shots+"match.png") && int(g.m.Frame()) >= g.o.screenshotAt && !over {
		g.shoot(screen, "match.png")
	}
	if over && g.endDraws == 20 && g.ends == 1 {
		g.shoot(screen, "winner.png")
	}
	if g.finalDraws == 20 {
		g.shoot(screen, "final.png")
	}
}

// DrawFinalScreen draws the frame Draw built straight onto the window's
// framebuffer, scaled by geoM, instead of Ebitengine's default: copying
// the offscreen image Draw was given onto it. Under a software GL that
// copy is the costliest pass of a frame (every pixel a texture fetch);
// the background is painted by a shader without one (atlas.draw).
func (g *game) DrawFinalScreen(screen ebiten.FinalScreen, _ *ebiten.Image, geoM ebiten.GeoM) {
	g.atlas.draw(screen, g.frame, geoM)
}

// paint draws this Draw's frame onto the offscreen image too, once, for
// a screenshot to read back.
func (g *game) paint(screen *ebiten.Image) {
	if !g.painted {
		g.atlas.draw(screen, g.frame, ebiten.GeoM{})
		g.painted = true
	}
}

// shoot saves the screen as -shots's name, if -shots was given.
func (g *game) shoot(screen *ebiten.Image, name string) {
	if g.o.shots != "" {
		g.save(screen, g.o.shots+name)
	}
}

// statusLines are what the match shows over the arena: it is still
// connecting, a peer is slow, a peer left. They change once a tick at
// most.
func (g *game) statusLines() []string {
	g.hud = g.hud[:0]
	if s := g.flow.Alone(); s != "" {
		return append(g.hud, s) // every other machine left: the title screen comes next
	}
	if !g.m.Started() {
		g.hud = append(g.hud, "connecting to the other machines...")
	}
	if g.m.Waiting() {
		g.hud = append(g.hud, "waiting for a slow peer: its inputs are late")
	}
	for _, p := range g.m.Left() {
		for _, pl := range g.m.PeerPlayers(p) {
			g.hud = append(g.hud, fmt.Sprintf("P%d left the match: its ship flies on without input", pl+1))
		}
	}
	return g.hud
}

// rateMeter counts the frames drawn and the ticks run each second, for
// the overlay.
type rateMeter struct {
	since        time.Time
	draws, ticks int
	fps, tps     float64
}

func (r *rateMeter) draw(now time.Time) {
	r.draws++
	r.roll(now)
}

func (r *rateMeter) tick(now time.Time) {
	r.ticks++
	r.roll(now)
}

func (r *rateMeter) roll(now time.Time) {
	if r.since.IsZero() {
		r.since = now
		return
	}
	if d := now.Sub(r.since); d >= time.Second {
		r.fps, r.tps = float64(r.draws)/d.Seconds(), float64(r.ticks)/d.Seconds()
		r.draws, r.ticks, r.since = 0, 0, now
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
