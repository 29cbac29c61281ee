package rollback

import (
	"crypto/rand"
	"slices"
	"time"

	"github.com/rewindgg/rewind/advantage"
	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/savestate"
)

// This file builds a session from its Config: its owners, its peers, the
// keys and statements of a match with peers, the audience.

// NewSession validates cfg and returns a session at frame 0. It takes the
// first snapshot of cfg.State, so the game must have allocated and
// initialised its state first.
func NewSession(cfg Config) (*Session, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.populate()
	s := &Session{
		roster: roster{players: cfg.Players, local: sortedPlayers(cfg.Local), layout: append(wire.Layout(nil), cfg.Layout...)},
		app:    app{game: cfg.Game, obs: cfg.Observer},
		clock:  cfg.Clock,
		events: make([]Event, 0, 2*len(cfg.Peers)+2),
		io:     newCodec(cfg.Players),
	}
	var err error
	if s.roster.format, err = wire.NewFormat(s.roster.layout); err != nil {
		return nil, err // unreachable: validate checked the layout
	}
	s.tx = newOutbox(cfg.Transport, &s.peers, &s.now, &s.stats, s.roster.format)
	s.tx.cast, s.tx.self = castOf(cfg.Transport, cfg.Peers, s.roster.local[0])
	perFrame := len(s.roster.local) * (len(s.roster.layout) + s.roster.layout.Bits())
	s.roster.maxFrames = min(wire.MaxFrames, (maxDatagram-wire.SealOverhead-wire.MaxInputHeader-4*MaxPlayers)*8/perFrame)
	lockstepMode := cfg.Lockstep
	s.inputs = *newInputRing(cfg.Players, s.roster.local, cfg.Layout.Mask(), cfg.Predictor, cfg.InputLag)
	s.inputs.standIn = cfg.StandIn
	s.snaps = snapshots{arena: cfg.State, backups: make([]backup, savestate.Slots), interval: Frame(cfg.MaxRollback), reach: Frame(cfg.MaxRollback), on: true, slots: 2, base: 2}
	s.pace = newPace(&cfg, &s.inputs)
	s.io.view = inputView{format: &s.roster.format, inputs: &s.inputs, ring: s, cast: s.tx.cast, self: s.tx.self, clock: s.pace.clock}
	s.proto = newProtocol(cfg, s.clock())
	s.quiet.on = !cfg.SendEveryTick && !cfg.Lockstep
	if lockstepMode {
		// Lockstep never predicts, so it never rolls back during play. With
		// three or more machines a machine that leaves is cut at the fewest
		// of its frames any remaining machine has (docs/protocol.md), which
		// can be before frames we simulated: only then are snapshots kept,
		// by the same policy, to undo the frames after the cut.
		s.ls = newLockstep(cfg)
		s.snaps.on, s.snaps.reach = len(cfg.Peers) >= 2, 0
	}
	switch {
	case cfg.SyncTest > 0:
		s.snaps.forced = cfg.SyncTest
		s.sync = &syncCheck{marks: cfg.Marks}
		if cfg.Marks != nil {
			s.sync.hash, s.sync.first = s.snaps.sum, make([]desync.Trace, ringSize)
		}
	case cfg.Snapshots == ConstantCost:
		s.snaps.forced = cfg.MaxRollback
	}
	s.peers = newPeers(cfg.Peers, &s.roster, s.proto.hsStart)
	for i := range s.peers {
		s.pace.gov.Bound(i, linkLagBound(0))
	}
	s.start = newStarter(cfg.NoStartDelay || cfg.NoFrameAdvantage, s.roster.local[0], s.peers)
	s.out = newRecording(cfg.Recorder, cfg.Log)
	if cfg.ChecksumEvery >= 0 && (len(s.peers) > 0 || s.out.rec != nil) {
		s.sums = newChecksums(Frame(cfg.ChecksumEvery), cfg.ChecksumData, len(s.peers), cfg.State.Size())
		if cfg.Recover {
			lower := make([]bool, len(s.peers))
			for i := range s.peers {
				lower[i] = len(s.roster.local) > 0 && len(s.peers[i].players) > 0 && s.roster.local[0] < s.peers[i].players[0]
			}
			s.sums.rec = newRecovery(lower)
		}
		if (cfg.Bundle != nil || cfg.Marks != nil) && len(s.peers) > 0 { // the time machine: timemachine.go
			s.sums.bun = newBundler(&cfg, s.roster.local[0])
		}
	}
	if len(cfg.Peers) > 0 || cfg.MaxSpectators > 0 {
		if err := s.secure(&cfg); err != nil {
			return nil, err
		}
	}
	s.snaps.policy(&cfg)
	s.tx.adv = adversaryOf(&cfg, s) // nil in every game
	s.proto.handlers.register(s)
	if err := s.open(&cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// populate returns c with every zero value that means a default filled
// in (the negative values that mean "none" or "off" stay): NewSession
// builds the owners from it, so each default is applied in one place.
// Predictor stays nil for repeat-last, which the input ring inlines.
func (c Config) populate() Config {
	c.Timeouts = c.Timeouts.populate()
	if c.Clock == nil {
		c.Clock = realClock()
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	c.MaxRollback = c.maxRollback()
	c.QualityInterval = orDefault(c.QualityInterval, defaultQualityInterval)
	switch {
	case c.RedundantFrames != 0:
	case c.Lockstep:
		// Gaffer: every unacknowledged input in every packet. A lockstep
		// peer cannot predict past a lost frame, so the repair must not
		// wait for the acknowledgement to stall; on a short link it is no
		// more than the newest few frames anyway.
		c.RedundantFrames = -1
	default:
		c.RedundantFrames = defaultRedundantFrames
	}
	c.RejoinWindow = orDefault(c.RejoinWindow, defaultRejoinWindow)
	c.TransferRate = orDefault(c.TransferRate, defaultTransferRate)
	c.ChecksumEvery = orDefault(c.ChecksumEvery, desync.DefaultEvery)
	if c.Lockstep {
		c.TickRate = orDefault(c.TickRate, defaultTickRate)
		c.PlayoutDelay = orDefault(c.PlayoutDelay, defaultPlayoutDelay)
	}
	return c
}

// secure readies a session that has peers or spectators: the handshake's
// keys (a nonce per link), the statements of a match of three or more
// machines, the reserved slots and the audience.
func (s *Session) secure(cfg *Config) error {
	r := cfg.Rand
	var err error
	if s.proto.keys, err = newKeyring(r, cfg.Secret, s.terms(cfg)); err != nil {
		return err
	}
	s.proto.keys.local = slices.Clone(s.io.wantLocal(s.roster.local))
	for i := range s.peers {
		s.peers[i].auth.ours = s.proto.keys.nonceFor(linkPeer | uint64(i))
	}
	if len(s.peers) >= 2 && s.ls == nil && !unsigned(cfg) {
		var np, peerOf [MaxPlayers]int
		np[s.start.machine], peerOf[s.start.machine] = len(s.roster.local), -1
		for i := range s.peers {
			np[s.peers[i].machine], peerOf[s.peers[i].machine] = len(s.peers[i].players), i
		}
		most := 0
		for _, n := range np {
			most = max(most, n)
		}
		every := wire.StatementInterval(most, s.roster.layout.Bits())
		if s.pace.clock != nil {
			// With the relay clock a frame is final once the relay's
			// receipt covers it, which comes every StatementFrames
			// frames: a longer interval only makes the statements wait
			// (4 players on hell: 2 disconnects in 50 matches with 64).
			every = wire.StatementFrames
		}
		if s.stmts, err = newStatements(r, s.proto.sessionID, s.start.machine, np, peerOf, len(s.peers)+1, every); err != nil {
			return err
		}
		s.stmts.port = stmtPort{st: s.stmts, peers: &s.peers, inputs: &s.inputs, tx: &s.tx, io: &s.io, proto: &s.proto}
		s.snaps.slots, s.snaps.base = settledSlots, settledSlots // one kept at the settled frame
	}
	s.proto.transferRate, s.proto.spectatorDelay = cfg.TransferRate, cfg.SpectatorDelay
	if !cfg.InProgress {
		r := s.rejoins()
		r.reserve()
	}
	if cfg.MaxSpectators > 0 || s.peers.departed(s.proto.rejoinWindow > 0) {
		s.serve(cfg.MaxSpectators)
	}
	return nil
}

// open takes the first snapshot and starts what runs from frame 0: the
// sync test's first sum, a join in progress, the recording.
func (s *Session) open(cfg *Config) error {
	if s.snaps.on {
		if err := s.snaps.saveLogged(0, 0, s.out.log, s.now); err != nil {
			return err
		}
	}
	if s.sync != nil {
		s.sync.sums[0] = s.snaps.sum()
	}
	s.becomePlaying()
	if cfg.InProgress {
		s.join = newJoiner(s, cfg)
		s.becomeJoining()
	}
	if s.out.rec != nil {
		m := MatchInfo{Players: s.roster.players, Layout: append(Layout(nil), s.roster.layout...), SessionID: s.proto.sessionID, GameChecksum: cfg.ChecksumData != nil}
		if s.sums != nil {
			m.ChecksumEvery = int(s.sums.every)
		}
		s.out.rec.Begin(m)
	}
	return nil
}

// serve makes this machine serve up to spectators spectators, and the
// peers that come back (rejoin.go): the audience, and the feed of final
// inputs from the next frame to become final on.
func (s *Session) serve(spectators int) {
	if s.out.rec == nil && s.out.log == nil {
		// Nothing recorded the final frames so far: they start here.
		s.out.recorded = max(s.out.recorded, min(s.horizon().anchor(s.frame), s.frame))
	}
	f := newFeed(s.roster.players)
	f.reset(s.out.recorded)
	s.aud = newAudience(spectators, len(s.peers), s.proto.transferRate, &s.proto.keys, s.proto.sessionID, s.tx.tr, &f,
		s.proto.interruptAfter, s.proto.disconnectAfter)
	s.aud.adv = s.tx.adv
	if s.proto.spectatorDelay > 0 {
		f.timed()
		s.aud.delay = s.proto.spectatorDelay
	}
}

// newPeers returns the remote machines, in Config.Peers order, heard
// from at start (the handshake's), and notes in r who owns their players.
func newPeers(peers []Peer, r *roster, start time.Duration) peerSet {
	var set peerSet
	for i, p := range peers {
		ps := sortedPlayers(p.Players)
		for _, pl := range ps {
			r.owner[pl] = i
		}
		set = append(set, peer{players: ps, id: ps[0], late: p.Late,
			link: link{lastRecv: start, winStart: start}, start: peerStart{first: -1}, timing: timing{ackAgeMin: -1}})
	}
	for i := range set {
		for j := range set {
			if j != i {
				set[i].gossip.order = append(set[i].gossip.order, j)
			}
			if set[j].id < set[i].id {
				set[i].machine++ // machines are ordered by their lowest player
			}
		}
		if r.local[0] < set[i].id {
			set[i].machine++
		}
		slices.SortFunc(set[i].gossip.order, func(a, b int) int { return int(set[a].id - set[b].id) })
	}
	return set
}

// linkLagBound is the most frames of link lag (advantage.Governor.LinkLag)
// a round trip rtt, measured by us, justifies: half of it, plus
// linkLagSlack. A peer acknowledging fewer frames than it has, or sending
// its inputs later than it could, cannot raise our input lag beyond it.
// rtt is the link's floor (the least of its latest samples; link.floor),
// set at every sample: a single early sample two ticks long let such a
// peer raise an honest machine's input lag on wifi from 1 to 2.
func linkLagBound(rtt time.Duration) float64 {
	return float64(rtt)/float64(frameDuration)/2 + linkLagSlack
}

// newPace returns the pace of a session of cfg, whose inputs are inputs:
// its input lag, the relay clock if its transport is one (relayclock.go),
// and the fairness governor, off with the relay clock: no machine waits
// for a slower one, the relay's schedule keeps the time.
func newPace(cfg *Config, inputs *inputRing) pace {
	p := pace{lag: inputLag{delay: cfg.InputLag, fixed: cfg.FixedInputLag || len(cfg.Peers) == 0 || cfg.Lockstep}}
	p.clock = newRelayClock(cfg.Transport, cfg.Lockstep, inputs, &p.lag)
	p.gov = advantage.NewGovernor(len(cfg.Peers), !cfg.NoFrameAdvantage && len(cfg.Peers) > 0 && !cfg.Lockstep && p.clock == nil)
	return p
}
