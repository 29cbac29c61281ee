// Command arena is the arena example on screen: up to eight ships over
// UDP, with sound, an overlay of the netcode's figures and the ghosts of
// the ships a correction moved. Its source is the integration example: a
// rollback.Session driven from a real render loop (Ebitengine's).
//
//	arena                          # you against three bots, on this machine
//	arena -host :7000 -machines 2  # host a match for two machines
//	arena -join 192.0.2.1:7000     # join it
//	arena -host :7000 -profile wifi  # feel rollback: impair what this machine sends
//
// Keys: WASD thrusts, the arrows fire (with -humans 2: WASD and TFGH, IJKL
// and the arrows); a gamepad's left stick thrusts and its right stick or
// face buttons fire. Tab shows the overlay; Escape quits and tells the
// peers.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/hajimehoshi/ebiten/v2"
	ebaudio "github.com/hajimehoshi/ebiten/v2/audio"

	"github.com/rewindgg/rewind/cmd/arena/internal/audio"
	"github.com/rewindgg/rewind/cmd/arena/internal/lobby"
	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/udp"
	"github.com/rewindgg/rewind/sound"
)

type options struct {
	host, join        string
	machines, players int
	humans, frames    int
	profile           string
	mute, overlay     bool
	screenshot        string
	screenshotAt      int
	result            string
	windowX, windowY  int
	lobbyTimeout      time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.host, "host", "", "host a match on this UDP address (e.g. :7000)")
	flag.StringVar(&o.join, "join", "", "join the match hosted at this UDP address")
	flag.IntVar(&o.machines, "machines", 2, "with -host: machines in the match, this one included (2 to 8)")
	flag.IntVar(&o.players, "players", 4, "ships in the match (with -host, or alone); bots fly those nobody plays")
	flag.IntVar(&o.humans, "humans", 1, "people at this machine: 0 (bots only), 1, or 2 sharing the keyboard")
	flag.IntVar(&o.frames, "frames", 0, "with -host or alone: end the match after this many frames (0: play until you quit)")
	flag.StringVar(&o.profile, "profile", "", "impair the datagrams this machine sends like a soak profile (lan, wifi, continental, far, hell, or a spec)")
	flag.BoolVar(&o.mute, "mute", false, "no sound (no audio device is opened)")
	flag.BoolVar(&o.overlay, "overlay", false, "start with the overlay shown (Tab toggles it)")
	flag.StringVar(&o.screenshot, "screenshot", "", "save a PNG of the window to this file at -screenshot-at")
	flag.IntVar(&o.screenshotAt, "screenshot-at", 600, "the frame of -screenshot")
	flag.StringVar(&o.result, "result", "", "write a JSON summary here on exit (frame, state hash, sound and input counts)")
	flag.IntVar(&o.windowX, "window-x", -1, "the window's position (default: the system's choice)")
	flag.IntVar(&o.windowY, "window-y", -1, "")
	flag.DurationVar(&o.lobbyTimeout, "lobby-timeout", 5*time.Minute, "how long to wait for the other machines")
	flag.Parse()
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

func run(o options) error {
	cfg, closeNet, title, err := setUp(o)
	if err != nil {
		return err
	}
	defer closeNet()
	g := &game{o: o, humans: cfg.Humans, keys: keyNames(), bindings: []play.Binding{play.Solo}}
	if cfg.Humans == 2 {
		g.bindings = []play.Binding{play.Left, play.Right}
	}
	// One mixer: the ledger (through the match) starts and stops voices in
	// it, and Ebitengine's audio pulls the mixed samples from it.
	g.mixer = audio.NewMixer()
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
	ebiten.SetWindowClosingHandled(true)
	err = ebiten.RunGame(g)
	// Tell the peers we leave (they play on, or finish, without us).
	if cerr := g.m.Close(); err == nil {
		err = cerr
	}
	if o.result != "" {
		if werr := g.writeResult(o.result); err == nil {
			err = werr
		}
	}
	return err
}

// setUp makes the match's configuration: alone, or through the lobby
// over the UDP socket the session then uses.
func setUp(o options) (cfg play.Config, closeNet func(), title string, err error) {
	closeNet = func() {}
	if o.humans < 0 || o.humans > 2 {
		return cfg, closeNet, "", fmt.Errorf("-humans %d: want 0, 1 or 2", o.humans)
	}
	if o.host == "" && o.join == "" {
		// Alone: every ship is local, no transport; the seed from the clock
		// is fine, nobody has to agree with it.
		n := max(o.players, o.humans, 1)
		cfg = play.Config{Players: n, Humans: o.humans, Seed: uint64(time.Now().UnixNano()), Frames: o.frames}
		for p := range n {
			cfg.Local = append(cfg.Local, rollback.PlayerID(p))
		}
		return cfg, closeNet, "Rewind arena", nil
	}
	var plan lobby.Plan
	var conn *net.UDPConn
	ctx, cancel := context.WithTimeout(context.Background(), o.lobbyTimeout)
	defer cancel()
	if o.host != "" {
		if conn, err = listen(o.host); err != nil {
			return cfg, closeNet, "", err
		}
		fmt.Printf("hosting on %v: waiting for %d more machine(s)\n", conn.LocalAddr(), o.machines-1)
		plan, err = lobby.Host(ctx, conn, lobby.HostOptions{Machines: o.machines, Players: o.players, Humans: o.humans,
			Frames: o.frames, Log: func(s string) { fmt.Println(s) }})
	} else {
		var to netip.AddrPort
		if to, err = resolve(o.join); err != nil {
			return cfg, closeNet, "", err
		}
		if conn, err = listen(":0"); err != nil {
			return cfg, closeNet, "", err
		}
		fmt.Printf("joining %v from %v\n", to, conn.LocalAddr())
		plan, err = lobby.Join(ctx, conn, to, lobby.JoinOptions{Humans: o.humans})
	}
	if err != nil {
		conn.Close()
		return cfg, closeNet, "", err
	}
	tr, err := udp.New(conn, plan.PeerAddrs())
	if err != nil {
		conn.Close()
		return cfg, closeNet, "", err
	}
	closeNet = func() { _ = tr.Close() }
	var sessionTr rollback.Transport = tr
	if o.profile != "" {
		// The soak's network shaper on real UDP: what this machine sends is
		// delayed, dropped and duplicated like the profile says.
		p, err := netsim.ParseProfile(o.profile)
		if err != nil {
			closeNet()
			return cfg, func() {}, "", err
		}
		sh, err := netsim.NewShaper(tr, plan.Machines-1, p, plan.Seed, plan.Machine)
		if err != nil {
			closeNet()
			return cfg, func() {}, "", err
		}
		sessionTr = sh
		closeNet = func() { sh.Close(); _ = tr.Close() }
	}
	cfg = play.Config{Players: plan.Players, Local: plan.Local(), Humans: plan.Humans[plan.Machine], Peers: plan.Peers(),
		Transport: sessionTr, SessionID: plan.SessionID, Secret: plan.Secret, Seed: plan.Seed, Frames: plan.Frames}
	fmt.Printf("machine %d of %d: players %v (%d human), session %016x\n", plan.Machine, plan.Machines, cfg.Local, cfg.Humans, plan.SessionID)
	return cfg, closeNet, fmt.Sprintf("Rewind arena — machine %d", plan.Machine), nil
}

func listen(addr string) (*net.UDPConn, error) {
	a, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	return net.ListenUDP("udp", a)
}

func resolve(addr string) (netip.AddrPort, error) {
	a, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// result is the JSON of -result.
type result struct {
	Frame          rollback.Frame   `json:"frame"`
	Done           bool             `json:"done"`
	Hash           string           `json:"hash"`
	Rollbacks      int64            `json:"rollbacks"`
	Resimulated    int64            `json:"resimulated_frames"`
	KeyboardFrames int              `json:"keyboard_frames"` // ticks in which a person's keys or pad gave a non-zero input
	Draws          int              `json:"draws"`
	Screenshot     string           `json:"screenshot,omitempty"`
	Sounds         sound.Stats      `json:"sounds"`
	Audio          audio.MixerStats `json:"audio"`
	Err            string           `json:"error,omitempty"`
}

func (g *game) writeResult(path string) error {
	st := g.m.Session().Stats()
	r := result{Frame: g.m.Frame(), Done: g.m.Done(), Hash: fmt.Sprintf("%016x", g.m.Hash()), Rollbacks: st.Rollbacks,
		Resimulated: st.ResimulatedFrames, KeyboardFrames: g.keyFrames, Draws: g.draws, Screenshot: g.shotPath,
		Sounds: g.m.Sounds(), Audio: g.mixer.Stats()}
	if g.err != nil {
		r.Err = g.err.Error()
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
