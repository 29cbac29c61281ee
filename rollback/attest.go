package rollback

import (
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the statements' port to the session (statements.go,
// stmttake.go): the roster they need, the keys before the start, and
// sending and taking Attest messages.

// stmtPort is the statements' side of the session: the roster as the
// digests need it (a stmtRoster), the Keys and Attest messages sent (a
// stmtSender) and taken. The session makes it once, with the statements
// (statements.port), pointing at its peers, inputs, outbox and scratch.
type stmtPort struct {
	st     *statements
	peers  *peerSet
	inputs *inputRing
	tx     *outbox
	io     *codec
	proto  *protocol
}

// view returns what the statements read of the session in this call,
// frame being the next frame to simulate.
func (p *stmtPort) view(frame Frame) stmtView {
	return stmtView{peers: *p.peers, inputs: p.inputs, frame: frame, now: *p.tx.now, started: p.proto.started}
}

// stmtNeed implements stmtRoster: we and every playing machine are needed
// whole; a machine whose departure is agreed, for its frames before the
// cut; one whose departure is not agreed yet makes the digest wait.
func (p *stmtPort) stmtNeed(x int, k int32) (stmtNeed, int) {
	i, every := p.st.peerOf[x], p.st.every
	if i < 0 {
		return needLive, int(every)
	}
	if pl := (*p.peers)[i].players[0]; p.inputs.back(pl) > 0 {
		// It left and came back (or is coming back) at the take-over frame
		// back: live from that interval on; before it, gone from its cut.
		if Frame(k)*every >= p.inputs.back(pl) {
			return needLive, int(every)
		}
		g := p.inputs.gaps[pl][p.inputs.ngaps[pl]-1]
		if n := int(min(max(g.from-Frame(k)*every, 0), every)); n > 0 {
			return needGone, n
		}
		return needNone, 0
	}
	l := &(*p.peers)[i].leave
	switch {
	case !l.disc:
		return needLive, int(every)
	case !l.agreed:
		return needWait, 0
	}
	n := int(min(max(l.frame-Frame(k)*every, 0), every))
	if n == 0 {
		return needNone, 0
	}
	return needGone, n
}

// stmtLive implements stmtRoster: a machine that came back plays from its
// take-over frame's interval on.
func (p *stmtPort) stmtLive(i int, k int32) bool {
	return !(*p.peers)[i].leave.disc && Frame(k)*p.st.every >= p.inputs.back((*p.peers)[i].players[0])
}

// sendKeys sends peer i our view of every machine's signing key until the
// match starts: when we learned a key since the last, else every
// handshakeRetry or half a round trip, the longer, for a lost one. Not
// every tick until its view agrees with ours: the agreement takes a round
// trip to come back, and on far that cost 4 machines about 58 KB a match
// (TestKeysBeforeStart); every 100 ms on far, 6 copies of the same view
// were on their way at once.
func (p *stmtPort) sendKeys(i int) {
	if p.proto.started {
		return
	}
	sp, n := &p.st.peers[i], p.st.knownKeys()
	retry := max(handshakeRetry, (*p.peers)[i].link.rtt/2)
	if n == sp.keysSent && sp.keysAt != 0 && *p.tx.now-sp.keysAt < retry {
		return
	}
	sp.keysSent, sp.keysAt = n, max(*p.tx.now, 1)
	p.io.keys.Keys = p.st.keyList(p.io.keys.Keys)
	p.tx.control(i, &p.io.keys)
}

// handleKeys takes peer i's view of the signing keys.
func (p *stmtPort) handleKeys(i int, b []byte) bool {
	m := &p.io.rx.keys
	if wire.ParseControl(b, m) != nil {
		return false
	}
	if p.proto.started {
		return true // a late copy
	}
	return p.st.takeKeys(i, (*p.peers)[i].machine, m.Keys)
}

// poll takes the statements whose inputs have come, and settles (h is
// the session, frame its next frame to simulate). It returns the first
// frame to re-simulate.
func (p *stmtPort) poll(h stmtHost, frame Frame) Frame {
	v := p.view(frame)
	return p.st.poll(h, p, &v)
}

// sendAttest sends peer i what the statements owe it, after its input
// packet (our own statement carries no inputs: it has them from the
// packets): our newest statement with our echo; our echo alone when we
// have new digests, and again when it still wants a digest we echoed a
// while ago; proofs of equivocation it has not acted on; the statements
// its echo says it lacks; and — when its echo of an interval we hold whole
// is late or differs from ours — every statement we hold for that
// interval, with its inputs.
func (p *stmtPort) sendAttest(i int) {
	ps := &(*p.peers)[i]
	p.st.attest(p, stmtDest{i: i, self: ps.machine, now: *p.tx.now, rtt: ps.link.rtt, peers: *p.peers, back: p.inputs.back(ps.players[0])})
}

// sendEcho sends peer i our echo alone: every digest it wants, or (not
// all) those after our last echo to it.
func (p *stmtPort) sendEcho(i int, all bool) {
	m := &p.io.att
	p.st.fillEcho(i, m, all)
	m.HasStatement, m.Machine, m.Interval, m.Frames, m.Inputs, m.Sig = false, 0, 0, 0, m.Inputs[:0], m.Sig[:0]
	p.tx.riding(i, m, true) // sendAttest runs only when an input packet goes
}

// sendStatement sends peer i machine x's statement of interval k (its
// inputs too when full: a relay, a repair, a proof), with our echo.
func (p *stmtPort) sendStatement(i, x int, k int32, in []uint64, sig []byte, full bool) {
	m := &p.io.att
	p.st.fillEcho(i, m, full)
	m.HasStatement, m.Machine, m.Interval = true, uint8(x), uint32(k)
	m.Frames = uint8(len(in) / p.st.np[x])
	m.Inputs, m.Sig = append(m.Inputs[:0], in...), append(m.Sig[:0], sig...)
	if !full {
		m.Inputs = m.Inputs[:0]
	}
	p.tx.riding(i, m, true) // sendAttest runs only when an input packet goes
}

// takeAttest takes peer i's Attest message m, its riding inputs taken
// (h is the session, frame its next frame to simulate): its echo and the
// statement it carries. It returns the first frame the statement
// corrected or revealed (frame for none).
func (p *stmtPort) takeAttest(h stmtHost, i int, m *wire.Attest, frame Frame) (Frame, bool) {
	v := p.view(frame)
	return p.st.takeAttest(h, &v, i, m)
}
