package rollback

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/advantage"
	"github.com/rewindgg/rewind/inputlag"
	"github.com/rewindgg/rewind/rollback/wire"
)

// Protocol errors.
var (
	ErrClosed = errors.New("rollback: session closed")
	ErrRand   = errors.New("rollback: cannot read random nonce")
)

// HandshakeError reports that some peers did not complete the handshake
// within Config.HandshakeTimeout.
type HandshakeError struct {
	Peers   []int // indices in Config.Peers that never answered with our nonce
	Timeout time.Duration
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("rollback: handshake timed out after %v waiting for peers %v", e.Timeout, e.Peers)
}

// PeerStats are one peer's network statistics.
type PeerStats struct {
	RTT               time.Duration // smoothed round-trip time; 0 until measured
	SendPacketsPerSec float64       // over the last complete second
	SendBytesPerSec   float64
	RecvPacketsPerSec float64
	RecvBytesPerSec   float64
	PacketsSent       int64
	PacketsReceived   int64
	PacketsDropped    int64 // from this peer: malformed, foreign session, impossible frames
	LossBursts        int64 // times a loss burst outran the redundancy window (every unacked frame is then resent for 10 s)
	LocalFrameLag     Frame // on our last send: frames of its input we predict (our next frame minus its first missing frame, less its input lag)
	RemoteFrameLag    Frame // on its last packet: frames of our input it predicts, in simulation frames (input lags taken out)
	FramesBehind      Frame // how far its input stream is behind ours
	Verified          bool  // completed the handshake
	Interrupted       bool  // silent for longer than InterruptTimeout
	Disconnected      bool
	DisconnectFrame   Frame // when Disconnected and agreed: its inputs from this frame on are the default input
	DisconnectAgreed  bool
	SinceLastHeard    time.Duration
}

type peerState struct {
	players []PlayerID // sorted; the order of inputs in its packets
	id      PlayerID   // its lowest player: the machine's name in gossip
	ack     Frame      // the next of our frames it wants; all before it arrived
	ackAt   time.Duration

	sumSent   Frame // the frame of the last checksum sent to it
	sumSends  int   // how many times
	sumSentAt time.Duration

	nonce    uint32 // its handshake nonce; 0 until known
	tag      uint16
	verified bool
	replyHS  bool

	lastRecv, lastSend, lastQuality time.Duration
	interrupted                     bool
	replyQuality                    bool
	replyEcho                       int64
	rtt                             time.Duration

	disc     bool  // disconnected here, agreement maybe pending
	agreed   bool  // every remaining machine reported it: dframe is final
	frozen   Frame // our own count of its frames when we disconnected it
	dframe   Frame // the disconnect frame: min of frozen and every report
	reported [MaxPlayers]bool
	report   [MaxPlayers]Frame

	gossipOrder []int    // the other peers, by id: the gossip entries in packets to or from it
	machine     int      // its index among the match's machines, by lowest PlayerID
	row         []uint32 // its round-trip times (µs), from its Ready (host only)
	goSeen      bool     // it has the mesh (its Go, or the host's Start)
	lastSync    time.Duration
	fullUntil   time.Duration     // resend every unacknowledged frame until then
	firstInput  time.Duration     // lockstep: when its first inputs arrived; -1 before
	sentNext    Frame             // lockstep: our next local frame when we last sent it inputs
	inputSentAt time.Duration     // lockstep: when we last sent it inputs
	lag         int               // its input lag, from its last decoded input packet
	sees        [MaxPlayers]Frame // by peer index: how many of that peer's frames it reported having

	st                    PeerStats
	winStart              time.Duration
	winSent, winSentBytes int64
	winRecv, winRecvBytes int64
}

// tagFor derives the 16-bit session tag from the session id and both
// nonces; 0 is reserved for handshakes.
func tagFor(session uint64, a, b uint32) uint16 {
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:], session)
	binary.LittleEndian.PutUint32(buf[8:], min(a, b))
	binary.LittleEndian.PutUint32(buf[12:], max(a, b))
	t := uint16(xxhash.Sum64(buf[:]))
	if t == 0 {
		t = 1
	}
	return t
}

func readNonce(r io.Reader) (uint32, error) {
	var b [4]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, fmt.Errorf("%w: %v", ErrRand, err)
		}
		if n := binary.LittleEndian.Uint32(b[:]); n != 0 {
			return n, nil
		}
	}
}

// handshakeStep runs the start of the match: the handshake, then (unless
// Config.NoStartDelay) the exchange of round-trip times and the start
// delay. It returns an error on timeout.
func (s *Session) handshakeStep() error {
	if s.started {
		return nil
	}
	all := true
	for i := range s.peers {
		all = all && s.peers[i].verified
	}
	if all && s.noStartDelay {
		s.begin()
		return nil
	}
	if all {
		s.syncStep()
		if s.started {
			return nil
		}
	}
	if s.now-s.hsStart > s.hsTimeout {
		var missing []int
		for i := range s.peers {
			if !s.peers[i].verified || (all && !s.peers[i].goSeen) {
				missing = append(missing, i)
			}
		}
		return &HandshakeError{Peers: missing, Timeout: s.hsTimeout}
	}
	return nil
}

func (s *Session) begin() {
	s.started, s.startedAt = true, s.now
	s.events = append(s.events, Event{Kind: EventRunning, Frame: s.frame, Peer: -1})
	if s.lagFixed {
		return
	}
	// The article's initial input lag, from half the worst round trip; it
	// is raised like any other raise: by stalling while taking input.
	var worst time.Duration
	for i := range s.peers {
		worst = max(worst, s.peers[i].rtt)
	}
	if l := inputlag.Initial(worst, frameDuration); l > s.delay {
		s.lagStalls += l - s.delay
		s.delay = l
		s.events = append(s.events, Event{Kind: EventInputLagChanged, Frame: s.frame, Peer: -1, Lag: l})
	}
}

// frameDuration is the simulation frame the input lag is measured in.
const frameDuration = time.Second / 60

// rowReady reports whether we have a round-trip time to every peer.
func (s *Session) rowReady() bool {
	for i := range s.peers {
		if s.peers[i].rtt == 0 {
			return false
		}
	}
	return true
}

// syncStep advances the start protocol once every peer is verified: the
// host builds the mesh from every machine's row; once a machine has the
// mesh and every other machine's Go (the host's Start counts as its Go),
// it waits advantage.StartDelay and starts (the INVERSUS start delay).
func (s *Session) syncStep() {
	n := len(s.peers) + 1
	if !s.meshKnown && s.hostPeer < 0 && s.rowReady() {
		have := true
		for i := range s.peers {
			have = have && len(s.peers[i].row) == n
		}
		if have {
			s.mesh = make([][]time.Duration, n)
			for a := range n {
				s.mesh[a] = make([]time.Duration, n)
			}
			for i := range s.peers {
				a := s.peers[i].machine
				s.mesh[s.machine][a] = s.peers[i].rtt
				for b, us := range s.peers[i].row {
					s.mesh[a][b] = time.Duration(us) * time.Microsecond
				}
			}
			s.meshKnown = true
		}
	}
	if !s.meshKnown {
		return
	}
	if s.startAt < 0 {
		for i := range s.peers {
			if !s.peers[i].goSeen {
				return
			}
		}
		host := s.machine
		if s.hostPeer >= 0 {
			host = s.peers[s.hostPeer].machine
		}
		s.startAt = s.now + advantage.StartDelay(s.mesh, host, s.machine)
	}
	if s.now >= s.startAt {
		s.begin()
	}
}

// handleStart processes the start-protocol messages from peer i.
func (s *Session) handleStart(i int, b []byte) bool {
	ps := &s.peers[i]
	n := len(s.peers) + 1
	switch wire.Kind(b[0]) {
	case wire.KindReady:
		r := &s.rx.ready
		if tag, err := s.ctl.Parse(b, wire.KindReady, r); err != nil || !s.tagged(i, tag) || len(r.RTT) != n {
			return false
		}
		ps.row = append(ps.row[:0], r.RTT...)
		return true
	case wire.KindStart:
		st := &s.rx.start
		if tag, err := s.ctl.Parse(b, wire.KindStart, st); err != nil || !s.tagged(i, tag) || i != s.hostPeer || len(st.Mesh) != n*n {
			return false
		}
		if !s.meshKnown && !s.started {
			s.mesh = make([][]time.Duration, n)
			for a := range n {
				s.mesh[a] = make([]time.Duration, n)
				for c := range n {
					s.mesh[a][c] = time.Duration(st.Mesh[a*n+c]) * time.Microsecond
				}
			}
			s.meshKnown = true
		}
		ps.goSeen = true
		return true
	case wire.KindGo:
		if tag, err := s.ctl.Parse(b, wire.KindGo, &s.rx.gomsg); err != nil || !s.tagged(i, tag) {
			return false
		}
		ps.goSeen = true
		return true
	}
	return false
}

// sendStart sends peer i the start-protocol messages due until the match
// runs: Ready every 100 ms, Start and Go on every tick.
func (s *Session) sendStart(i int) {
	ps := &s.peers[i]
	if s.started || s.noStartDelay || !ps.verified {
		return
	}
	n := len(s.peers) + 1
	switch {
	case s.meshKnown:
		// Start and Go go out on every tick until the match runs: one lost
		// copy would shift this machine's start by a round trip.
		if s.hostPeer < 0 {
			s.tx.start.Mesh = s.tx.start.Mesh[:0]
			for a := range n {
				for c := range n {
					s.tx.start.Mesh = append(s.tx.start.Mesh, uint32(min(s.mesh[a][c]/time.Microsecond, 1<<32-1)))
				}
			}
			s.sendControl(i, wire.KindStart, ps.tag, &s.tx.start)
		} else {
			s.sendControl(i, wire.KindGo, ps.tag, &s.tx.gomsg)
		}
	case i == s.hostPeer && s.rowReady() && (ps.lastSync == 0 || s.now-ps.lastSync >= handshakeRetry):
		ps.lastSync = s.now
		s.tx.ready.RTT = s.tx.ready.RTT[:0]
		for range n {
			s.tx.ready.RTT = append(s.tx.ready.RTT, 0)
		}
		for j := range s.peers {
			s.tx.ready.RTT[s.peers[j].machine] = uint32(min(s.peers[j].rtt/time.Microsecond, 1<<32-1))
		}
		s.sendControl(i, wire.KindReady, ps.tag, &s.tx.ready)
	}
}

// verify marks peer i as having proved it saw our nonce.
func (s *Session) verify(i int) {
	ps := &s.peers[i]
	if !ps.verified {
		ps.verified = true
		ps.lastRecv = s.now
		ps.lastQuality = s.now - s.qualityEvery // ping at once: the start delay needs the round trip
		s.events = append(s.events, Event{Kind: EventConnected, Frame: s.frame, Peer: i})
	}
}

// tagged reports whether tag is peer i's session tag, and if so counts it
// as proof that the peer saw our nonce.
func (s *Session) tagged(i int, tag uint16) bool {
	ps := &s.peers[i]
	if ps.nonce == 0 || tag != ps.tag {
		return false
	}
	s.verify(i)
	return true
}

// handleControl processes a control datagram from peer i. It reports
// whether the datagram was acceptable.
func (s *Session) handleControl(i int, b []byte) bool {
	ps := &s.peers[i]
	switch wire.Kind(b[0]) {
	case wire.KindHandshake:
		h := &s.rx.hs
		if tag, err := s.ctl.Parse(b, wire.KindHandshake, h); err != nil || tag != 0 || h.SessionID != s.sessionID || h.Nonce == 0 {
			return false
		}
		if ps.nonce == 0 {
			ps.nonce = h.Nonce
			ps.tag = tagFor(s.sessionID, s.nonce, h.Nonce)
		} else if h.Nonce != ps.nonce {
			return false // a replay, or a stranger: the nonce is fixed once seen
		}
		if h.Echo == s.nonce {
			s.verify(i)
		} else {
			ps.replyHS = true // it lacks our nonce; our tagged packets prove the rest
		}
		return true
	case wire.KindQuality:
		q := &s.rx.q
		if tag, err := s.ctl.Parse(b, wire.KindQuality, q); err != nil || !s.tagged(i, tag) {
			return false
		}
		ps.replyQuality, ps.replyEcho = true, q.Sent
		return true
	case wire.KindQualityReply:
		q := &s.rx.qr
		if tag, err := s.ctl.Parse(b, wire.KindQualityReply, q); err != nil || !s.tagged(i, tag) {
			return false
		}
		sample := s.now - time.Duration(q.Echo)
		if sample < 0 || sample > time.Minute {
			return false
		}
		if ps.rtt == 0 {
			ps.rtt = sample
		} else {
			ps.rtt += (sample - ps.rtt) / 8
		}
		return true
	case wire.KindReady, wire.KindStart, wire.KindGo:
		return s.handleStart(i, b)
	case wire.KindChecksum:
		c := &s.rx.sum
		if tag, err := s.ctl.Parse(b, wire.KindChecksum, c); err != nil || !s.tagged(i, tag) || c.Frame <= 0 {
			return false
		}
		if s.det != nil {
			s.det.Remote(i, c.Frame, c.Sum)
		}
		if s.log != nil {
			s.logf(logChecksum, slog.Int("frame", int(c.Frame)), slog.String("sum", hex64(c.Sum)), slog.Int("peer", i))
		}
		return true
	case wire.KindState:
		m := &s.rx.state
		if tag, err := s.ctl.Parse(b, wire.KindState, m); err != nil || !s.tagged(i, tag) {
			return false
		}
		return s.handleState(i, m)
	case wire.KindDisconnect:
		if tag, err := s.ctl.Parse(b, wire.KindDisconnect, &s.rx.d); err != nil || !s.tagged(i, tag) {
			return false
		}
		s.disconnect(i)
		return true
	}
	return false
}

// disconnect disconnects peer i here: its frames received so far are
// frozen, and the agreement on its disconnect frame starts.
func (s *Session) disconnect(i int) {
	ps := &s.peers[i]
	if ps.disc {
		return
	}
	ps.disc = true
	ps.frozen = s.next[ps.players[0]]
	ps.dframe = ps.frozen
	for j := range ps.reported {
		if ps.reported[j] {
			ps.dframe = min(ps.dframe, ps.report[j])
		}
	}
}

// handleGossip records what peer from says of the other machines.
func (s *Session) handleGossip(from int, gossip []wire.Gossip) {
	for k, g := range gossip {
		if k >= len(s.peers[from].gossipOrder) {
			continue
		}
		x := s.peers[from].gossipOrder[k]
		if !g.Disconnected {
			// Counts only grow; a reordered packet must not lower one.
			s.peers[from].sees[x] = max(s.peers[from].sees[x], Frame(g.Frame))
			continue
		}
		px := &s.peers[x]
		if px.agreed {
			continue
		}
		f := Frame(g.Frame)
		if px.reported[from] {
			f = min(f, px.report[from])
		}
		px.reported[from], px.report[from] = true, f
		s.disconnect(x)
		px.dframe = min(px.dframe, f)
	}
}

// checkLiveness raises interrupted and disconnected states from silence,
// and finalises disconnect agreements. It returns the earliest frame that
// must be re-simulated because a disconnect frame was agreed.
func (s *Session) checkLiveness() Frame {
	mis := s.frame
	for i := range s.peers {
		ps := &s.peers[i]
		if ps.disc || !s.started {
			continue
		}
		silent := s.now - ps.lastRecv
		if silent > s.interruptAfter && !ps.interrupted {
			ps.interrupted = true
			s.events = append(s.events, Event{Kind: EventInterrupted, Frame: s.frame, Peer: i})
		}
		if silent > s.disconnectAfter {
			s.disconnect(i)
		}
	}
	for x := range s.peers {
		px := &s.peers[x]
		if !px.disc || px.agreed {
			continue
		}
		done := true
		for j := range s.peers {
			if j != x && !s.peers[j].disc && !px.reported[j] {
				done = false
			}
		}
		if !done {
			continue
		}
		px.agreed = true
		for _, p := range px.players {
			s.discFrom[p] = px.dframe
		}
		mis = min(mis, px.dframe)
		s.events = append(s.events, Event{Kind: EventDisconnected, Frame: px.dframe, Peer: x})
	}
	return mis
}

// heard notes a valid packet from peer i.
func (s *Session) heard(i, n int) {
	ps := &s.peers[i]
	ps.lastRecv = s.now
	ps.st.PacketsReceived++
	ps.winRecv++
	ps.winRecvBytes += int64(n)
	if ps.interrupted {
		ps.interrupted = false
		s.events = append(s.events, Event{Kind: EventReconnected, Frame: s.frame, Peer: i})
	}
}

// transmit sends b to peer i and counts it.
func (s *Session) transmit(i int, b []byte) {
	if err := s.tr.Send(i, b); err != nil {
		s.stats.SendErrors++
		return
	}
	ps := &s.peers[i]
	ps.lastSend = s.now
	ps.st.PacketsSent++
	ps.winSent++
	ps.winSentBytes += int64(len(b))
	s.stats.PacketsSent++
	s.stats.BytesSent += int64(len(b))
}

// sendControl sends a control message to peer i.
func (s *Session) sendControl(i int, kind wire.Kind, tag uint16, msg any) {
	b, err := s.ctl.Append(s.sendBuf[:0], kind, tag, msg)
	if err != nil {
		s.stats.SendErrors++
		return
	}
	s.transmit(i, b)
}

// sendProtocol sends the handshake and quality messages due to peer i.
func (s *Session) sendProtocol(i int) {
	ps := &s.peers[i]
	if ps.replyHS || (!ps.verified && s.now-ps.lastSend >= handshakeRetry) || (!s.started && ps.lastSend == 0) {
		s.hs = wire.Handshake{SessionID: s.sessionID, Nonce: s.nonce, Echo: ps.nonce}
		s.sendControl(i, wire.KindHandshake, 0, &s.hs)
		ps.replyHS = false
	}
	if !ps.verified || ps.disc {
		return
	}
	s.sendStart(i)
	if ps.replyQuality {
		s.qr = wire.QualityReply{Echo: ps.replyEcho, Frame: int32(s.frame)}
		s.sendControl(i, wire.KindQualityReply, ps.tag, &s.qr)
		ps.replyQuality = false
	}
	s.sendChecksum(i)
	s.sendState(i)
	// Before the match starts, ping every 100 ms until the round trip is
	// known: the start delay needs it.
	if s.now-ps.lastQuality >= s.qualityEvery || (!s.started && ps.rtt == 0 && s.now-ps.lastQuality >= handshakeRetry) {
		ps.lastQuality = s.now
		s.q = wire.Quality{Sent: int64(s.now), Frame: int32(s.frame)}
		s.sendControl(i, wire.KindQuality, ps.tag, &s.q)
	}
}

// A new final checksum is sent checksumRepeats times, checksumResend
// apart, in case a datagram that carried it is lost.
const (
	checksumRepeats = 3
	checksumResend  = 250 * time.Millisecond
)

// sendChecksum sends peer i our newest final checksum when it is new, and
// repeats it.
func (s *Session) sendChecksum(i int) {
	if s.det == nil {
		return
	}
	f, sum, ok := s.det.Latest()
	ps := &s.peers[i]
	if !ok {
		return
	}
	if Frame(f) != ps.sumSent {
		ps.sumSent, ps.sumSends = Frame(f), 0
	} else if ps.sumSends >= checksumRepeats || s.now-ps.sumSentAt < checksumResend {
		return
	}
	ps.sumSends++
	ps.sumSentAt = s.now
	s.tx.sum = wire.Checksum{Frame: f, Sum: sum}
	s.sendControl(i, wire.KindChecksum, ps.tag, &s.tx.sum)
}

// throttled reports whether peer i, silent for a second, must wait.
func (s *Session) throttled(i int) bool {
	ps := &s.peers[i]
	return s.now-ps.lastRecv > ThrottleAfter && s.now-ps.lastSend < ThrottleInterval
}

// rollWindows closes the one-second rate windows.
func (s *Session) rollWindows() {
	for i := range s.peers {
		ps := &s.peers[i]
		if d := s.now - ps.winStart; d >= time.Second {
			sec := d.Seconds()
			ps.st.SendPacketsPerSec, ps.st.SendBytesPerSec = float64(ps.winSent)/sec, float64(ps.winSentBytes)/sec
			ps.st.RecvPacketsPerSec, ps.st.RecvBytesPerSec = float64(ps.winRecv)/sec, float64(ps.winRecvBytes)/sec
			ps.winSent, ps.winSentBytes, ps.winRecv, ps.winRecvBytes = 0, 0, 0, 0
			ps.winStart = s.now
		}
	}
}

// PeerStats returns peer i's statistics; ok is false for an unknown peer.
// It does not allocate.
func (s *Session) PeerStats(i int) (st PeerStats, ok bool) {
	if i < 0 || i >= len(s.peers) {
		return PeerStats{}, false
	}
	ps := &s.peers[i]
	st = ps.st
	st.RTT = ps.rtt
	st.Verified, st.Interrupted, st.Disconnected = ps.verified, ps.interrupted, ps.disc
	st.DisconnectAgreed = ps.agreed
	if ps.disc {
		st.DisconnectFrame = ps.dframe
	}
	st.SinceLastHeard = s.now - ps.lastRecv
	return st, true
}

// Close tells every peer at once that this machine is leaving, and ends the
// session: later calls return [ErrClosed].
func (s *Session) Close() error {
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	if s.tr == nil {
		return nil
	}
	s.now = s.clock.Now()
	d := wire.Disconnect{Frame: int32(s.next[s.local[0]])}
	for i := range s.peers {
		if s.peers[i].verified && !s.peers[i].disc {
			for range 2 { // a second copy in case the first is lost
				s.sendControl(i, wire.KindDisconnect, s.peers[i].tag, &d)
			}
		}
	}
	return nil
}
