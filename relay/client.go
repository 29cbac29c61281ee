package relay

// Client is a machine's transport in the relay topology: it implements
// rollback.Transport over the machine's one link, to the relay. The
// session's peer k is the machine in slot k, or k+1 from the client's own
// slot on (rollback.Config.Peers lists the other machines in slot order).
//
// Send only gathers: the game calls [Client.Flush] after every
// Session.Advance, Idle and Close, which sends what that call gathered in
// one envelope. Receive hands out the records of the relay's envelopes one
// by one, each as a datagram from the peer it names. It is not safe for
// concurrent use (a session calls its transport from its own methods only).
type Client struct {
	link  Link
	relay int // the relay's peer number on link
	self  int // our slot
	slots int // the match's machines

	out  []byte // the envelope being gathered
	in   []byte // the envelope being handed out
	next int    // the position of its next record not yet handed out
	runs index  // the runs of out, for copy records (dedup.go)
	// mid and midLen: where out holds the middle of its last record's
	// datagram (record.middle), for a reseal record; midLen 0 for none.
	mid, midLen int
	last        int // the slot of out's last record; -1 for none
	rebuilt     int // the datagrams of out, in bytes (maxRebuilt)

	stats  ClientStats
	clk    *clientClock // nil: the relay is no clock (UseClock)
	maxOut int          // the most bytes out may hold
	up     []byte       // with clk: the envelope being sent
}

// ClientStats counts what a client did.
type ClientStats struct {
	EnvelopesOut int64 // envelopes sent to the relay
	BytesOut     int64 // their bytes
	// Copies counts the datagrams sent as copy or reseal records: partly
	// spelled as a copy of bytes the envelope already held
	// (docs/protocol.md, "Relay envelopes").
	Copies      int64
	EnvelopesIn int64 // well-formed envelopes received from the relay
	BytesIn     int64 // bytes of every datagram received
	// Dropped counts the datagrams dropped unread: from another peer
	// than the relay, or not a well-formed envelope.
	Dropped int64
	// With UseClock: the relay's signed items taken, and those dropped
	// because their signature or form was wrong (the rest of their
	// envelope's clock section with them).
	Items, Forged int64
}

// NewClient returns the transport of the machine in slot self of a match
// of machines machines, whose link reaches the relay as peer relay.
func NewClient(link Link, relay, self, machines int) (*Client, error) {
	if link == nil || relay < 0 || machines < 2 || machines > MaxSlots || self < 0 || self >= machines {
		return nil, ErrConfig
	}
	c := &Client{link: link, relay: relay, self: self, slots: machines, last: -1,
		out: append(make([]byte, 0, MaxDatagram), envelopeKind), in: make([]byte, MaxDatagram+1), maxOut: MaxDatagram}
	c.runs.reset()
	return c, nil
}

// slotOf is the slot of the session's peer k.
func (c *Client) slotOf(peer int) int {
	if peer >= c.self {
		return peer + 1
	}
	return peer
}

// peerOf is the session's peer number of slot s (never c.self).
func (c *Client) peerOf(slot int) int {
	if slot > c.self {
		return slot - 1
	}
	return slot
}

// Send gathers b for peer into the envelope Flush sends: as a copy record
// when b shares a run of bytes with what the envelope holds and that is
// shorter. When the envelope would grow past MaxDatagram, what it holds is
// sent first.
func (c *Client) Send(peer int, b []byte) error {
	if peer < 0 || peer >= c.slots-1 {
		return ErrSlot
	}
	if len(b) == 0 || len(b) > maxPayload {
		return ErrTooLarge
	}
	if len(c.out)+recordOverhead+len(b) > c.maxOut {
		_ = c.Flush() // an error is that envelope lost, not b
	}
	slot := c.slotOf(peer)
	c.rebuilt += len(b)
	// A copy is taken only while the envelope stays within what the relay
	// accepts (maxRebuilt).
	short := slot == nextSlot(c.last, c.self)
	size := resealSize
	if short {
		size = resealNextSize
	}
	if c.midLen > 0 && len(b) == c.midLen+resealEnds && c.rebuilt <= maxRebuilt(c.slots, len(c.out)+size) &&
		string(b[resealHead:len(b)-resealTail]) == string(c.out[c.mid:c.mid+c.midLen]) {
		if short {
			c.out = append(c.out, resealNext)
		} else {
			c.out = append(c.out, copySlot, byte(slot), 0)
		}
		c.out = append(append(c.out, b[:resealHead]...), b[len(b)-resealTail:]...)
		c.stats.Copies++
		c.last = slot
		return nil // the middle stays the previous record's
	}
	c.last = slot
	c.runs.add(c.out)
	pos, plain := len(c.out), 1+uvarintLen(len(b))+len(b)
	if j, at, n := c.runs.longest(c.out, b); n > 0 && copySize(len(b), j, at, n, pos) < plain &&
		c.rebuilt <= maxRebuilt(c.slots, pos+copySize(len(b), j, at, n, pos)) {
		c.out = appendCopy(c.out, slot, b, j, at, n)
		c.stats.Copies++
		c.midLen = 0
		return nil
	}
	c.out = appendRecord(c.out, slot, b)
	c.mid, c.midLen = len(c.out)-len(b)+resealHead, max(0, len(b)-resealEnds)
	return nil
}

// Flush sends the envelope gathered since the last Flush, if any: one
// datagram to the relay.
// With UseClock, every Flush sends one: the clock section, which tells the
// relay the machine is on time, goes every tick.
func (c *Client) Flush() error {
	env := c.out
	if c.clk != nil {
		c.up = append(c.clk.appendUp(c.up[:0]), c.out[1:]...)
		env = c.up
	} else if len(c.out) <= 1 {
		return nil
	}
	err := c.link.Send(c.relay, env)
	c.stats.EnvelopesOut++
	c.stats.BytesOut += int64(len(env))
	c.out = c.out[:1]
	c.runs.reset()
	c.midLen, c.rebuilt, c.last = 0, 0, -1
	return err
}

// Receive copies the next datagram the relay forwarded into buf (truncated
// to len(buf)) and returns its length and the peer that sent it.
func (c *Client) Receive(buf []byte) (n, peer int, ok bool) {
	for c.next == 0 {
		m, from, ok := c.link.Receive(c.in)
		if !ok {
			return 0, 0, false
		}
		c.stats.BytesIn += int64(m)
		if from != c.relay || m > MaxDatagram {
			c.stats.Dropped++
			continue
		}
		sec, start, ok := checkEnvelope(c.in[:m], c.slots, c.self, false)
		if !ok || (sec != nil && c.clk == nil) {
			c.stats.Dropped++
			continue
		}
		c.stats.EnvelopesIn++
		if sec != nil {
			c.takeDown(sec) // before its records: a decision goes ahead of the datagrams
		}
		if start == m {
			continue // a clock section alone
		}
		c.in, c.next = c.in[:m], start
	}
	var r record
	next, _ := nextRecord(c.in, c.next, c.slots, c.self, false, nil, -1, &r)
	if c.next = next; next == len(c.in) {
		c.in, c.next = c.in[:cap(c.in)], 0
	}
	return copy(buf, r.lit), c.peerOf(r.slot), true
}

// Move points the client at another relay: link (which may be the same)
// reaches it as peer relay. Nothing of the session changes: its datagrams
// are sealed end to end, so the new relay forwards them as the old one did,
// and what was lost between the two is loss to the session, which resends
// it. The records of the envelope being handed out are still handed out;
// what was gathered since the last Flush goes to the new relay.
func (c *Client) Move(link Link, relay int) error {
	if link == nil || relay < 0 {
		return ErrConfig
	}
	c.link, c.relay = link, relay
	return nil
}

// Stats returns what the client has done so far.
func (c *Client) Stats() ClientStats { return c.stats }

// Relayed reports true: every peer is reached through one relay. A
// rollback session over a Client sends its input packets in the cast body,
// the same for every peer, so that the client sends it to the relay once
// (docs/protocol.md, "Cast input bodies").
func (c *Client) Relayed() bool { return true }
