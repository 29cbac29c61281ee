package wire

import "fmt"

// Cast input bodies (docs/protocol.md, "Cast input bodies"). In the relay
// topology a session sends every peer the same input body, so that its
// relay client sends it to the relay once (a reseal record for every peer
// but the first: package relay). It is the per-pair body (input.go) with
// another header and trailer: no acknowledgement in the header, and after
// the input lag one entry for each of the sender's peers in machine order
// (ascending lowest PlayerID), the receiver's among them:
//
//	16 bits   the low 16 bits of First (completed from the receiver's frame count)
//	short     Count
//	…         the frames, as in the per-pair body
//	3 bits    the input lag
//	per peer  1, 31 bits: it left, and its departure frame as in the gossip;
//	          00: no count;
//	          01, a sign bit (1: negative), short: the next frame of that
//	          machine the sender wants, minus First (never a negative zero)
//
// The receiver reads its own entry as the acknowledgement and the others
// as the gossip, clamped as the per-pair body's encoding clamps them (a
// count ahead of End as End, one more than 255 behind End as none), so
// that it decodes the packet the per-pair body would have given it.

// AppendCast appends the cast body of p, whose Ack is the receiver's, at
// position at of the sender's peers in machine order, and whose Gossip is
// the other peers', in that order.
func (f *Format) AppendCast(b []byte, p *InputPacket, at int) ([]byte, error) {
	if err := f.checkInput(p); err != nil {
		return b, err
	}
	if at < 0 || at > len(p.Gossip) {
		return b, fmt.Errorf("%w: receiver at %d of %d peers", ErrRange, at, len(p.Gossip)+1)
	}
	w := bitWriter{b: b}
	w.write(uint64(p.First&0xffff), 16)
	w.short(uint64(p.Count))
	w.frames(f.l, p)
	w.write(uint64(p.Lag), 3)
	for k := range len(p.Gossip) + 1 {
		switch {
		case k == at:
			w.wanted(p.Ack - p.First) // checkInput: within 255 of First
		case k < at:
			w.castEntry(p.Gossip[k], p.First)
		default:
			w.castEntry(p.Gossip[k-1], p.First)
		}
	}
	return w.flush(), nil
}

// wanted writes a wanted frame's entry, d frames from First (|d| ≤ 255).
func (w *bitWriter) wanted(d int32) {
	if d < 0 {
		w.write(0b011, 3)
		w.short(uint64(-d))
		return
	}
	w.write(0b010, 3)
	w.short(uint64(d))
}

// castEntry writes a third machine's entry: its departure, or the frame
// the sender wants of it (at most 255 past First: a count ahead of End is
// read as End; more than 255 before it: no count, as the per-pair body
// has none for it).
func (w *bitWriter) castEntry(g Gossip, first int32) {
	switch {
	case g.Disconnected:
		w.write(1<<31|uint64(g.Frame), 32)
	case g.Frame < 0 || int64(g.Frame)-int64(first) < -maxBehind:
		w.write(0, 2)
	default:
		w.wanted(int32(min(int64(g.Frame)-int64(first), maxBehind)))
	}
}

// PeekCast decodes the header of a cast body (its First and End; the
// acknowledgement is in the trailer, which ParseCastAfter reads) and
// returns the bit at which it ends. ref is as for PeekInput.
func (f *Format) PeekCast(b []byte, ref int32) (h InputHeader, end int, err error) {
	r := bitReader{b: b}
	low := uint16(r.read(16))
	count, ok := r.short()
	switch {
	case r.overrun:
		return h, 0, errTruncated
	case !ok:
		return h, 0, errShort
	}
	h.First = ref + int32(int16(low-uint16(ref)))
	h.End = h.First + int32(count)
	if h.First < 0 || h.End > MaxFrame {
		return h, 0, errFrame
	}
	h.Ack = h.First // until ParseCastAfter reads it
	return h, r.pos, nil
}

// short reads what bitWriter.short wrote; ok is false for a number not in
// its shortest form.
func (r *bitReader) short() (v uint64, ok bool) {
	if v = r.read(4); v == 15 {
		if v = r.read(8); v < 15 {
			return 0, false
		}
	}
	return v, true
}

// ParseCastAfter decodes the rest of a cast body whose header PeekCast
// decoded (h, end), from a sender with the given number of players and
// peers, for the receiver at position at of those peers, into p as
// ParseInputAfter would the per-pair body: Ack the receiver's entry, and
// Gossip the others', clamped. The caller sets p.Base as for
// ParseInputAfter.
func (f *Format) ParseCastAfter(b []byte, h InputHeader, end, players, peers, at int, p *InputPacket) error {
	if err := f.checkParse(players, peers-1, p); err != nil {
		return err
	}
	if peers < 1 || at < 0 || at >= peers {
		return fmt.Errorf("%w: receiver at %d of %d peers", ErrPlayers, at, peers)
	}
	r := bitReader{b: b, pos: end}
	p.Ack, p.First, p.Count, p.Players = h.First, h.First, int(h.End-h.First), players
	if err := f.readFrames(&r, players, p); err != nil {
		return err
	}
	p.Lag = int(r.read(3))
	p.Gossip = p.Gossip[:0]
	for k := range peers {
		g, err := castEntry(&r, h.First)
		switch {
		case err != nil:
			return err
		case k == at:
			if g.Disconnected || g.Frame < 0 || g.Frame > MaxFrame {
				return fmt.Errorf("%w: no acknowledgement", ErrMalformed)
			}
			p.Ack = g.Frame
			continue
		case !g.Disconnected && g.Frame > h.End:
			g.Frame = h.End
		case !g.Disconnected && g.Frame >= 0 && h.End-g.Frame > maxBehind:
			g.Frame = -1
		}
		p.Gossip = append(p.Gossip, g)
	}
	if r.overrun {
		return errTruncated
	}
	if !r.atEnd() {
		return errTrailing
	}
	return nil
}

// castEntry reads one entry of a cast body's trailer.
func castEntry(r *bitReader, first int32) (Gossip, error) {
	switch {
	case r.bit() == 1:
		g := Gossip{Disconnected: true, Frame: int32(r.read(31))}
		if g.Frame > MaxFrame {
			return g, errFrame
		}
		return g, nil
	case r.bit() == 0:
		return Gossip{Frame: -1}, nil
	}
	neg := r.bit() == 1
	v, ok := r.short()
	if !ok || (neg && v == 0) {
		return Gossip{}, errShort
	}
	d := int32(v)
	if neg {
		d = -d
	}
	if first+d < 0 {
		return Gossip{}, errGossip
	}
	return Gossip{Frame: first + d}, nil
}
