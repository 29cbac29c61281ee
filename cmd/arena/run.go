package main

import (
	"fmt"
	"os"
	"strings"
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
	machines, players int
	humans, frames    int
	profile           string
	mute, overlay     bool
	screenshot        string
	screenshotAt      int
	maxFPS            int // 0: no cap
	result            string
	windowX, windowY  int
	wait              time.Duration // for the other machines to join
	connectWait       time.Duration // with a rendezvous: for the WebRTC connections
}

// The states of a run, as the browser build's window.rewindStatus shows
// them (the native build prints the details).
const (
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
	g := &game{o: o, keys: keyNames(), bindings: []play.Binding{play.Solo}}
	err := playMatch(o, g)
	r := g.result(err)
	if perr := publish(o, r); err == nil {
		err = perr
	}
	switch {
	case err != nil:
		showStatus(stateError, err.Error())
	case r.Done:
		showStatus(stateDone, fmt.Sprintf("The match is over: frame %d, state hash %s.", r.Frame, r.Hash))
	default:
		showStatus(stateDone, fmt.Sprintf("Left the match at frame %d.", r.Frame))
	}
	return err
}

// playMatch sets the match up, runs the game loop until the match is
// over or the player quits, and tells the peers it leaves.
func playMatch(o options, g *game) error {
	var cfg play.Config
	var closeNet func()
	var title string
	var err error
	if o.rendezvous != "" {
		cfg, closeNet, title, err = setUpRendezvous(o)
	} else {
		cfg, closeNet, title, err = setUp(o)
	}
	if err != nil {
		return err
	}
	defer closeNet()
	g.humans = cfg.Humans
	if cfg.Humans == 2 {
		g.bindings = []play.Binding{play.Left, play.Right}
	}
	// One mixer: the ledger (through the match) starts and stops voices in
	// it, and Ebitengine's audio pulls the mixed samples from it.
	g.mixer = audio.NewMixer()
	if !o.mute {
		// Without a device Ebitengine's audio fails the game from inside
		// its loop: find out first, and play muted.
		if err := alsa.Probe(); err != nil {
			fmt.Fprintf(os.Stderr, "arena: no sound: %v; playing muted (-mute skips this check)\n", err)
			o.mute = true
		}
	}
	if !o.mute {
		ctx := ebaudio.NewContext(audio.SampleRate)
		p, err := ctx.NewPlayerF32(g.mixer)
		if err != nil {
			return err
		}
		p.SetBufferSize(50 * time.Millisecond) // latency against underruns
		p.Play()
		cfg.Backend = g.mixer
	}
	if g.m, err = play.New(cfg); err != nil {
		return err
	}
	ebiten.SetWindowTitle(title)
	ebiten.SetWindowSize(screenSize, screenSize)
	if o.windowX >= 0 && o.windowY >= 0 {
		ebiten.SetWindowPosition(o.windowX, o.windowY)
	}
	// A networked game must keep simulating when its window loses focus:
	// Ebitengine pauses Update by default, and the peers would stall.
	ebiten.SetRunnableOnUnfocused(true)
	// Draw paints the background over what it drew the frame before
	// (package draw): clearing the screen is a full-screen pass, a large
	// part of a frame's cost under a software GL.
	ebiten.SetScreenClearedEveryFrame(false)
	// The atlas every frame is drawn from (16 ms to render): made now,
	// not in the first Draw.
	g.atlas, g.frame = newAtlas(), draw.NewFrame()
	ebiten.SetWindowClosingHandled(true)
	showStatus(statePlaying, "")
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		g.keepAlive(stop)
	}()
	err = ebiten.RunGame(g)
	if err != nil && strings.HasPrefix(err.Error(), "oto: ") {
		// The device opened for the probe but not for Ebitengine's audio.
		err = fmt.Errorf("sound failed: %w (-mute plays without sound)", err)
	}
	close(stop)
	<-stopped
	// Tell the peers we leave (they play on, or finish, without us).
	if cerr := g.m.Close(); err == nil {
		err = cerr
	}
	return err
}

// alone is the configuration of a match against local bots: every ship
// is local, no transport; the seed from the clock is fine, nobody has to
// agree with it.
func alone(o options) play.Config {
	n := max(o.players, o.humans, 1)
	cfg := play.Config{Players: n, Humans: o.humans, Seed: uint64(time.Now().UnixNano()), Frames: o.frames}
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
	fmt.Printf("machine %d of %d: players %v (%d human), session %016x\n", plan.Machine, plan.Machines, cfg.Local, cfg.Humans, plan.SessionID)
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
	Perf           perf             `json:"perf"` // the drawing's cost, frames and ticks a second
	Screenshot     string           `json:"screenshot,omitempty"`
	Sounds         sound.Stats      `json:"sounds"`
	Audio          audio.MixerStats `json:"audio"`
	Err            string           `json:"error,omitempty"`
}

// result summarizes the run; err is playMatch's (the game's own error,
// if any, comes first). Before the match exists only the error is known.
func (g *game) result(err error) result {
	var r result
	if g.m != nil {
		st := g.m.Session().Stats()
		r = result{Frame: g.m.Frame(), Done: g.m.Done(), Hash: fmt.Sprintf("%016x", g.m.Hash()), Rollbacks: st.Rollbacks,
			Resimulated: st.ResimulatedFrames, Stalls: st.StallFrames, KeyboardFrames: g.keyFrames, Draws: g.draws, Screenshot: g.shotPath,
			Sounds: g.m.Sounds(), Disconnected: g.m.Left(), Perf: g.perf.summary()}
	}
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
