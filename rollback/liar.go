//go:build rewind_adversary

package rollback

import (
	"time"

	"github.com/rewindgg/rewind/internal/liar"
	"github.com/rewindgg/rewind/internal/testhook"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the adversary of the soak (internal/liar), compiled only
// with the build tag rewind_adversary (make test, the soak's -adversary,
// the adversary tests): a session whose Transport carries a liar.Script
// lies as the script says, in the fields an authenticated peer controls,
// so that the soak can measure what the honest machines make of it; and
// the hooks of this module's own test support (internal/testhook). Without
// the tag, honest.go's no-ops stand in: a game's build holds no lie.

// adversary is the session's lie script and its bookkeeping.
type adversary struct {
	*liar.Script
	decided Frame // our frames whose lookahead is counted

	seen  Frame         // Lookahead: the slowest peer's frames we had
	still time.Duration // since when seen has not moved
}

// liarOf returns the adversary tr asks for, or nil.
func liarOf(tr Transport) *adversary {
	c, ok := tr.(liar.Carrier)
	if !ok || c.Liar() == nil || c.Liar().Kind == liar.None {
		return nil
	}
	return &adversary{Script: c.Liar()}
}

// is reports whether a lies as k.
func (a *adversary) is(k liar.Kind) bool { return a != nil && a.Kind == k }

// Lie values.
const (
	lieAhead      = 10                  // Lookahead: frames of every peer it has before it sends one of its own
	lieAckShort   = 20                  // Lookahead and InflateLag acknowledge this many frames fewer
	lieAckStall   = 200                 // StallAck acknowledges this many fewer
	lieGossipBack = 60                  // ForgedGossip's departure frame, behind the count
	lieEvery      = 100                 // Equivocate: one frame in this many
	lieFarFrame   = Frame(1<<31 - 1024) // ForgedChecksum's frame it cannot have finished
)

// lieGossip rewrites the gossip entry about third machine x.
func (a *adversary) lieGossip(e *wire.Gossip, count Frame) {
	switch {
	case e.Disconnected:
	case a.is(liar.ForgedGossip):
		e.Disconnected, e.Frame = true, int32(max(0, count-lieGossipBack))
		a.Lies++
	case a.is(liar.WithholdCounts) && e.Frame >= 0:
		e.Frame = -1
		a.Lies++
	}
}

// lieEnd lowers the end of the local frames an input packet carries:
// Lookahead sends its input for a frame only once it has every peer's
// for that frame and the lieAhead-1 after it.
// Once the peers' inputs stop coming for a quarter second (the match is
// over: they add no more) it lets the held ones go.
func (a *adversary) lieEnd(s *Session, end Frame) Frame {
	if !a.is(liar.Lookahead) {
		return end
	}
	seen := slowestRemote(s)
	if seen != a.seen {
		a.seen, a.still = seen, s.now
	}
	if s.now-a.still > 250*time.Millisecond {
		return end
	}
	return max(0, min(end, seen-(lieAhead-1)))
}

// slowestRemote returns the fewest frames we have of a remote player still
// playing (MaxFrame: none).
func slowestRemote(s *Session) Frame {
	least := MaxFrame
	for p := range s.roster.players {
		if !s.inputs.local[p] && !s.inputs.disconnected(PlayerID(p)) {
			least = min(least, s.inputs.next[p])
		}
	}
	return least
}

// liePacket rewrites the input packet to peer i before it is encoded, and
// counts the lookahead of the frames it sends first.
func (a *adversary) liePacket(s *Session, i int, pkt *wire.InputPacket) {
	end := Frame(pkt.First) + Frame(pkt.Count)
	if seen := slowestRemote(s); end > a.decided && seen != MaxFrame {
		for f := max(a.decided, Frame(pkt.First)); f < end; f++ {
			a.Looked += int64(seen - f)
			a.Decided++
		}
	}
	a.decided = max(a.decided, end)
	switch a.Kind {
	case liar.AdvantageLie:
		pkt.Lag = wire.MaxLag
	case liar.InflateLag:
		pkt.Lag = wire.MaxLag
		pkt.Ack = max(0, pkt.Ack-lieAckShort)
	case liar.Lookahead:
		pkt.Ack = max(0, pkt.Ack-lieAckShort)
	case liar.StallAck:
		pkt.Ack = max(0, pkt.Ack-lieAckStall)
	case liar.Equivocate:
		if len(s.peers) < 2 || i != 0 {
			return
		}
		// Peer 0 gets another input than the others for one frame in
		// lieEvery: every time the frame goes to it.
		// The base too, so that the packet decodes as the lie throughout.
		nLocal := len(s.roster.local)
		for f := Frame(pkt.First); f < end; f++ {
			if f%lieEvery == lieEvery/2 {
				pkt.Inputs[int(f-Frame(pkt.First))*nLocal] ^= 1
				a.Lies++
			}
		}
		if f := Frame(pkt.First) - 1; len(pkt.Base) > 0 && f%lieEvery == lieEvery/2 {
			pkt.Base[0] ^= 1
		}
		return
	default:
		return
	}
	a.Lies++
}

// lieExtra sends peer i what the lie adds after its input packet:
// AdvantageLie's header-only packets 250 frames behind, and (2 machines)
// Equivocate's re-send of an already-sent frame with another input.
func (a *adversary) lieExtra(s *Session, i int, pkt *wire.InputPacket, localNext Frame) {
	var extra wire.InputPacket
	n := 0
	switch {
	case a.is(liar.AdvantageLie) && localNext > 255:
		first := localNext - 250
		extra = wire.InputPacket{Ack: pkt.Ack, First: int32(first), Players: pkt.Players, Gossip: pkt.Gossip}
		n = 8
	case a.is(liar.Equivocate) && len(s.peers) == 1 && localNext%lieEvery == 0 && localNext > 10 && s.times.sent.high >= localNext:
		f := localNext - 10
		extra = wire.InputPacket{Ack: pkt.Ack, First: int32(f), Count: 1, Players: pkt.Players, Gossip: pkt.Gossip}
		n = 1
	default:
		return
	}
	nLocal := len(s.roster.local)
	first := Frame(extra.First)
	extra.Base = s.io.base[:0]
	for _, p := range s.roster.local {
		extra.Base = append(extra.Base, uint64(s.inputs.at(first-1, p)))
	}
	extra.Inputs = pkt.Inputs[:0]
	for k := range extra.Count * nLocal {
		extra.Inputs = append(extra.Inputs, uint64(s.inputs.at(first, s.roster.local[k%nLocal]))^1)
	}
	for range n {
		if !s.tx.input(i, &extra) {
			return
		}
		a.Lies++
	}
}

// lieChecksum sends peer i what ForgedChecksum adds to our real checksum
// of frame f: one for a frame we cannot have finished and, with three or
// more machines, a wrong one of f itself to peer 0.
func (a *adversary) lieChecksum(s *Session, i int, f Frame, sum uint64) {
	if !a.is(liar.ForgedChecksum) {
		return
	}
	s.io.sum = wire.Checksum{Frame: int32(lieFarFrame), Sum: sum ^ 0x5eed}
	s.tx.control(i, &s.io.sum)
	a.Lies++
	if len(s.peers) >= 2 && i == 0 {
		s.io.sum = wire.Checksum{Frame: int32(f), Sum: sum ^ 1}
		s.tx.control(i, &s.io.sum)
		a.Lies++
	}
}

// lieRTTs makes StartGrief's start-protocol round trips the largest the
// message can say.
func (a *adversary) lieRTTs(rtts []uint32) {
	if !a.is(liar.StartGrief) {
		return
	}
	for k := range rtts {
		rtts[k] = 1<<32 - 1
	}
	a.Lies++
}

// lieStatement makes the soak's equivocating adversary's statement to
// peer 0 match the inputs it sent that peer (liePacket): its own
// signature on them, so that the two versions are proof.
func (a *adversary) lieStatement(st *statements, peers, nLocal, i int, k int32, m *wire.Attest) {
	if !a.is(liar.Equivocate) || peers < 2 || i != 0 {
		return
	}
	lied := false
	for f := Frame(k) * stmtFrames; f < Frame(k)*stmtFrames+Frame(len(m.Inputs)/nLocal); f++ {
		if f%lieEvery == lieEvery/2 {
			m.Inputs[int(f-Frame(k)*stmtFrames)*nLocal] ^= 1
			lied = true
		}
	}
	if lied {
		st.signFor(k, m.Inputs, m.Sig)
	}
}

// unsigned reports whether tr asks for a match without statements
// (testhook.Unsigned): only to measure what they cost.
func unsigned(tr Transport) bool {
	_, ok := tr.(interface{ Unsigned() testhook.Unsigned })
	return ok
}

// corruptJoinState reports whether tr asks that every state handed to a
// machine coming back be corrupted (testhook.CorruptJoinState): only to
// prove the joiner catches it.
func corruptJoinState(tr Transport) bool {
	_, ok := tr.(interface {
		CorruptJoinState() testhook.CorruptJoinState
	})
	return ok
}
