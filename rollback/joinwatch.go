package rollback

import (
	"errors"

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
			j.answer(i, body, &s.io.rx.join, s.peers, s.stmts)
		}
	}
}

// answer takes peer i's answer to our proposal, b (m is its scratch).
func (j *joiner) answer(i int, b []byte, m *wire.Join, peers peerSet, stmts *statements) {
	if wire.ParseControl(b, m) != nil || j.take == 0 || Frame(m.Take) != j.take {
		return
	}
	switch m.Op {
	case wire.JoinAccept:
		if stmts != nil && !stmts.takeKeys(i, peers[i].machine, m.Keys) {
			return
		}
		j.acc[i] = true
	case wire.JoinRefuse:
		// Frames from T on are final there already, or it takes another
		// machine back first, until Frame: a later one.
		if t := roundTake(max(j.watch.feed.high, Frame(m.Frame))+joinLead, stmts != nil); t > j.take {
			j.retake(t)
		}
	case wire.JoinReady:
		j.ready[i], j.sums[i], j.playing[i] = true, m.Sum, m.Playing
	}
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
