package rollback

import (
	"time"

	"github.com/rewindgg/rewind/inputlag"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// protocol is the session's side of the handshake and its timers.
type protocol struct {
	sessionID uint64
	keys      keyring
	started   bool // the match runs: frame 0 may be simulated
	closed    bool
	// frameLimit is the frame a call refuses to pass (ErrFrameLimit):
	// maxFrame, lower in tests.
	frameLimit Frame
	hsStart    time.Duration // when the handshake started
	startedAt  time.Duration // when the match started: lockstep input ticks count from here

	hsTimeout       time.Duration
	interruptAfter  time.Duration
	disconnectAfter time.Duration
	qualityEvery    time.Duration
	redundant       int           // RedundantFrames: -1 resends every unacknowledged frame
	rejoinWindow    time.Duration // RejoinWindow; 0: no machine comes back
	joins           int           // peers joining now (rejoin.go)
	transferRate    int           // Config.TransferRate
	spectatorDelay  time.Duration // Config.SpectatorDelay
	// timersAt is the earliest time a protocol timer of the match can fire
	// (Session.nextTimer): a call before it skips the timers' checks
	// (Session.timersDue). 0: every check runs at the next call.
	timersAt time.Duration
	// noDeadline: every call checks every timer (TestHooks.NoTimerDeadline,
	// the adversary's build only).
	noDeadline bool
	// departing: a peer disconnected here waits for the agreement on its
	// disconnect frame (Session.checkLiveness settles it).
	departing bool
	// agreed: a departure was agreed (leave.agreed), so a peer may be
	// joining (peerSet.anyJoining): until then no call looks.
	agreed bool

	handlers handlers // a handler per sealed kind, for the features present (dispatch.go)
}

// newProtocol is the protocol's state for the populated cfg, at now.
func newProtocol(cfg Config, now time.Duration) protocol {
	t := cfg.Timeouts
	p := protocol{
		sessionID:       cfg.SessionID,
		started:         len(cfg.Peers) == 0,
		hsStart:         now,
		startedAt:       now,
		frameLimit:      maxFrame,
		hsTimeout:       t.Handshake,
		interruptAfter:  t.Interrupt,
		disconnectAfter: t.Disconnect,
		qualityEvery:    cfg.QualityInterval,
		redundant:       cfg.RedundantFrames,
		rejoinWindow:    max(0, cfg.RejoinWindow),
		noDeadline:      noTimerDeadline(&cfg),
	}
	return p
}

// frameDuration is the simulation frame the input lag is measured in.
const frameDuration = time.Second / 60

// starter owns the start of the match after the handshake (unless
// Config.NoStartDelay): the host gathers every machine's round-trip times
// into the mesh, every machine learns it, and each waits
// advantage.StartDelay so that all start their first frame together (the
// INVERSUS start delay).
type starter struct {
	noDelay   bool
	machine   int // our index among the machines, by lowest PlayerID
	host      int // the host's peer index; -1 when we are the host
	mesh      [][]time.Duration
	meshKnown bool
	at        time.Duration // when we start; -1 until known

	ready wire.Ready // scratch for sent messages
	start wire.Start
	gomsg wire.Go
}

// newStarter: machines are ordered by their lowest player; the host is the
// first of those that start the match (not a reserved slot, Peer.Late).
func newStarter(noDelay bool, lowest PlayerID, peers []peer) starter {
	st := starter{noDelay: noDelay, host: -1, at: -1}
	for i := range peers {
		if peers[i].id < lowest {
			st.machine++
			if !peers[i].late && (st.host < 0 || peers[i].id < peers[st.host].id) {
				st.host = i
			}
		}
	}
	return st
}

// handshakeWait runs the start of the match until it runs (poll asks
// only then: no call once the match runs): the handshake, then (unless
// Config.NoStartDelay) the exchange of round-trip times and the start
// delay. It returns an error on timeout.
func (s *Session) handshakeWait() error {
	all := true
	for i := range s.peers {
		if e := s.peers[i].auth.mismatch; e != nil {
			return e
		}
		all = all && (s.peers[i].auth.verified || s.peers[i].late)
	}
	if all && s.stmts != nil && s.stmts.mismatch != nil {
		return s.stmts.mismatch
	}
	if all && s.start.noDelay {
		if s.stmts.ready() {
			s.begin()
		}
		return nil
	}
	if all {
		if s.start.due(s.peers, s.now) && s.stmts.ready() {
			s.begin()
			return nil
		}
	}
	if s.now-s.proto.hsStart > s.proto.hsTimeout {
		var missing []int
		for i := range s.peers {
			if s.peers[i].late {
				continue
			}
			keys := s.stmts != nil && !s.stmts.keysOK[i]
			if !s.peers[i].auth.verified || (all && (keys || !s.start.noDelay && !s.peers[i].start.goSeen)) {
				missing = append(missing, i)
			}
		}
		return &HandshakeError{Peers: missing, Timeout: s.proto.hsTimeout, Hints: s.peers.handshakeHints(missing, s.proto.sessionID)}
	}
	return nil
}

// begin starts the match.
func (s *Session) begin() {
	s.proto.started, s.proto.startedAt = true, s.now
	s.events.emit(EventRunning, s.frame, -1)
	// The article's initial input lag, from half the worst round trip; it
	// is raised like any other raise: by stalling while taking input.
	var worst time.Duration
	for i := range s.peers {
		worst = max(worst, s.peers[i].link.rtt)
	}
	if s.pace.lag.raise(inputlag.Initial(worst, frameDuration)) {
		s.events = append(s.events, Event{Kind: EventInputLagChanged, Frame: s.frame, Peer: -1, Lag: s.pace.lag.delay})
	}
}

// maxStartRTT caps every round trip a peer reports for the start delay
// while one of our own round trips is still unknown (startRTTLimit).
const maxStartRTT = time.Second

// startRTTSlack is what startRTTLimit allows above twice our slowest round
// trip: the samples' two ticks of waiting, and jitter.
const startRTTSlack = 100 * time.Millisecond

// capRTTs caps the round trips (µs) a peer reported at limit, and reports
// whether one was over it: no honest machine measures that.
func capRTTs(us []uint32, limit uint32) bool {
	over := false
	for k, v := range us {
		if v > limit {
			us[k], over = limit, true
		}
	}
	return over
}

func newMesh(n int) [][]time.Duration {
	m := make([][]time.Duration, n)
	for a := range n {
		m[a] = make([]time.Duration, n)
	}
	return m
}

// startMsgs is the scratch the start-protocol messages are parsed into.
type startMsgs struct {
	ready wire.Ready
	start wire.Start
	gomsg wire.Go
}

// take takes peer i's start-protocol message of kind k, b, parsed into
// rx, once the match runs or not (started). It reports whether it was
// valid, and (lied) whether it claimed round trips no honest machine
// measures: capped, but taken.
func (st *starter) take(ps peerSet, i int, k wire.Kind, b []byte, rx *startMsgs, started bool) (ok, lied bool) {
	p := &ps[i]
	n := len(ps) + 1
	switch k {
	case wire.KindReady:
		r := &rx.ready
		if err := wire.ParseControl(b, r); err != nil || len(r.RTT) != n {
			return false, false
		}
		p.start.row = append(p.start.row[:0], r.RTT...)
		return true, capRTTs(p.start.row, ps.startRTTLimit())
	case wire.KindStart:
		m := &rx.start
		if err := wire.ParseControl(b, m); err != nil || i != st.host || len(m.Mesh) != n*n {
			return false, false
		}
		if !st.meshKnown && !started {
			// The host's own row is its claim; the others it relays (capped
			// at its limit, which can be above ours: capped here silently).
			limit, host := ps.startRTTLimit(), p.machine
			lied = capRTTs(m.Mesh[host*n:(host+1)*n], limit)
			capRTTs(m.Mesh, limit)
			st.mesh = newMesh(n)
			for a := range n {
				for c := range n {
					st.mesh[a][c] = time.Duration(m.Mesh[a*n+c]) * time.Microsecond
				}
			}
			st.meshKnown = true
		}
		p.start.goSeen = true
		return true, lied
	case wire.KindGo:
		if err := wire.ParseControl(b, &rx.gomsg); err != nil {
			return false, false
		}
		p.start.goSeen = true
		return true, false
	}
	return false, false
}

// send sends peer i of peers, through tx, the start-protocol messages due
// until the match runs: Ready every 100 ms, Start and Go on every tick.
func (st *starter) send(peers peerSet, i int, tx *outbox, now time.Duration) {
	ps := &peers[i]
	if st.noDelay || !ps.auth.verified {
		return
	}
	n := len(peers) + 1
	switch {
	case st.meshKnown && st.host < 0:
		// Start and Go go out on every tick until the match runs: one lost
		// copy would shift this machine's start by a round trip.
		st.start.Mesh = st.start.Mesh[:0]
		for a := range n {
			for c := range n {
				st.start.Mesh = append(st.start.Mesh, uint32(min(st.mesh[a][c]/time.Microsecond, 1<<32-1)))
			}
		}
		tx.control(i, &st.start)
	case st.meshKnown:
		tx.control(i, &st.gomsg)
	case i == st.host && peers.rowReady() && (ps.start.lastSync == 0 || now-ps.start.lastSync >= handshakeRetry):
		ps.start.lastSync = now
		st.ready.RTT = st.ready.RTT[:0]
		for range n {
			st.ready.RTT = append(st.ready.RTT, 0)
		}
		for j := range peers {
			st.ready.RTT[peers[j].machine] = uint32(min(peers[j].link.rtt/time.Microsecond, 1<<32-1))
		}
		tx.control(i, &st.ready)
	}
}

// due reports whether the start the host set has come, at now: the mesh
// of round trips known (the host builds it once every row has come), the
// Go of every peer seen, and the start delay over the mesh passed.
func (st *starter) due(ps peerSet, now time.Duration) bool {
	if !st.meshKnown && st.host < 0 && ps.rowReady() {
		st.buildMesh(ps)
	}
	if !st.meshKnown {
		return false
	}
	if st.at < 0 {
		for i := range ps {
			if !ps[i].start.goSeen && !ps[i].late {
				return false
			}
		}
		host := st.machine
		if st.host >= 0 {
			host = ps[st.host].machine
		}
		st.at = now + st.startDelay(host, ps)
	}
	return now >= st.at
}
