package wire

import (
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"math/bits"
)

// Sealed datagrams. Every datagram after the handshake starts with a
// 2-byte header — the kind in the top 4 bits, then the low 12 bits of the
// sender's packet number for this link — and ends with a MAC of MACSize
// bytes over everything before it: the first bytes of the AES-GCM tag of
// an empty message whose additional data is the datagram, under the
// direction's key, with the full 64-bit packet number as the GCM nonce.
// Packet numbers count up from 0 per direction and never repeat under one
// key, so no GCM nonce is ever reused. The receiver rebuilds the full
// number from its 12 bits as the one closest to the next it expects (as
// QUIC does), checks the MAC, and rejects a number it has already taken
// or one more than ReplayWindow behind the newest: a datagram is accepted
// at most once.

// Sizes of the sealed framing.
const (
	SealedHeaderSize = 2
	MACSize          = 4
	SealOverhead     = SealedHeaderSize + MACSize
	pnBits           = 12
	pnMask           = 1<<pnBits - 1
	// ReplayWindow is how far behind the newest packet number a datagram
	// may arrive (reordered) and still be taken.
	ReplayWindow = 64
)

// Errors of Open.
var (
	// ErrMAC: the datagram was not sealed with the link's key: forged,
	// altered, or from another match.
	ErrMAC = errors.New("wire: MAC check failed")
	// ErrReplay: the datagram is genuine (its MAC holds) but its packet
	// number was already taken, or is too old to tell: a duplicate the
	// network made, or a replay.
	ErrReplay = errors.New("wire: replayed or too old")
)

// Sealer seals the datagrams of one direction of a link. It is not safe for
// concurrent use.
type Sealer struct {
	aead  cipher.AEAD
	pn    uint64 // the next packet number
	cur   uint64 // the number of the datagram being built
	nonce [12]byte
	tag   [16]byte
}

// NewSealer returns a sealer with the send key from [KeyShare.Keys].
func NewSealer(aead cipher.AEAD) *Sealer { return &Sealer{aead: aead} }

// Begin appends the header of the next datagram, of kind k, to b (which
// must be empty: the MAC covers the datagram from its first byte).
func (s *Sealer) Begin(b []byte, k Kind) []byte {
	s.cur = s.pn
	s.pn++
	return append(b, byte(k)<<4|byte(s.cur>>8&0x0f), byte(s.cur))
}

// Seal appends the MAC of datagram b, begun by Begin.
func (s *Sealer) Seal(b []byte) []byte {
	return append(b, mac(s.aead, &s.nonce, &s.tag, s.cur, b)...)
}

// Sent returns how many datagrams the sealer has begun.
func (s *Sealer) Sent() uint64 { return s.pn }

func mac(aead cipher.AEAD, nonce *[12]byte, tag *[16]byte, pn uint64, b []byte) []byte {
	binary.BigEndian.PutUint64(nonce[4:], pn)
	return aead.Seal(tag[:0], nonce[:], nil, b)[:MACSize]
}

// Opener checks the sealed datagrams of the other direction. It is not
// safe for concurrent use.
type Opener struct {
	aead  cipher.AEAD
	next  uint64 // one past the newest packet number taken
	seen  uint64 // bit i: packet number next-1-i was taken
	lost  uint64 // packet numbers that left the window untaken
	nonce [12]byte
	tag   [16]byte
}

// NewOpener returns an opener with the receive key from [KeyShare.Keys].
func NewOpener(aead cipher.AEAD) *Opener { return &Opener{aead: aead} }

// SealedKind returns the kind of a sealed datagram (0 for one too short).
func SealedKind(b []byte) Kind {
	if len(b) < SealOverhead {
		return 0
	}
	return Kind(b[0] >> 4)
}

// Open checks datagram b: its MAC, and that its packet number is new. It
// returns the body (between the header and the MAC, aliasing b), having
// recorded the number; or an error (errTruncated, ErrMAC, or ErrReplay for
// a genuine datagram already taken), having recorded nothing. The MAC is
// checked first, so that a forgery is always ErrMAC.
func (o *Opener) Open(b []byte) ([]byte, error) {
	if len(b) < SealOverhead {
		return nil, errTruncated
	}
	pn := o.expand(uint64(b[0]&0x0f)<<8 | uint64(b[1]))
	n := len(b) - MACSize
	if subtle.ConstantTimeCompare(mac(o.aead, &o.nonce, &o.tag, pn, b[:n]), b[n:]) != 1 {
		return nil, ErrMAC
	}
	if !o.fresh(pn) {
		return nil, ErrReplay // genuine, but taken before: a duplicate or a replay
	}
	o.take(pn)
	return b[SealedHeaderSize:n], nil
}

// Lost returns how many packet numbers left the replay window untaken:
// the peer's datagrams lost on the way, or so late that they would be
// refused. Only genuine datagrams move the window, so a peer can make its
// link look lossy (by skipping numbers), never clean.
func (o *Opener) Lost() uint64 { return o.lost }

// lostOut counts the numbers that leave a window (seen, next) untaken when
// it moves up by shift: those of its top shift bits that stand for a
// number (below next) and are clear, and those jumped over that never
// entered it.
func lostOut(seen, next, shift uint64) uint64 {
	out := min(shift, ReplayWindow)  // bits leaving: the top out
	valid := min(next, ReplayWindow) // bits standing for numbers: the low valid
	lo := ReplayWindow - out
	n := uint64(0)
	if valid > lo {
		mask := (^uint64(0) >> (ReplayWindow - (valid - lo))) << lo
		n = uint64(bits.OnesCount64(^seen & mask))
	}
	if shift > ReplayWindow {
		n += shift - ReplayWindow
	}
	return n
}

// expand rebuilds a full packet number from its low 12 bits: the candidate
// closest to the next one expected (RFC 9000, appendix A.3).
func (o *Opener) expand(low uint64) uint64 {
	const win, half = 1 << pnBits, 1 << (pnBits - 1)
	c := o.next&^pnMask | low
	switch {
	case c+half <= o.next && c < 1<<62:
		return c + win
	case c > o.next+half && c >= win:
		return c - win
	}
	return c
}

// fresh reports whether packet number pn has not been taken and is within
// the window.
func (o *Opener) fresh(pn uint64) bool {
	if pn >= o.next {
		return true
	}
	back := o.next - 1 - pn
	return back < ReplayWindow && o.seen&(1<<back) == 0
}

// take records packet number pn (fresh, with a valid MAC).
func (o *Opener) take(pn uint64) {
	if pn < o.next {
		o.seen |= 1 << (o.next - 1 - pn)
		return
	}
	shift := pn + 1 - o.next
	if shift == 1 && o.next >= ReplayWindow { // the usual case: the next number, the window full
		o.lost += ^o.seen >> (ReplayWindow - 1)
	} else {
		o.lost += lostOut(o.seen, o.next, shift)
	}
	if shift >= 64 {
		o.seen = 0
	} else {
		o.seen <<= shift
	}
	o.seen |= 1
	o.next = pn + 1
}
