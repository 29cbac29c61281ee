package rollback

import (
	"fmt"
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// Session is a rollback netcode session: a state machine that the game loop
// drives once per frame. See the package documentation for the loop.
// A Session is not safe for concurrent use.
//
// Session is a facade over owner types, each with its own state and tests:
// the inputs (inputRing), the snapshots (snapshots), each remote machine
// (peer, made of link, progress, leave, ...), the fairness governor
// (advantage.Governor), the input lag (inputLag), desync detection
// (checksums), the start of the match (starter) and lockstep's schedule
// (lockstep). docs/architecture.md shows which owns what.
type Session struct {
	roster roster
	app    app    // the game, its observer, and whether it renders
	tx     outbox // what goes out, to the peers
	clock  func() time.Duration
	now    time.Duration // the clock, read once per call
	frame  Frame         // the next frame to simulate

	snaps snapshots
	peers peerSet
	pace  pace
	sums  *checksums  // nil: no desync checksums
	stmts *statements // nil: fewer than three machines, or lockstep
	sync  *syncCheck  // nil: not in sync-test mode
	ls    *lockstep   // nil: rollback mode
	aud   *audience   // nil: no spectators (Config.MaxSpectators) and no rejoins
	join  *joiner     // nil: not joining a match in progress (Config.InProgress)
	// advance runs Advance's tick in the session's mode (mode.go): chosen
	// once, changed only by becomeJoining and becomePlaying.
	advance advancer
	proto   protocol
	quiet   quiet // lazy sending
	start   starter
	io      codec
	out     recording

	events eventLog
	stats  Stats

	// The rings last, after the fields every call reads: a call touches
	// one frame's row of each.
	times  frameClock
	inputs inputRing
}

// roster is who plays where.
type roster struct {
	players int
	local   []PlayerID      // sorted
	owner   [MaxPlayers]int // peer index of a remote player
	layout  wire.Layout
	format  wire.Format // the layout, checked once: every input packet is coded with it
	// maxFrames is the most frames of local inputs an input packet
	// carries: at the layout's worst case bits per frame, every datagram
	// stays under maxDatagram.
	maxFrames int
}

// maxDatagram is the largest packet the session sends, safely under the
// internet's usual 1280-byte IPv6 minimum MTU.
const maxDatagram = 1200

// linkLagSlack: see linkLagBound. It covers loss and jitter above the
// floor; at 1.5 a peer that acknowledged 20 frames short, or sent its
// inputs 10 frames late, still raised an honest machine's input lag on
// wifi to 2 (the matches without it stay at 1; 20 matches of 2 and 3
// machines each); at 1.25 it does not.
const linkLagSlack = 1.25

// Frame returns the next frame to be simulated, which is also the number of
// frames simulated so far.
func (s *Session) Frame() Frame {
	if s.join != nil && s.join.watch != nil {
		return s.join.watch.frame
	}
	return s.frame
}

// ConfirmedFrame returns the first frame for which some connected player's
// input has not arrived: every input before it is here. It can exceed
// [Session.Frame] (inputs arrive ahead of the simulation: always in
// lockstep, and in rollback mode from a peer that runs ahead), and it jumps
// forward when a disconnection is agreed (the player leaves the minimum).
// It is not a promise of finality with three or more machines: a machine
// that leaves is cut at the fewest of its frames any other machine had
// (docs/protocol.md), which can be before ConfirmedFrame, and the frames
// after the cut are re-simulated with the default input. A Config.Recorder
// receives each frame only once it is final.
func (s *Session) ConfirmedFrame() Frame { return s.inputs.confirmed() }

// usable returns the error for a call that changes the session when it
// cannot take one: closed, or inside Extrapolate's render.
func (s *Session) usable() error {
	switch {
	case s.proto.closed:
		return ErrClosed
	case s.app.rendering:
		return errInRender
	}
	return nil
}

// Stats returns the session's statistics. It does not allocate.
func (s *Session) Stats() Stats {
	st := s.stats
	st.Frame, st.ConfirmedFrame = s.Frame(), s.ConfirmedFrame()
	if s.join != nil { // once it took over, s.stats.Join
		st.Join = s.join.stats
	}
	st.InputLag, st.Advantage, st.QueuedStalls = s.pace.lag.delay, s.pace.gov.Advantage(), s.pace.gov.Queued()
	st.Saves, st.SnapshotSteps = s.snaps.saves, s.snaps.steps
	st.QuietTicks = s.quiet.ticks
	if c := s.pace.clock; c != nil {
		st.Decided, st.DecisionConflicts = c.taken, c.conflicts
	}
	if s.sums != nil && s.sums.rec != nil {
		st.Recovered, st.Desync, st.RecoveryTime = s.sums.rec.done, s.sums.rec.report, s.sums.rec.took
	}
	if s.aud != nil {
		st.Spectators, st.SpectatorPackets, st.SpectatorBytes, st.SpectatorsCut = s.aud.served(), s.aud.sent, s.aud.sentBytes, s.aud.cut
		st.PacketsSent += s.aud.sent
		st.BytesSent += s.aud.sentBytes
	}
	return st
}

// InputFrame returns the frame that local player p's next input will be
// used for: the frame the next Advance simulates plus the input lag.
func (s *Session) InputFrame(p PlayerID) Frame {
	if p < 0 || int(p) >= s.roster.players {
		return -1
	}
	return s.inputs.next[p]
}

// AddLocalInput offers in as local player p's input for the frame the next
// [Session.Advance] simulates plus the input lag ([Session.InputFrame]),
// and reports whether the session queued it. Offer every local player's
// input once per tick, before Advance; queued is false in the ordinary flow
// of a match, never an error:
//
//   - In rollback mode, false means this tick's frame already has its
//     input — the last Advance stalled (for a missing peer, for frame
//     advantage, or to raise the input lag) — so drop the sample. While the
//     session raises its input lag it stalls but still takes input.
//   - In lockstep mode the session takes one input per tick of its own
//     clock (Config.TickRate, counted from the start of the match),
//     whatever the simulation is doing; false means the next is not due yet
//     (or the input ring is full): keep the sample (an RTS keeps its
//     commands) and offer it again next render frame. Offer until it
//     returns false: after a slow render frame more than one is due.
//
// err is non-nil only for a call that is wrong: a player that is not local
// or bits outside the layout ([ErrInput]), or a closed session
// ([ErrClosed]). It does not allocate.
func (s *Session) AddLocalInput(p PlayerID, in Input) (queued bool, err error) {
	switch {
	case s.proto.closed:
		return false, ErrClosed
	case p < 0 || int(p) >= s.roster.players || !s.inputs.local[p]:
		return false, fmt.Errorf("%w: player %d is not local", ErrInput, p)
	case in&^s.inputs.mask != 0:
		return false, fmt.Errorf("%w: %#x has bits outside the layout (mask %#x)", ErrInput, uint64(in), uint64(s.inputs.mask))
	}
	if s.join != nil {
		return false, nil // its players are not back yet
	}
	next := s.inputs.next[p]
	if s.ls != nil {
		if !s.ls.inputDue(next, s.pace.lag.delay, s.proto.started, s.clock()-s.proto.startedAt) || next+1-s.ringLow() >= ringSize {
			return false, nil
		}
	} else if next > s.frame+Frame(s.pace.lag.delay) && (!s.pace.clock.extraDue(next, s.frame, Frame(s.pace.lag.delay)) || !s.ringRoom(next+1)) {
		return false, nil
	}
	if d, ok := s.pace.clock.decided(next, p); ok {
		in = d // the relay found us late for it: its decision is final
	}
	s.inputs.addLocal(p, in)
	return true, nil
}

// Advance runs one frame of the protocol: it receives every waiting packet,
// rolls back and re-simulates if a prediction was wrong, simulates the next
// frame (unless it must stall) and sends the local inputs to every peer.
// Every local player's input for the frame must have been added. Until the
// handshake with every peer is complete, Advance only handshakes and
// reports Stalled; it returns a [*HandshakeError] if that takes longer than
// Config.Timeouts.Handshake.
//
// In lockstep mode Advance is called once per render frame instead: it
// simulates every frame the playout schedule has made due whose inputs are
// all here, up to lockstepCatchUp of them, and no local input is required
// (see the package documentation).
//
// Advance allocates nothing in steady state, rollbacks included.
func (s *Session) Advance() (Result, error) {
	if err := s.usable(); err != nil {
		return Result{Frame: s.frame, Stalled: true}, err
	}
	if s.sums.failed() != nil {
		return s.Idle()
	}
	return s.advance(s)
}

// advanceRollback is Advance in rollback mode.
func (s *Session) advanceRollback() (Result, error) {
	if !s.hasLocalInput() && s.pace.lag.stalls == 0 {
		return Result{Frame: s.frame}, fmt.Errorf("%w: a local input for frame %d is missing", ErrInput, s.frame)
	}
	// The Result is built at each return from scalars: one assembled field
	// by field on the stack and copied out stalled on store forwarding
	// (~20 ns a call, in the profile of a steady Advance).
	frame, resim := s.frame, 0
	mis, err := s.poll()
	if err != nil || !s.proto.started {
		return s.stall(Result{Frame: frame}, err)
	}
	// Forced modes roll back on every simulated frame, just before it (that
	// covers any misprediction too); never on a stalled tick, whose forced
	// rollback would reach a frame the anchor has already moved past.
	if s.snaps.forced == 0 && mis < s.frame {
		if resim, err = s.rollback(mis, s.frame); err != nil {
			return Result{Frame: frame, Resimulated: resim, Events: s.events}, err
		}
	}
	if s.mustStallTick() {
		return s.stall(Result{Frame: frame, Resimulated: resim}, nil)
	}
	if m := max(0, s.frame-Frame(s.snaps.forced)); s.snaps.forced > 0 && m < s.frame {
		// The frame simulated right after this rollback is next.
		if resim, err = s.rollback(m, s.frame+1); err != nil {
			return Result{Frame: frame, Resimulated: resim, Events: s.events}, err
		}
	}
	s.step(false)
	s.pace.played(s.frame, &s.stats, &s.events)
	simulated := 1
	for s.pace.lag.catchUp > 0 && s.hasLocalInput() {
		if _, stall := s.horizon().mustStall(); stall {
			break
		}
		s.pace.lag.catchUp--
		s.step(false)
		s.pace.played(s.frame, &s.stats, &s.events)
		simulated++
	}
	simulated = s.catchUpClock(simulated)
	err = s.endTick()
	return Result{Frame: frame, Simulated: simulated, Resimulated: resim, Events: s.events}, err
}

// stall ends an Advance that simulates nothing: it sends what the peers
// are due and reports Stalled.
func (s *Session) stall(r Result, err error) (Result, error) {
	// What became final is given out on a stalled tick too: a machine
	// taking over waits for the frames before its take-over frame, while
	// we stall for its inputs from there.
	if s.out.feeding(s.aud) {
		s.out.record(s.now, s.horizon())
	}
	if s.sums != nil && s.sums.bun.due(s.frame) {
		s.sums.bun.log(s.horizon()) // the final inputs, for a desync bundle
	}
	// And the checksums that came are compared: a machine stalled for a
	// peer that found a desync (and stopped: its inputs stop) learns of it
	// from the peer's checksum only here.
	s.checkDesync(true)
	s.send()
	r.Stalled, r.Events = true, s.events
	if e := s.sums.failed(); err == nil && e != nil {
		err = e
	}
	return r, err
}

// endTick ends an Advance that got past the handshake: it gives the
// Recorder what became final, compares checksums, sends, and returns any
// sync-test or desync error. The caller's Result takes the events. (The
// Result is not passed through it: the copies in and out stalled on store
// forwarding.)
func (s *Session) endTick() error {
	if s.out.feeding(s.aud) {
		s.out.record(s.now, s.horizon())
	}
	if s.sums != nil && s.sums.bun.due(s.frame) {
		s.sums.bun.log(s.horizon()) // the final inputs, for a desync bundle
	}
	if s.sums.news(s.frame) {
		s.checkDesync(false)
	}
	s.send()
	if s.sync != nil && s.sync.err != nil {
		return s.sync.err
	}
	if e := s.sums.failed(); e != nil {
		return e
	}
	return nil
}

// starving is the wait for an input since EventStarved.
type starving struct {
	on    bool
	peer  int // the peer waited for (-1: a local player)
	since time.Duration
}

// starve notes that the session waits for peer's input (-1: a local
// player's), at now, with EventStarved (at frame, into events) when it
// starts waiting. It returns the peer to cut, -1 for none: a peer that
// keeps the session waiting for longer than disconnectAfter is
// disconnected, whatever it sends, so that no stall lasts for ever.
func (w *starving) starve(peer int, now, disconnectAfter time.Duration, events *eventLog, frame Frame) int {
	if !w.on || peer != w.peer {
		if !w.on {
			events.emit(EventStarved, frame, peer)
		}
		w.on, w.peer, w.since = true, peer, now
	}
	if peer < 0 || now-w.since <= disconnectAfter {
		return -1
	}
	return peer
}

// resume notes that the session advances again, with EventResumed (at
// frame, into events) after a wait.
func (w *starving) resume(events *eventLog, frame Frame) {
	if w.on {
		w.on = false
		events.emit(EventResumed, frame, -1)
	}
}

// cut disconnects peer i, which kept the session waiting for its inputs
// past the disconnect timeout (starving.starve), unless it left already;
// one that still talks but withholds its inputs is named
// (SuspectWithheld).
func (s *Session) cut(i int) {
	if i < 0 || i >= len(s.peers) || s.peers[i].leave.disc {
		return
	}
	if s.now-s.peers[i].link.lastRecv < s.proto.interruptAfter {
		s.suspect(i, SuspectWithheld)
	}
	s.disconnect(i)
}

// Idle receives, corrects and sends like [Session.Advance] but simulates no
// new frame. Call it instead of Advance while the game is paused or waiting
// for the peers to finish, so that they still get our inputs and acks.
func (s *Session) Idle() (Result, error) {
	if err := s.usable(); err != nil {
		return Result{Frame: s.frame, Stalled: true}, err
	}
	if s.join != nil {
		return s.advanceJoin()
	}
	r := Result{Frame: s.frame, Stalled: true}
	mis, err := s.poll()
	if err == nil && s.proto.started && mis < s.frame && s.sums.failed() == nil {
		r.Resimulated, err = s.rollback(mis, s.frame)
	}
	if s.out.feeding(s.aud) {
		s.out.record(s.now, s.horizon())
	}
	if s.sums != nil && s.sums.bun.due(s.frame) {
		s.sums.bun.log(s.horizon()) // the final inputs, for a desync bundle
	}
	s.checkDesync(false)
	s.send()
	r.Events = s.events
	if e := s.sums.failed(); err == nil && e != nil {
		err = e
	}
	return r, err
}

// poll reads the clock, drains the transport and updates the protocol
// state. It returns the first frame to re-simulate.
func (s *Session) poll() (Frame, error) {
	s.now = s.clock()
	s.events = s.events[:0]
	if s.frame >= s.proto.frameLimit {
		return s.frame, fmt.Errorf("%w: frame %d", ErrFrameLimit, s.frame)
	}
	// The timers as the call found them: receiving moves their stamps
	// only forward, or lowers the deadline (timers.go).
	timers := s.proto.timersDue(s.now)
	mis := s.receive()
	if timers || s.proto.departing || s.proto.agreed { // else it has nothing to do
		mis = min(mis, s.checkLiveness(timers))
	}
	if s.stmts != nil {
		mis = min(mis, s.stmts.port.poll(s, s.frame))
	}
	if timers { // the peers' one-second windows
		for i := range s.peers {
			ps := &s.peers[i]
			if l := &ps.link; s.now-l.winStart >= time.Second {
				l.roll(s.now, &ps.st)
				rtt := ps.timing.judged(l.rtt)
				ackLies, lookahead := ps.timing.roll(rtt)
				if s.proto.started && !ps.leave.disc && l.unanswered(s.now) && s.now-l.lastRecv < s.proto.interruptAfter {
					s.suspect(i, SuspectWithheld) // it talks, but answers no ping
				}
				if s.proto.started && rtt > 0 && !ps.leave.disc {
					if ackLies {
						s.suspect(i, SuspectAck)
					}
					if lookahead && s.ls == nil {
						s.suspect(i, SuspectLookahead)
					}
				}
			}
		}
	}
	if s.proto.started {
		return mis, nil
	}
	return mis, s.handshakeWait()
}

// PeerStats returns peer i's statistics; ok is false for an unknown peer.
// It does not allocate.
func (s *Session) PeerStats(i int) (st PeerStats, ok bool) {
	if i < 0 || i >= len(s.peers) {
		return PeerStats{}, false
	}
	ps := &s.peers[i]
	st = ps.st
	st.RTT = ps.link.rtt
	st.Verified, st.Interrupted, st.Disconnected = ps.auth.verified, ps.link.interrupted, ps.leave.disc
	st.DisconnectAgreed, st.Reserved = ps.leave.agreed, ps.late
	if ps.leave.disc {
		st.DisconnectFrame = ps.leave.frame
	}
	st.SinceLastHeard = s.now - ps.link.lastRecv
	st.Suspected = ps.suspect.count
	return st, true
}

// Close tells every peer at once that this machine is leaving, and ends the
// session: later calls of AddLocalInput, Advance, Idle, Extrapolate and
// Close return [ErrClosed] (the getters still answer). It does not close
// the Transport: the caller created it and closes it (udp.Transport.Close)
// after Close, which sends through it.
func (s *Session) Close() error {
	if err := s.usable(); err != nil {
		return err
	}
	s.proto.closed = true
	if s.tx.tr == nil {
		return nil
	}
	s.now = s.clock()
	if s.join != nil {
		s.join.leave(s.peers, &s.tx)
		if s.join.watch != nil {
			_ = s.join.watch.Close()
		}
		return nil
	}
	d := wire.Disconnect{Frame: int32(s.inputs.next[s.roster.local[0]])}
	if s.aud != nil {
		s.aud.close(s.now)
	}
	for i := range s.peers {
		if s.peers[i].auth.verified && !s.peers[i].leave.disc {
			for range 2 { // a second copy in case the first is lost
				s.tx.control(i, &d)
			}
		}
	}
	return nil
}

// hasLocalInput reports whether every local player's input for s.frame is
// here. A method of the session rather than of the ring: the steady tick
// measured 2.16 times its floor with the ring's, 2.08 with this (medians
// of 8 interleaved runs).
func (s *Session) hasLocalInput() bool {
	for _, p := range s.roster.local {
		if s.inputs.next[p] <= s.frame {
			return false
		}
	}
	return true
}
