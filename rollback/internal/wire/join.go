package wire

// Joining a match in progress (docs/protocol.md, "Spectators"). A machine
// that joins — a spectator — is sent the arena at a final frame in Snap
// pieces, then every final input from that frame on in input packets that
// carry every player (KindInput on its link, read with ParseInput and a
// gossip entry per player for its status). The joiner sends only Watch
// messages: its acknowledgement of both.
const (
	KindWatch Kind = 13 // Watch: a joiner's acknowledgement of the state and the inputs
	KindSnap  Kind = 14 // Snap: a piece of the state a joiner starts from
)

// MaxSnapData is the most compressed state bytes one Snap carries.
const MaxSnapData = 1024

// MaxSnapPieces bounds a state's pieces: 64 MiB of compressed state.
const MaxSnapPieces = 1 << 16

// Watch is a joiner's acknowledgement, sent every tick. State is the frame
// of the state it is receiving or has (-1: none yet: it asks for one);
// Have is how many of that state's pieces it holds from the first on,
// Mask which of the 64 after them; Next is the next frame of inputs it
// wants (-1 until it has the whole state).
type Watch struct {
	State int32
	Have  uint32
	Mask  uint64
	Next  int32
}

// Snap is piece Piece of the compressed state at the start of Frame: Total
// compressed bytes in pieces of MaxSnapData, Size bytes once decompressed,
// whose xxhash is Sum.
type Snap struct {
	Frame int32
	Size  uint32
	Sum   uint64
	Total uint32
	Piece uint32
	Data  []byte
}

func (*Watch) Kind() Kind { return KindWatch }
func (*Snap) Kind() Kind  { return KindSnap }

func (m *Watch) appendBody(b []byte) []byte {
	b = appendUint(appendInt(appendArray(b, 4), int64(m.State)), uint64(m.Have))
	return appendInt(appendUint(b, m.Mask), int64(m.Next))
}

func (m *Watch) parseBody(r reader) reader {
	r.array(4)
	state, have := int32(r.int(-1, maxInt32)), uint32(r.uint(MaxSnapPieces))
	*m = Watch{State: state, Have: have, Mask: r.uint(1<<64 - 1), Next: int32(r.int(-1, maxInt32))}
	return r
}

func (m *Snap) appendBody(b []byte) []byte {
	b = appendUint(appendInt(appendArray(b, 6), int64(m.Frame)), uint64(m.Size))
	b = appendUint(appendUint(appendUint(b, m.Sum), uint64(m.Total)), uint64(m.Piece))
	return appendBytes(b, m.Data)
}

func (m *Snap) parseBody(r reader) reader {
	r.array(6)
	frame, size, sum := int32(r.int(0, maxInt32)), uint32(r.uint(maxU32)), r.uint(1<<64-1)
	total, piece := uint32(r.uint(MaxSnapPieces*MaxSnapData)), uint32(r.uint(MaxSnapPieces-1))
	data := r.bytes(MaxSnapData)
	*m = Snap{Frame: frame, Size: size, Sum: sum, Total: total, Piece: piece, Data: append(m.Data[:0], data...)}
	return r
}

// KindJoin is the one message of a machine that comes back into a match
// in progress, and the answers of the machines that play on
// (docs/protocol.md, "Reconnect").
const KindJoin Kind = 15

// The Join operations.
const (
	JoinPropose uint8 = 1 + iota // the joiner: take my players back at Take; Keys is my new signing key
	JoinAccept                   // a machine: from Take on; Keys is every machine's signing key as it knows them
	JoinRefuse                   // a machine: too late, Frame is final here already
	JoinReady                    // a machine: Sum is the state at the start of Take, every input before it final; Playing who plays at Take
	JoinAbsent                   // a machine joining itself: it does not play at Take, and has no state to vouch for
)

// Join is a take-over message: Op says which.
type Join struct {
	Op      uint8
	Take    int32
	Frame   int32
	Sum     uint64
	Playing uint8 // Ready: the players who play at Take there (bit p: player p), joiners taking over at Take included
	Keys    []byte
}

// MaxJoinKeys bounds Keys: a signing key for each of 8 machines.
const MaxJoinKeys = 8 * SigningKeySize

func (*Join) Kind() Kind { return KindJoin }

func (m *Join) appendBody(b []byte) []byte {
	b = appendInt(appendUint(appendArray(b, 6), uint64(m.Op)), int64(m.Take))
	return appendBytes(appendUint(appendUint(appendInt(b, int64(m.Frame)), m.Sum), uint64(m.Playing)), m.Keys)
}

func (m *Join) parseBody(r reader) reader {
	r.array(6)
	op, take, frame := uint8(r.uint(uint64(JoinAbsent))), int32(r.int(0, maxInt32)), int32(r.int(0, maxInt32))
	sum, playing, keys := r.uint(1<<64-1), uint8(r.uint(1<<8-1)), r.bytes(MaxJoinKeys)
	if r.err == nil && op < JoinPropose {
		r.err = errControlBody
	}
	*m = Join{Op: op, Take: take, Frame: frame, Sum: sum, Playing: playing, Keys: append(m.Keys[:0], keys...)}
	return r
}
