package rollback

import (
	"errors"
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is a joining machine's receive path: the datagrams of the
// source it watches the match through (a spectator's link, Spectator.claim) and
// the machines' answers to its take-over proposal.

// receiveJoin takes every waiting datagram while joining: the source's
// watch datagrams go to the watch, the rest to the session's links.
func (s *Session) receiveJoin() {
	j := s.join
	buf := s.io.recvBuf
	var judged [MaxPlayers]int
	for {
		n, i, ok := s.tx.tr.Receive(buf)
		if !ok {
			return
		}
		s.stats.PacketsReceived++
		s.stats.BytesReceived += int64(n)
		if n <= 0 || n > maxDatagram || i < 0 || i >= len(s.peers) || judged[i] == peerBudget {
			s.stats.PacketsInvalid++
			continue
		}
		judged[i]++
		b := buf[:n]
		if w := j.watch; w != nil && i == j.src && w.claim(b, &s.io.rx.hs, s.proto.keys.auth) {
			continue
		}
		ps := &s.peers[i]
		ps.auth.heard = true
		if wire.Kind(b[0]) == wire.KindHandshake {
			s.handleHandshake(i, b)
			continue
		}
		if ps.auth.open == nil {
			continue
		}
		body, err := ps.auth.open.Open(b)
		if err != nil {
			s.stats.PacketsInvalid++
			continue
		}
		s.peers.verify(i, s.now, &s.events, s.frame)
		ps.link.lastRecv = s.now
		if wire.SealedKind(b) == wire.KindJoin {
			j.answer(i, body, &s.io.rx.join, s.peers, s.stmts, &s.tx)
		}
	}
}

// answer takes peer i's answer to our proposal, b (m is its scratch), or
// answers its own: we join too, so we do not play at its take-over frame
// (tx sends that).
func (j *joiner) answer(i int, b []byte, m *wire.Join, peers peerSet, stmts *statements, tx *outbox) {
	if wire.ParseControl(b, m) != nil {
		return
	}
	if m.Op == wire.JoinPropose {
		*m = wire.Join{Op: wire.JoinAbsent, Take: m.Take, Keys: m.Keys[:0]}
		tx.control(i, m)
		return
	}
	if j.take == 0 || Frame(m.Take) != j.take {
		return
	}
	switch m.Op {
	case wire.JoinAbsent:
		j.absent[i] = true
	case wire.JoinAccept:
		if stmts != nil && !stmts.takeKeys(i, peers[i].machine, m.Keys) {
			return
		}
		j.acc[i] = true
	case wire.JoinRefuse:
		// Frames from T on are final there already, or it takes another
		// machine back first, until Frame: a later one. A Frame before T
		// says T is too far ahead of it (it is far behind, as a machine
		// the others cut off is), or that it waits for another join that
		// ends before T: a later T would not help it, and moving T at each
		// of its refusals made every other machine answer anew, for ever.
		if t := roundTake(max(j.watch.feed.high, Frame(m.Frame))+joinLead, stmts); t > j.take && Frame(m.Frame) >= j.take {
			j.retake(t)
		}
	case wire.JoinReady:
		j.ready[i], j.sums[i], j.playing[i] = true, m.Sum, m.Playing
	}
}

// renew takes, while we join, peer i's (ps's) handshake h with a new
// nonce from its address: its machine restarted during our join, and
// what it sent before is all we will get from the old one. One that does
// not echo our nonce is answered, at most once a handshakeRetry, so that
// it can; one that echoes it (echoed) keys the link anew, as a machine
// that plays on re-keys one coming back (at most once a handshakeRetry,
// under the call's budget of key derivations, and with our terms), and
// what the machine said of our proposal before, and its signing key,
// are void. Nobody else can
// echo our nonce: it went to that address alone. A joiner kept the old
// keys, and its proposal went unanswered by the machine that came back
// (1 join in 250 of 4 machines on wifi with a rejoin and a late join).
func (j *joiner) renew(i int, h *wire.Handshake, echoed bool, ps *peer, p *protocol, tx *outbox, io *codec, stmts *statements, now time.Duration) verdict {
	a := &ps.auth
	if !echoed {
		if now-a.lastHS >= handshakeRetry {
			p.sendHandshake(tx, &io.hs, i, h.Nonce)
		}
		return answered
	}
	if (a.keyedAt != 0 && now-a.keyedAt < handshakeRetry) || compareTerms(i, &p.keys.terms, io.wantLocal(ps.players), h) != nil {
		return dropped
	}
	seal, open, err := p.keys.relink(p.sessionID, a.ours, h.Nonce, h.Key)
	if err != nil {
		return dropped
	}
	*a = peerAuth{ours: a.ours, nonce: h.Nonce, seal: seal, open: open, replyHS: true, heard: true, keyedAt: max(now, 1)}
	j.acc[i], j.ready[i] = false, false
	stmts.forget(ps.machine) // its new signing key comes with its answers
	return taken
}

// claim reports whether datagram b, from the peer the joining session
// watches the match through, is the watch w's, and hands it to w if so:
// a handshake answering w's own (parsed into h under the match's auth),
// or one sealed under w's link. A datagram w's link does not open is the
// session's.
func (w *Spectator) claim(b []byte, h *wire.Handshake, auth *wire.HandshakeAuth) bool {
	if wire.Kind(b[0]) == wire.KindHandshake {
		if wire.ParseHandshake(b, h, auth) != nil || h.Echo != w.up.ours {
			return false
		}
		w.up.heard = true
		w.handshake(b)
		return true
	}
	if w.up.open == nil {
		return false
	}
	body, err := w.up.open.Open(b)
	if errors.Is(err, wire.ErrMAC) {
		return false // the session's link
	}
	if err == nil {
		w.up.heard = true
		w.sealed(b, body)
	}
	return true
}
