package rollback

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/advantage"
	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/inputlag"
	"github.com/rewindgg/rewind/predict"
	"github.com/rewindgg/rewind/rollback/wire"
	"github.com/rewindgg/rewind/savestate"
)

// Errors returned by a [Session].
var (
	ErrNotLocal          = errors.New("rollback: player is not local")
	ErrInputAlreadyAdded = errors.New("rollback: input already added for this frame")
	ErrInputRange        = errors.New("rollback: input has bits outside the layout")
	ErrNoLocalInput      = errors.New("rollback: local input missing for the frame to simulate")
	ErrSnapshot          = errors.New("rollback: no usable snapshot")
)

// SyncTestError reports that re-simulating a frame in sync-test mode gave a
// different arena than the first simulation: the game is not deterministic,
// or keeps state outside the arena.
type SyncTestError struct {
	Frame Frame  // the frame whose Step produced different states
	Want  uint64 // checksum of the arena after the first simulation
	Got   uint64 // checksum after the re-simulation
}

func (e *SyncTestError) Error() string {
	return fmt.Sprintf("rollback: sync test: frame %d re-simulated to checksum %016x, first simulated to %016x", e.Frame, e.Got, e.Want)
}

// ringSize is how many frames of inputs the session keeps. It is a power of
// two larger than any window a healthy match needs (2×MaxMaxRollback +
// 2×MaxInputDelay plus slack); a peer that would push past it is stalled on
// or ignored, never allowed to overwrite what is still needed.
const ringSize = 256

// fullResendFor is how long a peer gets every unacknowledged frame in
// every packet after a loss burst outran the redundancy window.
const fullResendFor = 10 * time.Second

// lostMargin is added to a round trip (and a quarter) before a frame the
// peer still wants counts as lost: two frames at 60 Hz.
const lostMargin = 35 * time.Millisecond

// gossipCountEvery: input packets carry the counts of third machines'
// frames in one packet of this many.
const gossipCountEvery = 4

// lockstepResend is the shortest interval between two lockstep input
// packets to a peer that carry no new input: under a 60 Hz frame.
const lockstepResend = 15 * time.Millisecond

// maxDatagram is the largest packet the session sends, safely under the
// internet's usual 1280-byte IPv6 minimum MTU.
const maxDatagram = 1200

type backup struct {
	frame Frame
	valid bool
}

// Session is a rollback netcode session: a state machine that the game loop
// drives once per frame. See the package documentation for the loop.
// A Session is not safe for concurrent use.
type Session struct {
	players  int
	local    []PlayerID
	isLocal  [MaxPlayers]bool
	owner    [MaxPlayers]int // peer index of a remote player
	peers    []peerState
	layout   Layout
	mask     uint64
	arena    *savestate.Arena
	game     Game
	obs      Observer
	tr       Transport
	pred     predict.Predictor
	maxRB    int
	delay    int
	policy   SnapshotPolicy
	syncTest bool
	forced   int   // depth of the rollback forced every frame (sync test, constant cost); 0 for none
	interval Frame // two backups: save the present when the newest snapshot is this old

	lockstep  bool
	snapshots bool          // rollback mode, or lockstep with a disconnect cut to undo (3+ machines)
	tick      time.Duration // lockstep: the simulation period
	playout   time.Duration // lockstep: the playout delay
	startedAt time.Duration // when the match started: lockstep input ticks count from here
	playFrom  time.Duration // lockstep: when frame 0 is due; -1 until every peer's first input arrived

	frame   Frame // the next frame to simulate
	present Frame // the frame a re-simulation catches up to
	resim   bool  // a rollback is re-simulating
	next    [MaxPlayers]Frame
	last    [MaxPlayers]Input // each remote player's last confirmed input
	inputs  [ringSize][MaxPlayers]Input
	used    [ringSize][MaxPlayers]Input
	backups [savestate.Slots]backup

	checksums [ringSize]uint64 // sync test: arena checksum at the start of each frame
	sumHigh   Frame            // sync test: the newest frame whose checksum is recorded
	syncErr   *SyncTestError

	starved bool

	rec      Recorder
	log      slog.Handler
	recIn    [MaxPlayers]PlayerInput
	recorded Frame // frames before this have been given to rec

	det       *desync.Detector
	sumEvery  Frame
	sumData   func([]byte) []byte
	sumBuf    []byte
	points    [checkpoints]checkpoint // the states at the latest checksum frames
	desyncErr *desync.Error
	ex        *exchange

	tracker    *advantage.Tracker
	lagFixed   bool
	smoothing  bool
	stallQueue int
	sinceStall int
	lagStalls  int                     // frames still to stall for a raised input lag
	catchUp    int                     // frames still to simulate at once for a lowered input lag
	stepNext   bool                    // a forced rollback is followed at once by a simulated frame
	stallsSeen int64                   // stalled frames (all reasons) at the last window's end
	sentAt     [ringSize]time.Duration // when each local frame was first sent
	sentHigh   Frame                   // frames below this have a sentAt
	drift      float64                 // estimated frames of drift per window (smoothed)
	lastAdv    float64
	windows    int
	driftEvery float64 // frames between paced drift stalls; 0 for none
	sinceDrift float64

	clock           Clock
	now             time.Duration
	sessionID       uint64
	nonce           uint32
	started         bool
	closed          bool
	hsStart         time.Duration
	hsTimeout       time.Duration
	interruptAfter  time.Duration
	disconnectAfter time.Duration
	qualityEvery    time.Duration
	redundant       int
	discFrom        [MaxPlayers]Frame // a disconnected player's inputs from this frame on are the default
	ctl             *wire.ControlCodec
	hs              wire.Handshake
	q               wire.Quality
	qr              wire.QualityReply
	rx              struct { // scratch for received control messages
		hs    wire.Handshake
		q     wire.Quality
		qr    wire.QualityReply
		d     wire.Disconnect
		ready wire.Ready
		start wire.Start
		gomsg wire.Go
		sum   wire.Checksum
		state wire.State
	}
	tx struct { // scratch for sent start messages
		ready wire.Ready
		start wire.Start
		gomsg wire.Go
		sum   wire.Checksum
		state wire.State
	}
	noStartDelay bool
	machine      int // our index among the machines, by lowest PlayerID
	hostPeer     int // the host's peer index; -1 when we are the host
	mesh         [][]time.Duration
	meshKnown    bool
	startAt      time.Duration // -1 until known

	stepIn  [MaxPlayers]PlayerInput
	pkt     wire.InputPacket
	sendBuf []byte
	recvBuf []byte
	base    [MaxPlayers]uint64
	gossip  []wire.Gossip
	events  []Event
	stats   Stats
}

// NewSession validates cfg and returns a session at frame 0. It takes the
// first snapshot of cfg.State, so the game must have allocated and
// initialised its state first.
func NewSession(cfg Config) (*Session, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Session{
		players: cfg.Players,
		local:   sortedPlayers(cfg.Local),
		layout:  append(Layout(nil), cfg.Layout...),
		mask:    cfg.Layout.Mask(),
		arena:   cfg.State,
		game:    cfg.Game,
		obs:     cfg.Observer,
		tr:      cfg.Transport,
		pred:    cfg.Predictor,
		maxRB:   cfg.maxRollback(),
		delay:   cfg.InputDelay,
		policy:  cfg.Snapshots,
		sendBuf: make([]byte, 0, maxDatagram),
		recvBuf: make([]byte, maxDatagram+1),
		events:  make([]Event, 0, 2*len(cfg.Peers)+2),
		pkt:     wire.InputPacket{Inputs: make([]uint64, 0, wire.MaxFrames*wire.MaxPlayers)},
	}
	if s.pred == nil {
		s.pred = predict.RepeatLast{}
	}
	s.ctl = wire.NewControlCodec()
	s.tracker = advantage.NewTracker(len(cfg.Peers))
	s.lagFixed = cfg.FixedInputLag || len(cfg.Peers) == 0
	s.smoothing = !cfg.NoFrameAdvantage && len(cfg.Peers) > 0
	s.clock = cfg.Clock
	if s.clock == nil {
		s.clock = RealClock()
	}
	s.sessionID = cfg.SessionID
	s.hsTimeout = orDefault(cfg.HandshakeTimeout, DefaultHandshakeTimeout)
	s.interruptAfter = orDefault(cfg.InterruptTimeout, DefaultInterruptTimeout)
	s.disconnectAfter = orDefault(cfg.DisconnectTimeout, DefaultDisconnectTimeout)
	s.qualityEvery = orDefault(cfg.QualityInterval, DefaultQualityInterval)
	s.redundant = orDefault(cfg.RedundantFrames, DefaultRedundantFrames)
	for p := range s.discFrom {
		s.discFrom[p] = noFrame
	}
	s.hsStart = s.clock.Now()
	s.started = len(cfg.Peers) == 0
	if !s.started {
		r := cfg.Rand
		if r == nil {
			r = rand.Reader
		}
		var err error
		if s.nonce, err = readNonce(r); err != nil {
			return nil, err
		}
	}
	if s.policy == 0 {
		s.policy = TwoBackups
	}
	s.interval = Frame(s.maxRB)
	s.snapshots = true
	s.playFrom = -1
	if cfg.Mode == LockstepMode {
		// Lockstep never predicts, so it never rolls back during play. With
		// three or more machines a machine that leaves is cut at the fewest
		// of its frames any remaining machine has (docs/protocol.md), which
		// can be before frames we simulated: only then are snapshots kept,
		// by the same policy, to undo the frames after the cut.
		s.lockstep, s.maxRB, s.interval = true, 0, DefaultMaxRollback
		s.snapshots = len(cfg.Peers) >= 2
		s.lagFixed, s.smoothing = true, false
		s.tick = time.Second / time.Duration(orDefault(cfg.TickRate, DefaultTickRate))
		s.playout = max(0, orDefault(cfg.PlayoutDelay, DefaultPlayoutDelay))
		if cfg.RedundantFrames == 0 {
			// Gaffer: every unacknowledged input in every packet. A lockstep
			// peer cannot predict past a lost frame, so the repair must not
			// wait for the acknowledgement to stall; on a short link it is
			// no more than the newest few frames anyway.
			s.redundant = -1
		}
	}
	switch {
	case cfg.SyncTest > 0:
		s.syncTest, s.forced = true, cfg.SyncTest
	case s.policy == ConstantCost:
		s.forced = s.maxRB
	}
	for _, p := range s.local {
		s.isLocal[p] = true
		s.next[p] = Frame(s.delay) // frames before the delay run on the zero input
	}
	for i, peer := range cfg.Peers {
		ps := sortedPlayers(peer.Players)
		for _, p := range ps {
			s.owner[p] = i
		}
		s.peers = append(s.peers, peerState{players: ps, id: ps[0], lastRecv: s.hsStart, ackAt: s.hsStart, winStart: s.hsStart, firstInput: -1})
	}
	for i := range s.peers {
		for j := range s.peers {
			if j != i {
				s.peers[i].gossipOrder = append(s.peers[i].gossipOrder, j)
			}
		}
		slices.SortFunc(s.peers[i].gossipOrder, func(a, b int) int { return int(s.peers[a].id - s.peers[b].id) })
	}
	s.gossip = make([]wire.Gossip, 0, MaxPlayers)
	s.noStartDelay = cfg.NoStartDelay || cfg.NoFrameAdvantage
	s.startAt = -1
	// Machines are ordered by their lowest player; the host is the first.
	s.hostPeer = -1
	for i := range s.peers {
		for j := range s.peers {
			if s.peers[j].id < s.peers[i].id {
				s.peers[i].machine++
			}
		}
		if s.local[0] < s.peers[i].id {
			s.peers[i].machine++
		}
		if s.peers[i].id < s.local[0] {
			s.machine++
			if s.hostPeer < 0 || s.peers[i].id < s.peers[s.hostPeer].id {
				s.hostPeer = i
			}
		}
	}
	s.pkt.Gossip = make([]wire.Gossip, 0, MaxPlayers)
	s.rec = cfg.Recorder
	if cfg.Log != nil && cfg.Log.Enabled(context.Background(), slog.LevelDebug) {
		s.log = cfg.Log
	}
	if cfg.ChecksumEvery >= 0 && (len(s.peers) > 0 || s.rec != nil) {
		s.sumEvery = Frame(orDefault(cfg.ChecksumEvery, desync.DefaultEvery))
		s.sumData = cfg.ChecksumData
		if len(s.peers) > 0 {
			s.det = desync.NewDetector(len(s.peers))
		}
	}
	if s.snapshots {
		if err := s.save(0, 0); err != nil {
			return nil, err
		}
	}
	s.startedAt = s.hsStart
	s.checksums[0] = s.checksum()
	if s.rec != nil {
		s.rec.Begin(MatchInfo{Players: s.players, Layout: append(Layout(nil), s.layout...), SessionID: s.sessionID,
			ChecksumEvery: int(s.sumEvery), GameChecksum: s.sumData != nil})
	}
	return s, nil
}

// Frame returns the next frame to be simulated, which is also the number of
// frames simulated so far.
func (s *Session) Frame() Frame { return s.frame }

// ConfirmedFrame returns the first frame whose inputs are not all confirmed.
// The arena state at the start of any earlier frame is final.
func (s *Session) ConfirmedFrame() Frame {
	c := s.next[s.local[0]]
	for p := range s.players {
		if s.discFrom[p] == noFrame {
			c = min(c, s.next[p])
		}
	}
	return c
}

// noFrame marks a player who has not disconnected.
const noFrame = Frame(1<<31 - 1)

// Stats returns the session's statistics. It does not allocate.
func (s *Session) Stats() Stats {
	st := s.stats
	st.Frame, st.ConfirmedFrame = s.frame, s.ConfirmedFrame()
	st.InputLag, st.Advantage, st.QueuedStalls = s.delay, s.tracker.Last(), s.stallQueue
	return st
}

// InputFrame returns the frame that local player p's next input will be
// used for: the frame the next Advance simulates plus the input lag.
func (s *Session) InputFrame(p PlayerID) Frame {
	if p < 0 || int(p) >= s.players {
		return -1
	}
	return s.next[p]
}

// AddLocalInput queues in as local player p's input for the frame the next
// [Session.Advance] simulates plus the input lag ([Session.InputFrame]).
// Offer every local player's input once per tick, before Advance. When the
// session has no room for it — the last Advance stalled for a missing peer
// or for frame advantage, so this tick's frame already has its input — it
// returns [ErrInputAlreadyAdded]: drop that sample, it is not an error.
// While the session raises its input lag it stalls but still takes input.
//
// In lockstep mode the session takes one input per tick of its own clock
// (Config.TickRate, counted from the start of the match), whatever the
// simulation is doing, and returns ErrInputAlreadyAdded until the next is
// due or while its input ring is full: keep the sample (an RTS keeps its
// commands) and offer it again next render frame. Call it until it returns
// ErrInputAlreadyAdded: after a slow render frame more than one is due.
func (s *Session) AddLocalInput(p PlayerID, in Input) error {
	if p < 0 || int(p) >= s.players || !s.isLocal[p] {
		return fmt.Errorf("%w: %d", ErrNotLocal, p)
	}
	if uint64(in)&^s.mask != 0 {
		return fmt.Errorf("%w: %#x (layout mask %#x)", ErrInputRange, uint64(in), s.mask)
	}
	if s.lockstep {
		if !s.inputDue(p) {
			return ErrInputAlreadyAdded // the common case between ticks: no allocation
		}
	} else if s.next[p] > s.frame+Frame(s.delay) {
		return fmt.Errorf("%w: player %d, frame %d", ErrInputAlreadyAdded, p, s.next[p]-1)
	}
	s.inputs[ring(s.next[p])][p] = in
	s.next[p]++
	return nil
}

// Advance runs one frame of the protocol: it receives every waiting packet,
// rolls back and re-simulates if a prediction was wrong, simulates the next
// frame (unless it must stall) and sends the local inputs to every peer.
// Every local player's input for the frame must have been added. Until the
// handshake with every peer is complete, Advance only handshakes and
// reports Stalled; it returns a [*HandshakeError] if that takes longer than
// Config.HandshakeTimeout.
//
// In lockstep mode Advance is called once per render frame instead: it
// simulates every frame the playout schedule has made due whose inputs are
// all here, up to LockstepCatchUp of them, and no local input is required
// (see the package documentation).
//
// Advance allocates nothing in steady state, rollbacks included.
func (s *Session) Advance() (Result, error) {
	if s.closed {
		return Result{Frame: s.frame}, ErrClosed
	}
	if s.desyncErr != nil {
		return s.Idle()
	}
	if s.lockstep {
		return s.advanceLockstep()
	}
	if !s.hasLocalInput() && s.lagStalls == 0 {
		return Result{Frame: s.frame}, fmt.Errorf("%w: frame %d", ErrNoLocalInput, s.frame)
	}
	r := Result{Frame: s.frame}
	mis, err := s.poll()
	if err != nil || !s.started {
		s.send()
		r.Stalled, r.Events = true, s.events
		return r, err
	}
	// Forced modes roll back on every simulated frame, just before it (that
	// covers any misprediction too); never on a stalled tick, whose forced
	// rollback would reach a frame the anchor has already moved past.
	if s.forced == 0 && mis < s.frame {
		n, err := s.rollback(mis)
		r.Resimulated = n
		if err != nil {
			r.Events = s.events
			return r, err
		}
	}
	if peer, ok := s.mustStall(); ok {
		s.stats.StallFrames++
		s.starve(peer)
		s.send()
		r.Stalled, r.Events = true, s.events
		return r, nil
	}
	s.resume()
	if s.lagStalls > 0 {
		s.lagStalls--
		s.stats.LagStalls++
		s.send()
		r.Stalled, r.Events = true, s.events
		return r, nil
	}
	if s.stallQueue > 0 {
		s.sinceStall++
		if s.sinceStall >= advantage.StallPeriod(s.stallQueue) {
			s.stallQueue--
			s.sinceStall = 0
			s.stats.AdvantageStalls++
			s.send()
			r.Stalled, r.Events = true, s.events
			return r, nil
		}
	}
	if m := max(0, s.frame-Frame(s.forced)); s.forced > 0 && m < s.frame {
		s.stepNext = true
		n, err := s.rollback(m)
		s.stepNext = false
		r.Resimulated = n
		if err != nil {
			r.Events = s.events
			return r, err
		}
	}
	s.play()
	for s.catchUp > 0 && s.hasLocalInput() {
		if _, stall := s.mustStall(); stall {
			break
		}
		s.catchUp--
		s.play()
	}
	return s.endTick(r)
}

// endTick ends an Advance that got past the handshake: it gives the
// Recorder what became final, compares checksums, sends, and returns r
// with the events and any sync-test or desync error.
func (s *Session) endTick(r Result) (Result, error) {
	s.record()
	s.checkDesync()
	s.send()
	r.Events = s.events
	if s.syncErr != nil {
		return r, s.syncErr
	}
	if s.desyncErr != nil {
		return r, s.desyncErr
	}
	return r, nil
}

// starve notes that the session waits for peer's input (-1: a local
// player's), with EventStarved when it starts waiting.
func (s *Session) starve(peer int) {
	if !s.starved {
		s.starved = true
		s.events = append(s.events, Event{Kind: EventStarved, Frame: s.frame, Peer: peer})
	}
}

// resume notes that the session advances again, with EventResumed after a
// wait.
func (s *Session) resume() {
	if s.starved {
		s.starved = false
		s.events = append(s.events, Event{Kind: EventResumed, Frame: s.frame, Peer: -1})
	}
}

// play simulates the next frame during play (not a re-simulation) and
// runs the 100-frame evaluations of frame advantage and input lag.
func (s *Session) play() {
	s.step()
	s.stats.LagFrames[min(s.delay, MaxInputLagHistogram-1)]++
	if s.smoothing {
		s.paceDrift()
	}
	adv, ok := s.tracker.Frame()
	if !ok {
		return
	}
	if s.smoothing {
		s.stallQueue += advantage.StallFrames(adv) + s.driftStalls(adv)
	}
	if s.lagFixed {
		return
	}
	next := inputlag.Next(s.delay, s.tracker.LastLocalLag())
	switch {
	case next > s.delay:
		s.lagStalls += next - s.delay
	case next < s.delay:
		s.catchUp += s.delay - next
	default:
		return
	}
	s.delay = next
	s.events = append(s.events, Event{Kind: EventInputLagChanged, Frame: s.frame, Peer: -1, Lag: next})
}

// driftStalls is Rewind's rate term on top of the article's stalls: the
// article stalls the average advantage of the last window, so a steady
// drift (a peer whose clock runs slow) leaves a standing lead of one
// window's drift. The drift per window is estimated as the stalls taken in
// the window plus half the change in advantage, smoothed over about four
// windows; its whole frames are stalled in advance. With no drift it adds
// nothing.
func (s *Session) driftStalls(adv float64) int {
	// Every frame not simulated gives frames back, whatever the reason.
	all := s.stats.AdvantageStalls + s.stats.StallFrames + s.stats.LagStalls
	taken := all - s.stallsSeen
	s.stallsSeen = all
	if s.windows > 0 {
		sample := float64(taken) + (adv-s.lastAdv)/2
		s.drift += (sample - s.drift) / 4
	}
	s.windows++
	s.lastAdv = adv
	if s.drift < 1 {
		s.driftEvery = 0
		return 0
	}
	// The drift itself is stalled evenly through the next window (see
	// paceDrift), not all at its start. Under a sustained drift the article's
	// dead zone (no stall below 0.75 simulation frames) would leave the lead
	// anywhere inside it: take it from a quarter of a frame instead.
	s.driftEvery = float64(advantage.Window) / min(s.drift, maxDriftStalls)
	if sim := adv / 2; sim >= driftDeadZone && advantage.StallFrames(adv) == 0 {
		return 1
	}
	return 0
}

// paceDrift queues one drift stall every driftEvery simulated frames.
func (s *Session) paceDrift() {
	if s.driftEvery <= 0 {
		return
	}
	s.sinceDrift++
	if s.sinceDrift >= s.driftEvery {
		s.sinceDrift -= s.driftEvery
		s.stallQueue++
	}
}

// driftDeadZone is the simulation advantage stalled under a sustained drift.
const driftDeadZone = 0.25

// maxDriftStalls caps the rate term: 5 frames a window is a clock 5% slow.
const maxDriftStalls = 5

// hasLocalInput reports whether every local player's input for s.frame is
// queued.
func (s *Session) hasLocalInput() bool {
	for _, p := range s.local {
		if s.next[p] <= s.frame {
			return false
		}
	}
	return true
}

// Idle receives, corrects and sends like [Session.Advance] but simulates no
// new frame. Call it instead of Advance while the game is paused or waiting
// for the peers to finish, so that they still get our inputs and acks.
func (s *Session) Idle() (Result, error) {
	if s.closed {
		return Result{Frame: s.frame, Stalled: true}, ErrClosed
	}
	r := Result{Frame: s.frame, Stalled: true}
	mis, err := s.poll()
	if err == nil && s.started && mis < s.frame && s.desyncErr == nil {
		r.Resimulated, err = s.rollback(mis)
	}
	s.record()
	s.checkDesync()
	s.send()
	r.Events = s.events
	if err == nil && s.desyncErr != nil {
		err = s.desyncErr
	}
	return r, err
}

// poll reads the clock, drains the transport and updates the protocol
// state. It returns the first frame to re-simulate.
func (s *Session) poll() (Frame, error) {
	s.now = s.clock.Now()
	s.events = s.events[:0]
	mis := s.receive()
	mis = min(mis, s.checkLiveness())
	s.rollWindows()
	return mis, s.handshakeStep()
}

// mustStall reports whether simulating s.frame would let a future rollback
// reach back further than MaxRollback, or would overwrite inputs the session
// still needs, and names the peer to blame.
func (s *Session) mustStall() (int, bool) {
	for p := range s.players {
		if s.isLocal[p] || s.discFrom[p] != noFrame {
			continue
		}
		if s.frame-s.next[p] >= Frame(s.maxRB) {
			return s.owner[p], true
		}
	}
	if s.frame+Frame(s.delay)+1-s.ringLow() >= ringSize {
		// A peer that stopped acknowledging, or a snapshot that cannot move
		// on: never overwrite inputs that may still be read.
		for i := range s.peers {
			if !s.peers[i].disc && s.peers[i].ack == s.ringLow() {
				return i, true
			}
		}
		return 0, true
	}
	return 0, false
}

// ringLow returns the oldest frame whose inputs the session may still read.
func (s *Session) ringLow() Frame {
	// The next frame to simulate counts too: in lockstep every input of
	// frames far ahead of it can be here (confirmed), waiting their turn.
	low := min(s.frame, s.ConfirmedFrame(), s.anchor())
	for _, b := range s.backups {
		if b.valid {
			low = min(low, b.frame)
		}
	}
	for i := range s.peers {
		if !s.peers[i].disc {
			low = min(low, s.peers[i].ack)
		}
	}
	if s.rec != nil {
		low = min(low, s.recorded) // frames not yet given to the Recorder
	}
	return low
}

// record gives the Recorder every frame that has become final: simulated,
// and before the anchor, so that no rollback can change its inputs.
func (s *Session) record() {
	if (s.rec == nil && s.log == nil) || s.recorded >= s.frame {
		return
	}
	end := min(s.anchor(), s.frame)
	if s.log != nil && end > s.recorded {
		s.logf(logFinal, slog.Int("to", int(end)))
	}
	if s.rec == nil {
		s.recorded = max(s.recorded, end)
		return
	}
	for ; s.recorded < end; s.recorded++ {
		f := s.recorded
		in := &s.inputs[ring(f)]
		for p := range s.players {
			if f >= s.discFrom[p] {
				s.recIn[p] = PlayerInput{Status: Disconnected}
			} else {
				s.recIn[p] = PlayerInput{Input: in[p], Status: Confirmed}
			}
		}
		s.rec.Confirmed(f, s.recIn[:s.players])
	}
}

// receive processes every waiting packet and returns the first frame whose
// newly confirmed input differs from the one it was simulated with, or
// s.frame when there is none.
func (s *Session) receive() Frame {
	mis := s.frame
	if s.tr == nil {
		return mis
	}
	for {
		n, peer, ok := s.tr.Receive(s.recvBuf)
		if !ok {
			return mis
		}
		s.stats.PacketsReceived++
		s.stats.BytesReceived += int64(n)
		if peer < 0 || peer >= len(s.peers) {
			s.stats.PacketsInvalid++
			continue
		}
		valid := false
		switch {
		case n == 0 || n > maxDatagram:
		case wire.Kind(s.recvBuf[0]) == wire.KindInput:
			var f Frame
			f, valid = s.handleInput(peer, s.recvBuf[:n])
			mis = min(mis, f)
		default:
			valid = s.handleControl(peer, s.recvBuf[:n])
		}
		if valid {
			s.heard(peer, n)
		} else {
			s.stats.PacketsInvalid++
			s.peers[peer].st.PacketsDropped++
		}
	}
}

func (s *Session) handleInput(peer int, b []byte) (mis Frame, ok bool) {
	mis = s.frame
	ps := &s.peers[peer]
	h, err := wire.PeekInput(b)
	if err != nil || ps.nonce == 0 || h.Tag != ps.tag {
		return mis, false // malformed, or not from this session
	}
	s.verify(peer)   // the tag proves it saw our nonce
	ps.goSeen = true // and inputs prove it has started
	if ps.disc {
		return mis, true // it left; what it still sends no longer counts
	}
	// It cannot want a frame of ours that we have not yet added.
	localNext := s.next[s.local[0]]
	if Frame(h.Ack) > localNext {
		return mis, false
	}
	if Frame(h.Ack) > ps.ack {
		ps.ack, ps.ackAt = Frame(h.Ack), s.now
	}
	want := s.next[ps.players[0]]
	defer func() {
		// remoteFrameLag, in simulation frames: how many of our frames it is
		// predicting (its next frame minus the next of our frames it lacks),
		// both taken back by the input lags.
		lag := Frame(h.End-h.Ack) - Frame(ps.lag) + Frame(s.delay)
		ps.st.RemoteFrameLag = lag
		s.tracker.Remote(peer, int(lag))
	}()
	ps.st.FramesBehind = localNext - Frame(h.End)
	// The first frame is delta-coded against our copy of the frame before
	// it; without it (a gap, or a frame the ring no longer holds) only the
	// acknowledgement is usable.
	first := Frame(h.First)
	if first > want || (first > 0 && first-1 < want-ringSize) {
		return mis, true
	}
	s.pkt.Base = nil
	if first > 0 {
		for j, p := range ps.players {
			s.base[j] = uint64(s.inputs[ring(first-1)][p])
		}
		s.pkt.Base = s.base[:len(ps.players)]
	}
	if err := wire.ParseInput(b, s.layout, len(ps.players), len(ps.gossipOrder), &s.pkt); err != nil {
		return mis, false
	}
	ps.lag = s.pkt.Lag
	limit := s.ringLow() + ringSize
	for i := range s.pkt.Count {
		f := first + Frame(i)
		if f < want {
			continue // already have it
		}
		if f >= limit {
			if s.lockstep {
				break // a lockstep peer's inputs run on its clock: take the rest when there is room
			}
			return mis, false // further ahead than any honest peer can be
		}
		slot := ring(f)
		for j, p := range ps.players {
			in := Input(s.pkt.Inputs[i*len(ps.players)+j])
			if in&^Input(s.mask) != 0 {
				return mis, false
			}
			s.inputs[slot][p] = in
			s.last[p] = in
			s.next[p] = f + 1
			if f < s.frame && s.used[slot][p] != in {
				mis = min(mis, f)
			}
		}
	}
	if ps.firstInput < 0 && s.next[ps.players[0]] > 0 {
		ps.firstInput = s.now
	}
	s.handleGossip(peer, s.pkt.Gossip)
	if s.log != nil && s.next[ps.players[0]] > want {
		n := int(s.next[ps.players[0]] - want)
		skip := int(want-first) * len(ps.players)
		s.logf(logRecv, slog.Int("peer", peer), slog.Int("first", int(want)), slog.Int("n", n), slog.Int("ack", int(h.Ack)),
			slog.Any("in", slices.Clone(s.pkt.Inputs[skip:skip+n*len(ps.players)])))
	}
	return mis, true
}

// rollback restores the newest usable snapshot not after frame mis and
// re-simulates up to the present. It returns the frames simulated again.
//
// When that snapshot is older than the anchor frame (see maybeSave), it is
// first stepped forward inside its own region to the anchor, with inputs
// that are all confirmed: the snapshot ends at the anchor frame, ready for
// the next rollback, without a second copy of the arena.
func (s *Session) rollback(mis Frame) (int, error) {
	for i, b := range s.backups {
		if b.valid && b.frame > mis {
			s.backups[i].valid = false
		}
	}
	slot := -1
	for i, b := range s.backups {
		if b.valid && b.frame <= mis && (slot < 0 || b.frame > s.backups[slot].frame) {
			slot = i
		}
	}
	if slot < 0 {
		// Unreachable while the invariants hold; never panic on it.
		return 0, fmt.Errorf("%w: mispredicted frame %d (frame %d, confirmed %d, snapshots %+v)", ErrSnapshot, mis, s.frame, s.ConfirmedFrame(), s.backups)
	}
	target, from := s.frame, s.backups[slot].frame
	s.present, s.resim = target, true
	defer func() { s.resim = false }()
	if to := s.anchor(); to > from {
		if err := s.advanceSnapshot(slot, min(to, target)); err != nil {
			return 0, err
		}
	}
	if err := s.arena.Restore(slot); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	if s.log != nil {
		s.logf(logRestore, slog.Int("slot", slot), slog.Int("frame", int(s.backups[slot].frame)), slog.Int("mis", int(mis)), slog.Int("to", int(target)))
	}
	s.frame = s.backups[slot].frame
	if s.frame <= s.anchor() {
		for i, b := range s.backups {
			if i != slot && b.frame < s.frame {
				s.backups[i].valid = false // superseded: no rollback can need it
			}
		}
	}
	for s.frame < target {
		s.step()
	}
	n := int(target - from)
	s.stats.Rollbacks++
	s.stats.MaxRollbackFrames = max(s.stats.MaxRollbackFrames, int(target-mis))
	s.stats.ResimulatedFrames += int64(n)
	s.stats.MaxResimulated = max(s.stats.MaxResimulated, n)
	return n, nil
}

// advanceSnapshot steps the snapshot in slot forward to frame to, inside
// the snapshot's own region. Every input before to must be confirmed.
func (s *Session) advanceSnapshot(slot int, to Frame) error {
	if err := s.arena.Enter(slot); err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	for f := s.backups[slot].frame; f < to; f++ {
		in := &s.inputs[ring(f)]
		for p := range s.players {
			if f >= s.discFrom[p] {
				s.stepIn[p] = PlayerInput{Status: Disconnected}
			} else {
				s.stepIn[p] = PlayerInput{Input: in[p], Status: Confirmed}
			}
		}
		s.simulate(f)
	}
	s.arena.Leave()
	s.stats.SnapshotSteps += int64(to - s.backups[slot].frame)
	s.backups[slot].frame = to
	return nil
}

// step simulates s.frame with the best inputs known, after taking any
// snapshot the policy asks for.
func (s *Session) step() {
	f := s.frame
	if !s.resim {
		s.maybeSave(f)
	}
	s.gather(f)
	slot := ring(f)
	for p := range s.players {
		s.used[slot][p] = s.stepIn[p].Input
	}
	s.simulate(f)
	s.frame = f + 1
}

// simulate steps the current region through frame f with s.stepIn, with
// everything that goes with every step: the desync checkpoint, the
// observer, the sync-test check.
func (s *Session) simulate(f Frame) {
	s.checkpoint(f)
	if s.log != nil {
		s.logStepRec(f)
	}
	if s.obs != nil {
		s.obs.Simulating(f)
	}
	s.game.Step(f, s.stepIn[:s.players])
	if s.syncTest {
		s.checkSum(f + 1)
	}
}

// gather fills s.stepIn with the best inputs known for frame f: confirmed
// where they are, predicted for remote players past their last input, the
// default for disconnected players.
func (s *Session) gather(f Frame) {
	slot := ring(f)
	for p := range s.players {
		in, st := s.inputs[slot][p], Confirmed
		switch {
		case f >= s.discFrom[p]:
			in, st = 0, Disconnected
		case !s.isLocal[p] && f >= s.next[p]:
			st = Predicted
			lastFrame := s.next[p] - 1
			in = Input(s.pred.Predict(predict.Context{Player: p, Frame: int32(f), Last: uint64(s.last[p]), LastFrame: int32(lastFrame)})) & Input(s.mask)
		}
		s.stepIn[p] = PlayerInput{Input: in, Status: st}
	}
}

// maybeSave applies the snapshot policy before simulating frame f during
// play (never during a re-simulation).
//
// The anchor frame is the first frame that is not yet confirmed: no
// rollback ever restores before it, so a snapshot at or before it is always
// usable. Rollbacks move their snapshot up to the anchor frame in place (see
// rollback). While predictions keep coming true no rollback does that, so,
// as in INVERSUS, when the newest snapshot is interval frames old the
// present is saved over the other slot — only if that slot is invalid or
// superseded, never over the anchor snapshot nor over a pending one the
// anchor has not reached yet. Forced modes (sync test, constant cost) roll back
// every frame and never need this.
func (s *Session) maybeSave(f Frame) {
	if s.forced > 0 || !s.snapshots {
		return
	}
	c := s.anchor()
	keep, newest := -1, Frame(-1)
	for i, b := range s.backups {
		if !b.valid {
			continue
		}
		newest = max(newest, b.frame)
		if b.frame <= c && (keep < 0 || b.frame > s.backups[keep].frame) {
			keep = i
		}
	}
	if f-newest < s.interval {
		return
	}
	for i, b := range s.backups {
		// Never over a snapshot the anchor frame has not reached yet: it is
		// the next anchor, and replacing it again and again (a short
		// interval, an anchor held back by the others' counts) would keep
		// the anchor, and the input ring, pinned forever.
		if i != keep && (!b.valid || b.frame <= c) {
			_ = s.save(i, f)
			return
		}
	}
}

// anchor returns the frame that no rollback will ever need to go before:
// the confirmed frame, but no later than the fewest frames of any remote
// machine that another remaining machine reported having. A machine that
// disconnects is cut at the smallest such count (docs/protocol.md), so a
// snapshot there can always be restored.
func (s *Session) anchor() Frame {
	c := s.ConfirmedFrame()
	if s.forced > 0 {
		// The frame the next forced rollback restores: the one before the
		// next simulated frame, minus MaxRollback (one later if that frame is
		// simulated right after this rollback).
		next := s.present - Frame(s.forced)
		if s.stepNext {
			next++
		}
		c = min(c, next)
	}
	for x := range s.peers {
		if s.peers[x].agreed {
			continue
		}
		for m := range s.peers {
			if m != x && !s.peers[m].disc {
				c = min(c, s.peers[m].sees[x])
			}
		}
	}
	return c
}

func (s *Session) save(slot int, f Frame) error {
	if err := s.arena.Save(slot); err != nil {
		return err
	}
	s.backups[slot] = backup{frame: f, valid: true}
	s.stats.Saves++
	if s.log != nil {
		s.logf(logSave, slog.Int("slot", slot), slog.Int("frame", int(f)))
	}
	return nil
}

func (s *Session) checksum() uint64 { return xxhash.Sum64(s.arena.Bytes()) }

// checkSum records or compares the sync-test checksum at the start of frame f.
func (s *Session) checkSum(f Frame) {
	sum := s.checksum()
	if f > s.sumHigh {
		s.checksums[ring(f)] = sum
		s.sumHigh = f
		return
	}
	if want := s.checksums[ring(f)]; want != sum && s.syncErr == nil {
		s.syncErr = &SyncTestError{Frame: f - 1, Want: want, Got: sum}
		s.events = append(s.events, Event{Kind: EventSyncTestFailed, Frame: f - 1, Peer: -1})
	}
}

// send sends every peer what it is due: handshakes until it is verified,
// then the local inputs it has not acknowledged (the newest
// RedundantFrames of them, or all when its acknowledgement has stalled for
// longer than a round trip), the next frame we want from it, the gossip,
// and the quality pings.
func (s *Session) send() {
	if len(s.peers) == 0 {
		return
	}
	localNext := s.next[s.local[0]]
	nLocal := len(s.local)
	for ; s.started && s.sentHigh < localNext; s.sentHigh++ {
		s.sentAt[ring(s.sentHigh)] = s.now // when each local frame first went out
	}
	// Worst case bits per frame, to keep every datagram under maxDatagram.
	perFrame := nLocal * (len(s.layout) + s.layout.Bits())
	maxFrames := min(wire.MaxFrames, (maxDatagram-wire.HeaderSize-4*MaxPlayers)*8/perFrame)
	for i := range s.peers {
		ps := &s.peers[i]
		if ps.disc || s.throttled(i) {
			continue
		}
		s.sendProtocol(i)
		if !s.started || !ps.verified {
			continue
		}
		if s.lockstep {
			// At once with a new input, else at most every lockstepResend:
			// every Advance of a 60 Hz loop, as in rollback mode, whatever
			// the tick rate (a 10 Hz game sending once a tick would wait a
			// tick to repair each lost packet); not every frame of a 144 Hz
			// one.
			if localNext == ps.sentNext && s.now-ps.inputSentAt < lockstepResend {
				continue
			}
			ps.sentNext, ps.inputSentAt = localNext, s.now
		}
		want := s.next[ps.players[0]]
		first := ps.ack
		if s.redundant > 0 && ps.rtt > 0 && localNext-Frame(s.redundant) > first {
			// Repeat only the newest frames, unless the oldest frame the peer
			// still wants went out longer than a round trip ago: then a loss
			// burst outran the window, everything from the ack goes again,
			// and keeps going for a while (bursty links get INVERSUS's full
			// redundancy, clean ones stay lean).
			if sent := s.sentAt[ring(first)]; first < s.sentHigh && s.now-sent > ps.rtt+ps.rtt/4+lostMargin {
				if s.now >= ps.fullUntil {
					ps.st.LossBursts++
				}
				ps.fullUntil = s.now + fullResendFor
			}
			if s.now >= ps.fullUntil {
				first = localNext - Frame(s.redundant)
			}
		}
		if want-first > 255 {
			first = want - 255 // it is hopelessly behind; keep the header encodable
		}
		base := min(want, first)
		end := min(localNext, base+255, first+Frame(maxFrames))
		s.pkt.Tag, s.pkt.Ack, s.pkt.First, s.pkt.Players = ps.tag, int32(want), int32(first), nLocal
		s.pkt.Count = max(0, int(end-first))
		s.pkt.Inputs = s.pkt.Inputs[:0]
		for f := first; f < end; f++ {
			for _, p := range s.local {
				s.pkt.Inputs = append(s.pkt.Inputs, uint64(s.inputs[ring(f)][p]))
			}
		}
		s.pkt.Base = nil
		if first > 0 {
			for j, p := range s.local {
				s.base[j] = uint64(s.inputs[ring(first-1)][p])
			}
			s.pkt.Base = s.base[:nLocal]
		}
		s.gossip = s.gossip[:0]
		for _, x := range ps.gossipOrder {
			px := &s.peers[x]
			g := wire.Gossip{Disconnected: px.disc, Frame: int32(px.dframe)}
			if !px.disc {
				g.Frame = -1 // the count goes in every fourth packet: it only paces the anchor
				if ps.st.PacketsSent%gossipCountEvery == 0 {
					g.Frame = int32(s.next[px.players[0]])
				}
			}
			s.gossip = append(s.gossip, g)
		}
		s.pkt.Gossip = s.gossip
		// localFrameLag, in simulation frames: how many of its frames we
		// are predicting (our next frame minus its first frame we lack, taken
		// back by its input lag).
		ps.st.LocalFrameLag = s.frame - want + Frame(ps.lag)
		s.tracker.Local(i, int(ps.st.LocalFrameLag))
		s.pkt.Lag = min(s.delay, wire.MaxLag)
		b, err := wire.AppendInput(s.sendBuf[:0], &s.pkt, s.layout)
		if err != nil {
			s.stats.SendErrors++
			continue
		}
		if s.log != nil {
			s.logf(logSend, slog.Int("peer", i), slog.Int("first", int(first)), slog.Int("n", s.pkt.Count),
				slog.Int("ack", int(want)), slog.Int("lag", s.pkt.Lag), slog.Any("in", slices.Clone(s.pkt.Inputs)))
		}
		s.transmit(i, b)
	}
}

func ring(f Frame) int { return int(uint32(f) % ringSize) }
