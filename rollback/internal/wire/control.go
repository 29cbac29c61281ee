package wire

import "fmt"

// Control message kinds. Their bodies are msgpack arrays (see the types).
// A handshake is the one datagram that is not sealed: its first byte is
// KindHandshake (the high four bits 0, which no sealed datagram has).
const (
	KindHandshake    Kind = 2  // Handshake: unsealed, see handshake.go
	KindQuality      Kind = 3  // Quality: a ping
	KindQualityReply Kind = 4  // QualityReply: its answer
	KindDisconnect   Kind = 5  // Disconnect: the sender is leaving
	KindReady        Kind = 6  // Ready: the sender's round-trip times, to the host
	KindStart        Kind = 7  // Start: the host's full mesh of round-trip times
	KindGo           Kind = 8  // Go: the sender has the mesh and is ready to start
	KindChecksum     Kind = 9  // Checksum: the sender's checksum of a final frame
	KindState        Kind = 10 // State: a piece of the sender's state after a desync
	KindKeys         Kind = 11 // Keys: every machine's signing key, as the sender knows them
	KindAttest       Kind = 12 // Attest: the sender's echo of statements, and one statement
)

// MaxStateData is the most state bytes one State message carries.
const MaxStateData = 320

// MaxControlSize is the largest control body accepted or produced (an
// Attest with a statement of six players and a full echo).
const MaxControlSize = 1100

// MaxMachines bounds the round-trip-time lists of Ready and Start.
const MaxMachines = 8

var (
	errControlSize = fmt.Errorf("%w: control message too large", ErrMalformed)
	errControlBody = fmt.Errorf("%w: bad msgpack body", ErrMalformed)
)

// Quality is a ping. Sent is the sender's clock in nanoseconds; Frame its
// current frame.
type Quality struct {
	Sent  int64
	Frame int32
}

// QualityReply answers a Quality: Echo is its Sent, Frame the replier's frame.
type QualityReply struct {
	Echo  int64
	Frame int32
}

// Disconnect tells the peers that the sender is leaving the match; Frame is
// one past the last frame of input it sent.
type Disconnect struct {
	Frame int32
}

// Ready carries the sender's round-trip times to every machine of the match,
// in microseconds, machines in ascending order of their lowest PlayerID
// (its own entry 0).
type Ready struct {
	RTT []uint32
}

// Start carries the full mesh of round-trip times, row-major, n×n for n
// machines in ascending order of their lowest PlayerID, in microseconds.
type Start struct {
	Mesh []uint32
}

// Go says the sender has the mesh: the match can start.
type Go struct {
	Frame int32 // always 0; msgpack has no empty fixed shape we accept
}

// Checksum carries the sender's checksum (xxhash) of the game state at the
// start of Frame, sent once every input before Frame is final.
type Checksum struct {
	Frame int32
	Sum   uint64
}

// State carries part of the sender's compressed game state at Frame, the
// frame whose checksums differed: Data is bytes Offset to Offset+len(Data)
// of Total. Done says the sender has all of ours.
type State struct {
	Frame  int32
	Total  uint32
	Offset uint32
	Done   bool
	Data   []byte
}

// Control is a control message: a pointer to one of the message types of
// this file.
type Control interface {
	Kind() Kind
	appendBody(b []byte) []byte
	parseBody(r reader) reader // by value: a pointer through the interface would escape
}

// Kind returns the message's kind.
func (*Quality) Kind() Kind      { return KindQuality }
func (*QualityReply) Kind() Kind { return KindQualityReply }
func (*Disconnect) Kind() Kind   { return KindDisconnect }
func (*Ready) Kind() Kind        { return KindReady }
func (*Start) Kind() Kind        { return KindStart }
func (*Go) Kind() Kind           { return KindGo }
func (*Checksum) Kind() Kind     { return KindChecksum }
func (*State) Kind() Kind        { return KindState }

const (
	maxInt32 = 1<<31 - 1
	maxU32   = 1<<32 - 1
)

func (m *Quality) appendBody(b []byte) []byte {
	return appendInt(appendInt(appendArray(b, 2), m.Sent), int64(m.Frame))
}

func (m *Quality) parseBody(r reader) reader {
	r.array(2)
	*m = Quality{Sent: r.int(-1<<63, 1<<63-1), Frame: int32(r.int(-maxInt32-1, maxInt32))}
	return r
}

func (m *QualityReply) appendBody(b []byte) []byte {
	return appendInt(appendInt(appendArray(b, 2), m.Echo), int64(m.Frame))
}

func (m *QualityReply) parseBody(r reader) reader {
	r.array(2)
	*m = QualityReply{Echo: r.int(-1<<63, 1<<63-1), Frame: int32(r.int(-maxInt32-1, maxInt32))}
	return r
}

func (m *Disconnect) appendBody(b []byte) []byte {
	return appendInt(appendArray(b, 1), int64(m.Frame))
}

func (m *Disconnect) parseBody(r reader) reader {
	r.array(1)
	*m = Disconnect{Frame: int32(r.int(-maxInt32-1, maxInt32))}
	return r
}

func (m *Ready) appendBody(b []byte) []byte { return appendUints(appendArray(b, 1), m.RTT) }

func (m *Ready) parseBody(r reader) reader {
	r.array(1)
	m.RTT = r.uints(m.RTT, MaxMachines)
	return r
}

func (m *Start) appendBody(b []byte) []byte { return appendUints(appendArray(b, 1), m.Mesh) }

func (m *Start) parseBody(r reader) reader {
	r.array(1)
	m.Mesh = r.uints(m.Mesh, MaxMachines*MaxMachines)
	return r
}

func (m *Go) appendBody(b []byte) []byte { return appendInt(appendArray(b, 1), int64(m.Frame)) }

func (m *Go) parseBody(r reader) reader {
	r.array(1)
	*m = Go{Frame: int32(r.int(0, 0))}
	return r
}

func (m *Checksum) appendBody(b []byte) []byte {
	return appendUint(appendInt(appendArray(b, 2), int64(m.Frame)), m.Sum)
}

func (m *Checksum) parseBody(r reader) reader {
	r.array(2)
	*m = Checksum{Frame: int32(r.int(-maxInt32-1, maxInt32)), Sum: r.uint(1<<64 - 1)}
	return r
}

func (m *State) appendBody(b []byte) []byte {
	b = appendInt(appendArray(b, 5), int64(m.Frame))
	b = appendUint(appendUint(b, uint64(m.Total)), uint64(m.Offset))
	return appendBytes(appendBool(b, m.Done), m.Data)
}

func (m *State) parseBody(r reader) reader {
	r.array(5)
	frame, total, offset := int32(r.int(-maxInt32-1, maxInt32)), uint32(r.uint(maxU32)), uint32(r.uint(maxU32))
	done, data := r.bool(), r.bytes(MaxStateData)
	*m = State{Frame: frame, Total: total, Offset: offset, Done: done, Data: append(m.Data[:0], data...)}
	return r
}

// AppendControl appends the body of a control datagram carrying m to b:
// the sealed header before it and the MAC after it are the Sealer's. It
// does not allocate once b has room.
func AppendControl(b []byte, m Control) ([]byte, error) {
	n := len(b)
	b = m.appendBody(b)
	if len(b)-n > MaxControlSize {
		return b[:n], errControlSize
	}
	return b, nil
}

// ParseControl decodes the body of a control datagram (what Opener.Open
// returns for a datagram of m's kind) into m. The body must be exactly one
// msgpack array of m's fields, each of its type and range, with nothing
// after it. On success m is set whole: nothing of its old value remains (a
// slice field reuses its backing array); on error its contents are
// unspecified. It never allocates once the slices have grown.
func ParseControl(b []byte, m Control) error {
	if len(b) > MaxControlSize {
		return errControlSize
	}
	rest, err := ParseControlPrefix(b, m)
	if err == nil && len(rest) != 0 {
		return errTrailing
	}
	return err
}

// ParseControlPrefix is ParseControl for a body that goes on after the
// message: it decodes the message at the start of b into m and returns
// what follows it (aliasing b). The message itself must be at most
// MaxControlSize bytes. The datagram of an Attest, a Quality, a
// QualityReply or a Checksum may carry an input body after the message so
// (docs/protocol.md, "Sizes").
func ParseControlPrefix(b []byte, m Control) (rest []byte, err error) {
	if len(b) == 0 || b[0]&0xf0 != 0x90 {
		return nil, errControlBody // every message is a msgpack fixarray
	}
	r := m.parseBody(reader{b: b})
	if r.err != nil {
		return nil, r.err
	}
	if len(b)-len(r.b) > MaxControlSize {
		return nil, errControlSize
	}
	return r.b, nil
}
