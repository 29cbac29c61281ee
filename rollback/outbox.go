package rollback

import (
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// outbox sends the session's datagrams to its peers: it seals each
// message with the link's keys, hands it to the Transport and counts it,
// and it holds the carry: the control message that rides in front of
// this call's input packet to a peer, sent with it or flushed alone
// (send turns to the next peer only after flush).
//
// It shares the session's peers, clock reading and statistics: it is
// made once, in NewSession, pointing at them (newOutbox).
//
// Every control message and input packet the session sends a peer passes
// through post, typed, before it is encoded and sealed: the one seam of
// the soak's adversary (adv, liar.go), which may rewrite it, drop it or
// add others. In a game's build there is none: adversaryBuilt is false,
// and the compiler removes the branch.
type outbox struct {
	tr     Transport
	peers  *peerSet
	now    *time.Duration // the session's clock, read once per call
	stats  *Stats         // PacketsSent, BytesSent and SendErrors
	format wire.Format    // the input packets' (roster.format)
	adv    *adversary     // the soak's adversary (liar.go); nil in every game

	buf       []byte    // the datagram being sealed
	body      []byte    // an input packet's body, encoded before it is sealed behind the carry
	carry     []byte    // the control message held to ride with the input packet
	carryKind wire.Kind // the carried message's kind: the datagram's
	// cast: the transport is a relay's (relayed): input packets go in the
	// cast body, the same for every peer (wire, cast.go); self is our
	// machine's index by lowest PlayerID.
	cast bool
	self uint8
}

// relayed is a Transport that reaches every peer through one relay
// (relay.Client): a session over it sends its input packets in the cast
// body, which its relay client sends the relay once for every peer.
type relayed interface {
	Relayed() bool
}

// castOf reports whether a session over tr with peers peers, whose lowest
// local player is local, sends cast bodies, and its machine's index. With
// one peer there is nothing to share, and the cast body would cost a few
// bits more than the per-pair one (2 players on lan: 1,590 B/s up against
// 1,610): only three or more machines use it.
func castOf(tr Transport, peers []Peer, local PlayerID) (bool, uint8) {
	r, ok := tr.(relayed)
	if !ok || len(peers) < 2 || !r.Relayed() {
		return false, 0
	}
	self := uint8(0)
	for _, p := range peers {
		if sortedPlayers(p.Players)[0] < local {
			self++
		}
	}
	return true, self
}

// castAt is where machine m sits among the peers of machine self, in
// machine order.
func castAt(m int, self uint8) int {
	if m > int(self) {
		return m - 1
	}
	return m
}

// appendInput appends the body of input packet pkt to peer i: the
// per-pair body, or the cast body.
func (o *outbox) appendInput(b []byte, i int, pkt *wire.InputPacket) ([]byte, error) {
	if !o.cast {
		return o.format.AppendInput(b, pkt)
	}
	return o.format.AppendCast(b, pkt, castAt((*o.peers)[i].machine, o.self))
}

// newOutbox returns the outbox of a session that sends on tr to peers.
func newOutbox(tr Transport, peers *peerSet, now *time.Duration, stats *Stats, format wire.Format) outbox {
	return outbox{tr: tr, peers: peers, now: now, stats: stats, format: format,
		buf: make([]byte, 0, maxDatagram), body: make([]byte, 0, maxDatagram), carry: make([]byte, 0, maxDatagram)}
}

// transmit sends datagram b to peer i and counts it.
func (o *outbox) transmit(i int, b []byte) {
	if err := o.tr.Send(i, b); err != nil {
		o.stats.SendErrors++
		return
	}
	ps := &(*o.peers)[i]
	ps.link.sent(*o.now, len(b))
	ps.st.PacketsSent++
	o.stats.PacketsSent++
	o.stats.BytesSent += int64(len(b))
}

// post is one message on its way out to a peer, as the session handed it
// to the outbox: a control message (ctl), to ride with this call's input
// packet to the peer if one goes (riding, inputs: riding's arguments), or
// an input packet (pkt).
type post struct {
	ctl    wire.Control
	pkt    *wire.InputPacket
	riding bool
	inputs bool
}

// control seals control message m to peer i (the link is keyed) and
// sends it.
func (o *outbox) control(i int, m wire.Control) { o.post(i, post{ctl: m}) }

// riding sends control message m to peer i or, when an input packet goes
// to it in this call (inputs), holds it to ride in front of that packet
// if nothing rides there yet.
func (o *outbox) riding(i int, m wire.Control, inputs bool) {
	o.post(i, post{ctl: m, riding: true, inputs: inputs})
}

// input seals input packet pkt to peer i, behind the carry if one waits,
// and sends it. It reports false when the packet did not encode. Without
// an adversary it goes straight to sendInput, as post and deliver would
// send it: every tick sends one to every peer.
func (o *outbox) input(i int, pkt *wire.InputPacket) bool {
	if !adversaryBuilt || o.adv == nil {
		return o.sendInput(i, pkt)
	}
	return o.post(i, post{pkt: pkt})
}

// post sends p to peer i: through the adversary when the session has one
// (it rewrites p, or drops it, and may add others), else as it is. It
// reports false when an input packet did not go.
func (o *outbox) post(i int, p post) bool {
	if adversaryBuilt && o.adv != nil {
		return o.adv.rewrite(o, i, p)
	}
	return o.deliver(i, p)
}

// deliver sends p to peer i as it is: post's way out, and the adversary's
// for what it sends (it never comes back to the adversary). It reports
// false when an input packet did not encode.
func (o *outbox) deliver(i int, p post) bool {
	switch {
	case p.pkt != nil:
		return o.sendInput(i, p.pkt)
	case p.riding:
		o.ride(i, p.ctl, p.inputs)
	default:
		o.sendControl(i, p.ctl)
	}
	return true
}

// sendControl seals control message m to peer i and sends it.
func (o *outbox) sendControl(i int, m wire.Control) {
	seal := (*o.peers)[i].auth.seal
	b, err := wire.AppendControl(seal.Begin(o.buf[:0], m.Kind()), m)
	if err != nil {
		o.stats.SendErrors++
		return
	}
	o.transmit(i, seal.Seal(b))
}

// ride holds control message m to ride in front of this call's input
// packet to peer i (inputs: one goes) if nothing rides there yet, or
// sends it.
func (o *outbox) ride(i int, m wire.Control, inputs bool) {
	if inputs && len(o.carry) == 0 {
		if b, err := wire.AppendControl(o.carry[:0], m); err == nil {
			o.carry, o.carryKind = b, m.Kind()
			return
		}
	}
	o.sendControl(i, m)
}

// sendInput seals input packet pkt to peer i, behind the carry if one
// waits, and sends it. It reports false when the packet did not encode.
func (o *outbox) sendInput(i int, pkt *wire.InputPacket) bool {
	if len(o.carry) > 0 {
		return o.carried(i, pkt)
	}
	seal := (*o.peers)[i].auth.seal
	b, err := o.appendInput(seal.Begin(o.buf[:0], wire.KindInput), i, pkt)
	if err != nil {
		o.stats.SendErrors++
		return false
	}
	o.transmit(i, seal.Seal(b))
	return true
}

// carried sends input packet pkt to peer i behind the carry, in one
// datagram; or the two apart, if together they would not fit in one.
func (o *outbox) carried(i int, pkt *wire.InputPacket) bool {
	body, err := o.appendInput(o.body[:0], i, pkt)
	o.body = body[:0]
	if err != nil {
		o.stats.SendErrors++
		return false // the carry goes alone
	}
	if wire.SealOverhead+len(o.carry)+len(body) > maxDatagram {
		o.flush(i, nil)
		return o.sendInput(i, pkt)
	}
	o.flush(i, body)
	return true
}

// flush sends the carry to peer i, with body behind it (an encoded input
// packet, or nil: it goes alone), in one datagram of the carried
// message's kind. It does nothing when nothing is carried: small enough
// to inline, as every tick asks.
func (o *outbox) flush(i int, body []byte) {
	if len(o.carry) > 0 {
		o.flushCarry(i, body)
	}
}

// flushCarry is flush with a carry.
func (o *outbox) flushCarry(i int, body []byte) {
	seal := (*o.peers)[i].auth.seal
	b := append(append(seal.Begin(o.buf[:0], o.carryKind), o.carry...), body...)
	o.carry = o.carry[:0]
	o.transmit(i, seal.Seal(b))
}
