// Package offpath is an off-path attacker for tests and soaks of rollback
// sessions over rollback/netsim: a [Forger] watches a match's traffic (the
// network's Tap) and makes forged datagrams as if from the other machines'
// addresses (the network's Inject): random bytes, genuine datagrams with
// flipped bits, replays, earlier matches' datagrams and handshakes. It
// builds them with the wire format's own encoders, which is why it lives
// beside the test support rather than in netsim, a package a game imports.
package offpath

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"

	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// ForgeKind is a kind of forged datagram a [Forger] makes.
type ForgeKind uint8

// The kinds of forged datagram, in the order a Forger cycles through them.
const (
	// ForgeRandom: 1 to 1200 random bytes; half of them start with a
	// plausible sealed header (a real kind, any packet number) and are at
	// least a sealed datagram long.
	ForgeRandom ForgeKind = 1 + iota
	// ForgeBitFlip: a recent genuine datagram of the link with 1 to 3
	// bits flipped.
	ForgeBitFlip
	// ForgeByteChange: a recent genuine datagram of the link with 1 to 3
	// bytes changed to other values.
	ForgeByteChange
	// ForgeTruncate: a recent genuine datagram of the link cut short (to
	// 0 bytes or more).
	ForgeTruncate
	// ForgeReplay: a datagram, unchanged, of an earlier match with the
	// same session id between the same two nodes ([Forger.LoadEarlier]):
	// its handshakes (other nonces, other keys) and sealed datagrams
	// (sealed with the earlier match's keys).
	ForgeReplay
	// ForgeHandshake: a well-formed handshake with the match's session
	// id, the terms of a genuine handshake, a random nonce, a fresh key
	// and a guessed echo (random, 0, or a nonce of the earlier match).
	ForgeHandshake
)

// NumForgeKinds is the number of kinds; they run from 1 to NumForgeKinds.
const NumForgeKinds = int(ForgeHandshake)

func (k ForgeKind) String() string {
	switch k {
	case ForgeRandom:
		return "random"
	case ForgeBitFlip:
		return "bit-flip"
	case ForgeByteChange:
		return "byte-change"
	case ForgeTruncate:
		return "truncate"
	case ForgeReplay:
		return "replay"
	case ForgeHandshake:
		return "handshake"
	}
	return "invalid"
}

// Bounds of what a Forger keeps.
const (
	forgeRecent    = 16   // genuine datagrams kept per link (the newest)
	forgeEarlier   = 64   // sealed datagrams of the earlier match kept per link (a uniform sample)
	forgeEarlierHS = 8    // handshakes of the earlier match kept per link (the first)
	forgeShares    = 4    // key pairs the forged handshakes take turns with
	forgeMaxRandom = 1200 // the longest random datagram
)

// Forger is an attacker model for tests: it knows every node's address and
// the session id, and makes forged datagrams of every [ForgeKind] in turn.
// It is seeded, so a match attacked by it stays a function of its seeds.
//
// Copies need traffic to copy: show it the genuine datagrams with Observe
// (from [Network.Tap], or a transport wrapper over real sockets), and the
// datagrams of an earlier match with LoadEarlier. Until a link has
// material for a kind, Next makes the next kind in the cycle that it can.
//
// The Forger is off-path: it may copy and mangle what it observes, but it
// never uses what only a machine that receives at a peer's address could
// know. It keeps no handshake that echoes a nonce (a mangled copy of one
// would carry the receiver's nonce, which the attacker never sees), and
// its own handshakes echo a guess, never an observed nonce. It is not
// safe for concurrent use.
type Forger struct {
	src     *rand.ChaCha8
	rng     *rand.Rand
	nodes   int
	session uint64
	next    ForgeKind

	recent   []ring   // per link (from*nodes + to)
	earlier  []sample // per link
	template []*wire.Handshake
	shares   []*wire.KeyShare
	guesses  []uint64 // nonces of the earlier match's handshakes
	hs       wire.Handshake
	parsed   wire.Handshake
	buf      []byte
	counts   [NumForgeKinds + 1]int64
}

// ring holds the newest genuine datagrams of one link.
type ring struct {
	bufs [][]byte
	n    int // datagrams ever kept
}

// sample holds a uniform sample of an earlier match's sealed datagrams on
// one link, and its first handshakes.
type sample struct {
	sealed [][]byte
	seen   int
	hs     [][]byte
}

// NewForger returns a Forger for a network of nodes nodes (2 to 64) whose
// sessions use sessionID, seeded with seed.
func NewForger(seed uint64, nodes int, sessionID uint64) (*Forger, error) {
	if nodes < 2 || nodes > 64 {
		return nil, netsim.ErrNodes
	}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	copy(key[8:], "netsim forger")
	src := rand.NewChaCha8(key)
	return &Forger{src: src, rng: rand.New(src), nodes: nodes, session: sessionID, next: ForgeRandom,
		recent: make([]ring, nodes*nodes), earlier: make([]sample, nodes*nodes),
		template: make([]*wire.Handshake, nodes), buf: make([]byte, 0, netsim.MTU)}, nil
}

func (f *Forger) link(from, to int) (int, bool) {
	if from < 0 || to < 0 || from >= f.nodes || to >= f.nodes || from == to {
		return 0, false
	}
	return from*f.nodes + to, true
}

// Observe shows the Forger a genuine datagram from node from to node to;
// it keeps a copy (b is not retained). Its signature fits [Network.Tap].
// Datagrams of other shapes than the protocol's, or too large, are
// ignored.
func (f *Forger) Observe(from, to int, b []byte) {
	l, ok := f.link(from, to)
	if !ok || len(b) == 0 || len(b) > netsim.MTU {
		return
	}
	if wire.Kind(b[0]) == wire.KindHandshake {
		if wire.ParseHandshake(b, &f.parsed, nil) != nil || f.parsed.SessionID != f.session {
			return
		}
		if f.template[from] == nil {
			t := f.parsed
			t.Terms.Owners, t.Terms.Layout = append([]uint8(nil), t.Terms.Owners...), append([]uint8(nil), t.Terms.Layout...)
			t.Local = append([]uint8(nil), t.Local...)
			f.template[from] = &t
		}
		if f.parsed.Echo != 0 {
			return // it carries the receiver's nonce: on-path knowledge
		}
	}
	r := &f.recent[l]
	if len(r.bufs) < forgeRecent {
		r.bufs = append(r.bufs, make([]byte, 0, len(b)))
	}
	i := r.n % forgeRecent
	r.bufs[i] = append(r.bufs[i][:0], b...)
	r.n++
}

// LoadEarlier gives the Forger a datagram that node from sent node to in
// an earlier match with the same session id, to replay in this one (b is
// not retained). It keeps the first handshakes of each link and a uniform
// sample of its sealed datagrams.
func (f *Forger) LoadEarlier(from, to int, b []byte) {
	l, ok := f.link(from, to)
	if !ok || len(b) == 0 || len(b) > netsim.MTU {
		return
	}
	e := &f.earlier[l]
	if wire.Kind(b[0]) == wire.KindHandshake {
		if len(e.hs) < forgeEarlierHS {
			e.hs = append(e.hs, append([]byte(nil), b...))
			if wire.ParseHandshake(b, &f.parsed, nil) == nil && len(f.guesses) < forgeEarlierHS*f.nodes {
				f.guesses = append(f.guesses, f.parsed.Nonce)
			}
		}
		return
	}
	e.seen++
	switch {
	case len(e.sealed) < forgeEarlier:
		e.sealed = append(e.sealed, append([]byte(nil), b...))
	default:
		if k := f.rng.IntN(e.seen); k < forgeEarlier {
			e.sealed[k] = append(e.sealed[k][:0], b...)
		}
	}
}

// Next returns a forged datagram for node to, to be delivered as if from
// node from, and its kind; nil and 0 for nodes out of range. The kinds
// come in turn; one without material for this link yet gives way to the
// next. The datagram is valid until the next call.
func (f *Forger) Next(from, to int) ([]byte, ForgeKind) {
	l, ok := f.link(from, to)
	if !ok {
		return nil, 0
	}
	k := f.next
	f.next = k%ForgeKind(NumForgeKinds) + 1
	for {
		if b, ok := f.forge(k, l, from); ok {
			f.counts[k]++
			return b, k
		}
		k = k%ForgeKind(NumForgeKinds) + 1
	}
}

// sealedKinds are the kinds a sealed datagram may have.
var sealedKinds = [...]wire.Kind{wire.KindInput, wire.KindQuality, wire.KindQualityReply, wire.KindDisconnect,
	wire.KindReady, wire.KindStart, wire.KindGo, wire.KindChecksum, wire.KindState}

// forge makes a datagram of kind k for link l, or reports that the link
// has no material for it. ForgeRandom and ForgeHandshake always succeed.
func (f *Forger) forge(k ForgeKind, l, from int) ([]byte, bool) {
	b := f.buf[:0]
	switch k {
	case ForgeRandom:
		n := 1 + f.rng.IntN(forgeMaxRandom)
		sealed := f.rng.IntN(2) == 0
		if sealed {
			n = max(n, wire.SealOverhead)
		}
		b = b[:n]
		_, _ = f.src.Read(b)
		if sealed {
			b[0] = byte(sealedKinds[f.rng.IntN(len(sealedKinds))])<<4 | b[0]&0x0f
		}
	case ForgeBitFlip, ForgeByteChange, ForgeTruncate:
		r := &f.recent[l]
		if len(r.bufs) == 0 {
			return nil, false
		}
		orig := r.bufs[f.rng.IntN(len(r.bufs))]
		b = append(b, orig...)
		switch k {
		case ForgeBitFlip:
			// Two flips of one bit would undo each other: until the copy
			// differs (an exact copy is a genuine datagram, not a forgery).
			for bytes.Equal(b, orig) {
				for range 1 + f.rng.IntN(3) {
					b[f.rng.IntN(len(b))] ^= 1 << f.rng.IntN(8)
				}
			}
		case ForgeByteChange:
			for bytes.Equal(b, orig) {
				for range 1 + f.rng.IntN(3) {
					b[f.rng.IntN(len(b))] ^= byte(1 + f.rng.IntN(255))
				}
			}
		default:
			b = b[:f.rng.IntN(len(b))]
		}
	case ForgeReplay:
		e := &f.earlier[l]
		switch {
		case len(e.hs) > 0 && (len(e.sealed) == 0 || f.rng.IntN(4) == 0):
			b = append(b, e.hs[f.rng.IntN(len(e.hs))]...)
		case len(e.sealed) > 0:
			b = append(b, e.sealed[f.rng.IntN(len(e.sealed))]...)
		default:
			return nil, false
		}
	case ForgeHandshake:
		return f.handshake(b, from), true
	}
	return b, true
}

// handshake appends a forged handshake as from node from.
func (f *Forger) handshake(b []byte, from int) []byte {
	t := f.template[from]
	if t == nil {
		for _, u := range f.template {
			if u != nil {
				t = u
				break
			}
		}
	}
	h := &f.hs
	if t != nil {
		*h = *t
	} else {
		// No genuine handshake seen yet: plausible terms, one player per node.
		*h = wire.Handshake{Version: wire.Version, Terms: wire.Terms{Players: f.nodes, Owners: make([]uint8, f.nodes),
			Layout: []uint8{8}, TickRate: 60, ChecksumEvery: 500, StartDelay: true}, Local: []uint8{uint8(from)}}
		for p := range h.Terms.Owners {
			h.Terms.Owners[p] = uint8(p)
		}
	}
	h.SessionID = f.session
	h.Nonce = f.rng.Uint64() | 1
	switch g := f.rng.IntN(4); {
	case g == 0:
		h.Echo = 0
	case g == 1 && len(f.guesses) > 0:
		h.Echo = f.guesses[f.rng.IntN(len(f.guesses))]
	default:
		h.Echo = f.rng.Uint64()
	}
	if len(f.shares) < forgeShares {
		if s, err := wire.NewKeyShare(f.src); err == nil {
			f.shares = append(f.shares, s)
		}
	}
	if len(f.shares) > 0 {
		h.Key = f.shares[f.rng.IntN(len(f.shares))].Public()
	}
	out, err := wire.AppendHandshake(b, h, nil)
	if err != nil {
		return b[:0] // terms too large for a handshake: not from a genuine one
	}
	return out
}

// Count returns how many datagrams of kind k Next has made.
func (f *Forger) Count(k ForgeKind) int64 {
	if k < 1 || int(k) > NumForgeKinds {
		return 0
	}
	return f.counts[k]
}

// Total returns how many datagrams Next has made.
func (f *Forger) Total() int64 {
	var n int64
	for _, c := range f.counts {
		n += c
	}
	return n
}
