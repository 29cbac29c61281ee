package rollback

import (
	"errors"
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the side of the machine that comes back into a match in
// progress (Config.InProgress; docs/protocol.md, "Reconnect"). It
// handshakes with every peer anew; the first to answer is its source: it
// watches the match through it as a Spectator does (the state at a final
// frame, then the final inputs) until it has caught up, then proposes a
// take-over frame T to every machine that plays on. Once every machine
// that plays at T accepted it and sent a checksum of its state at T, a
// majority of them equal to ours, and we have simulated every frame
// before T, it is a player again: its inputs from T on are used,
// everything before is final. Without a majority the source's state is
// refuted (joinjudge.go), and with no source left it is ErrJoinState: it
// never plays.

// sourceWait is how long a joiner waits for the peer it watches through
// to answer before it tries the next: one that joins itself, or left, has
// nothing to serve.
const sourceWait = 2 * time.Second

// joinLead is how many frames past the final inputs it has a joiner
// proposes to take over at: time for the proposal to reach every machine
// before that frame is final anywhere (a refusal names a later one).
const joinLead = 30

// ErrJoinState is returned by a session joining in progress when a
// machine's checksum of the state at the take-over frame differs from the
// state it was given and simulated: it does not play.
var ErrJoinState = errors.New("rollback: the state this machine joined at differs from a peer's")

// ErrJoinTimeout is returned by a session joining in progress that did not
// take its players back within Timeouts.Handshake after it caught up, or
// that heard from no peer within Timeouts.Handshake.
var ErrJoinTimeout = errors.New("rollback: could not take the players back")

// joiner is a session's way back into a match in progress.
type joiner struct {
	cfg        SpectatorConfig
	watch      *Spectator // nil until a source answered
	src        int
	born       time.Duration
	caughtUp   time.Duration // when the watch caught up
	served     bool          // a source let us watch (answered our watch's handshake)
	take       Frame         // the take-over frame proposed; 0: none yet
	proposedAt time.Duration
	live       [MaxPlayers]bool // by peer: plays on, per the final inputs
	late       [MaxPlayers]bool // by peer: Peer.Late (a slot still empty if it does not play)
	absent     [MaxPlayers]bool // by peer: said it joins itself, so does not play at take
	refuted    [MaxPlayers]bool // by peer: watched, and its state refuted by another machine's checksum
	outvoted   [MaxPlayers]bool // by peer: its checksum at take differs from the majority's, which took over
	acc        [MaxPlayers]bool // by peer: accepted take
	ready      [MaxPlayers]bool // by peer: sent its checksum of the state at take
	sums       [MaxPlayers]uint64
	playing    [MaxPlayers]uint8 // by peer: who plays at take there, per its Ready
	mine       uint64            // our checksum of the state at take
	summed     bool
	err        error
	stats      WatchStats
}

// newJoiner prepares a session's join: the watch starts once a peer
// answers our handshake.
func newJoiner(s *Session, cfg *Config) *joiner {
	j := &joiner{born: s.clock(), src: -1, cfg: SpectatorConfig{Players: cfg.Players, Layout: cfg.Layout, State: cfg.State,
		Game: cfg.Game, Transport: cfg.Transport, SessionID: cfg.SessionID, Secret: cfg.Secret, Observer: cfg.Observer,
		Clock: s.clock, Rand: cfg.Rand, TransferRate: cfg.TransferRate, Timeouts: cfg.Timeouts}}
	j.stats = WatchStats{Source: -1, StateFrame: -1, TakeOver: -1}
	for i := range s.peers {
		// Whether a reserved slot is still empty, the final inputs say
		// (takeOver); until then every peer is answered alike.
		j.late[i], s.peers[i].late = s.peers[i].late, false
	}
	return j
}

// advanceJoin is Advance while the session joins: it watches, proposes,
// and takes the players back.
func (s *Session) advanceJoin() (Result, error) {
	s.now = s.clock()
	s.events = s.events[:0]
	j := s.join
	if j.watch != nil {
		j.watch.now = s.now
		j.watch.events = j.watch.events[:0]
	}
	s.receiveJoin()
	r := Result{Frame: s.Frame(), Stalled: true}
	if j.err == nil {
		j.watchStep(&r, s.peers, s.now, s.proto.hsTimeout)
	}
	if j.err == nil {
		switch j.step(s.peers, s.now, s.proto.hsTimeout, s.snaps.arena.Bytes(), s.stmts) {
		case joinGiveUp:
			j.leave(s.peers, &s.tx)
		case joinTakeOver:
			s.takeOver()
		}
	}
	if j.watch != nil && j.err == nil {
		j.watch.send()
		s.events = append(s.events, j.watch.events...)
	}
	for i := range s.peers {
		a := &s.peers[i].auth
		if a.handshakeDue(s.now) {
			s.proto.sendHandshake(&s.tx, &s.io.hs, i, a.nonce)
			a.replyHS = false
		}
	}
	if s.join != nil {
		j.propose(s.peers, &s.tx, &s.io.join, s.stmts, s.now)
	}
	r.Events = s.events
	if j.err == nil && s.join == nil {
		r.Frame = s.frame
	}
	return r, j.err
}

// watchStep starts a watch through the first of the peers keyed, moves to
// the next when it fails, and simulates the frames due, never T or after.
func (j *joiner) watchStep(r *Result, peers peerSet, now, hsTimeout time.Duration) {
	if j.watch == nil {
		for i := range peers {
			if peers[i].auth.keyed() {
				j.watchFrom(i)
				break
			}
		}
		if j.watch == nil {
			if now-j.born > hsTimeout {
				j.err = fmt.Errorf("%w: no peer answered within %v", ErrJoinTimeout, hsTimeout)
			}
			return
		}
	}
	w := j.watch
	limit := noFrame
	if j.take > 0 {
		limit = j.take
	}
	*r = w.run(limit)
	j.stats.WatchedFrames += int64(r.Simulated)
	if terms := (*HandshakeError)(nil); errors.As(w.err, &terms) && terms.Field != "" {
		j.err = w.err // our arena cannot hold the match's state: no source will do
		return
	}
	if w.err != nil || (w.stats.SourceLeft && w.frame >= w.feed.high) || (!w.up.verified && now-w.born > sourceWait) {
		// It left, or never served us: the next peer, from a new state.
		// The take-over frame stays proposed: the machines that accepted
		// it hold every frame from it on for our inputs, so that a state
		// past it can only come from one that did not (step proposes
		// anew then). Dropping it deadlocked the join: the new source's
		// final frames stopped at the take-over frame, and a join
		// proposes only past a final frame.
		j.stats.WatchErrors++
		if !j.served && now-j.born > hsTimeout {
			// Every machine answers our handshake, but none lets us watch:
			// a machine coming back after their RejoinWindow gets only
			// that, and would try one after another for ever.
			j.err = fmt.Errorf("%w: no peer let this machine watch the match within %v (the peers' RejoinWindow may have passed since it left)", ErrJoinTimeout, hsTimeout)
			return
		}
		next, ok := j.nextSource(peers, false)
		if !ok {
			next = (j.src + 1) % len(peers) // every one was refuted: round again
		}
		j.watchFrom(next)
		return
	}
	if j.take > 0 && w.frame < j.take && !j.live[j.src] {
		// The machines' Readies say our source does not play at the
		// take-over frame (they cut it off): its final frames may stop
		// short of it for ever (a forger the others disconnected, watched
		// through, held a join at 1296 of 1568 until it timed out). The
		// next source that plays, with a new catch-up time.
		if next, ok := j.nextSource(peers, true); ok {
			j.caughtUp = 0
			j.watchFrom(next)
			return
		}
	}
	j.served = j.served || w.up.verified
	if w.joined && j.stats.StateFrame < 0 {
		j.stats.StateFrame, j.stats.StateBytes, j.stats.StateTime = w.stats.StateFrame, w.stats.StateBytes, w.stats.StateTime
	}
	if w.stats.CaughtUp && j.caughtUp == 0 {
		j.caughtUp = max(now, 1)
	}
}

// roundTake rounds a take-over frame up to a statement interval's start
// when the match signs its inputs (st, statements.go; nil for none).
func roundTake(t Frame, st *statements) Frame {
	if st != nil {
		n := st.interval()
		t = (t + n - 1) / n * n
	}
	return t
}

// retake makes t the take-over frame: every answer starts again.
func (j *joiner) retake(t Frame) {
	j.take, j.proposedAt, j.summed = t, 0, false
	j.acc, j.ready, j.absent = [MaxPlayers]bool{}, [MaxPlayers]bool{}, [MaxPlayers]bool{}
	j.stats.Proposals++
}

// joinOutcome is what a joining tick's step asks of the session.
type joinOutcome uint8

const (
	joinWait     joinOutcome = iota // nothing yet
	joinGiveUp                      // the join failed (j.err): tell the machines proposed to
	joinTakeOver                    // a majority of the machines that play at the take-over frame confirmed it
)

// step proposes once the watch has caught up and every machine that plays
// on among peers is keyed; checks the state at the take-over frame once
// there (state: the arena's bytes); and says when to take the players
// back: every machine that plays at it accepted it, and a majority of
// them confirmed the state.
func (j *joiner) step(peers peerSet, now, hsTimeout time.Duration, state []byte, stmts *statements) joinOutcome {
	if j.caughtUp != 0 && now-j.caughtUp > hsTimeout {
		// Also while the next source's watch starts: one whose only
		// source left after the catch-up waited for ever.
		j.err = fmt.Errorf("%w within %v of catching up (%s)", ErrJoinTimeout, hsTimeout, j.hint(peers))
		return joinWait
	}
	w := j.watch
	if w == nil || !w.joined {
		return joinWait
	}
	if j.pastState(stmts) {
		return joinWait
	}
	if j.take == 0 {
		if j.caughtUp == 0 || w.feed.high == w.feed.low {
			return joinWait
		}
		j.livePeers(peers)
		for i := range peers {
			if j.live[i] && !peers[i].auth.keyed() {
				return joinWait
			}
		}
		j.retake(roundTake(w.feed.high+joinLead, stmts))
		return joinWait
	}
	j.livePeers(peers) // a machine may have left, or come back, since
	if w.frame == j.take && !j.summed {
		j.mine, j.summed = xxhash.Sum64(state), true
	}
	if !j.summed {
		return joinWait
	}
	confirmed, live, against, playing := 0, 0, -1, -1
	for i := range peers {
		if !j.live[i] {
			continue
		}
		if !j.acc[i] || !j.ready[i] {
			return joinWait
		}
		if playing >= 0 && int(j.playing[i]) != playing {
			return joinWait // they disagree on who plays at take: one has not yet heard of a join
		}
		playing, live = int(j.playing[i]), live+1
		j.outvoted[i] = j.sums[i] != j.mine
		if !j.outvoted[i] {
			confirmed++
		} else if against < 0 {
			against = i
		}
	}
	if against >= 0 && 2*confirmed <= live {
		return j.refute(against, peers) // not a majority's state
	}
	if stmts != nil && stmts.mismatch != nil {
		j.err = stmts.mismatch
		return joinGiveUp
	}
	if confirmed == 0 {
		return joinWait
	}
	j.stats.Confirmed = confirmed
	return joinTakeOver
}

// propose sends each live one of the peers our proposal (m is its
// scratch) every joinResend until it accepts it and sends its Ready.
func (j *joiner) propose(peers peerSet, tx *outbox, m *wire.Join, stmts *statements, now time.Duration) {
	if j.take == 0 || j.err != nil || now-j.proposedAt < joinResend {
		return
	}
	j.proposedAt = now
	*m = wire.Join{Op: wire.JoinPropose, Take: int32(j.take), Keys: m.Keys[:0]}
	if stmts != nil {
		m.Keys = append(m.Keys, stmts.keys[stmts.me][:]...)
	}
	for i := range peers {
		if j.live[i] && peers[i].auth.keyed() && (!j.acc[i] || !j.ready[i]) {
			tx.control(i, m)
		}
	}
}

// leave tells every machine of peers we proposed to that we give up: its
// players are absent again there.
func (j *joiner) leave(peers peerSet, tx *outbox) {
	d := wire.Disconnect{Frame: -1}
	for i := range peers {
		if j.acc[i] && peers[i].auth.keyed() {
			tx.control(i, &d)
		}
	}
}

// takeOver makes the session a player at the take-over frame T: the
// watch simulated every frame before it with final inputs, so the state
// is final; the inputs of frames from T on come from the peers and from
// the game, as at the start of a match.
func (s *Session) takeOver() {
	j, w := s.join, s.join.watch
	t := j.take
	s.frame, s.inputs.clear = t, 0 // the players' next frames are set again below
	snaps := &s.snaps
	snaps.reset()
	if snaps.on {
		_ = s.snaps.saveLogged(0, t, s.out.log, s.now) // the live state: not inside a snapshot
	}
	mask := w.feed.mask(t - 1)
	for p := range s.roster.players {
		pl := PlayerID(p)
		// Frame t-1's inputs are the base of the first packets each way:
		// the final ones, and zero for our players (inputRing.rejoin).
		if s.inputs.local[p] {
			s.inputs.next[p] = t + Frame(s.pace.lag.delay)
			s.inputs.in[s.inputs.cell(t-1, PlayerID(p))] = 0
			continue
		}
		s.inputs.next[p], s.inputs.last[p] = t, w.feed.input(t-1, p)
		s.inputs.in[s.inputs.cell(t-1, PlayerID(p))] = s.inputs.last[p]
		if mask&(1<<p) != 0 {
			s.inputs.disconnect(pl, t)
			if j.live[s.roster.owner[p]] {
				// Its machine accepted t: it takes its players back at t
				// too (a join at the same frame as ours).
				s.inputs.rejoin(pl, t)
			}
		}
	}
	for i := range s.peers {
		ps := &s.peers[i]
		ps.progress = progress{ack: t, proves: -1}
		ps.link.lastRecv, ps.link.winStart, ps.link.lastQuality = s.now, s.now, s.now-s.proto.qualityEvery
		ps.start.goSeen = true
		for x := range s.peers {
			ps.gossip.sees[x] = t
		}
		if !j.live[i] {
			ps.join.since = s.now
			// Gone since before the frames we hold show: that is its
			// disconnect frame in our gossip, old news to the machines
			// that take it back at t.
			f := t
			for f > w.feed.low && w.feed.mask(f-1)&(1<<ps.players[0]) != 0 {
				f--
			}
			ps.leave, s.proto.agreed = leave{disc: true, agreed: true, frozen: f, frame: f}, true
			ps.late = j.late[i]
			// One that keyed with us meanwhile is joining too: its
			// proposal is answered now.
			ps.join.keyed = ps.auth.keyed()
			s.sums.forget(i)
		}
	}
	s.out.recorded = t
	if s.aud != nil {
		s.aud.feed.reset(t)
	} else if s.peers.departed(s.proto.rejoinWindow > 0) {
		s.serve(0) // one that left may come back: it watches us first
	}
	if s.sums != nil {
		s.sums.final = t - 1
	}
	if s.stmts != nil {
		s.stmts.begin(int32(t / s.stmts.every))
	}
	s.proto.started, s.proto.startedAt, s.proto.timersAt = true, s.now, 0 // pinged at once (resetTimers)
	s.peers[j.src].st.StateBytes, s.peers[j.src].st.StateTime = j.stats.StateBytes, j.stats.StateTime
	j.stats.TakeOver, j.stats.TakeTime, j.stats.TookOver = t, max(1, s.now-j.born), true
	s.stats.Join = j.stats
	s.join = nil
	s.becomePlaying()
	s.events.emit(EventTookOver, t, -1)
	for i := range s.peers {
		if j.refuted[i] || j.outvoted[i] {
			s.suspect(i, SuspectDesync) // its state lost to the one a majority confirmed
		}
	}
}

// watchFrom starts watching the match through peer i: the state comes
// anew.
func (j *joiner) watchFrom(i int) {
	j.watch, j.summed, j.stats.StateFrame = nil, false, -1
	c := j.cfg
	c.Source = i
	w, err := NewSpectator(c)
	if err != nil {
		j.err = err
		return
	}
	j.watch, j.src, j.stats.Source = w, i, i
}
