//go:build rewind_adversary

package rollback

import (
	"time"

	"github.com/rewindgg/rewind/internal/liar"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the adversary of the soak (internal/liar), compiled only
// with the build tag rewind_adversary (make test, the soak's -adversary,
// the adversary tests): a session given a liar.Script lies as the script
// says, in the fields an authenticated peer controls, so that the soak can
// measure what the honest machines make of it; and the other hooks of
// this module's own test support. They are installed explicitly, by
// WithTestHooks, which exists only in this build: without the tag,
// honest.go stands in, and a game's build holds no lie and no way to ask
// for one.
//
// The adversary has one seam: the outbox hands it every control message
// and input packet to a peer, typed, before it is encoded (outbox.post).
// Each lie is a rewrite of one kind of message, a drop, or messages it
// adds; what it reads of the session it reads through a liarView.

// adversaryBuilt reports whether this build has the adversary: the outbox
// hands it the messages only then.
const adversaryBuilt = true

// TestHooks is what this module's own test support may ask of a session
// that no game can: a lie, a match without statements, corrupted states.
// It exists only in a build with the tag rewind_adversary; a game cannot
// name a liar.Script (internal/liar) to lie with either.
type TestHooks struct {
	// Liar makes the session lie as its Kind says, in the messages it
	// sends its peers, and counts what it did in it (nil or liar.None:
	// honest).
	Liar *liar.Script
	// Unsigned makes a session of three or more machines do without
	// statements (statements.go): it neither signs its inputs nor
	// cross-checks the others', so an equivocator goes unnamed. Only the
	// measurements of what statements cost, and the tests whose fake
	// peers sign nothing, use it.
	Unsigned bool
	// CorruptJoinState makes the session flip a bit of every state it
	// hands a machine that comes back (rejoin.go), which must catch it
	// before it plays. Only the test that proves it does uses it.
	CorruptJoinState bool
	// NoTimerDeadline makes every call run every protocol timer's check,
	// as before the deadline (timers.go). Only the test that compares the
	// two uses it.
	NoTimerDeadline bool
}

// testHooks is Config's field of the hooks.
type testHooks struct {
	hooks *TestHooks // nil: none
}

// WithTestHooks returns cfg with the test hooks h: the session made of it
// lies, or does without statements, or corrupts the states it serves, as
// h says. It exists only in a build with the tag rewind_adversary.
func WithTestHooks(cfg Config, h TestHooks) Config {
	cfg.hooks = &h
	return cfg
}

// unsigned reports whether cfg asks for a match without statements
// (TestHooks.Unsigned).
func unsigned(cfg *Config) bool { return cfg.hooks != nil && cfg.hooks.Unsigned }

// noTimerDeadline reports whether cfg asks for every timer's check in
// every call (TestHooks.NoTimerDeadline).
func noTimerDeadline(cfg *Config) bool { return cfg.hooks != nil && cfg.hooks.NoTimerDeadline }

// adversary is a lying session's rewriter of its outgoing messages: the
// script, its bookkeeping, and the scratch of the messages it adds; and
// whether it corrupts the states it serves a machine coming back.
type adversary struct {
	*liar.Script
	view    liarView
	corrupt bool // TestHooks.CorruptJoinState

	decided Frame         // our frames whose lookahead is counted
	seen    Frame         // Lookahead: the slowest peer's frames we had
	still   time.Duration // since when seen has not moved

	sum   wire.Checksum    // ForgedChecksum's added checksums
	extra wire.InputPacket // AdvantageLie's and Equivocate's added packets
	stmt  []uint64         // Equivocate's statement inputs, re-signed
}

// liarView is what the adversary reads of its session: the clock, the
// players, the input ring, when our frames went out, the number of peers
// and the statements' signer (nil without statements) with our machine.
type liarView struct {
	now     *time.Duration
	players int
	local   []PlayerID
	inputs  *inputRing
	sent    *frameTimes
	peers   int
	signer  stmtSigner
	me      int // our machine: a statement of it is ours
}

// stmtSigner signs a statement of ours (statements.signFor): Equivocate's
// statement to the peer it lies to, signed again over the lie.
type stmtSigner interface {
	signFor(k int32, inputs []uint64, sig []byte)
	interval() Frame // the frames of an interval
}

// deliverer is the adversary's way out, past itself (outbox.deliver):
// the messages it rewrote or let through, and those it adds.
type deliverer interface {
	deliver(i int, p post) bool
}

// adversaryOf returns the adversary cfg's test hooks ask for (a lie, or
// corrupted states), reading session s through a liarView, or nil.
func adversaryOf(cfg *Config, s *Session) *adversary {
	h := cfg.hooks
	if h == nil || len(s.peers) == 0 {
		return nil
	}
	lies := h.Liar != nil && h.Liar.Kind != liar.None
	if !lies && !h.CorruptJoinState {
		return nil
	}
	script := h.Liar
	if !lies {
		script = &liar.Script{}
	}
	v := liarView{now: &s.now, players: s.roster.players, local: s.roster.local, inputs: &s.inputs,
		sent: &s.times.sent, peers: len(s.peers)}
	if s.stmts != nil {
		v.signer, v.me = s.stmts, s.stmts.me
	}
	a := newAdversary(script, v)
	a.corrupt = h.CorruptJoinState || a.is(liar.FalseState)
	return a
}

// newAdversary returns the rewriter that lies as script says, reading its
// session through v.
func newAdversary(script *liar.Script, v liarView) *adversary {
	return &adversary{Script: script, view: v,
		extra: wire.InputPacket{Base: make([]uint64, 0, MaxPlayers), Inputs: make([]uint64, 0, wire.MaxFrames*MaxPlayers)}}
}

// slowestRemote returns the fewest frames we have of a remote player still
// playing (maxFrame: none).
func (v *liarView) slowestRemote() Frame {
	least := maxFrame
	for p := range v.players {
		if !v.inputs.local[p] && !v.inputs.disconnected(PlayerID(p)) {
			least = min(least, v.inputs.next[p])
		}
	}
	return least
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
	lieHoldFor    = 250 * time.Millisecond
)

// rewrite is the seam (outbox.post): it rewrites p, a message to peer i,
// as the script says, delivers it unless the lie drops it, and sends what
// the lie adds after it. It reports false when an input packet did not go.
func (a *adversary) rewrite(o deliverer, i int, p post) bool {
	if p.pkt != nil {
		return a.input(o, i, p.pkt)
	}
	switch m := p.ctl.(type) {
	case *wire.Start:
		a.rtts(m.Mesh)
	case *wire.Ready:
		a.rtts(m.RTT)
	case *wire.Attest:
		a.statement(i, m)
	case *wire.QualityReply:
		if a.is(liar.HiddenLookahead) && m.Frame > 0 {
			a.Lies++
			return true // never answered once the match runs
		}
	case *wire.Checksum:
		f, sum := Frame(m.Frame), m.Sum
		o.deliver(i, p)
		a.checksum(o, i, f, sum)
		return true
	}
	return o.deliver(i, p)
}

// input rewrites input packet pkt to peer i (its frames, header and
// gossip), delivers it unless Lookahead held back every frame it had,
// and sends the packets the lie adds.
func (a *adversary) input(o deliverer, i int, pkt *wire.InputPacket) bool {
	if !a.hold(pkt) {
		return false
	}
	a.count(pkt)
	a.packet(i, pkt)
	for k := range pkt.Gossip {
		a.gossip(&pkt.Gossip[k])
	}
	if !o.deliver(i, post{pkt: pkt}) {
		return false
	}
	a.extras(o, i, pkt)
	return true
}

// hold truncates the frames of a Lookahead's input packet: it sends its
// input for a frame only once it has every peer's for that frame and the
// lieAhead-1 after it. Once the peers' inputs stop coming for lieHoldFor
// (the match is over: they add no more) it lets the held ones go. It
// reports false when it held back every frame the packet had: the packet
// is dropped.
func (a *adversary) hold(pkt *wire.InputPacket) bool {
	if !a.is(liar.Lookahead) && !a.is(liar.HiddenLookahead) {
		return true
	}
	now := *a.view.now
	seen := a.view.slowestRemote()
	if seen != a.seen {
		a.seen, a.still = seen, now
	}
	first, end := Frame(pkt.First), Frame(pkt.End())
	if now-a.still > lieHoldFor || end <= first {
		return true
	}
	end = max(first, min(end, seen-(lieAhead-1)))
	pkt.Count = int(end - first)
	pkt.Inputs = pkt.Inputs[:pkt.Count*pkt.Players]
	return pkt.Count > 0
}

// count counts the lookahead of the frames pkt sends first: for each, how
// many of the slowest peer's inputs from it on we had (liar.Script).
func (a *adversary) count(pkt *wire.InputPacket) {
	end := Frame(pkt.End())
	if seen := a.view.slowestRemote(); end > a.decided && seen != maxFrame {
		for f := max(a.decided, Frame(pkt.First)); f < end; f++ {
			a.Looked += int64(seen - f)
			a.Decided++
		}
	}
	a.decided = max(a.decided, end)
}

// packet rewrites the header and inputs of input packet pkt to peer i.
func (a *adversary) packet(i int, pkt *wire.InputPacket) {
	switch a.Kind {
	case liar.AdvantageLie:
		pkt.Lag = wire.MaxLag
	case liar.InflateLag:
		pkt.Lag = wire.MaxLag
		pkt.Ack = max(0, pkt.Ack-lieAckShort)
	case liar.Lookahead, liar.HiddenLookahead:
		pkt.Ack = max(0, pkt.Ack-lieAckShort)
	case liar.StallAck:
		pkt.Ack = max(0, pkt.Ack-lieAckStall)
	case liar.Equivocate:
		a.equivocate(i, pkt)
		return
	default:
		return
	}
	a.Lies++
}

// equivocate gives peer 0 of two or more another input than the others
// for one frame in lieEvery: every time the frame goes to it. The base
// too, so that the packet decodes as the lie throughout.
func (a *adversary) equivocate(i int, pkt *wire.InputPacket) {
	if a.view.peers < 2 || i != 0 {
		return
	}
	first, nLocal := Frame(pkt.First), pkt.Players
	for f := first; f < Frame(pkt.End()); f++ {
		if f%lieEvery == lieEvery/2 {
			pkt.Inputs[int(f-first)*nLocal] ^= 1
			a.Lies++
		}
	}
	if f := first - 1; len(pkt.Base) > 0 && f%lieEvery == lieEvery/2 {
		pkt.Base[0] ^= 1
	}
}

// gossip rewrites an input packet's gossip entry about a third machine
// (its Frame, when it plays, is how many frames of it we have).
func (a *adversary) gossip(e *wire.Gossip) {
	switch {
	case e.Disconnected:
	case a.is(liar.ForgedGossip):
		e.Disconnected, e.Frame = true, max(0, e.Frame-lieGossipBack)
		a.Lies++
	case a.is(liar.WithholdCounts) && e.Frame >= 0:
		e.Frame = -1
		a.Lies++
	}
}

// extras sends peer i the packets the lie adds after input packet pkt:
// AdvantageLie's header-only packets 250 frames behind, and (2 machines)
// Equivocate's re-send of an already-sent frame with another input.
func (a *adversary) extras(o deliverer, i int, pkt *wire.InputPacket) {
	localNext := a.view.inputs.next[a.view.local[0]]
	x, n := &a.extra, 0
	switch {
	case a.is(liar.AdvantageLie) && localNext > 255:
		*x = wire.InputPacket{Ack: pkt.Ack, First: int32(localNext - 250), Players: pkt.Players, Gossip: pkt.Gossip,
			Base: x.Base, Inputs: x.Inputs}
		n = 8
	case a.is(liar.Equivocate) && a.view.peers == 1 && localNext%lieEvery == 0 && localNext > 10 && a.view.sent.high >= localNext:
		*x = wire.InputPacket{Ack: pkt.Ack, First: int32(localNext - 10), Count: 1, Players: pkt.Players, Gossip: pkt.Gossip,
			Base: x.Base, Inputs: x.Inputs}
		n = 1
	default:
		return
	}
	first, nLocal := Frame(x.First), len(a.view.local)
	x.Base = x.Base[:0]
	for _, p := range a.view.local {
		x.Base = append(x.Base, uint64(a.view.inputs.at(first-1, p)))
	}
	x.Inputs = x.Inputs[:0]
	for k := range x.Count * nLocal {
		x.Inputs = append(x.Inputs, uint64(a.view.inputs.at(first, a.view.local[k%nLocal]))^1)
	}
	for range n {
		if !o.deliver(i, post{pkt: x}) {
			return
		}
		a.Lies++
	}
}

// checksum sends peer i what ForgedChecksum adds to our real checksum
// of frame f: one for a frame we cannot have finished and, with three or
// more machines, a wrong one of f itself to peer 0.
func (a *adversary) checksum(o deliverer, i int, f Frame, sum uint64) {
	if !a.is(liar.ForgedChecksum) {
		return
	}
	a.sum = wire.Checksum{Frame: int32(lieFarFrame), Sum: sum ^ 0x5eed}
	o.deliver(i, post{ctl: &a.sum})
	a.Lies++
	if a.view.peers >= 2 && i == 0 {
		a.sum = wire.Checksum{Frame: int32(f), Sum: sum ^ 1}
		o.deliver(i, post{ctl: &a.sum})
		a.Lies++
	}
}

// rtts makes StartGrief's start-protocol round trips (a Start's mesh, a
// Ready's row) the largest the message can say.
func (a *adversary) rtts(rtts []uint32) {
	if !a.is(liar.StartGrief) {
		return
	}
	for k := range rtts {
		rtts[k] = 1<<32 - 1
	}
	a.Lies++
}

// statement makes the equivocating adversary's own statement to peer 0
// match the inputs it sent that peer (equivocate): its own signature on
// them, so that the two versions are proof. A statement that goes
// without its inputs (the newest: the peer has them from the packets) is
// signed over our inputs as the ring holds them.
func (a *adversary) statement(i int, m *wire.Attest) {
	st := a.view.signer
	if !a.is(liar.Equivocate) || a.view.peers < 2 || i != 0 || !m.HasStatement || st == nil || int(m.Machine) != a.view.me {
		return
	}
	from, nLocal := Frame(m.Interval)*st.interval(), len(a.view.local)
	in := m.Inputs
	if len(in) == 0 {
		a.stmt = a.stmt[:0]
		for f := from; f < from+Frame(m.Frames); f++ {
			for _, p := range a.view.local {
				a.stmt = append(a.stmt, uint64(a.view.inputs.at(f, p)))
			}
		}
		in = a.stmt
	}
	lied := false
	for f := from; f < from+Frame(len(in)/nLocal); f++ {
		if f%lieEvery == lieEvery/2 {
			in[int(f-from)*nLocal] ^= 1
			lied = true
		}
	}
	if lied {
		st.signFor(int32(m.Interval), in, m.Sig)
	}
}

// falsifiesFeed reports whether the session flips a bit of one final
// input in every 100 frames it feeds a spectator or a machine coming back
// (liar.FalseState).
func (a *adversary) falsifiesFeed() bool { return a.is(liar.FalseState) }

// falsify flips a bit of the first player's input of each frame of the
// packet's in (players inputs a frame from frame first) that is 50 past a
// multiple of 100.
func (a *adversary) falsify(first Frame, in []uint64, players int) {
	for k := 0; k*players < len(in); k++ {
		if (first+Frame(k))%100 == 50 {
			in[k*players] ^= 1
			a.Lies++
		}
	}
}

// lied counts a lie told outside the outbox (a corrupted state).
func (a *adversary) lied() { a.Lies++ }

// corruptsStates reports whether the session corrupts every state it
// hands a machine coming back (TestHooks.CorruptJoinState).
func (a *adversary) corruptsStates() bool { return a != nil && a.corrupt }
