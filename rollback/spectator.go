package rollback

import (
	"bytes"
	"compress/flate"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/savestate"
)

// DefaultCatchUp is SpectatorConfig.CatchUp's default: a spectator that is
// behind simulates up to 3 frames a tick, catching up at twice real time.
const DefaultCatchUp = 3

// Errors of a [Spectator].
var (
	// ErrNoSource: the spectated machine did not complete the handshake
	// within HandshakeTimeout. It may not be running, may serve no more
	// spectators (Config.MaxSpectators), or may have another SessionID,
	// Secret, Players or Layout; the error says what was heard.
	ErrNoSource = errors.New("rollback: the spectated machine did not answer")
	// ErrSourceLeft: the spectated machine left or went silent for
	// DisconnectTimeout. The frames already received were played; join
	// again through another machine to go on watching.
	ErrSourceLeft = errors.New("rollback: the spectated machine left")
)

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
	// SessionID and Secret are the match's, as the players have them.
	SessionID uint64
	Secret    []byte
	// Delay is the stream delay: each frame is played no sooner than this
	// after it arrived (against stream sniping). 0: none.
	Delay time.Duration
	// CatchUp is the most frames one Advance simulates while behind; 0
	// means DefaultCatchUp (3).
	CatchUp int
	// MaxSpectators and TransferRate: this spectator relays to up to
	// MaxSpectators further spectators, as a player machine serves them
	// (Config.MaxSpectators), so that many spectators cost a player no
	// more than the ones it serves directly. 0: it relays to none.
	MaxSpectators int
	TransferRate  int
	// Observer, if not nil, is told every frame simulated (sound).
	Observer Observer
	// Clock, Rand, HandshakeTimeout, InterruptTimeout and DisconnectTimeout
	// are as in Config.
	Clock             Clock
	Rand              io.Reader
	HandshakeTimeout  time.Duration
	InterruptTimeout  time.Duration
	DisconnectTimeout time.Duration
}

// SpectatorStats are a [Spectator]'s statistics.
type SpectatorStats struct {
	Frame       Frame // the next frame to simulate
	Received    Frame // one past the newest frame of inputs received
	StateFrame  Frame // the frame of the state it started from (-1 before)
	StateBytes  int   // the compressed state's size
	StatePieces int   // Snap pieces received, repeats included
	// StateTime is from NewSpectator to the state loaded; JoinTime to the
	// first frame simulated.
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
	game    Game
	obs     Observer
	tr      Transport
	src     int
	clock   Clock
	now     time.Duration
	born    time.Duration
	session uint64
	keys    keyring
	up      peerAuth
	upRecv  time.Duration
	timeout struct{ hs, interrupt, disconnect time.Duration }

	frame   Frame
	joined  bool
	feed    feed
	delay   time.Duration
	arrived []time.Duration // when each frame of the feed arrived, by feed slot (with a Delay)
	catchUp int
	snap    snapReceiver
	aud     *audience
	closed  bool
	err     error // ErrNoSource or a *TermsError, once

	events []Event
	stats  SpectatorStats
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
	case cfg.HandshakeTimeout < 0 || cfg.InterruptTimeout < 0 || cfg.DisconnectTimeout < 0:
		return nil, cfgErr("HandshakeTimeout", "negative timeouts")
	}
	if err := cfg.Layout.Check(); err != nil {
		return nil, cfgErr("Layout", "%v", err)
	}
	s := &Spectator{players: cfg.Players, layout: append(wire.Layout(nil), cfg.Layout...), arena: cfg.State,
		game: cfg.Game, obs: cfg.Observer, tr: cfg.Transport, src: cfg.Source, clock: cfg.Clock,
		session: cfg.SessionID, feed: newFeed(cfg.Players), catchUp: orDefault(cfg.CatchUp, DefaultCatchUp),
		delay: cfg.Delay, events: make([]Event, 0, 4)}
	s.format, _ = wire.NewFormat(s.layout) // checked above
	if s.delay > 0 {
		s.arrived = make([]time.Duration, feedFrames)
	}
	if s.clock == nil {
		s.clock = RealClock()
	}
	s.timeout.hs = orDefault(cfg.HandshakeTimeout, defaultHandshakeTimeout)
	s.timeout.interrupt = orDefault(cfg.InterruptTimeout, defaultInterruptTimeout)
	s.timeout.disconnect = orDefault(cfg.DisconnectTimeout, defaultDisconnectTimeout)
	r := cfg.Rand
	if r == nil {
		r = rand.Reader
	}
	// Our terms say only what we know; the source's, adopted from its
	// handshake, are the ones the link's keys bind.
	terms := wire.Terms{Players: cfg.Players, Owners: make([]uint8, cfg.Players), Layout: slices.Clone(s.layout),
		Mode: uint8(RollbackMode), TickRate: DefaultTickRate, ChecksumEvery: -1}
	var err error
	if s.keys, err = newKeyring(r, cfg.Secret, terms); err != nil {
		return nil, err
	}
	s.keys.local = []uint8{}
	s.up.ours = s.keys.nonceFor(linkSource | uint64(s.src))
	s.io.sendBuf, s.io.recvBuf = make([]byte, 0, maxDatagram), make([]byte, maxDatagram+1)
	s.io.pkt.Inputs = make([]uint64, 0, wire.MaxFrames*MaxPlayers)
	s.io.pkt.Gossip = make([]wire.Gossip, 0, MaxPlayers)
	s.now = s.clock.Now()
	s.born, s.upRecv = s.now, s.now
	s.stats.StateFrame = -1
	if cfg.MaxSpectators > 0 {
		s.aud = newAudience(cfg.MaxSpectators, 0, cfg.TransferRate, &s.keys, s.session, s.tr, &s.feed,
			s.timeout.interrupt, s.timeout.disconnect)
	}
	return s, nil
}

// Frame returns the next frame to simulate.
func (s *Spectator) Frame() Frame { return s.frame }

// Stats returns the spectator's statistics.
func (s *Spectator) Stats() SpectatorStats {
	st := s.stats
	st.Frame, st.Received = s.frame, s.feed.high
	if s.aud != nil {
		st.Relayed = s.aud.served()
		st.PacketsSent += s.aud.sent
		st.BytesSent += s.aud.sentBytes
	}
	return st
}

// Advance receives what arrived, simulates the next final frames (one, or
// up to CatchUp while behind, none that arrived less than Delay ago) and sends the acknowledgements. Stalled means no frame was
// simulated (still joining, or waiting for inputs). It returns ErrNoSource
// (or a *TermsError) if the handshake fails and ErrSourceLeft once the
// source has left and every frame received has been played.
func (s *Spectator) Advance() (Result, error) {
	if s.closed {
		return Result{Frame: s.frame, Stalled: true}, ErrClosed
	}
	s.now = s.clock.Now()
	s.events = s.events[:0]
	s.receive()
	r := s.run(noFrame)
	s.send()
	r.Events = s.events
	if s.err == nil && s.stats.SourceLeft && s.frame >= s.feed.high {
		return r, ErrSourceLeft
	}
	return r, s.err
}

// run notices a silent source and simulates the frames due: one, or up
// to CatchUp while behind, none at or after limit.
func (s *Spectator) run(limit Frame) Result {
	s.checkSource()
	r := Result{Frame: s.frame}
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
				s.emit(EventCaughtUp, s.frame, -1)
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
	for f < s.feed.high && s.now-s.arrived[s.feed.slot(f)] >= s.delay {
		f++
	}
	return f
}

// step simulates s.frame with its final inputs.
func (s *Spectator) step() {
	in := s.io.stepIn[:s.players]
	s.feed.inputs(s.frame, in)
	if s.obs != nil {
		s.obs.Simulating(s.frame)
	}
	s.game.Step(s.frame, in)
	if s.stats.JoinTime == 0 {
		s.stats.JoinTime = max(1, s.now-s.born)
	}
	s.frame++
}

func (s *Spectator) emit(k EventKind, f Frame, peer int) {
	s.events = append(s.events, Event{Kind: k, Frame: f, Peer: peer})
}

// emitGuest reports a relayed spectator's arrival or departure (a
// stateSource).
func (s *Spectator) emitGuest(k EventKind, idx int) { s.emit(k, s.frame, idx) }

// joinState offers relayed spectators our live state: every frame we
// simulate is final (a stateSource).
func (s *Spectator) joinState(dst []byte) (Frame, []byte, bool) {
	if !s.joined {
		return 0, dst, false
	}
	return s.frame, append(dst, s.arena.Bytes()...), true
}

// checkSource times out the handshake and notices a silent source.
func (s *Spectator) checkSource() {
	switch {
	case s.err != nil || s.stats.SourceLeft:
	case !s.up.verified && s.now-s.born > s.timeout.hs:
		s.err = fmt.Errorf("%w within %v (%s)", ErrNoSource, s.timeout.hs, s.hint())
	case s.up.verified && s.now-s.upRecv > s.timeout.disconnect:
		s.sourceLeft()
	}
}

func (s *Spectator) hint() string {
	a := &s.up
	switch {
	case a.otherSession != 0:
		return fmt.Sprintf("it sent handshakes for session %#x, ours is %#x", a.otherSession, s.session)
	case a.authFailed:
		return "its handshakes failed the Secret's check: its Secret differs"
	case !a.heard:
		return "nothing arrived from it"
	}
	return "it may serve no more spectators (Config.MaxSpectators)"
}

func (s *Spectator) sourceLeft() {
	s.stats.SourceLeft = true
	s.emit(EventDisconnected, s.frame, s.src)
}

// receive takes every waiting datagram: the source's, and those of the
// spectators we relay to.
func (s *Spectator) receive() {
	s.keys.newCall()
	if s.aud != nil {
		s.aud.newCall()
	}
	judged := 0
	for {
		n, idx, ok := s.tr.Receive(s.io.recvBuf)
		if !ok {
			return
		}
		s.stats.PacketsReceived++
		s.stats.BytesReceived += int64(n)
		taken := false
		switch {
		case n <= 0 || n > maxDatagram:
		case idx != s.src:
			// Not before we have the match's terms from the source: the
			// keys of a link bind them.
			taken = s.aud != nil && s.up.nonce != 0 && s.aud.receive(idx, s.io.recvBuf[:n], s.now, s)
		case judged < peerBudget:
			judged++
			s.up.heard = true
			taken = s.fromSource(s.io.recvBuf[:n])
		}
		if !taken {
			s.stats.PacketsInvalid++
		}
	}
}

// fromSource takes a datagram from the source.
func (s *Spectator) fromSource(b []byte) bool {
	if wire.Kind(b[0]) == wire.KindHandshake {
		return s.handshake(b)
	}
	if s.up.open == nil {
		return false
	}
	body, err := s.up.open.Open(b)
	if err != nil {
		return false
	}
	return s.sealed(b, body)
}

// sealed takes a sealed datagram b from the source, opened: body.
func (s *Spectator) sealed(b, body []byte) bool {
	if !s.up.verified {
		s.up.verified = true
		s.emit(EventConnected, s.frame, s.src)
	}
	s.upRecv = s.now
	switch wire.SealedKind(b) {
	case wire.KindSnap:
		return s.takeSnap(body)
	case wire.KindInput:
		return s.takeFeed(body)
	case wire.KindDisconnect:
		if wire.ParseControl(body, &s.io.d) != nil {
			return false
		}
		if !s.stats.SourceLeft {
			s.sourceLeft()
		}
		return true
	}
	return false
}

// handshake takes the source's handshake: its echo of our nonce pins it,
// and its terms, once Players and Layout agree, are the ones the link's
// keys bind.
func (s *Spectator) handshake(b []byte) bool {
	h, a := &s.io.rxhs, &s.up
	switch s.keys.judge(b, h, s.session, a) {
	case hsAnswer:
		s.sendHandshake(h.Nonce)
		return false
	case hsPin:
	default:
		return false
	}
	var e *TermsError
	switch {
	case h.Version != wire.Version:
		e = &TermsError{Peer: s.src, Field: "protocol version", Ours: fmt.Sprint(wire.Version), Theirs: fmt.Sprint(h.Version)}
	case h.Terms.Players != s.players:
		e = &TermsError{Peer: s.src, Field: "Players", Ours: fmt.Sprint(s.players), Theirs: fmt.Sprint(h.Terms.Players)}
	case !slices.Equal(h.Terms.Layout, s.layout):
		e = &TermsError{Peer: s.src, Field: "Layout", Ours: fmt.Sprint(Layout(s.layout)), Theirs: fmt.Sprint(Layout(h.Terms.Layout))}
	}
	if e != nil {
		if s.err == nil {
			s.err = e
		}
		return false
	}
	s.keys.terms = wire.Terms{Players: h.Terms.Players, Owners: slices.Clone(h.Terms.Owners), Layout: slices.Clone(h.Terms.Layout),
		Mode: h.Terms.Mode, TickRate: h.Terms.TickRate, ChecksumEvery: h.Terms.ChecksumEvery, StartDelay: h.Terms.StartDelay}
	s.keys.digest = s.keys.terms.Digest()
	seal, open, err := s.keys.link(s.session, a.ours, h.Nonce, h.Key)
	if err != nil {
		return false
	}
	a.nonce, a.seal, a.open, a.replyHS, a.keyedAt = h.Nonce, seal, open, true, s.now
	return true
}

func (s *Spectator) sendHandshake(echo uint64) {
	b, err := s.keys.appendHandshake(s.io.sendBuf[:0], &s.io.hs, s.session, s.up.ours, echo)
	if err == nil {
		s.up.sentHS, s.up.lastHS = true, s.now
		s.transmit(b)
	}
}

func (s *Spectator) transmit(b []byte) {
	if s.tr.Send(s.src, b) != nil {
		return
	}
	s.stats.PacketsSent++
	s.stats.BytesSent += int64(len(b))
}

// send sends the source our handshake until it is verified, then a Watch
// every tick; and serves the spectators we relay to.
func (s *Spectator) send() {
	if s.err == nil && !s.stats.SourceLeft {
		if s.up.handshakeDue(s.now) {
			s.sendHandshake(s.up.nonce)
			s.up.replyHS = false
		}
		if s.up.keyed() { // a sealed datagram proves to the source that we hold the keys
			w := &s.io.watch
			*w = wire.Watch{State: -1, Next: -1}
			if s.joined {
				w.State, w.Next = int32(s.stats.StateFrame), int32(s.feed.high)
			} else if s.snap.on {
				w.State, w.Have, w.Mask = int32(s.snap.frame), uint32(s.snap.have), s.snap.mask()
			}
			b, err := wire.AppendControl(s.up.seal.Begin(s.io.sendBuf[:0], wire.KindWatch), w)
			if err == nil {
				s.transmit(s.up.seal.Seal(b))
			}
		}
	}
	if s.aud != nil {
		s.aud.send(s.now, s)
	}
}

// takeFeed takes a packet of final inputs from the source: the frames
// that extend those we have, up to feedFrames past the one we simulate
// next.
func (s *Spectator) takeFeed(body []byte) bool {
	if !s.joined {
		return true // it is ahead of our state; it repeats
	}
	h, err := wire.PeekInput(body, int32(s.feed.high))
	if err != nil {
		return false
	}
	first := Frame(h.First)
	if first > s.feed.high || Frame(h.End) <= s.feed.high || first < s.stats.StateFrame {
		return true // a gap, or nothing new
	}
	pkt := &s.io.pkt
	pkt.Base = nil
	if first > s.stats.StateFrame {
		if !s.feed.has(first - 1) {
			return true
		}
		for p := range s.players {
			s.io.base[p] = uint64(s.feed.input(first-1, p))
		}
		pkt.Base = s.io.base[:s.players]
	}
	if s.format.ParseInput(body, int32(s.feed.high), s.players, s.players, pkt) != nil {
		return false
	}
	var mask uint8
	for p, g := range pkt.Gossip {
		if g.Disconnected {
			mask |= 1 << p
		}
	}
	for f := s.feed.high; f < Frame(pkt.End()) && f < s.frame+feedFrames; f++ {
		if s.arrived != nil {
			s.arrived[s.feed.slot(f)] = s.now
		}
		s.feed.addRaw(pkt.Inputs[int(f-first)*s.players:], mask)
	}
	return true
}

// snapReceiver gathers the pieces of the state we join at.
type snapReceiver struct {
	on        bool
	frame     Frame
	size, sum uint64
	data      []byte
	got       []bool
	have      int // pieces held from the first on
	missing   int
}

// mask returns which of the 64 pieces after the first missing one we hold.
func (r *snapReceiver) mask() uint64 {
	var m uint64
	for d := range 64 {
		if n := r.have + d; n < len(r.got) && r.got[n] {
			m |= 1 << d
		}
	}
	return m
}

// takeSnap takes a piece of the state; the last one loads it.
func (s *Spectator) takeSnap(body []byte) bool {
	m := &s.io.snap
	if wire.ParseControl(body, m) != nil {
		return false
	}
	if s.joined {
		return true
	}
	total := int(m.Total)
	pieces := (total + wire.MaxSnapData - 1) / wire.MaxSnapData
	if int(m.Size) > s.arena.Size() || total > maxCompressed(s.arena.Size()) || int(m.Piece) >= pieces ||
		len(m.Data) != min(wire.MaxSnapData, total-int(m.Piece)*wire.MaxSnapData) {
		return false
	}
	r := &s.snap
	if !r.on || r.frame != Frame(m.Frame) || len(r.data) != total || r.size != uint64(m.Size) || r.sum != m.Sum {
		// The first piece, or a newer offer: start again.
		*r = snapReceiver{on: true, frame: Frame(m.Frame), size: uint64(m.Size), sum: m.Sum,
			data: slices.Grow(r.data[:0], total)[:total], got: make([]bool, pieces), missing: pieces}
	}
	s.stats.StatePieces++
	if r.got[m.Piece] {
		return true
	}
	r.got[m.Piece] = true
	r.missing--
	copy(r.data[int(m.Piece)*wire.MaxSnapData:], m.Data)
	for r.have < pieces && r.got[r.have] {
		r.have++
	}
	if r.missing > 0 {
		return true
	}
	state, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(r.data)), int64(r.size)+1))
	if err != nil || uint64(len(state)) != r.size || xxhash.Sum64(state) != r.sum || s.arena.Load(state) != nil {
		// Not a state of this game, or corrupt: ask for one again.
		r.on = false
		return false
	}
	s.joined, s.frame = true, r.frame
	s.feed.reset(r.frame)
	s.stats.StateFrame, s.stats.StateBytes, s.stats.StateTime = r.frame, total, max(1, s.now-s.born)
	r.data, r.got = nil, nil
	s.emit(EventJoined, s.frame, s.src)
	return true
}

// Close tells the source and every spectator we relay to that we leave.
// Later calls return ErrClosed. It does not close the Transport.
func (s *Spectator) Close() error {
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	s.now = s.clock.Now()
	if s.up.verified && !s.stats.SourceLeft {
		d := wire.Disconnect{Frame: int32(s.frame)}
		for range 2 {
			b, err := wire.AppendControl(s.up.seal.Begin(s.io.sendBuf[:0], wire.KindDisconnect), &d)
			if err == nil {
				s.transmit(s.up.seal.Seal(b))
			}
		}
	}
	if s.aud != nil {
		s.aud.close(s.now)
	}
	return nil
}
