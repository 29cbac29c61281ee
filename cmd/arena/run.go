package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hajimehoshi/ebiten/v2"
	ebaudio "github.com/hajimehoshi/ebiten/v2/audio"

	"github.com/rewindgg/rewind/cmd/arena/internal/alsa"
	"github.com/rewindgg/rewind/cmd/arena/internal/audio"
	"github.com/rewindgg/rewind/cmd/arena/internal/draw"
	"github.com/rewindgg/rewind/cmd/arena/internal/lobby"
	"github.com/rewindgg/rewind/cmd/arena/internal/netplay"
	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/sound"
)

// options are the native build's flags; the browser build fills them
// from its page's URL (netplay.ParseQuery).
type options struct {
	host, join        string
	rendezvous, code  string // the rendezvous server's base URL; the match to join (none: create one)
	relay, loopback   bool   // rtc.Config's Relay and Loopback
	relayed           bool   // create a relayed match (rdv.Options.Relayed)
	machines, players int
	humans, frames    int
	profile           string
	mute, overlay     bool
	screenshot        string
	screenshotAt      int
	maxFPS            int // 0: no cap
	result            string
	windowX, windowY  int
	wait              time.Duration   // for the other machines to join
	connectWait       time.Duration   // with a rendezvous: for the WebRTC connections
	round             time.Duration   // the round timer (0: none)
	target            int             // the score target (0: none)
	given             netplay.Given   // which settings were given explicitly (a joiner refuses the host's if they differ)
	solo, title       bool            // skip the title screen against bots; show it even with a rendezvous
	listen            string          // the title screen's Host listens here
	shots             string          // the screenshots' prefix: title.png, winner.png, match.png, final.png
	ctx               context.Context // ends the setup's waits early (the title screen's Escape); nil: never
}

// context is the parent of the setup's waits.
func (o options) context() context.Context {
	if o.ctx == nil {
		return context.Background()
	}
	return o.ctx
}

// settings are the match settings o asks for: a host's, or what a joiner
// was given.
func (o options) settings() play.Settings {
	return play.Settings{Frames: o.frames, Rules: play.Rules{RoundFrames: int((o.round*60 + time.Second/2) / time.Second), Target: o.target}}
}

// titleScreen reports whether the game starts on the title screen: when
// no flag chose the way to play.
func (o options) titleScreen() bool {
	return o.title || !o.solo && o.host == "" && o.join == "" && o.rendezvous == ""
}

// board is the status the title screen shows while a match is set up:
// the last lines the setup said.
var board statusBoard

type statusBoard struct {
	mu    sync.Mutex
	lines []string
}

func (b *statusBoard) add(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lines = append(b.lines, s); len(b.lines) > 4 {
		b.lines = b.lines[1:]
	}
}

func (b *statusBoard) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = nil
}

func (b *statusBoard) get() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.lines)
}

// The states of a run, as the browser build's window.rewindStatus shows
// them (the native build prints the details).
const (
	stateTitle      = "title"      // the title screen has been drawn and reads the keys: nothing chosen yet
	stateLobby      = "lobby"      // creating, joining, or waiting for the match to fill
	stateConnecting = "connecting" // the match is full: WebRTC connections to the other machines
	statePlaying    = "playing"
	stateDone       = "done" // the game loop ended (result.done says whether the match was over)
	stateError      = "error"
)

// run plays one match and then publishes its result (the -result file,
// or window.rewindResult in a browser), also when it fails before the
// game starts.
func run(o options) error {
	g := &game{o: o, keys: keyNames(), bindings: []play.Binding{play.Solo}, winners: []int32{}}
	err := playMatch(o, g)
	r := g.result(err)
	if perr := publish(o, r); err == nil {
		err = perr
	}
	switch {
	case err != nil:
		showStatus(stateError, err.Error())
	case r.Done:
		detail := fmt.Sprintf("State hash %s at frame %d.", r.Hash, r.Frame)
		if g.lastMatch().Peers() > 0 {
			detail = fmt.Sprintf("State hash %s at frame %d: the same on every machine.", r.Hash, r.Frame)
		}
		showEnd(fmt.Sprintf("The match is over after %d frames (%.3g s). %s", r.Frame, float64(r.Frame)/60, r.Standings), detail)
	case g.m == nil && g.past == nil:
		showStatus(stateDone, "Left from the title screen.")
	case g.m == nil:
		showStatus(stateDone, fmt.Sprintf("Left from the title screen (the last match was left at frame %d).", r.Frame))
	default:
		showStatus(stateDone, fmt.Sprintf("Left the match at frame %d.", r.Frame))
	}
	return err
}

// playMatch sets the match up (from the flags before the window opens,
// or from the title screen's choice while it shows), runs the game loop
// until the match is over or the player quits, and tells the peers it
// leaves.
func playMatch(o options, g *game) error {
	if !o.titleScreen() {
		cfg, closeNet, title, err := setUpAny(o)
		if err != nil {
			return err
		}
		g.closeNet = closeNet
		if err := g.begin(cfg, title); err != nil {
			return err
		}
	} else {
		// The state says "title" once the game loop has drawn the title
		// screen (game.Draw): from then on it reads the keys.
		ebiten.SetWindowTitle("Rewind arena")
	}
	defer func() {
		if g.closeNet != nil {
			g.closeNet()
		}
	}()
	ebiten.SetWindowSize(screenSize, screenSize)
	if o.windowX >= 0 && o.windowY >= 0 {
		ebiten.SetWindowPosition(o.windowX, o.windowY)
	}
	// A networked game must keep simulating when its window loses focus:
	// Ebitengine pauses Update by default, and the peers would stall.
	ebiten.SetRunnableOnUnfocused(true)
	// The frame is drawn straight onto the window (game.DrawFinalScreen),
	// not onto the offscreen image Draw is given: clearing that image
	// each frame would be a full-screen pass for nothing, and under a
	// software GL a full-screen pass is a large part of a frame's cost.
	ebiten.SetScreenClearedEveryFrame(false)
	// The atlas every frame is drawn from (16 ms to render): made now,
	// not in the first Draw.
	g.atlas, g.frame = newAtlas(), draw.NewFrame()
	ebiten.SetWindowClosingHandled(true)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		g.keepAlive(stop)
	}()
	err := ebiten.RunGame(g)
	if err != nil && strings.HasPrefix(err.Error(), "oto: ") {
		// The device opened for the probe but not for Ebitengine's audio.
		err = fmt.Errorf("sound failed: %w (-mute plays without sound)", err)
	}
	close(stop)
	<-stopped
	if errors.Is(err, errSetUp) {
		err = g.err
	}
	// Tell the peers we leave (they play on, or finish, without us).
	if g.m != nil {
		if cerr := g.m.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// setUpAny makes the match's configuration the way o says: through the
// rendezvous, the UDP lobby, or alone.
func setUpAny(o options) (play.Config, func(), string, error) {
	switch {
	case o.solo:
		return alone(o), func() {}, "Rewind arena — against bots", nil
	case o.host == "" && o.join == "" && o.rendezvous != "":
		return setUpRendezvous(o)
	}
	return setUp(o)
}

// begin starts the match cfg (its sound, then the session), titled
// title: before the game loop, or from it when the title screen's setup
// is done.
func (g *game) begin(cfg play.Config, title string) error {
	g.humans = cfg.Humans
	if cfg.Humans == 2 {
		g.bindings = []play.Binding{play.Left, play.Right}
	}
	// One mixer: the ledger (through the match) starts and stops voices in
	// it, and Ebitengine's audio pulls the mixed samples from it.
	if g.mixer == nil {
		g.mixer = audio.NewMixer()
	}
	if !g.o.mute {
		// Without a device Ebitengine's audio fails the game from inside
		// its loop: find out first, and play muted.
		if err := alsa.Probe(); err != nil {
			fmt.Fprintf(os.Stderr, "arena: no sound: %v; playing muted (-mute skips this check)\n", err)
			g.o.mute = true
		}
	}
	if !g.o.mute {
		// One audio context a process: the first match's player plays
		// the mixer for the next matches too.
		if g.player == nil {
			ctx := ebaudio.NewContext(audio.SampleRate)
			p, err := ctx.NewPlayerF32(g.mixer)
			if err != nil {
				return err
			}
			p.SetBufferSize(50 * time.Millisecond) // latency against underruns
			p.Play()
			g.player = p
		}
		cfg.Backend = g.mixer
	}
	m, err := play.New(cfg)
	if err != nil {
		return err
	}
	g.m = m
	ebiten.SetWindowTitle(title)
	showStatus(statePlaying, "")
	return nil
}

// alone is the configuration of a match against local bots: every ship
// is local, no transport; the seed from the clock is fine, nobody has to
// agree with it.
func alone(o options) play.Config {
	n := max(o.players, o.humans, 1)
	st := o.settings()
	cfg := play.Config{Players: n, Humans: o.humans, Seed: uint64(time.Now().UnixNano()), Frames: st.Frames, Rules: st.Rules}
	for p := range n {
		cfg.Local = append(cfg.Local, rollback.PlayerID(p))
	}
	return cfg
}

// configure is the last step of both ways of meeting (the UDP lobby and
// the rendezvous): the plan's configuration over tr, with -profile's
// impairment of what this machine sends. closeNet closes what the
// session's transport stands on (closeTr, and the shaper); on an error
// configure has called closeTr itself.
func configure(plan lobby.Plan, tr rollback.Transport, closeTr func(), o options) (cfg play.Config, closeNet func(), err error) {
	closeNet = closeTr
	if o.profile != "" {
		// The soak's network shaper on the real network: what this
		// machine sends is delayed, dropped and duplicated like the
		// profile says.
		p, err := netsim.ParseProfile(o.profile)
		if err != nil {
			closeTr()
			return cfg, nil, err
		}
		sh, err := netsim.NewShaper(tr, plan.Machines-1, p, plan.Seed, plan.Machine)
		if err != nil {
			closeTr()
			return cfg, nil, err
		}
		tr = sh
		closeNet = func() { sh.Close(); closeTr() }
	}
	cfg = netplay.Config(plan, tr)
	say(fmt.Sprintf("machine %d of %d: players %v (%d human), session %016x; %v", plan.Machine, plan.Machines, cfg.Local, cfg.Humans, plan.SessionID, netplay.Settings(plan)))
	return cfg, closeNet, nil
}

// result is the JSON of -result (and of the browser's window.rewindResult).
type result struct {
	Frame          rollback.Frame   `json:"frame"`
	Done           bool             `json:"done"`
	Hash           string           `json:"hash"`
	Rollbacks      int64            `json:"rollbacks"`
	Resimulated    int64            `json:"resimulated_frames"`
	Stalls         int64            `json:"stall_frames"`    // Advance calls that waited for a peer's input (starved)
	Disconnected   []int            `json:"disconnected"`    // the peers this machine saw leave before the match was over, by Transport index
	KeyboardFrames int              `json:"keyboard_frames"` // ticks in which a person's keys or pad gave a non-zero input
	Draws          int              `json:"draws"`
	Round          int32            `json:"round"`               // the round being played (or ended) when the game ended
	Winners        []int32          `json:"winners"`             // each round's winner, by round number, as its round-end screen showed it (-1: a draw, -2: not shown)
	Standings      string           `json:"standings,omitempty"` // when the match is over: its last round's result in sentences (play.Round.Standings)
	Screenshots    []string         `json:"screenshots,omitempty"`
	Perf           perf             `json:"perf"` // the drawing's cost, frames and ticks a second
	Screenshot     string           `json:"screenshot,omitempty"`
	Sounds         sound.Stats      `json:"sounds"`
	Audio          audio.MixerStats `json:"audio"`
	Err            string           `json:"error,omitempty"`
}

// lastMatch is the match playing, else the one left for the title
// screen, else nil.
func (g *game) lastMatch() *play.Match {
	if g.m != nil {
		return g.m
	}
	return g.past
}

// result summarizes the run; err is playMatch's (the game's own error,
// if any, comes first). Before the match exists only the error is known.
func (g *game) result(err error) result {
	var r result
	if m := g.lastMatch(); m != nil {
		st := m.Session().Stats()
		r = result{Frame: m.Frame(), Done: m.Done(), Hash: fmt.Sprintf("%016x", m.Hash()), Rollbacks: st.Rollbacks,
			Resimulated: st.ResimulatedFrames, Stalls: st.StallFrames, KeyboardFrames: g.keyFrames, Draws: g.draws, Screenshot: g.shotPath,
			Round: m.Round().Number, Winners: g.winners,
			Sounds: m.Sounds(), Disconnected: m.Left(), Perf: g.perf.summary()}
		if r.Done {
			r.Standings = m.Round().Standings(int(m.World().Players), m.Humans())
		}
	}
	r.Screenshots = g.shots
	if g.mixer != nil {
		r.Audio = g.mixer.Stats()
	}
	if g.err != nil {
		r.Err = g.err.Error()
	} else if err != nil {
		r.Err = err.Error()
	}
	return r
}
