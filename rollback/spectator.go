package rollback

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/savestate"
)

// defaultCatchUp is SpectatorConfig.CatchUp's default: a spectator that is
// behind simulates up to 3 frames a tick, catching up at twice real time.
const defaultCatchUp = 3

// ErrSourceLeft is a [Spectator]'s error once the spectated machine left
// or went silent for Timeouts.Disconnect, and no witness is left to watch
// through (SpectatorConfig.Witnesses). The frames already received were
// played; join again through another machine to go on watching.
var ErrSourceLeft = errors.New("rollback: the spectated machine left")

// SpectatorConfig configures a [Spectator]. Zero values mean the
// documented defaults.
type SpectatorConfig struct {
	// Players and Layout are the match's; the source checks them in the
	// handshake.
	Players int
	Layout  Layout
	// State is the arena, allocated by the game exactly as a player
	// machine's is at the start of the match: the state received is
	// loaded into it (savestate.Arena.Load checks it).
	State *savestate.Arena
	// Game is the simulation; its Step sees only final inputs.
	Game Game
	// Transport carries the datagrams; peer Source is the machine this
	// spectator watches through (a player machine, or a spectator that
	// relays), and every other peer index may be a spectator it relays to.
	Transport Transport
	Source    int
	// Witnesses are further machines (transport indices, at most 3) this
	// spectator watches the match through as well, each in a spectator
	// slot of its own, to check what Source hands it: it holds its frames
	// until each witness has offered a state at or after its own, compares
	// its state with each witness's, and every frame's final inputs with
	// every witness's. A disagreement is put to a vote (the source counts
	// for itself): a source outvoted is named (EventSuspect,
	// SuspectDesync) and left for a witness that outvoted it, from that
	// witness's state (the spectators this one relays to are dropped); a
	// witness outvoted is named and dropped; a tie — always, with one
	// witness — ends the watch with ErrJoinState naming both machines.
	// When the source leaves, the spectator watches on through a witness
	// (from that witness's state unless it had confirmed ours) instead of
	// ending with ErrSourceLeft. A witness costs its machine what a
	// spectator costs, less the state; each must answer the handshake
	// within Timeouts.Handshake. None: the source is trusted
	// (docs/security.md, "A spectator can check its source").
	Witnesses []int
	// SessionID and Secret are the match's, as the players have them.
	SessionID uint64
	Secret    []byte
	// Delay is the stream delay: each frame is played no sooner than this
	// after it arrived. 0: none. It is the viewer's choice; a player
	// machine enforces its own (Config.SpectatorDelay) against stream
	// sniping.
	Delay time.Duration
	// CatchUp is the most frames one Advance simulates while behind; 0
	// means 3.
	CatchUp int
	// MaxSpectators and TransferRate: this spectator relays to up to
	// MaxSpectators further spectators, as a player machine serves them
	// (Config.MaxSpectators), so that many spectators cost a player no
	// more than the ones it serves directly. 0: it relays to none. A
	// spectator that relays serves its own only while its Advance is
	// called: keep calling it after its last frame (Stalled) until they
	// have played theirs (Stats.Relayed falls to 0) or the game ends.
	MaxSpectators int
	TransferRate  int
	// Observer, if not nil, is told every frame simulated (sound).
	Observer Observer
	// Clock, Rand and Timeouts are as in Config.
	Clock    func() time.Duration
	Rand     io.Reader
	Timeouts Timeouts
}

// WatchStats describe a watch of a match through a source: a
// [Spectator]'s (Spectator.Stats), or a [Session]'s that joins in progress
// (Stats.Join), which watches the match as a spectator until it takes its
// players back. The last group is a joining Session's only; the other
// fields of Stats.Join that are not the source's and the state's are
// zero.
type WatchStats struct {
	Source      int   // the peer watched through; -1 before one answered
	Frame       Frame // the next frame to simulate
	Received    Frame // one past the newest frame of inputs received
	StateFrame  Frame // the frame of the state it started from (-1 before)
	StateBytes  int   // the compressed state's size
	StatePieces int   // Snap pieces received, repeats included
	// StateTime is from NewSpectator (NewSession) to the state loaded;
	// JoinTime to the first frame simulated.
	StateTime, JoinTime time.Duration
	// CatchUpFrames and CatchUpTicks are the frames simulated and the
	// Advance calls from the state loaded to caught up
	// (EventCaughtUp): their ratio is the catch-up speed.
	CatchUpFrames, CatchUpTicks int64
	CaughtUp                    bool
	SourceLeft                  bool
	// Relayed is how many spectators it serves (MaxSpectators).
	Relayed         int
	PacketsSent     int64
	BytesSent       int64 // to its source and to the spectators it serves
	PacketsReceived int64
	BytesReceived   int64
	PacketsInvalid  int64

	// With SpectatorConfig.Witnesses: the witnesses that confirmed the
	// state and still compare the inputs; the frames from StateFrame on
	// whose final inputs a witness confirmed; the witnesses a vote went
	// against, and all the witnesses lost (outvoted, left, silent, or
	// never offering a state to check). A source a vote went against
	// counts in Refuted.
	Witnesses     int
	Corroborated  int64
	Outvoted      int
	WitnessesLost int

	// A Session joining in progress only:
	TakeOver      Frame         // the frame it took its players back at; -1 before
	TakeTime      time.Duration // from NewSession to the take-over
	Proposals     int           // take-over frames proposed (a refusal makes another)
	Confirmed     int           // machines whose checksum at TakeOver matched
	WatchedFrames int64         // frames simulated before the take-over
	TookOver      bool
	WatchErrors   int // sources that failed before the take-over
	// Refuted counts the sources whose state another machine's checksum
	// of the take-over frame refuted: the joiner watched through the next
	// (and once it took over, suspects each of SuspectDesync). A
	// Spectator's: the sources its witnesses outvoted.
	Refuted int
}

// Spectator watches a match in progress: it joins at any time through a
// player machine that serves spectators (Config.MaxSpectators) or a
// spectator that relays, receives the arena at a recent final frame and
// every final input from there, and simulates them — it never predicts and
// never rolls back. It sends only acknowledgements: nothing it does can
// affect the players. Drive it with Advance once per tick. A Spectator is
// not safe for concurrent use.
type Spectator struct {
	players int
	layout  wire.Layout
	format  wire.Format // the layout, checked once
	arena   *savestate.Arena
	app     app
	tr      Transport
	src     int
	wits    []witness // SpectatorConfig.Witnesses (witness.go)
	clock   func() time.Duration
	now     time.Duration
	born    time.Duration
	session uint64
	keys    keyring
	up      peerAuth
	upRecv  time.Duration
	timeout Timeouts // SpectatorConfig.Timeouts, populated

	frame    Frame
	joined   bool
	feed     feed
	feedFrom Frame         // the frame the feed starts at: the State we tell the source (-1: none yet)
	delay    time.Duration // SpectatorConfig.Delay: the feed is timed
	catchUp  int
	snap     snapReceiver
	aud      *audience
	closed   bool
	err      error // a *HandshakeError, once
	// termsSet: the match's terms are the first machine's that answered
	// (the source or a witness); the keys of every link bind them.
	termsSet bool
	swapped  bool // the source was swapped for an older witness's state this join (witness.go)

	events eventLog
	stats  WatchStats
	io     struct {
		sendBuf, recvBuf []byte
		hs, rxhs         wire.Handshake
		watch            wire.Watch
		snap             wire.Snap
		d                wire.Disconnect
		pkt              wire.InputPacket
		base             [MaxPlayers]uint64
		stepIn           [MaxPlayers]PlayerInput
	}
}

// NewSpectator validates cfg and returns a spectator that joins through
// cfg.Source on its first Advance.
func NewSpectator(cfg SpectatorConfig) (*Spectator, error) {
	switch {
	case cfg.Players < 1 || cfg.Players > MaxPlayers:
		return nil, cfgErr("Players", "%d (want 1 to %d)", cfg.Players, MaxPlayers)
	case cfg.State == nil:
		return nil, cfgErr("State", "nil arena")
	case cfg.Game == nil:
		return nil, cfgErr("Game", "nil")
	case cfg.Transport == nil:
		return nil, cfgErr("Transport", "nil")
	case cfg.Source < 0:
		return nil, cfgErr("Source", "negative peer index %d", cfg.Source)
	case len(cfg.Witnesses) > maxWitnesses:
		return nil, cfgErr("Witnesses", "%d (want at most %d)", len(cfg.Witnesses), maxWitnesses)
	case cfg.Delay < 0:
		return nil, cfgErr("Delay", "negative %v", cfg.Delay)
	case cfg.CatchUp < 0:
		return nil, cfgErr("CatchUp", "negative %d", cfg.CatchUp)
	case cfg.MaxSpectators < 0 || cfg.MaxSpectators > maxGuests:
		return nil, cfgErr("MaxSpectators", "%d (want 0 to %d)", cfg.MaxSpectators, maxGuests)
	case cfg.TransferRate < 0:
		return nil, cfgErr("TransferRate", "negative rate %d", cfg.TransferRate)
	case len(cfg.Secret) > 0 && len(cfg.Secret) < 16:
		return nil, cfgErr("Secret", "%d bytes (want at least 16, or none)", len(cfg.Secret))
	}
	for n, i := range cfg.Witnesses {
		if i < 0 || i == cfg.Source || slices.Contains(cfg.Witnesses[:n], i) {
			return nil, cfgErr("Witnesses", "peer index %d (negative, the Source's, or twice)", i)
		}
	}
	if err := cfg.Timeouts.check(); err != nil {
		return nil, err
	}
	if err := cfg.Layout.Check(); err != nil {
		return nil, err
	}
	s := &Spectator{players: cfg.Players, layout: append(wire.Layout(nil), cfg.Layout...), arena: cfg.State,
		app: app{game: cfg.Game, obs: cfg.Observer}, tr: cfg.Transport, src: cfg.Source, clock: cfg.Clock,
		session: cfg.SessionID, feed: newFeed(cfg.Players), catchUp: orDefault(cfg.CatchUp, defaultCatchUp),
		delay: cfg.Delay, events: make([]Event, 0, 4)}
	s.format, _ = wire.NewFormat(s.layout) // checked above
	if s.delay > 0 {
		s.feed.timed()
	}
	if s.clock == nil {
		s.clock = realClock()
	}
	s.timeout = cfg.Timeouts.populate()
	r := cfg.Rand
	if r == nil {
		r = rand.Reader
	}
	// Our terms say only what we know; the source's, adopted from its
	// handshake, are the ones the link's keys bind.
	terms := wire.Terms{Players: cfg.Players, Owners: make([]uint8, cfg.Players), Layout: slices.Clone(s.layout),
		Mode: uint8(rollbackMode), TickRate: defaultTickRate, ChecksumEvery: -1}
	var err error
	if s.keys, err = newKeyring(r, cfg.Secret, terms); err != nil {
		return nil, err
	}
	s.keys.local = []uint8{}
	s.up.ours = s.keys.nonceFor(linkSource | uint64(s.src))
	s.wits = newWitnesses(cfg.Witnesses, &s.keys, cfg.Players, s.clock())
	s.io.sendBuf, s.io.recvBuf = make([]byte, 0, maxDatagram), make([]byte, maxDatagram+1)
	s.io.pkt.Inputs = make([]uint64, 0, wire.MaxFrames*MaxPlayers)
	s.io.pkt.Gossip = make([]wire.Gossip, 0, MaxPlayers)
	s.now = s.clock()
	s.born, s.upRecv = s.now, s.now
	s.stats.StateFrame, s.stats.Source, s.stats.TakeOver, s.feedFrom = -1, cfg.Source, -1, -1
	if cfg.MaxSpectators > 0 {
		s.aud = newAudience(cfg.MaxSpectators, 0, cfg.TransferRate, &s.keys, s.session, s.tr, &s.feed,
			s.timeout.Interrupt, s.timeout.Disconnect)
	}
	return s, nil
}

// Frame returns the next frame to simulate.
func (s *Spectator) Frame() Frame { return s.frame }

// Stats returns the spectator's statistics.
func (s *Spectator) Stats() WatchStats {
	st := s.stats
	st.Frame, st.Received = s.frame, s.feed.high
	for n := range s.wits {
		if s.wits[n].checked && s.wits[n].dissent < 0 {
			st.Witnesses++
		}
	}
	if s.aud != nil {
		st.Relayed = s.aud.served()
		st.PacketsSent += s.aud.sent
		st.BytesSent += s.aud.sentBytes
	}
	return st
}

// Advance receives what arrived, simulates the next final frames (one, or
// up to CatchUp while behind, none that arrived less than Delay ago),
// sends the acknowledgements, and serves the spectators it relays to.
// Stalled means no frame was simulated (still joining, or waiting for
// inputs). It returns a *HandshakeError if the handshake fails (the
// source did not answer within Timeouts.Handshake: it may not be running,
// may serve no more spectators, or may have another SessionID or Secret,
// and the hint says what was heard; or it has other Players or another
// Layout), or if the source's state does not fit the arena (Field
// "State"); and ErrSourceLeft once the source has left and every frame
// received has been played.
func (s *Spectator) Advance() (Result, error) {
	if s.closed {
		return Result{Frame: s.frame, Stalled: true}, ErrClosed
	}
	s.now = s.clock()
	s.events = s.events[:0]
	s.receive()
	r := s.run(noFrame)
	s.send()
	r.Events = s.events
	if s.err == nil && s.stats.SourceLeft && s.frame >= s.feed.high && !s.carryOn() {
		return r, ErrSourceLeft
	}
	return r, s.err
}

// run notices a silent source and simulates the frames due: one, or up
// to CatchUp while behind, none at or after limit.
func (s *Spectator) run(limit Frame) Result {
	s.checkSource()
	r := Result{Frame: s.frame}
	if !s.joined {
		s.adopt() // the source's state, once the witnesses have offered theirs
	}
	if s.joined && len(s.wits) > 0 {
		s.corroborate()
		limit = min(limit, s.witnessHold())
	}
	if s.joined {
		target := min(s.playable(), limit)
		for r.Simulated < s.catchUp && s.frame < target {
			s.step()
			r.Simulated++
		}
		if !s.stats.CaughtUp {
			s.stats.CatchUpFrames += int64(r.Simulated)
			s.stats.CatchUpTicks++
			if s.frame >= target-1 && target > s.stats.StateFrame {
				s.stats.CaughtUp = true
				s.events.emit(EventCaughtUp, s.frame, -1)
			}
		}
	}
	r.Stalled = r.Simulated == 0
	return r
}

// playable returns one past the last frame that may be simulated now:
// every frame received, or with a Delay, every frame received at least
// Delay ago.
func (s *Spectator) playable() Frame {
	if s.delay == 0 {
		return s.feed.high
	}
	f := s.frame
	for f < s.feed.high && s.feed.ripe(f, s.now, s.delay) {
		f++
	}
	return f
}

// step simulates s.frame with its final inputs.
func (s *Spectator) step() {
	in := s.io.stepIn[:s.players]
	s.feed.inputs(s.frame, in)
	s.app.step(s.frame, in, true)
	if s.stats.JoinTime == 0 {
		s.stats.JoinTime = max(1, s.now-s.born)
	}
	s.frame++
}

// emitGuest reports a relayed spectator's arrival or departure (a
// stateSource).
func (s *Spectator) emitGuest(k EventKind, idx int) { s.events.emit(k, s.frame, idx) }

// joinState offers relayed spectators our live state: every frame we
// simulate is final (a stateSource).
func (s *Spectator) joinState(dst []byte) (Frame, []byte, bool) {
	if !s.joined || s.unconfirmed() {
		return 0, dst, false
	}
	return s.frame, append(dst, s.arena.Bytes()...), true
}

// checkSource times out the handshake and notices a silent source.
func (s *Spectator) checkSource() {
	switch {
	case s.err != nil || s.stats.SourceLeft:
	case !s.up.verified && s.now-s.born > s.timeout.Handshake:
		s.err = &HandshakeError{Peers: []int{s.src}, Timeout: s.timeout.Handshake, Hints: []string{s.hint()}}
	case s.up.verified && s.now-s.upRecv > s.timeout.Disconnect:
		s.sourceLeft()
	}
	for n := 0; n < len(s.wits) && s.err == nil; n++ {
		switch w := &s.wits[n]; {
		case !w.auth.verified && s.now-s.born > s.timeout.Handshake:
			s.err = &HandshakeError{Peers: []int{w.idx}, Timeout: s.timeout.Handshake, Hints: []string{hint(&w.auth, s.session) + " (a witness)"}}
		case w.auth.verified && s.now-w.recv > s.timeout.Disconnect:
			s.loseWitness(w)
			n--
		}
	}
}

func (s *Spectator) hint() string { return hint(&s.up, s.session) }

// hint says what the address of link a sent that did not count, for a
// handshake's timeout.
func hint(a *peerAuth, session uint64) string {
	switch {
	case a.otherSession != 0:
		return fmt.Sprintf("it sent handshakes for session %#x, ours is %#x", a.otherSession, session)
	case a.authFailed:
		return "its handshakes failed the Secret's check: its Secret differs"
	case !a.heard:
		return "nothing arrived from it"
	}
	return "it answered, but may serve no more spectators (Config.MaxSpectators)"
}

func (s *Spectator) sourceLeft() {
	s.stats.SourceLeft = true
	s.events.emit(EventDisconnected, s.frame, s.src)
}

// Close tells the source and every spectator we relay to that we leave.
// Later calls return ErrClosed. It does not close the Transport.
func (s *Spectator) Close() error {
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	s.now = s.clock()
	if !s.stats.SourceLeft {
		s.bye(s.src, &s.up)
	}
	for n := range s.wits {
		s.bye(s.wits[n].idx, &s.wits[n].auth)
	}
	if s.aud != nil {
		s.aud.close(s.now)
	}
	return nil
}

// bye tells the machine at transport index idx, on link a, that we leave
// (twice, in case the first is lost).
func (s *Spectator) bye(idx int, a *peerAuth) {
	if !a.verified {
		return
	}
	d := wire.Disconnect{Frame: int32(s.frame)}
	for range 2 {
		b, err := wire.AppendControl(a.seal.Begin(s.io.sendBuf[:0], wire.KindDisconnect), &d)
		if err == nil {
			s.transmitTo(idx, a.seal.Seal(b))
		}
	}
}
