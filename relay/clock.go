package relay

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"time"
)

// The relay as the match clock (issue 50 part 2; docs/protocol.md, "The
// relay clock"). Opt-in: Config.Clock on the relay, Client.UseClock on
// every machine.
//
// Each machine's envelopes carry a clock section: the machine's next
// local frame g (every input of its players before g was added) with
// its players' inputs of frame g−1, and how many of the relay's signed
// items it has taken. The relay keeps one schedule for the match: frame
// f of every slot is due at origin + f·tick + Allowance, origin learned
// from the match's first two seconds of clock sections (the earliest
// arrival less g·tick, over every slot). A frame is settled once a clock
// section covering it arrives before it is due (on time), or once it is
// due: then the relay decides it, the slot's inputs of the frame before
// repeated, signed with the match's relay key, and queued to every
// machine. Every envelope to a machine carries the items it has not
// acknowledged, each in two envelopes in a row and then again after a
// timeout from the round trip it measures (decisions, and every slot's
// receipts: "its frames before g are settled", which the statements
// wait for). No frame is decided that no other machine has reached.
//
// What keeps a decision final everywhere: every machine gets a slot's
// receipts ("its frames before g are settled"), and its stream carries
// every decision about those frames before the receipt that covers them.
// A session takes a peer's input as final only below that peer's last
// receipt; until then an input from the peer's datagrams (which may carry
// what it sent before it learned of a decision) is provisional, and a
// decision replaces it. No datagram is held back.

// Clock makes a Relay the match clock.
type Clock struct {
	// Key signs the relay's decisions and receipts: a key pair made for
	// the match, whose public key the lobby gives every machine
	// (Client.UseClock).
	Key ed25519.PrivateKey
	// Allowance is how late after its slot in the schedule a machine's
	// input for a frame may reach the relay (0: DefaultAllowance).
	Allowance time.Duration
	// OnDecide, when set, is told of every decision (a test's or the soak's
	// record of the final inputs). It must not retain inputs.
	OnDecide func(slot int, frame int32, inputs []uint64)
}

// DefaultAllowance is Clock.Allowance's default: four lost envelopes in a
// row, or jitter of as much.
const DefaultAllowance = 100 * time.Millisecond

// clockKind is the kind byte of an envelope with a clock section: then a
// uvarint, the section's length, the section, and records as in an
// envelope of envelopeKind (none is allowed).
const clockKind = 0xe2

// Item kinds.
const (
	itemDecision = 1
	itemReceipt  = 2
)

const (
	maxLocal     = 8                      // inputs in a machine's clock section
	itemHead     = 1 + 1 + 4 + 1          // kind, slot, frame, inputs
	upMax        = 4 + 4 + 1 + 8*maxLocal // a machine's clock section, at most
	maxItems     = 12                     // items in one envelope to a machine
	maxQueued    = 4096                   // items queued for one machine, at most
	originFrames = 120                    // the frames whose arrival may move the match's origin
	receiptEvery = 16                     // frames: a statement's interval (wire.StatementFrames)
	receiptIdle  = 100 * time.Millisecond
)

// signContext starts every signed item.
const signContext = "rewind relay clock 1"

// ErrClock: a clock misconfigured (no key, or a key of the wrong size).
var ErrClock = errors.New("relay: invalid clock")

// item is one signed item queued for a machine, seq its number in that
// machine's stream.
type item struct {
	seq    uint32
	b      []byte        // kind, slot, frame, count, inputs, signature
	sends  int           // times sent
	first  time.Duration // when first sent
	sentAt time.Duration // when last sent
	resent bool          // sent again for want of an acknowledgement
}

// An item goes in two envelopes in a row (a lost datagram costs a tick,
// not a round trip: a decision late by a round trip is a stall on a link
// like hell), then again once it is not acknowledged a resend timeout
// after it last went: the machine's acknowledgement delay, smoothed, plus
// four times its deviation (as TCP's), within these bounds. A fixed
// timeout below the round trip sent every item again and again on hell,
// and the items' backlog delayed the receipts by seconds.
const (
	sendsAtOnce = 2
	resendMin   = 50 * time.Millisecond
	resendMax   = time.Second
	resendFirst = 250 * time.Millisecond // before any measure
)

// slotClock is the relay's clock of one slot.
type slotClock struct {
	heard    bool
	players  int
	reported int32    // the highest g of its clock sections
	settled  int32    // its first frame neither on time nor decided
	last     []uint64 // its inputs of frame settled−1
	movedAt  time.Duration
	receipt  int32         // the frontier of its last receipt
	slack    time.Duration // how long before its deadline its last clock section came

	// Its stream: ack is the next seq it wants, seq the next to queue;
	// srtt and rttvar its acknowledgement delay, smoothed (0: no measure).
	ack, seq     uint32
	queue        []item
	srtt, rttvar time.Duration
	overflow     bool // an item for it was dropped: none is queued since
}

// clock is a Relay's clock state.
type clock struct {
	key       ed25519.PrivateKey
	allowance time.Duration
	tick      time.Duration
	onDecide  func(int, int32, []uint64)
	slots     []slotClock
	msg       []byte // a signed message being built
	// The match's schedule: frame f of every slot is due at origin +
	// f·tick + allowance (started: origin is known).
	started bool
	origin  time.Duration
	stats   *Stats
}

func newClock(c *Clock, machines int, tick time.Duration, st *Stats) (*clock, error) {
	if len(c.Key) != ed25519.PrivateKeySize || c.Allowance < 0 {
		return nil, ErrClock
	}
	k := &clock{key: c.Key, allowance: c.Allowance, tick: tick, onDecide: c.OnDecide,
		slots: make([]slotClock, machines), stats: st}
	if k.allowance == 0 {
		k.allowance = DefaultAllowance
	}
	return k, nil
}

// parseUp reads a machine's clock section.
func parseUp(b []byte) (g int32, ack uint32, inputs []byte, ok bool) {
	if len(b) < 9 {
		return 0, 0, nil, false
	}
	g, ack, n := int32(binary.LittleEndian.Uint32(b)), binary.LittleEndian.Uint32(b[4:]), int(b[8])
	if g < 0 || n == 0 || n > maxLocal || len(b) != 9+8*n {
		return 0, 0, nil, false
	}
	return g, ack, b[9:], true
}

// heard takes slot from's clock section b, received at now; false for a
// section that is not well-formed.
func (k *clock) heard(from int, b []byte, now time.Duration) bool {
	g, ack, in, ok := parseUp(b)
	s := &k.slots[from]
	n := len(in) / 8
	if !ok || (s.heard && n != s.players) {
		return false
	}
	if ack-s.ack <= s.seq-s.ack { // else an older envelope, overtaken
		for len(s.queue) > 0 && s.queue[0].seq-ack > 1<<31 { // seq < ack
			if it := &s.queue[0]; it.sends > 0 && !it.resent {
				s.measure(now - it.first)
			}
			s.queue = s.queue[1:]
		}
		s.ack = ack
	}
	if !s.heard {
		s.heard, s.players, s.last = true, n, make([]uint64, n)
	}
	// One schedule for the match, not one per machine: with its own,
	// a machine that started early ran early for ever, nothing slowing it
	// (no frame-advantage stalls with the clock), and waited on the
	// others' inputs a frame or ten nearer its reach than in the mesh;
	// stalled there, it fell behind its own schedule and was decided.
	// On the match's, a machine that starts late, or stalls, is behind
	// it and catches up (the session's catchUpClock and extraDue).
	if at := now - time.Duration(g)*k.tick; !k.started || (g <= originFrames && at < k.origin) {
		k.started, k.origin = true, at
	}
	s.reported = max(s.reported, g)
	s.slack = k.origin + time.Duration(g-1)*k.tick + k.allowance - now
	if g > s.settled {
		s.settled, s.movedAt = g, now
		for j := range s.last {
			s.last[j] = binary.LittleEndian.Uint64(in[8*j:])
		}
	}
	return true
}

// decide decides every frame due by now that another machine has
// reached, and queues the receipts due.
func (k *clock) decide(now time.Duration) {
	for x := range k.slots {
		s := &k.slots[x]
		if !s.heard {
			continue
		}
		limit := int32(-1)
		for y := range k.slots {
			if y != x && k.slots[y].heard {
				limit = max(limit, k.slots[y].reported)
			}
		}
		for s.settled < limit && k.origin+time.Duration(s.settled)*k.tick+k.allowance < now {
			k.decideOne(x, s)
			s.movedAt = now // a decision settles too: no idle receipt with every one
		}
		// A receipt once the settled frames reach into another statement
		// interval (the machine signs an interval once a receipt covers
		// it: one that came up to 15 frames after the interval ended, as
		// when receipts went every 16 frames from wherever they stood,
		// kept the statements, and the inputs' finality, waiting), or
		// receiptIdle after they last moved.
		if s.settled > s.receipt && (s.settled/receiptEvery > s.receipt/receiptEvery || now-s.movedAt >= receiptIdle) {
			s.receipt = s.settled
			for to := range k.slots {
				k.queue(to, itemReceipt, x, s.settled, nil)
			}
			k.stats.Receipts++
		}
	}
}

// decideOne decides slot x's frame s.settled: its last inputs again.
func (k *clock) decideOne(x int, s *slotClock) {
	f := s.settled
	for to := range k.slots {
		k.queue(to, itemDecision, x, f, s.last)
	}
	s.settled++
	k.stats.Decisions++
	if k.onDecide != nil {
		k.onDecide(x, f, s.last)
	}
}

// queue signs an item for machine to and queues it.
func (k *clock) queue(to, kind, slot int, frame int32, inputs []uint64) {
	t := &k.slots[to]
	if t.overflow || len(t.queue) >= maxQueued {
		// A machine gone, or hopelessly late: it would never catch up.
		// Nothing more goes to it, ever: an item dropped and a later one
		// sent would be a receipt covering a decision it never got, its
		// input final there and another everywhere else (a desync: 4
		// players on hell, a machine stalled on its ring for seconds).
		t.overflow = true
		return
	}
	seq := t.seq
	t.seq++
	b := make([]byte, 0, itemHead+8*len(inputs)+ed25519.SignatureSize)
	b = append(b, byte(kind), byte(slot))
	b = binary.LittleEndian.AppendUint32(b, uint32(frame))
	b = append(b, byte(len(inputs)))
	for _, v := range inputs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	k.msg = signedMessage(k.msg[:0], to, seq, b)
	b = append(b, ed25519.Sign(k.key, k.msg)...)
	t.queue = append(t.queue, item{seq: seq, b: b})
}

// signedMessage is what the signature of item b, seq seq of machine to's
// stream, covers.
func signedMessage(dst []byte, to int, seq uint32, b []byte) []byte {
	dst = append(dst, signContext...)
	dst = append(dst, byte(to))
	dst = binary.LittleEndian.AppendUint32(dst, seq)
	return append(dst, b...)
}

// appendDown appends to env the clock section for machine to: its
// unacknowledged items, as many as fit in room bytes. It reports whether
// it holds any.
func (k *clock) appendDown(env []byte, to, room int, now time.Duration) ([]byte, bool) {
	t := &k.slots[to]
	// The items due: sent fewer than sendsAtOnce times, or not
	// acknowledged a resend timeout after they last went; a run of them,
	// from the first.
	rto := t.resendAfter()
	i0 := 0
	for i0 < len(t.queue) {
		if it := &t.queue[i0]; it.sends < sendsAtOnce || now-it.sentAt >= rto {
			break
		}
		i0++
	}
	q := t.queue[i0:]
	size, n := 6, 0
	for n < len(q) && n < maxItems && size+len(q[n].b) <= room-3 {
		it := &q[n]
		size += len(it.b)
		if it.sends == 0 {
			it.first = now
		} else if it.sends >= sendsAtOnce {
			it.resent = true
		}
		it.sends++
		it.sentAt = now
		n++
	}
	first := t.seq
	if n > 0 {
		first = q[0].seq
	}
	env = append(env, clockKind)
	env = binary.AppendUvarint(env, uint64(size))
	env = binary.LittleEndian.AppendUint32(env, first)
	ms := min(max(t.slack.Milliseconds(), -1<<15), 1<<15-1)
	env = binary.LittleEndian.AppendUint16(env, uint16(int16(ms)))
	for _, it := range q[:n] {
		env = append(env, it.b...)
	}
	return env, n > 0
}

// decision is one of the relay's signed items, as a Client hands it out:
// the relay decided the inputs of the machine of peer peer (in the
// session's numbering; -1: this machine) for frame, or, a receipt (inputs
// nil), every frame of this machine's before frame is settled.
type decision struct {
	peer   int
	frame  int32
	inputs []uint64
}

// clientClock is a Client's side of the clock.
type clientClock struct {
	key    ed25519.PublicKey
	next   int32         // our next local frame (ClockLocal)
	inputs []uint64      // our players' inputs of frame next−1
	want   uint32        // the seq of the next item to take from the relay
	slack  time.Duration // the relay's last word on how early our clock sections come
	items  []decision

	msg []byte
	// early holds items checked but ahead of want (one went missing):
	// early[seq%aheadMax], valid when its seq matches.
	early [aheadMax]earlyItem
}

// aheadMax bounds how far past a missing item the client keeps the
// relay's items.
const aheadMax = 256

type earlyItem struct {
	ok  bool
	seq uint32
	d   decision
}

// UseClock makes the client speak to a relay that is the match clock
// (Config.Clock), whose items are signed with key: its envelopes carry
// its clock section and an item not signed with key is dropped
// (ClientStats.Forged).
func (c *Client) UseClock(key ed25519.PublicKey) error {
	if len(key) != ed25519.PublicKeySize {
		return ErrClock
	}
	c.clk = &clientClock{key: key, next: -1}
	c.maxOut = MaxDatagram - 3 - upMax
	return nil
}

// ClockOn reports whether the client speaks to a relay clock (UseClock).
func (c *Client) ClockOn() bool { return c.clk != nil }

// ClockLocal tells the client the machine's next local frame and its
// players' inputs of the frame before: the clock section of the envelopes
// it sends from now on. A rollback session calls it before it sends.
func (c *Client) ClockLocal(next int32, inputs []uint64) {
	if c.clk == nil || len(inputs) == 0 || len(inputs) > maxLocal {
		return
	}
	c.clk.next = next
	c.clk.inputs = append(c.clk.inputs[:0], inputs...)
}

// ClockNext returns the relay's oldest item not yet taken, checked
// (signed with the relay's key, in order); ok is false for none. It is a
// decision: the relay decided the inputs of the machine of peer peer (in
// the session's numbering; -1: this machine) for frame, one per player in
// its order; or a receipt (inputs nil): every frame of this machine's
// before frame is settled, on time or decided. The inputs are valid until
// ClockTaken.
func (c *Client) ClockNext() (peer int, frame int32, inputs []uint64, ok bool) {
	if c.clk == nil || len(c.clk.items) == 0 {
		return 0, 0, nil, false
	}
	d := c.clk.items[0]
	return d.peer, d.frame, d.inputs, true
}

// ClockSlack is how long before its deadline the machine's last clock
// section reached the relay, as the relay last said (negative: late;
// unsigned, a claim about timing only: the session catches up a frame a
// tick while it is short).
func (c *Client) ClockSlack() time.Duration {
	if c.clk == nil {
		return 0
	}
	return c.clk.slack
}

// ClockTaken removes the item ClockNext returned: the session took it,
// and the relay learns so from the next envelope.
func (c *Client) ClockTaken() {
	k := c.clk
	if k == nil || len(k.items) == 0 {
		return
	}
	k.items[0] = decision{}
	k.items = k.items[1:]
	if len(k.items) == 0 {
		k.items = k.items[:0]
	}
}

// appendUp appends the envelope kind and clock section to env.
func (k *clientClock) appendUp(env []byte) []byte {
	env = append(env, clockKind)
	if k.next < 0 {
		env = binary.AppendUvarint(env, 0)
		return env
	}
	env = binary.AppendUvarint(env, uint64(9+8*len(k.inputs)))
	env = binary.LittleEndian.AppendUint32(env, uint32(k.next))
	env = binary.LittleEndian.AppendUint32(env, k.want-uint32(len(k.items)))
	env = append(env, byte(len(k.inputs)))
	for _, v := range k.inputs {
		env = binary.LittleEndian.AppendUint64(env, v)
	}
	return env
}

// takeDown takes the items of a clock section b from the relay, in
// order, each checked; it stops at the first that is not. self is our
// slot, and peerOf maps slots to peers.
func (c *Client) takeDown(b []byte) {
	k := c.clk
	if len(b) < 6 {
		return
	}
	seq := binary.LittleEndian.Uint32(b)
	k.slack = time.Duration(int16(binary.LittleEndian.Uint16(b[4:]))) * time.Millisecond
	for b = b[6:]; len(b) >= itemHead; seq++ {
		n := int(b[6])
		size := itemHead + 8*n + ed25519.SignatureSize
		if len(b) < size {
			return
		}
		it := b[:size]
		b = b[size:]
		if ahead := seq - k.want; ahead >= aheadMax || (k.early[seq%aheadMax].ok && k.early[seq%aheadMax].seq == seq) {
			continue // taken before, or too far ahead: it comes again
		}
		kind, slot, frame := it[0], int(it[1]), int32(binary.LittleEndian.Uint32(it[2:]))
		if slot >= c.slots || (kind != itemDecision && kind != itemReceipt) || (kind == itemReceipt && n != 0) || (kind == itemDecision && n == 0) {
			c.stats.Forged++
			return
		}
		k.msg = signedMessage(k.msg[:0], c.self, seq, it[:size-ed25519.SignatureSize])
		if !ed25519.Verify(k.key, k.msg, it[size-ed25519.SignatureSize:]) {
			c.stats.Forged++
			return
		}
		d := decision{peer: -1, frame: frame}
		if slot != c.self {
			d.peer = c.peerOf(slot)
		}
		if kind == itemDecision {
			d.inputs = make([]uint64, n)
			for j := range n {
				d.inputs[j] = binary.LittleEndian.Uint64(it[itemHead+8*j:])
			}
		}
		k.early[seq%aheadMax] = earlyItem{ok: true, seq: seq, d: d}
		c.stats.Items++
	}
	// What now follows want goes to the session, in order.
	for e := &k.early[k.want%aheadMax]; e.ok && e.seq == k.want; e = &k.early[k.want%aheadMax] {
		k.items = append(k.items, e.d)
		*e = earlyItem{}
		k.want++
	}
}

// measure takes a sample of the slot's acknowledgement delay: from an
// item's first sending to the acknowledgement that covers it.
func (s *slotClock) measure(d time.Duration) {
	if s.srtt == 0 {
		s.srtt, s.rttvar = d, d/2
		return
	}
	s.rttvar += (abs(s.srtt-d) - s.rttvar) / 4
	s.srtt += (d - s.srtt) / 8
}

// resendAfter is how long an item for the slot waits for its
// acknowledgement before it goes again.
func (s *slotClock) resendAfter() time.Duration {
	if s.srtt == 0 {
		return resendFirst
	}
	return min(max(s.srtt+4*s.rttvar, resendMin), resendMax)
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
