// Package wire encodes and decodes the datagrams that Rewind peers exchange.
//
// A link opens with unsealed handshakes ([Handshake]) that agree one key per
// direction (keys.go). Every datagram after that is sealed (seal.go): a
// 2-byte header (the [Kind] and a packet number), a body, and a 4-byte MAC
// over the whole datagram. The per-frame input packet's body ([KindInput])
// is the bit-packed format of the INVERSUS article: a header of frame
// numbers (the low 16 bits of a base frame, which the receiver completes
// from its own frame count, and short offsets from it: the next frame the
// sender wants, the first frame carried, how many), then for each frame,
// for each of the sender's players, for each field of the [Layout]: one
// "changed" bit and, if set, the field's bits. The first frame is
// delta-coded against the receiver's input for the frame before it. The
// sender's input lag and disconnection gossip follow the frames. Control
// messages are msgpack arrays, read exactly. docs/protocol.md has
// byte-exact examples.
//
// Encoding appends to a caller's buffer and decoding fills a caller's
// [InputPacket]; neither allocates once the buffers have grown. Decoders
// never panic and reject malformed input with an error.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Kind is the first byte of every datagram.
type Kind uint8

// Datagram kinds.
const (
	KindInput Kind = 1 + iota // per-frame input packet
)

func (k Kind) String() string {
	switch k {
	case KindInput:
		return "input"
	case KindHandshake:
		return "handshake"
	case KindQuality:
		return "quality"
	case KindQualityReply:
		return "quality-reply"
	case KindDisconnect:
		return "disconnect"
	case KindReady:
		return "ready"
	case KindStart:
		return "start"
	case KindGo:
		return "go"
	case KindChecksum:
		return "checksum"
	case KindState:
		return "state"
	case KindKeys:
		return "keys"
	case KindAttest:
		return "attest"
	case KindWatch:
		return "watch"
	case KindSnap:
		return "snap"
	case KindJoin:
		return "join"
	default:
		return fmt.Sprintf("Kind(%d)", uint8(k))
	}
}

// Limits of the input packet format.
const (
	MaxFrame       = 1<<31 - 1<<10 // largest frame number (ack or one past the last frame) a header carries
	MaxFrames      = 255           // most frames in one packet
	MaxPlayers     = 8             // most players one sender can carry
	MaxFields      = 64            // most fields in a Layout
	MaxInputHeader = 6             // most bytes of an input body before its frames (header and lag)
)

// Errors returned by the codec. Decoding errors wrap [ErrMalformed].
var (
	ErrMalformed = errors.New("wire: malformed packet")
	ErrLayout    = errors.New("wire: invalid layout")
	ErrRange     = errors.New("wire: frame numbers do not fit the header")
	ErrInput     = errors.New("wire: input has bits outside the layout")
	ErrPlayers   = errors.New("wire: player count out of range")

	errTruncated = fmt.Errorf("%w: truncated", ErrMalformed)
	errTrailing  = fmt.Errorf("%w: trailing bits", ErrMalformed)
	errOrder     = fmt.Errorf("%w: first frame flagged as the base but not before the ack", ErrMalformed)
	errShort     = fmt.Errorf("%w: a number not in its shortest form", ErrMalformed)
	errFrame     = fmt.Errorf("%w: frame number out of range", ErrMalformed)
	errGossip    = fmt.Errorf("%w: impossible gossip count", ErrMalformed)
)

// Layout gives the bit widths of the fields of an input, lowest bits first.
// Field i occupies the bits starting at the sum of the widths before it.
// Widths are 1 to 64 and sum to at most 64.
type Layout []uint8

// Bits returns the total width of the layout.
func (l Layout) Bits() int {
	n := 0
	for _, w := range l {
		n += int(w)
	}
	return n
}

// Check reports whether l is a valid layout.
func (l Layout) Check() error {
	if len(l) == 0 || len(l) > MaxFields {
		return fmt.Errorf("%w: %d fields (want 1 to %d)", ErrLayout, len(l), MaxFields)
	}
	for i, w := range l {
		if w == 0 || w > 64 {
			return fmt.Errorf("%w: field %d is %d bits (want 1 to 64)", ErrLayout, i, w)
		}
	}
	if n := l.Bits(); n > 64 {
		return fmt.Errorf("%w: %d bits in all (want at most 64)", ErrLayout, n)
	}
	return nil
}

// Mask returns the bits an input of this layout may use.
func (l Layout) Mask() uint64 {
	n := l.Bits()
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}

// Format is a Layout checked once, by NewFormat, with what every packet
// needs of it: its methods encode and decode input packets without
// checking the layout again. The zero Format has no layout: it encodes
// and decodes nothing.
type Format struct {
	l    Layout
	mask uint64
}

// NewFormat checks l and returns its Format. The Format keeps l: it must
// not be changed after.
func NewFormat(l Layout) (Format, error) {
	if err := l.Check(); err != nil {
		return Format{}, err
	}
	return Format{l: l, mask: l.Mask()}, nil
}

// Layout returns the format's layout.
func (f *Format) Layout() Layout { return f.l }

// InputPacket is the decoded form of an input packet. Inputs holds Count
// frames of Players inputs each, frame-major: the input of player j (in the
// sender's order) for frame First+i is Inputs[i*Players+j].
type InputPacket struct {
	Ack     int32 // the next frame the sender wants from the receiver
	First   int32 // the first frame carried
	Count   int   // frames carried; 0 for a packet that only acknowledges
	Players int   // the sender's players, 1 to MaxPlayers
	// Base holds each player's input for frame First-1, against which the
	// first frame is delta-coded; the receiver has it, since it asked for
	// First. nil means the zero input (and must be used for frame 0).
	Base   []uint64
	Inputs []uint64
	// Lag is the sender's current input lag in frames (0 to MaxLag): its
	// inputs run this far ahead of its simulation.
	Lag int
	// Gossip reports, for every machine other than the sender and the
	// receiver (in ascending order of their lowest PlayerID), what the
	// sender knows of its disconnection.
	Gossip []Gossip
}

// MaxLag is the largest input lag a packet can carry.
const MaxLag = 7

// Gossip is what the sender knows of a third machine.
type Gossip struct {
	Disconnected bool
	// Frame, when Disconnected, is its disconnect frame as the sender knows
	// it. Otherwise it is how many of that machine's frames the sender has
	// received (a lower bound: a count ahead of the packet's End goes as
	// End), or -1 for no count in this packet (or one more than 255 frames
	// behind End).
	Frame int32
}

// maxBehind is the furthest behind a packet's End a count can be sent.
const maxBehind = 255

// End returns one past the last frame carried.
func (p *InputPacket) End() int32 { return p.First + int32(p.Count) }

// InputHeader is the fixed part of an input packet.
type InputHeader struct {
	Ack, First, End int32
}

// AppendInput appends the encoding of p, kind byte included, to b. It
// checks l first: a sender of many packets checks it once (NewFormat) and
// calls Format.AppendInput.
func AppendInput(b []byte, p *InputPacket, l Layout) ([]byte, error) {
	f, err := NewFormat(l)
	if err != nil {
		return b, err
	}
	return f.AppendInput(b, p)
}

// AppendInput appends the encoding of p, kind byte included, to b.
func (f *Format) AppendInput(b []byte, p *InputPacket) ([]byte, error) {
	if err := f.checkInput(p); err != nil {
		return b, err
	}
	base := min(p.Ack, p.First)
	w := bitWriter{b: b}
	w.write(uint64(base&0xffff), 16)
	if p.First < p.Ack { // the base is First, Ack follows
		w.write(1, 1)
		w.short(uint64(p.Ack - base))
	} else {
		w.write(0, 1)
		w.short(uint64(p.First - base))
	}
	w.short(uint64(p.Count))
	w.frames(f.l, p)
	w.write(uint64(p.Lag), 3)
	w.gossip(p)
	return w.flush(), nil
}

// checkInput reports what in p cannot be encoded, if anything.
func (f *Format) checkInput(p *InputPacket) error {
	if len(f.l) == 0 {
		return fmt.Errorf("%w: no layout", ErrLayout)
	}
	if p.Players < 1 || p.Players > MaxPlayers {
		return fmt.Errorf("%w: %d", ErrPlayers, p.Players)
	}
	if p.Count < 0 || p.Count > MaxFrames || len(p.Inputs) < p.Count*p.Players ||
		(p.Base != nil && len(p.Base) < p.Players) || len(p.Gossip) > MaxPlayers {
		return fmt.Errorf("%w: %d frames, %d inputs, %d base, %d gossip", ErrRange, p.Count, len(p.Inputs), len(p.Base), len(p.Gossip))
	}
	base := min(p.Ack, p.First)
	if base < 0 || max(p.Ack, p.End()) > MaxFrame || p.Ack-base > 255 || p.First-base > 255 || p.Count > 255 {
		return fmt.Errorf("%w: ack %d, frames [%d,%d)", ErrRange, p.Ack, p.First, p.End())
	}
	mask := f.mask
	for _, in := range p.Inputs[:p.Count*p.Players] {
		if in&^mask != 0 {
			return ErrInput
		}
	}
	for _, g := range p.Gossip {
		if g.Disconnected && (g.Frame < 0 || g.Frame > MaxFrame) {
			return fmt.Errorf("%w: gossip frame %d", ErrRange, g.Frame)
		}
	}
	if p.Lag < 0 || p.Lag > MaxLag {
		return fmt.Errorf("%w: input lag %d", ErrRange, p.Lag)
	}
	return nil
}

// frames writes p's inputs, each against the one before it (the first
// against Base): a held input is one 0 bit; a changed one, with a layout
// of two or more fields, a 1 bit and then each field's changed bit and, if
// set, its value (with one field, that field's changed bit and value).
func (w *bitWriter) frames(l Layout, p *InputPacket) {
	multi := len(l) > 1
	for i := range p.Count {
		for j := range p.Players {
			cur := p.Inputs[i*p.Players+j]
			var prev uint64
			switch {
			case i > 0:
				prev = p.Inputs[(i-1)*p.Players+j]
			case p.Base != nil:
				prev = p.Base[j]
			}
			if cur == prev { // a held input: one 0 bit
				w.write(0, 1)
				continue
			}
			if multi {
				w.write(1, 1)
			}
			shift := 0
			for _, width := range l {
				fm := fieldMask(width)
				c, o := cur>>shift&fm, prev>>shift&fm
				switch {
				case c == o:
					w.write(0, 1)
				case width == 64:
					w.write(1, 1)
					w.write(c, 64)
				default:
					w.write(1<<width|c, int(width)+1) // changed bit and value at once
				}
				shift += int(width)
			}
		}
	}
}

// gossip writes p's gossip entries: a departure frame, or the sender's
// count of each connected third machine's frames (a count ahead of End
// goes as End, a lower bound; more than maxBehind behind it, as none) as
// its distance d from Ack, which a mesh keeps small: the sender hears
// every machine about as late (4 players on far: 0 for 47% of the counts,
// 1 for 49%). After the connected entry's 01: 0 for d = 0; 10 and the
// sign for |d| = 1; 11, the sign and a short for 2 ≤ |d| ≤ 255. A count
// further than 255 from Ack goes as the escape, 11 with a negative zero,
// then 8 bits: how far it is behind End.
func (w *bitWriter) gossip(p *InputPacket) {
	for _, g := range p.Gossip {
		if g.Disconnected {
			w.write(1<<31|uint64(g.Frame), 32)
			continue
		}
		c := min(g.Frame, p.End())
		if g.Frame < 0 || p.End()-c > maxBehind {
			w.write(0, 2) // connected, no count
			continue
		}
		d := int64(c) - int64(p.Ack)
		switch {
		case d == 0:
			w.write(0b010, 3)
		case d == 1 || d == -1:
			w.write(0b0110<<1|uint64(d>>63&1), 5)
		case d >= -maxBehind && d <= maxBehind:
			w.write(0b0111<<1|uint64(d>>63&1), 5)
			w.short(uint64(max(d, -d)))
		default:
			w.write(0b01111, 5) // the escape: a negative zero
			w.short(0)
			w.write(uint64(p.End()-c), 8)
		}
	}
}

// gossipCount reads a connected machine's count after its 01, for a
// packet whose header is h.
func gossipCount(r *bitReader, h InputHeader) (int32, error) {
	var d int32
	switch {
	case r.bit() == 0:
	case r.bit() == 0: // 10: one frame
		d = 1 - 2*int32(r.bit())
	default: // 11: the sign and a short
		neg := r.bit() == 1
		v, ok := r.short()
		switch {
		case !ok || v == 1 || (v == 0 && !neg):
			return 0, errShort // it has a shorter form
		case v == 0: // the escape: 8 bits behind End
			g := h.End - int32(r.read(8))
			if d := g - h.Ack; d >= -maxBehind && d <= maxBehind {
				return 0, errShort
			}
			return gossipCheck(g, h)
		case neg:
			d = -int32(v)
		default:
			d = int32(v)
		}
	}
	return gossipCheck(h.Ack+d, h)
}

// gossipCheck refuses a count no sender writes: below 0, ahead of End (it
// goes as End), or more than maxBehind behind it (it goes as none).
func gossipCheck(g int32, h InputHeader) (int32, error) {
	if g < 0 || g > h.End || h.End-g > maxBehind {
		return 0, errGossip
	}
	return g, nil
}

// PeekInput decodes the header of an input body without the rest, so that
// the receiver can look up the baseline inputs for First-1. ref is the
// receiver's next local frame: the base frame is the one whose low 16 bits
// the header carries that is nearest to it (an honest sender's frame
// numbers are never 2^15 frames from the receiver's).
func PeekInput(b []byte, ref int32) (InputHeader, error) {
	r := bitReader{b: b}
	h, err := peek(&r, ref)
	return h, err
}

func peek(r *bitReader, ref int32) (InputHeader, error) {
	// The header is at most 41 bits: read them from one 64-bit word.
	var w uint64
	for k := range min(len(r.b), 8) {
		w |= uint64(r.b[k]) << (56 - 8*k)
	}
	low, firstIsBase := uint16(w>>48), w>>47&1 == 1
	pos := 17
	short := func() int32 {
		v := int32(w >> (60 - pos) & 0xf)
		pos += 4
		if v == 15 {
			v = int32(w >> (56 - pos) & 0xff)
			pos += 8
			if v < 15 {
				v = -1 // not the one encoding of v: no sender writes it
			}
		}
		return v
	}
	off, count := short(), short()
	if pos > len(r.b)*8 {
		return InputHeader{}, errTruncated
	}
	if off < 0 || count < 0 {
		return InputHeader{}, errShort
	}
	r.pos = pos
	base := ref + int32(int16(low-uint16(ref)))
	if base < 0 || base > MaxFrame {
		return InputHeader{}, errFrame
	}
	h := InputHeader{Ack: base, First: base + off}
	if firstIsBase {
		if off == 0 {
			return InputHeader{}, errOrder // a base flagged as First must be before Ack
		}
		h.Ack, h.First = base+off, base
	}
	h.End = h.First + count
	if max(h.Ack, h.End) > MaxFrame {
		return InputHeader{}, errFrame
	}
	return h, nil
}

// ParseInput decodes an input body from a sender with the given number of
// players, carrying gossip about the given number of machines, into p; ref
// is as for PeekInput. The caller sets p.Base (the receiver's inputs of
// the sender's players for the packet's First-1, from PeekInput; nil for
// zero). It reuses p.Inputs' and p.Gossip's storage. It rejects truncated
// bodies and bodies with bytes or non-zero bits after the last field. It
// checks l first: a receiver of many packets checks it once (NewFormat)
// and calls Format.ParseInput.
func ParseInput(b []byte, ref int32, l Layout, players, gossip int, p *InputPacket) error {
	f, err := NewFormat(l)
	if err != nil {
		return err
	}
	return f.ParseInput(b, ref, players, gossip, p)
}

// ParseInput is the package's ParseInput with the format's layout, checked
// once.
func (f *Format) ParseInput(b []byte, ref int32, players, gossip int, p *InputPacket) error {
	if err := f.checkParse(players, gossip, p); err != nil {
		return err
	}
	r := bitReader{b: b}
	h, err := peek(&r, ref)
	if err != nil {
		return err
	}
	return f.parseFrames(r, h, players, gossip, p)
}

// PeekInput is the package's PeekInput, and also returns the bit at which
// the header ends, for ParseInputAfter.
func (f *Format) PeekInput(b []byte, ref int32) (h InputHeader, end int, err error) {
	r := bitReader{b: b}
	h, err = peek(&r, ref)
	return h, r.pos, err
}

// ParseInputAfter is ParseInput for a body whose header PeekInput already
// decoded: h and end are what it returned for b (with the same ref). It
// does not decode the header again.
func (f *Format) ParseInputAfter(b []byte, h InputHeader, end, players, gossip int, p *InputPacket) error {
	if err := f.checkParse(players, gossip, p); err != nil {
		return err
	}
	return f.parseFrames(bitReader{b: b, pos: end}, h, players, gossip, p)
}

// checkParse checks the arguments of a parse.
func (f *Format) checkParse(players, gossip int, p *InputPacket) error {
	if len(f.l) == 0 {
		return fmt.Errorf("%w: no layout", ErrLayout)
	}
	if players < 1 || players > MaxPlayers || gossip < 0 || gossip > MaxPlayers || (p.Base != nil && len(p.Base) < players) {
		return fmt.Errorf("%w: %d players, %d gossip, %d base", ErrPlayers, players, gossip, len(p.Base))
	}
	return nil
}

// parseFrames decodes the rest of an input body, after its header h, from
// r into p.
func (f *Format) parseFrames(r bitReader, h InputHeader, players, gossip int, p *InputPacket) error {
	p.Ack, p.First, p.Count, p.Players = h.Ack, h.First, int(h.End-h.First), players
	if err := f.readFrames(&r, players, p); err != nil {
		return err
	}
	p.Lag = int(r.read(3))
	p.Gossip = p.Gossip[:0]
	for range gossip {
		g := Gossip{Disconnected: r.bit() == 1}
		switch {
		case g.Disconnected:
			g.Frame = int32(r.read(31))
			if g.Frame > MaxFrame {
				return errFrame
			}
		case r.bit() == 1:
			f, err := gossipCount(&r, h)
			if err != nil {
				return err
			}
			g.Frame = f
		default:
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

// readFrames reads p.Count frames of players inputs from r into p.Inputs,
// the first against p.Base.
func (f *Format) readFrames(r *bitReader, players int, p *InputPacket) error {
	l := f.l
	multi := len(l) > 1
	p.Inputs = p.Inputs[:0]
	for i := range p.Count {
		for j := range players {
			var prev uint64
			switch {
			case i > 0:
				prev = p.Inputs[(i-1)*players+j]
			case p.Base != nil:
				prev = p.Base[j]
			}
			if r.zeros(1) { // a held input
				p.Inputs = append(p.Inputs, prev)
				continue
			}
			if multi {
				r.pos++ // the 1 bit of a changed input
			}
			var in uint64
			shift, changed := 0, false
			for _, width := range l {
				fm := fieldMask(width)
				v := prev >> shift & fm
				if r.bit() == 1 {
					v, changed = r.read(int(width)), true
				}
				in |= v << shift
				shift += int(width)
			}
			if !changed {
				return errShort // a changed input with no field changed: a held one's longer form
			}
			p.Inputs = append(p.Inputs, in)
		}
		if r.overrun {
			return errTruncated
		}
	}
	return nil
}

func fieldMask(width uint8) uint64 {
	if width >= 64 {
		return ^uint64(0)
	}
	return 1<<width - 1
}

// bitWriter appends bits most significant first.
type bitWriter struct {
	b    []byte
	acc  uint64 // pending bits, right-aligned
	nacc int    // number of pending bits, < 32 between calls
}

// write appends the n low bits of v (1 ≤ n ≤ 64; v has no other bits set).
func (w *bitWriter) write(v uint64, n int) {
	if n > 32 {
		w.write(v>>32, n-32)
		v, n = v&0xffffffff, 32
	}
	w.acc = w.acc<<n | v
	w.nacc += n
	if w.nacc >= 32 {
		w.nacc -= 32
		x := uint32(w.acc >> w.nacc)
		w.b = append(w.b, byte(x>>24), byte(x>>16), byte(x>>8), byte(x))
		w.acc &= 1<<w.nacc - 1
	}
}

// short writes v (at most 255) in 4 bits when it is under 15, else as
// 1111 and 8 bits: the offsets and counts of a healthy match are small.
func (w *bitWriter) short(v uint64) {
	if v < 15 {
		w.write(v, 4)
		return
	}
	w.write(15<<8|v, 12)
}

func (w *bitWriter) flush() []byte {
	for w.nacc >= 8 {
		w.nacc -= 8
		w.b = append(w.b, byte(w.acc>>w.nacc))
	}
	if w.nacc > 0 {
		w.b = append(w.b, byte(w.acc<<(8-w.nacc)))
	}
	w.acc, w.nacc = 0, 0
	return w.b
}

// bitReader reads bits most significant first. Reading past the end sets
// overrun and yields zero bits.
type bitReader struct {
	b       []byte
	pos     int // bit position
	overrun bool
}

// bit returns the next bit.
func (r *bitReader) bit() uint64 {
	if r.pos >= len(r.b)*8 {
		r.overrun = true
		return 0
	}
	v := r.b[r.pos>>3] >> (7 - r.pos&7) & 1
	r.pos++
	return uint64(v)
}

// zeros reports whether the next n bits (1 ≤ n ≤ 64) are all there and
// all zero, and if so consumes them.
func (r *bitReader) zeros(n int) bool {
	if n > 56 || r.pos+n > len(r.b)*8 {
		return false
	}
	pos := r.pos
	if r.window(n) != 0 {
		r.pos = pos
		return false
	}
	return true
}

// read returns the next n bits (1 ≤ n ≤ 64).
func (r *bitReader) read(n int) uint64 {
	if n > 56 {
		hi := r.window(n - 32)
		return hi<<32 | r.window(32)
	}
	return r.window(n)
}

// window returns the next n bits (1 ≤ n ≤ 56) from a 64-bit load.
func (r *bitReader) window(n int) uint64 {
	if r.pos+n > len(r.b)*8 {
		r.overrun = true
		r.pos = len(r.b) * 8
		return 0
	}
	i := r.pos >> 3
	var win uint64
	if i+8 <= len(r.b) {
		win = binary.BigEndian.Uint64(r.b[i:])
	} else {
		for k := range 8 {
			win <<= 8
			if i+k < len(r.b) {
				win |= uint64(r.b[i+k])
			}
		}
	}
	win <<= uint(r.pos & 7)
	r.pos += n
	return win >> (64 - n)
}

// atEnd reports whether only zero padding bits of the last byte remain.
func (r *bitReader) atEnd() bool {
	if (r.pos+7)/8 != len(r.b) {
		return false
	}
	if bit := r.pos & 7; bit != 0 {
		return r.b[len(r.b)-1]&(1<<(8-bit)-1) == 0
	}
	return true
}
