// Package relay carries a rollback match through one server in the middle:
// the relay topology (issue 50). Each machine has one link, to the relay;
// every datagram its session sends to peer i goes to the relay in an
// envelope naming i's slot, and the relay forwards it to i in an envelope
// naming the sender's slot. The datagrams inside are the sessions' own,
// sealed with the per-pair link keys and carrying the Ed25519-signed input
// statements as in the mesh: the relay reads only the envelopes, so it can
// drop or delay a datagram, never invent or alter one unnoticed (with
// rollback.Config.Secret, which the relay must not hold: without it the
// handshake is unauthenticated Diffie-Hellman that the relay could sit in
// the middle of; docs/security.md, "The match relay").
//
// Envelopes merge: a [Client] puts everything its session sends in one
// Advance into one envelope (the game calls [Client.Flush] after each
// Advance, Idle and Close), and the [Relay] gathers, per machine, what it
// has for it and sends it once per tick. Each machine thus sends and
// receives one datagram per tick instead of one per peer: fewer UDP/IP
// headers. And what a session sends every peer alike (its signed
// statement; its input packet, whose body a session over a Client makes
// the same for every peer: [Client.Relayed]) the client sends the relay
// once: the other copies go as copy records,
// which spell a datagram partly as bytes the envelope already holds, or
// reseal records, which give only the header and MAC a datagram has
// around the previous one's body. The relay rebuilds each byte for byte,
// so what a machine receives is exactly what its peer's session sealed.
//
// The relay keeps nothing a match needs beyond the envelopes it has not
// sent yet, so a match survives its relay's death by moving: each machine's
// [Client.Move] points it at another relay, and the sessions see the gap as
// loss.
//
// Both types are deterministic state machines with no goroutines and no
// clock of their own: the relay is given the time, the client is driven by
// the session's calls. Their one dependency is a [Link], which a
// rollback.Transport (netsim, rollback/udp) satisfies.
//
// A machine learns no other machine's address: every datagram it receives
// comes from the relay, and an envelope names a slot, a number from 0 to
// the match's machines − 1.
package relay

import "time"

// Link carries datagrams between this node and the nodes it is linked to,
// numbered from 0; rollback.Transport has the same methods. Send must not
// retain b; Receive must not block, and reports ok false when nothing is
// waiting.
type Link interface {
	Send(peer int, b []byte) error
	Receive(buf []byte) (n, peer int, ok bool)
}

// Config configures a [Relay].
type Config struct {
	// Machines is the number of machines of the match, 2 to MaxSlots.
	// Machine k has slot k, and is peer k of Link.
	Machines int
	// Link reaches the machines.
	Link Link
	// Tick is how often the relay sends what it holds for each machine
	// (0: 1/60 s), and with Clock the frame period of the schedule.
	Tick time.Duration
	// Clock, when set, makes the relay the match clock (clock.go): every
	// machine's Client must UseClock its public key.
	Clock *Clock
}

// Stats counts what a relay did.
type Stats struct {
	EnvelopesIn  int64 // envelopes received from machines, well-formed
	EnvelopesOut int64 // envelopes sent
	BytesIn      int64 // bytes of every datagram received, malformed ones too
	BytesOut     int64 // bytes sent
	Forwarded    int64 // datagrams (records) forwarded
	Rebuilt      int64 // of them, rebuilt from a machine's copy or reseal record
	Malformed    int64 // datagrams dropped: not an envelope, or from no machine
	// With Config.Clock: the frames decided, and the receipts signed (one
	// for every machine).
	Decisions, Receipts int64
}

// Relay forwards a match's datagrams between its machines. It is not safe
// for concurrent use.
type Relay struct {
	link  Link
	tick  time.Duration
	next  time.Duration // when the next flush is due
	begun bool
	out   [][]byte // by slot: the envelope being gathered for it
	in    []byte   // the receive buffer
	stats Stats
	clock *clock        // nil: not the match clock
	buf   []byte        // with clock: the envelope being sent
	now   time.Duration // with clock: the time of the last Poll
}

// New returns a relay for c.
func New(c Config) (*Relay, error) {
	if c.Machines < 2 || c.Machines > MaxSlots || c.Link == nil || c.Tick < 0 {
		return nil, ErrConfig
	}
	if c.Tick == 0 {
		c.Tick = time.Second / 60
	}
	r := &Relay{link: c.Link, tick: c.Tick, out: make([][]byte, c.Machines), in: make([]byte, MaxDatagram+1)}
	if c.Clock != nil {
		var err error
		if r.clock, err = newClock(c.Clock, c.Machines, c.Tick, &r.stats); err != nil {
			return nil, err
		}
		r.buf = make([]byte, 0, MaxDatagram)
	}
	for k := range r.out {
		r.out[k] = append(make([]byte, 0, MaxDatagram), envelopeKind)
	}
	return r, nil
}

// Poll receives every datagram waiting on the link, gathers its records
// by destination, and, once a tick has passed since the last flush (now is
// the time since any fixed origin, not decreasing), sends each machine the
// envelope gathered for it. An envelope that would grow past MaxDatagram
// is sent at once and a new one begun.
func (r *Relay) Poll(now time.Duration) {
	if r.clock != nil {
		r.now = now
		r.clock.decide(now) // what reaches it from now on is late for what is due
	}
	for {
		n, from, ok := r.link.Receive(r.in)
		if !ok {
			break
		}
		r.stats.BytesIn += int64(n)
		if n > MaxDatagram || from < 0 || from >= len(r.out) {
			r.stats.Malformed++
			continue
		}
		sec, start, ok := checkEnvelope(r.in[:n], len(r.out), from, true)
		switch {
		case ok && (r.clock != nil) != (sec != nil):
			ok = false // a clock section to a relay that is no clock, or none to one
		case ok && len(sec) > 0: // empty: a machine whose session has not begun
			ok = r.clock.heard(from, sec, now)
		}
		if !ok {
			r.stats.Malformed++
			continue
		}
		r.stats.EnvelopesIn++
		env := r.in[:n]
		var mid []byte
		var rec record
		for pos, prev := start, -1; pos < n; prev = rec.slot {
			pos, _ = nextRecord(env, pos, len(r.out), from, true, mid, prev, &rec)
			r.forward(from, &rec)
			mid = rec.middle(mid)
		}
	}
	if !r.begun {
		r.begun, r.next = true, now
	}
	if now >= r.next {
		r.Flush()
		r.next += r.tick
		if r.next <= now {
			r.next = now + r.tick // fell behind: no burst of empty flushes
		}
	}
}

// forward puts the datagram of record rec from slot from into the
// envelope for its slot, rebuilt whole if it is a copy record.
func (r *Relay) forward(from int, rec *record) {
	to := rec.slot
	if len(r.out[to])+recordOverhead+rec.size() > r.limit() {
		r.send(to)
	}
	r.out[to] = appendRebuilt(r.out[to], from, rec)
	r.stats.Forwarded++
	if rec.src != nil {
		r.stats.Rebuilt++
	}
}

// Flush sends every machine the envelope gathered for it, if not empty.
// Poll calls it once a tick.
func (r *Relay) Flush() {
	for to := range r.out {
		if len(r.out[to]) > 1 || (r.clock != nil && len(r.clock.slots[to].queue) > 0) {
			r.send(to)
		}
	}
}

// limit is the most bytes of records an envelope to a machine holds: with
// the clock, room is left for a clock section with an item or two.
func (r *Relay) limit() int {
	if r.clock != nil {
		return MaxDatagram - clockRoom
	}
	return MaxDatagram
}

// clockRoom is what the relay's envelopes leave for their clock section
// at least: a decision of 8 players.
const clockRoom = 3 + 4 + itemHead + 8*maxLocal + 64

func (r *Relay) send(to int) {
	env := r.out[to]
	if r.clock != nil {
		var items bool
		r.buf, items = r.clock.appendDown(r.buf[:0], to, MaxDatagram-len(env)+1, r.now)
		if !items && len(env) == 1 {
			return
		}
		env = append(r.buf, env[1:]...)
		r.buf = env
	}
	// A send error is a datagram lost: the sessions resend what matters.
	_ = r.link.Send(to, env)
	r.stats.EnvelopesOut++
	r.stats.BytesOut += int64(len(env))
	r.out[to] = r.out[to][:1]
}

// Stats returns what the relay has done so far.
func (r *Relay) Stats() Stats { return r.stats }
