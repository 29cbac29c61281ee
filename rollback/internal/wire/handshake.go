package wire

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
)

// The handshake is the one datagram that is not sealed: it agrees the keys
// that seal the others. It is the byte KindHandshake, then a msgpack array:
//
//	[Version, SessionID, Nonce, Echo, Key (32-byte bin), Terms (array), Local (bin), Auth (bin)]
//
// Auth is empty, or, when the machines share a lobby secret, the first
// HandshakeAuthSize bytes of an HMAC-SHA256 of everything before it under a
// key derived from the secret: without the secret nobody can make a
// handshake that such a machine accepts.

// Version is the protocol version every handshake carries. 3: an Attest
// datagram may carry an input packet after the message. 4: so may a ping
// (Quality), a reply (QualityReply) and a Checksum. 5: a joining machine
// answers another's Join proposal with JoinAbsent. 6: a State exchange's
// payload is uvarint len(state), the compressed state, then the trace
// section (trace.go), where it was the compressed state alone. 7: a held
// input is one bit in an input body whatever the layout, a third machine's
// count is its distance from the acknowledgement, and statements span
// StatementInterval frames (64 for most games) where they spanned 16.
const Version = 7

// HandshakeAuthSize is the size of the handshake's MAC with a secret.
const HandshakeAuthSize = 16

// MaxHandshakeSize is the largest handshake datagram accepted or produced.
const MaxHandshakeSize = 320

// ErrAuth is returned for a handshake whose Auth does not match the
// secret (or that has one when no secret is set, or none when one is).
var ErrAuth = errors.New("wire: handshake authentication failed")

var (
	errHandshakeKind = fmt.Errorf("%w: not a handshake", ErrMalformed)
	errHandshakeSize = fmt.Errorf("%w: handshake too large", ErrMalformed)
	errTerms         = fmt.Errorf("%w: impossible terms", ErrMalformed)
)

// Handshake opens a link. Each machine sends its own fresh Nonce and
// ephemeral public Key, and echoes the nonce of the handshake it answers
// (or of the peer it has accepted; 0 before it has one): a machine that
// echoes our nonce has shown that it receives at its address.
type Handshake struct {
	Version   uint32
	SessionID uint64
	Nonce     uint64
	Echo      uint64
	Key       [KeySize]byte
	Terms     Terms
	Local     []uint8 // the sender's own players, ascending: who it is (none: a spectator)
}

// Terms are everything the machines of a match must agree on. They travel
// whole in the handshake, so that a machine configured differently is told
// which field differs, and their digest is bound into the link's keys.
type Terms struct {
	Players       int     // 1 to MaxPlayers
	Owners        []uint8 // for each player, the lowest player of the machine that owns it
	Layout        []uint8 // the input layout's field widths
	Mode          uint8
	TickRate      int   // simulation frames a second
	ChecksumEvery int32 // the desync-check interval; negative: none
	StartDelay    bool  // the start-of-match delay is on
}

// Digest returns the SHA-256 digest of the terms under the protocol
// version: the value [Link] binds into the keys.
func (t *Terms) Digest() [DigestSize]byte {
	b := append([]byte("rewind terms"), byte(Version))
	return sha256.Sum256(t.append(b))
}

func (t *Terms) append(b []byte) []byte {
	b = appendUint(appendArray(b, 7), uint64(t.Players))
	b = appendBin(appendBin(b, t.Owners), t.Layout)
	b = appendUint(appendUint(b, uint64(t.Mode)), uint64(t.TickRate))
	return appendBool(appendInt(b, int64(t.ChecksumEvery)), t.StartDelay)
}

func (t *Terms) parse(r *reader) {
	r.array(7)
	players := int(r.uint(MaxPlayers))
	owners := r.bin(MaxPlayers)
	layout := r.bin(MaxFields)
	*t = Terms{Players: players, Owners: append(t.Owners[:0], owners...), Layout: append(t.Layout[:0], layout...),
		Mode: uint8(r.uint(255)), TickRate: int(r.uint(1<<16 - 1)), ChecksumEvery: int32(r.int(-maxInt32-1, maxInt32)),
		StartDelay: r.bool()}
	if r.err == nil && (t.Players < 1 || len(t.Owners) != t.Players || len(t.Layout) == 0) {
		r.fail(errTerms)
	}
}

// HandshakeAuth authenticates handshakes with a lobby secret.
type HandshakeAuth struct{ key []byte }

// NewHandshakeAuth returns the authenticator for secret, or nil for an
// empty secret (handshakes then carry no Auth).
func NewHandshakeAuth(secret []byte) (*HandshakeAuth, error) {
	if len(secret) == 0 {
		return nil, nil
	}
	key, err := hkdf.Key(sha256.New, secret, nil, "rewind/1 handshake", 32)
	if err != nil {
		return nil, err
	}
	return &HandshakeAuth{key: key}, nil
}

func (a *HandshakeAuth) sum(b []byte) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write(b)
	return m.Sum(nil)[:HandshakeAuthSize]
}

// AppendHandshake appends the handshake datagram carrying m to b,
// authenticated with auth (nil for none).
func AppendHandshake(b []byte, m *Handshake, auth *HandshakeAuth) ([]byte, error) {
	n := len(b)
	b = append(b, byte(KindHandshake))
	b = appendUint(appendArray(b, 8), uint64(m.Version))
	b = appendUint(appendUint(appendUint(b, m.SessionID), m.Nonce), m.Echo)
	b = appendBin(m.Terms.append(appendBin(b, m.Key[:])), m.Local)
	if auth == nil {
		b = appendBin(b, nil)
	} else {
		b = appendBin(b, auth.sum(b[n:]))
	}
	if len(b)-n > MaxHandshakeSize {
		return b[:n], errHandshakeSize
	}
	return b, nil
}

// ParseHandshake decodes handshake datagram b into m and checks its Auth
// with auth (nil: it must have none). Like ParseControl it takes exactly
// the message's array and sets m whole. It returns an error wrapping
// ErrMalformed for a datagram that is not a well-formed handshake, and
// ErrAuth for one whose authentication fails.
func ParseHandshake(b []byte, m *Handshake, auth *HandshakeAuth) error {
	if len(b) > MaxHandshakeSize {
		return errHandshakeSize
	}
	if len(b) < 2 || Kind(b[0]) != KindHandshake || b[1] != 0x98 {
		return errHandshakeKind
	}
	r := reader{b: b[1:]}
	r.array(8)
	version, session, nonce, echo := uint32(r.uint(maxU32)), r.uint(1<<64-1), r.uint(1<<64-1), r.uint(1<<64-1)
	key := r.bin(KeySize)
	if r.err == nil && len(key) != KeySize {
		r.fail(errRange)
	}
	terms := m.Terms
	terms.parse(&r)
	local := r.bin(MaxPlayers)
	signed := len(b) - len(r.b)
	tag := r.bin(HandshakeAuthSize)
	switch {
	case r.err != nil:
		return r.err
	case len(r.b) != 0:
		return errTrailing
	case auth == nil && len(tag) != 0, auth != nil && !hmac.Equal(tag, auth.sum(b[:signed])):
		return ErrAuth
	}
	*m = Handshake{Version: version, SessionID: session, Nonce: nonce, Echo: echo, Terms: terms, Local: append(m.Local[:0], local...)}
	copy(m.Key[:], key)
	return nil
}

// appendBin appends a msgpack bin of at most 255 bytes.
func appendBin(b, v []byte) []byte {
	return append(append(b, 0xc4, byte(len(v))), v...)
}

// bin reads a msgpack bin 8 of at most max bytes; the result aliases the
// datagram.
func (r *reader) bin(max int) []byte {
	if c := r.byte(); r.err == nil && c != 0xc4 {
		r.fail(errType)
	}
	n := int(r.byte())
	if r.err == nil && n > max {
		r.fail(errRange)
	}
	return r.take(n)
}
