// Package play is the arena demo without its window: one machine's match
// (the session, the game, its bots and its sounds), the keyboard and
// gamepad mapping, and what the overlay shows. cmd/arena draws it with
// Ebitengine; this package never imports Ebitengine, so all of it is
// tested without a display.
//
// Match is the canonical way to drive a rollback.Session from a game
// loop: Tick once per 60 Hz update (inputs in, Advance, sounds out),
// Render once per displayed frame (Extrapolate between two frames).
package play

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
	"github.com/rewindgg/rewind/sound"
)

// Tick is the simulation period: the arena runs at 60 frames a second.
const Tick = time.Second / 60

// DisconnectTimeout is the arena's rollback.Config.DisconnectTimeout,
// twice the library's default: a browser runs no game loop in a hidden
// tab, and a player who switches tabs for a few seconds should stall the
// others (cmd/arena keeps the hidden page's session answering its peers),
// not be disconnected by them. Every machine of a match uses it: the
// others' sessions are the ones that would disconnect it.
const DisconnectTimeout = 10 * time.Second

// Config is one machine's part of a match.
type Config struct {
	Players int                 // ships in the match, 1 to arena.MaxShips
	Local   []rollback.PlayerID // this machine's players
	Humans  int                 // how many of Local (its first ones) are people; the rest are bots
	// Peers are the other machines' players, in the Transport's peer
	// order; none for a match against local bots only.
	Peers     [][]rollback.PlayerID
	Transport rollback.Transport
	// SessionID, Secret and Seed are the match's, the same on every
	// machine (the lobby hands them out).
	SessionID uint64
	Secret    []byte
	Seed      uint64
	// Frames ends the match after that many frames; 0 plays on until
	// Close.
	Frames int
	// Rules are the rounds' (the zero Rules: one endless round).
	Rules Rules
	// Backend plays the sounds; nil is silent.
	Backend sound.Backend
	// Clock and Rand as in rollback.Config: nil means the real clock and
	// crypto/rand (tests give netsim's clock and a seeded source).
	Clock func() time.Duration
	Rand  io.Reader
	Log   slog.Handler
}

// Match is one machine's match in progress.
type Match struct {
	cfg    Config
	a      *savestate.Arena
	g      *arena.Game
	r      *rounds // the game the session steps: g with rounds around it
	s      *rollback.Session
	ledger *sound.Ledger
	bots   []*arena.Bot // for Local[Humans:]
	end    rollback.Frame
	music  bool // the music has started

	rematch bool // this machine's people asked for the rematch on the round-end screen
	stalled int  // consecutive ticks the session stalled (waiting for a peer's input)
	waited  int  // stalled, as of the tick before

	over  Overlay
	meter meter
	ghost ghosts
}

// New starts a match; the session handshakes with the peers over the
// following Ticks.
func New(cfg Config) (*Match, error) {
	if cfg.Humans < 0 || cfg.Humans > len(cfg.Local) {
		return nil, fmt.Errorf("play: %d humans for %d local players", cfg.Humans, len(cfg.Local))
	}
	if err := cfg.Rules.Check(); err != nil {
		return nil, fmt.Errorf("play: %w", err)
	}
	m := &Match{cfg: cfg, end: rollback.Frame(cfg.Frames)}
	// The whole game state in one arena: a snapshot is a copy.
	var err error
	if m.a, err = savestate.New(64 << 10); err != nil {
		return nil, err
	}
	if m.g, err = arena.New(m.a, cfg.Players, cfg.Seed); err != nil {
		return nil, err
	}
	// The ledger sits between the game's sounds and the audio backend:
	// the game triggers Event sounds through it from Step, the session
	// tells it which frames are re-simulations (Observer), and Update
	// plays the Stateful sounds the world holds.
	backend := cfg.Backend
	if backend == nil {
		backend = silent{}
	}
	if m.ledger, err = sound.NewLedger(sound.Config{Backend: backend}); err != nil {
		return nil, err
	}
	m.g.SetLedger(m.ledger)
	if m.r, err = newRounds(m.a, m.g, cfg.Rules, cfg.Frames); err != nil {
		return nil, err
	}
	peers := make([]rollback.Peer, len(cfg.Peers))
	for i, ps := range cfg.Peers {
		peers[i] = rollback.Peer{Players: ps}
	}
	rc := rollback.Config{Players: cfg.Players, Local: cfg.Local, Peers: peers, Layout: arena.Layout,
		State: m.a, Game: m.r, Observer: m.ledger, SessionID: cfg.SessionID, Secret: cfg.Secret,
		Clock: cfg.Clock, Rand: cfg.Rand, Log: cfg.Log, Timeouts: rollback.Timeouts{Disconnect: DisconnectTimeout}}
	if len(peers) > 0 {
		rc.Transport = cfg.Transport
	}
	if m.s, err = rollback.NewSession(rc); err != nil {
		return nil, err
	}
	for _, p := range cfg.Local[cfg.Humans:] {
		m.bots = append(m.bots, arena.NewBot(cfg.Seed^uint64(p+1)*0x9e3779b97f4a7c15))
	}
	m.over.Local = cfg.Local
	return m, nil
}

// Tick runs one 60 Hz update: it offers each local player's input (humans
// from human, in Local order; bots from their Bot), advances the session
// (simulating the next frame, or re-simulating after a correction, or
// stalling), and plays the sounds. Past the last frame it only keeps the
// peers answered (Idle).
func (m *Match) Tick(human []rollback.Input) error {
	w := m.g.World()
	m.ghost.before(w, m.cfg.Local)
	var res rollback.Result
	var err error
	over := m.r.Round().Over != 0
	if !over {
		m.rematch = false
	}
	if m.end == 0 || m.s.Frame() < m.end {
		for k, p := range m.cfg.Local {
			if m.end > 0 && m.s.InputFrame(p) >= m.end {
				continue // no input past the end: every machine stops on the same frame
			}
			var in rollback.Input
			switch {
			case over && (k >= m.cfg.Humans || m.rematch):
				in = Ready // bots are always ready for the rematch
			case over:
			case k < m.cfg.Humans:
				if k < len(human) {
					in = human[k]
				}
			default:
				in = m.bots[k-m.cfg.Humans].Next()
			}
			// Not queued means the session is stalling this tick: the
			// sample is dropped, and the next tick reads the pad afresh.
			if _, err := m.s.AddLocalInput(p, in); err != nil {
				return err
			}
		}
		res, err = m.s.Advance()
		m.flush()
		// Stalled ticks in a row: waiting for a peer's input. (Past the
		// end Idle stalls by design.)
		if m.stalled = 0; res.Stalled {
			m.stalled = m.waited + 1
		}
		m.waited = m.stalled
	} else {
		res, err = m.s.Idle()
		m.flush()
		m.stalled, m.waited = 0, 0
	}
	if err != nil {
		return err
	}
	m.ledger.Update(m.g.Scene())
	if !m.music && m.s.Frame() > 0 {
		m.ledger.Play(arena.SoundMusic, sound.FullVolume/4) // a Global sound: it is not gameplay
		m.music = true
	}
	m.ghost.after(m.g.World(), res)
	m.meter.tick(m, res)
	return nil
}

// Idle keeps the peers answered while the game loop stands still (a
// browser calls no Update in a hidden tab): the session receives,
// corrects and acknowledges, and simulates no new frame
// (rollback.Session.Idle), so that the peers stall instead of
// disconnecting this machine.
func (m *Match) Idle() error {
	_, err := m.s.Idle()
	m.flush()
	if err != nil {
		return err
	}
	m.ledger.Update(m.g.Scene())
	return nil
}

// Render calls draw with the world extrapolated fraction (0 to 1) of a
// frame past the last one simulated, so that motion is smooth on a
// display faster than 60 Hz; the live state is untouched (draw must not
// keep the pointer).
func (m *Match) Render(fraction float64, draw func(w *arena.World)) error {
	return m.s.Extrapolate(min(max(fraction, 0), 0.999), func() { draw(m.g.World()) })
}

// Round is the live round (predicted, like the live world).
func (m *Match) Round() Round { return *m.r.Round() }

// RoundOver reports whether the round has ended on a frame every machine
// has the inputs for: the round-end screen shows then, not on a
// prediction a correction could take back.
func (m *Match) RoundOver() bool {
	rd := m.r.Round()
	return rd.Over != 0 && m.s.ConfirmedFrame() >= rollback.Frame(rd.End)
}

// Rematch asks for the next round on the round-end screen, for this
// machine's people; it starts when every player asked (bots always do)
// or RematchFrames after the round ended.
func (m *Match) Rematch() {
	if m.r.Round().Over != 0 {
		m.rematch = true
	}
}

// RematchAsked reports whether this machine's people asked for the
// rematch of the round that ended.
func (m *Match) RematchAsked() bool { return m.rematch }

// Rules are the match's.
func (m *Match) Rules() Rules { return m.cfg.Rules }

// End is the match's last frame plus one (0: endless).
func (m *Match) End() rollback.Frame { return m.end }

// Waiting reports whether the session has stalled for a while (a quarter
// of a second) waiting for a peer's input: a slow peer, or one that left
// and is not yet disconnected.
func (m *Match) Waiting() bool { return m.stalled >= 15 }

// Started reports whether the match runs: every peer completed the
// handshake (or left), and the first frame was simulated.
func (m *Match) Started() bool { return m.s.Frame() > 0 }

// World is the live world, for reading between Ticks.
func (m *Match) World() *arena.World { return m.g.World() }

// Frame is the next frame to simulate.
func (m *Match) Frame() rollback.Frame { return m.s.Frame() }

// Session is the session, for what this package does not show.
func (m *Match) Session() *rollback.Session { return m.s }

// Done reports whether a match with Frames is over on every machine as far
// as this one can tell: every frame simulated with confirmed inputs, and
// every peer has acknowledged all of ours (or left), so that closing now
// cannot keep a peer from finishing.
func (m *Match) Done() bool {
	if m.end == 0 || m.s.Frame() < m.end || m.s.ConfirmedFrame() < m.end {
		return false
	}
	for i := range m.cfg.Peers {
		st, _ := m.s.PeerStats(i)
		if !st.Disconnected && st.RemoteFrameLag > 0 {
			return false
		}
	}
	return true
}

// Left returns the indexes (in Config.Peers) of the peers that left
// before the match was over: disconnected here, and not agreed to have
// left at or after the last frame. A peer that finishes first closes
// while this machine still plays its last frames; it left no frame of the
// match to the default input, so it is not listed. A departure whose
// frame is not agreed yet is listed: it may still cut the match short.
func (m *Match) Left() []int {
	left := []int{}
	for i := range m.cfg.Peers {
		st, _ := m.s.PeerStats(i)
		if st.Disconnected && (m.end == 0 || !st.DisconnectAgreed || st.DisconnectFrame < m.end) {
			left = append(left, i)
		}
	}
	return left
}

// Peers is the number of other machines in the match.
func (m *Match) Peers() int { return len(m.cfg.Peers) }

// AllLeft reports whether every other machine has left the match (and
// there was one), at least one of them at or after frame since: gone
// from a round-end screen that ended on since, rather than long before.
func (m *Match) AllLeft(since rollback.Frame) bool {
	late := false
	for i := range m.cfg.Peers {
		st, _ := m.s.PeerStats(i)
		if !st.Disconnected {
			return false
		}
		late = late || st.DisconnectFrame >= since
	}
	return late
}

// Humans are this machine's players that people fly (the first of
// Config.Local): the ships the game marks as theirs.
func (m *Match) Humans() []rollback.PlayerID { return m.cfg.Local[:m.cfg.Humans] }

// PeerPlayers are the players of peer i (an index of Config.Peers, as
// Left returns).
func (m *Match) PeerPlayers(i int) []rollback.PlayerID { return m.cfg.Peers[i] }

// Scores writes the live world's scores as "P1 3, P2 5" (the round's
// when it is over).
func (m *Match) Scores() string {
	w, rd := m.g.World(), m.r.Round()
	var b []byte
	for i := range int(w.Players) {
		score := w.Ships[i].Score
		if rd.Over != 0 {
			score = rd.Scores[i]
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, "P%d %d", i+1, score)
	}
	return string(b)
}

// Hash is the xxhash of the whole game state: equal on every machine at
// the same frame.
func (m *Match) Hash() uint64 { return xxhash.Sum64(m.a.Bytes()) }

// Sounds are the ledger's statistics.
func (m *Match) Sounds() sound.Stats { return m.ledger.Stats() }

// Close tells the peers that this machine leaves. It does not close the
// Transport.
func (m *Match) Close() error {
	err := m.s.Close()
	m.flush()
	if err != nil && !errors.Is(err, rollback.ErrClosed) {
		return err
	}
	return nil
}

// silent is the backend of a match without sound.
type silent struct{}

func (silent) Play(sound.Voice, sound.Sound)       {}
func (silent) Stop(sound.Voice)                    {}
func (silent) FadeOut(sound.Voice, time.Duration)  {}
func (silent) SetVolume(sound.Voice, sound.Volume) {}

// flush sends what the session's last call gathered, when its transport
// gathers (a relay.Client: one envelope to the relay per call).
func (m *Match) flush() {
	if f, ok := m.cfg.Transport.(interface{ Flush() error }); ok {
		_ = f.Flush() // an error is a datagram lost
	}
}
