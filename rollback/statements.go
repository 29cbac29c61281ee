package rollback

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the defence against equivocation among three or more
// machines (docs/security.md, "A peer that lies"; docs/protocol.md,
// "Statements"): a machine that sends different inputs for one frame to
// different machines. Hashes alone cannot name it — with three machines
// each honest one sees the equivocator agree with it and the other honest
// machine disagree — so every machine signs its own inputs with a
// per-match Ed25519 key, one statement per interval of st.every frames
// (or a prefix of one, when its inputs stop), and sends the statement to
// every peer. Each machine echoes to the others a digest of every
// statement it holds for an interval, and relays its statements to a peer
// whose echo is late or differs. Two valid statements of one machine that
// disagree on a frame are proof, which no liar can forge against an honest
// machine: every machine that holds them disconnects the equivocator from
// the first frame of that interval. No frame is final (settled) before
// every machine's statements for it are held and every live peer has
// echoed the same digest, so that every honest machine can still roll
// back to that frame.

// stmtSlots is how many intervals' statements the arrays hold: the
// input ring's frames in the shortest intervals. A match keeps st.kept of
// them: the ring's frames in its own intervals (st.every frames each,
// wire.StatementInterval).
const stmtSlots = ringSize / wire.StatementFrames

// The digests of 2×st.kept intervals are kept: the unsettled ones and as
// many settled ones, which a peer whose frontier lags ours may still want
// echoed. We settle only what it echoed, at most st.kept intervals past
// its frontier, so our digests reach at most 2×st.kept intervals past it.
const digestSlots = 2 * stmtSlots

// slotOf is the slot of interval k's statements, echoes and signing time.
func (st *statements) slotOf(k int32) int { return int(uint32(k) % uint32(st.kept)) }

// digestSlot is the slot of interval k's digest.
func (st *statements) digestSlot(k int32) int { return int(uint32(k) % uint32(2*st.kept)) }

// stmtIdleTicks is how many ticks our inputs must stop for before a prefix
// of the current interval is signed: at the end of a match, or in a long
// stall, the last frames must become final too. Half a second, not less: a
// prefix signed in an ordinary stall (a peer's inputs late on a lossy link)
// is soon followed by the whole interval, and machines that hold the two
// echo different digests until a repair (at 3 ticks one interval in six was
// signed so on hell, and settling took 2 s instead of 0.7 s).
const stmtIdleTicks = 30

// maxVerifiesPerCall bounds the signatures one peer's datagrams cost each
// call (about 42 µs each): statements beyond it wait for the next repair.
const maxVerifiesPerCall = 4

// held is one statement a machine signed for one interval: its first n
// frames (the inputs are in statements.in).
type held struct {
	k int32 // the interval
	n int   // frames covered; 0: none held
}

// stmtProof is a second statement of a machine that contradicts the one
// held: proof that it equivocated, relayed to every peer.
type stmtProof struct {
	ok     bool
	k      int32
	from   Frame // the first frame the two statements disagree on
	inputs []uint64
	sig    [wire.SignatureSize]byte
}

// waiting is a machine's own statement, sent without inputs, whose inputs
// have not all come in its packets yet.
type waiting struct {
	ok  bool
	k   int32
	n   int
	sig [wire.SignatureSize]byte
}

// wait keeps machine x's statement of the first n frames of interval k
// until its inputs are here (a newer one of the interval replaces it).
func (st *statements) wait(x int, k int32, n int, sig []byte) {
	if k < st.settled || k >= st.settled+st.kept || len(sig) != wire.SignatureSize {
		return
	}
	w := &st.waiting[x][st.slotOf(k)]
	if w.ok && w.k == k && w.n >= n {
		return
	}
	*w = waiting{ok: true, k: k, n: n}
	copy(w.sig[:], sig)
}

// stmtPeer is what one peer has echoed and what we sent it.
type stmtPeer struct {
	echo     [stmtSlots][wire.EchoDigestSize]byte
	echoK    [stmtSlots]int32 // the interval each echo slot holds
	ownK     int32            // our newest statement sent to it: interval ownK, ownN frames
	ownN     int
	echoEnd  int32                 // one past the last interval of our last echo to it
	wantAt   time.Duration         // since when it has wanted wantFrom (or since our last full echo)
	wantFrom int32                 // the first interval it has not had our digest of (its last Want)
	have     [wire.MaxEchoes]uint8 // the machines whose statement it holds of wantFrom, wantFrom+1, …
	haveN    int                   // intervals in have
	haveAt   time.Duration         // when the echo that said so came (0: a repair answered it)
	repairAt time.Duration         // when a repair last went to it
	keysAt   time.Duration         // when our keys last went to it (0: never)
	keysSent int                   // how many keys we knew then
	verifies int                   // signatures its datagrams cost in this call
}

// statements owns the signing keys, the statements held for every
// machine's recent intervals, their digests and echoes, and the settled
// frontier: the frames every live machine holds the same statements for.
type statements struct {
	port     stmtPort // its side of the session (attest.go); set by NewSession
	me       int      // our machine index
	machines int
	session  uint64
	np       [MaxPlayers]int // players per machine
	peerOf   [MaxPlayers]int // peer index of each machine; -1: us
	priv     ed25519.PrivateKey
	keys     [MaxPlayers][wire.SigningKeySize]byte // by machine
	known    [MaxPlayers]bool
	keysOK   [MaxPlayers]bool // by peer: its view of every key equals ours
	late     [MaxPlayers]bool // by machine: a reserved slot (Peer.Late), without a key at the start
	mismatch error            // machines disagree on a key: the match does not start
	every    Frame            // the interval's frames (wire.StatementInterval)
	kept     int32            // intervals kept: ringSize / every

	slots [MaxPlayers][stmtSlots]held // by machine and interval slot
	sigs  [MaxPlayers][stmtSlots][wire.SignatureSize]byte
	in    [MaxPlayers][]uint64 // by machine: kept × every × players
	proof [MaxPlayers]stmtProof

	base    int32 // our first interval: 0, or a joiner's take-over frame's (rejoin.go)
	signed  int32 // our interval being signed
	idle    int   // ticks our inputs have not moved
	lastOwn Frame // our next local frame at the last tick

	digest  [digestSlots][wire.EchoDigestSize]byte // by interval, settled ones too
	ownAt   [stmtSlots]time.Duration               // when we first signed (part of) each interval
	done    int32                                  // intervals [settled, done) have a digest
	dirty   bool                                   // a statement changed: recompute the digests
	settled int32                                  // first interval not settled
	partial Frame                                  // frames of interval settled that are settled

	waiting [MaxPlayers][stmtSlots]waiting // by machine and interval slot: its own statements, inputs pending

	peers []stmtPeer
	msg   []byte   // scratch: the bytes a statement signs
	buf   []uint64 // scratch: a statement's inputs
}

// newStatements draws our signing key from r. np gives each machine's
// player count, peerOf each machine's peer index (-1 for us), every the
// interval's frames (wire.StatementInterval: every machine computes the
// same from the terms).
func newStatements(r io.Reader, session uint64, me int, np, peerOf [MaxPlayers]int, machines, every int) (*statements, error) {
	var seed [ed25519.SeedSize]byte
	if _, err := io.ReadFull(r, seed[:]); err != nil {
		return nil, fmt.Errorf("%w: %v", errRand, err)
	}
	st := &statements{me: me, machines: machines, session: session, np: np, peerOf: peerOf,
		every: Frame(every), kept: int32(ringSize / every),
		priv: ed25519.NewKeyFromSeed(seed[:]), peers: make([]stmtPeer, machines-1),
		msg: make([]byte, 0, 64+8*wire.MaxStatementInputs), buf: make([]uint64, 0, wire.MaxStatementInputs)}
	copy(st.keys[me][:], st.priv.Public().(ed25519.PublicKey))
	st.known[me] = true
	for x := range machines {
		st.in[x] = make([]uint64, ringSize*np[x])
		for k := range st.slots[x] {
			st.slots[x][k].k = -1
		}
	}
	for i := range st.peers {
		for k := range st.peers[i].echoK {
			st.peers[i].echoK[k] = -1
		}
	}
	return st, nil
}

// end returns the first frame not settled: every frame before it is
// covered by the same statements at every live machine.
func (st *statements) end() Frame {
	if st == nil {
		return noFrame
	}
	return Frame(st.settled)*st.every + st.partial
}

// begin starts a joiner's statements at interval k, its take-over frame's:
// nothing before it is signed, held or echoed by it.
func (st *statements) begin(k int32) {
	st.base, st.signed, st.settled, st.done = k, k, k, k
	st.partial, st.dirty = 0, true
	for i := range st.peers {
		st.keysOK[i] = true
	}
}

// --- keys ---

// --- statements ---

// slot returns machine x's held statement of interval k, and its inputs
// (frames × players).
func (st *statements) slot(x int, k int32) (*held, []uint64) {
	s := st.slotOf(k)
	per := int(st.every) * st.np[x]
	return &st.slots[x][s], st.in[x][s*per : (s+1)*per]
}

// holds returns machine x's held statement of interval k: its frames and
// inputs, n = 0 for none.
func (st *statements) holds(x int, k int32) (n int, in []uint64, sig *[wire.SignatureSize]byte) {
	h, in := st.slot(x, k)
	if h.k != k || h.n == 0 {
		return 0, nil, nil
	}
	return h.n, in[:h.n*st.np[x]], &st.sigs[x][st.slotOf(k)]
}

// expect returns the input machine x's statements say player j (its
// j-th) has at frame f, if one covers it.
func (st *statements) expect(x int, f Frame, j int) (Input, bool) {
	if st == nil || f < 0 {
		return 0, false
	}
	k := int32(f / st.every)
	n, in, _ := st.holds(x, k)
	o := int(f - Frame(k)*st.every)
	if o >= n {
		return 0, false
	}
	return Input(in[o*st.np[x]+j]), true
}

// signBytes returns the bytes machine x signs for inputs of interval k.
func (st *statements) signBytes(x int, k int32, inputs []uint64) []byte {
	st.msg = wire.AppendStatement(st.msg[:0], st.session, uint8(x), uint32(k), inputs)
	return st.msg
}

// sign signs our inputs of interval k (its first len/players frames) and
// holds the statement.
func (st *statements) sign(k int32, inputs []uint64, now time.Duration) {
	h, in := st.slot(st.me, k)
	if h.k != k {
		st.ownAt[st.slotOf(k)] = now
	}
	*h = held{k: k, n: len(inputs) / st.np[st.me]}
	copy(in, inputs)
	copy(st.sigs[st.me][st.slotOf(k)][:], ed25519.Sign(st.priv, st.signBytes(st.me, k, inputs)))
	st.dirty = true
}

// signFor signs inputs as a statement of ours without holding it: the
// soak's equivocating adversary signs each receiver its own version.
func (st *statements) signFor(k int32, inputs []uint64, sig []byte) {
	copy(sig, ed25519.Sign(st.priv, st.signBytes(st.me, k, inputs)))
}

// interval returns the frames of an interval.
func (st *statements) interval() Frame { return st.every }

// stmtVerdict is what take makes of a statement.
type stmtVerdict uint8

const (
	stmtInvalid  stmtVerdict = iota // malformed, outside the window, or a bad signature: dropped
	stmtKnown                       // nothing new (held already, or older than the settled frontier)
	stmtNew                         // held now: its inputs are to be applied
	stmtConflict                    // it contradicts the one held: machine x equivocated
	stmtDeferred                    // not checked: this peer's signature budget is spent
	stmtLater                       // beyond the intervals we keep (our frontier lags): a repair brings it again
)

// take checks a statement of machine x for interval k, relayed by peer i.
func (st *statements) take(i, x int, k int32, inputs []uint64, sig []byte, mask Input) stmtVerdict {
	np := st.np[x]
	if x >= st.machines || !st.known[x] || len(sig) != wire.SignatureSize || len(inputs) == 0 ||
		len(inputs)%np != 0 || len(inputs) > int(st.every)*np || k < 0 {
		return stmtInvalid
	}
	if k >= st.settled+st.kept {
		return stmtLater
	}
	for _, v := range inputs {
		if Input(v)&^mask != 0 {
			return stmtInvalid // no machine's input has bits outside the layout
		}
	}
	if k < st.settled {
		return stmtKnown
	}
	n := len(inputs) / np
	h, in := st.slot(x, k)
	if h.k == k && h.n > 0 {
		o := min(n, h.n) * np
		same := slicesEqual(in[:o], inputs[:o])
		if same && n <= h.n {
			return stmtKnown
		}
		if !same && st.proof[x].ok && st.proof[x].k <= k {
			return stmtKnown // proven already, at this interval or before
		}
	}
	if p := &st.peers[i]; p.verifies >= maxVerifiesPerCall {
		return stmtDeferred
	} else {
		p.verifies++
	}
	if !ed25519.Verify(st.keys[x][:], st.signBytes(x, k, inputs), sig) {
		return stmtInvalid
	}
	if h.k == k && h.n > 0 && !slicesEqual(in[:min(n, h.n)*np], inputs[:min(n, h.n)*np]) {
		p := &st.proof[x]
		p.ok, p.k = true, k
		for o := range min(n, h.n) * np {
			if in[o] != inputs[o] {
				p.from = Frame(k)*st.every + Frame(o/np)
				break
			}
		}
		p.inputs = append(p.inputs[:0], inputs...)
		copy(p.sig[:], sig)
		st.dirty = true
		return stmtConflict
	}
	*h = held{k: k, n: n}
	copy(in, inputs)
	copy(st.sigs[x][st.slotOf(k)][:], sig)
	st.dirty = true
	return stmtNew
}

func slicesEqual(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// newCall starts a call of the session: every peer's signature budget is
// full again.
func (st *statements) newCall() {
	for i := range st.peers {
		st.peers[i].verifies = 0
	}
}

// --- digests, echoes, settlement ---

// stmtNeed is what the digest of an interval needs of one machine.
type stmtNeed uint8

const (
	needNone stmtNeed = iota // it has no frames in the interval
	needLive                 // it plays: its statement must be here, and bounds what settles
	needGone                 // it left (agreed): what is held of its frames before the cut
	needWait                 // its departure is not agreed yet: the digest waits
)

// stmtRoster is the session's view of the roster (stmtPort implements it).
type stmtRoster interface {
	// stmtNeed says what the digest of interval k needs of machine x,
	// and (needGone) how many of its frames precede its cut.
	stmtNeed(x int, k int32) (stmtNeed, int)
	// stmtLive reports whether peer i plays in interval k: its echo of
	// it is needed.
	stmtLive(i int, k int32) bool
}

// refresh recomputes the digests of the unsettled intervals after a
// statement or the roster changed: each is a SHA-256 of the interval and,
// for every machine, the frames of its statement the roster needs and
// their inputs.
func (st *statements) refresh(r stmtRoster) {
	if !st.dirty {
		return
	}
	st.dirty = false
	done := st.settled
	for k := st.settled; k < st.settled+st.kept; k++ {
		b := binary.BigEndian.AppendUint32(st.msg[:0], uint32(k))
		ok := true
		for x := range st.machines {
			what, want := r.stmtNeed(x, k)
			n, in, _ := st.holds(x, k)
			switch {
			case what == needWait || (what == needLive && n == 0):
				ok = false // a live machine's statement is not here yet
			case what == needNone:
				n = 0
			case what == needGone:
				n = min(n, want)
			}
			if !ok {
				break
			}
			b = append(b, byte(n))
			for _, v := range in[:n*st.np[x]] {
				b = binary.BigEndian.AppendUint64(b, v)
			}
		}
		st.msg = b
		if !ok {
			break
		}
		sum := sha256.Sum256(b)
		copy(st.digest[st.digestSlot(k)][:], sum[:])
		done = k + 1
	}
	st.done = done
}

// settle moves the settled frontier over every interval whose digest
// every live peer echoed, and returns it in frames. A prefix of the
// interval after it is settled as far as every statement in it reaches;
// the frontier never moves back (a longer statement's digest must be
// echoed again, but the prefix stays settled).
func (st *statements) settle(r stmtRoster) Frame {
	for {
		k := st.settled
		if k >= st.done {
			break
		}
		for i := range st.peers {
			if r.stmtLive(i, k) && !st.matches(i, k) {
				return st.end()
			}
		}
		full := st.every
		for x := range st.machines {
			if what, _ := r.stmtNeed(x, k); what == needLive {
				n, _, _ := st.holds(x, k)
				full = min(full, Frame(n))
			}
		}
		if full < st.every {
			st.partial = max(st.partial, full)
			break
		}
		st.settled++
		st.partial = 0
	}
	return st.end()
}

// blame names the peer that holds the settled frontier back: a playing
// machine whose statement of the interval is missing or short, else a
// peer whose echo of it is missing or differs; -1 for none.
func (st *statements) blame(r stmtRoster) int {
	k := st.settled
	for x := range st.machines {
		if what, _ := r.stmtNeed(x, k); what == needLive && x != st.me {
			if n, _, _ := st.holds(x, k); Frame(n) < st.every {
				return st.peerOf[x]
			}
		}
	}
	for i := range st.peers {
		if r.stmtLive(i, k) && !st.matches(i, k) {
			return i
		}
	}
	return -1
}
