package wire

import (
	"fmt"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// Control message kinds. Their bodies are msgpack arrays (see the types).
const (
	KindHandshake    Kind = 2  // Handshake, tag 0
	KindQuality      Kind = 3  // Quality: a ping
	KindQualityReply Kind = 4  // QualityReply: its answer
	KindDisconnect   Kind = 5  // Disconnect: the sender is leaving
	KindReady        Kind = 6  // Ready: the sender's round-trip times, to the host
	KindStart        Kind = 7  // Start: the host's full mesh of round-trip times
	KindGo           Kind = 8  // Go: the sender has the mesh and is ready to start
	KindChecksum     Kind = 9  // Checksum: the sender's checksum of a final frame
	KindState        Kind = 10 // State: a piece of the sender's state after a desync
)

// MaxStateData is the most state bytes one State message carries.
const MaxStateData = 320

// MaxControlSize is the largest control datagram accepted or produced (a
// Start message for 8 machines).
const MaxControlSize = 400

// MaxMachines bounds the round-trip-time lists of Ready and Start.
const MaxMachines = 8

// ControlHeaderSize is the kind byte and the 16-bit session tag.
const ControlHeaderSize = 3

var (
	errControlSize = fmt.Errorf("%w: control message too large", ErrMalformed)
	errControlKind = fmt.Errorf("%w: unexpected message kind", ErrMalformed)
	errControlBody = fmt.Errorf("%w: bad msgpack body", ErrMalformed)
)

// Handshake opens a session. Each peer sends its own random Nonce and
// echoes the last nonce it received from the other (0 before it has one);
// a peer is verified once it echoes our nonce.
type Handshake struct {
	SessionID uint64
	Nonce     uint32
	Echo      uint32
}

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

var mh = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.StructToArray = true
	h.MaxInitLen = 16
	return h
}()

// ControlCodec encodes and decodes control messages, reusing its msgpack
// encoder and decoder so that steady-state traffic (the pings) allocates
// nothing. The zero value is not usable; use [NewControlCodec]. A
// ControlCodec is not safe for concurrent use.
type ControlCodec struct {
	enc *codec.Encoder
	dec *codec.Decoder
	buf []byte
}

// NewControlCodec returns a codec.
func NewControlCodec() *ControlCodec {
	c := &ControlCodec{buf: make([]byte, 0, MaxControlSize)}
	c.enc = codec.NewEncoderBytes(&c.buf, mh)
	c.dec = codec.NewDecoderBytes(nil, mh)
	return c
}

// AppendControl appends a control datagram with a fresh codec; see
// [ControlCodec.Append].
func AppendControl(b []byte, kind Kind, tag uint16, msg any) ([]byte, error) {
	return NewControlCodec().Append(b, kind, tag, msg)
}

// ParseControl decodes a control datagram with a fresh codec; see
// [ControlCodec.Parse].
func ParseControl(b []byte, kind Kind, msg any) (uint16, error) {
	return NewControlCodec().Parse(b, kind, msg)
}

// Append appends a control datagram of the given kind carrying msg (a
// *Handshake, *Quality, *QualityReply or *Disconnect) to b.
func (c *ControlCodec) Append(b []byte, kind Kind, tag uint16, msg any) ([]byte, error) {
	if !kindMatches(kind, msg) {
		return b, fmt.Errorf("%w: %T as %v", errControlKind, msg, kind)
	}
	c.buf = c.buf[:0]
	c.enc.ResetBytes(&c.buf)
	if err := c.enc.Encode(msg); err != nil {
		return b, err
	}
	if ControlHeaderSize+len(c.buf) > MaxControlSize {
		return b, errControlSize
	}
	b = append(b, byte(kind), byte(tag>>8), byte(tag))
	return append(b, c.buf...), nil
}

// Parse decodes a control datagram of the given kind into msg and returns
// its session tag. It rejects other kinds, oversized datagrams, and bodies
// that are not exactly one msgpack array of msg's shape.
func (c *ControlCodec) Parse(b []byte, kind Kind, msg any) (uint16, error) {
	if len(b) < ControlHeaderSize {
		return 0, errTruncated
	}
	if len(b) > MaxControlSize {
		return 0, errControlSize
	}
	if Kind(b[0]) != kind || !kindMatches(kind, msg) {
		return 0, errControlKind
	}
	if len(b) == ControlHeaderSize || b[ControlHeaderSize]&0xf0 != 0x90 {
		return 0, errControlBody // every message is a msgpack fixarray
	}
	c.dec.ResetBytes(b[ControlHeaderSize:])
	if err := c.dec.Decode(msg); err != nil {
		return 0, fmt.Errorf("%w: %v", errControlBody, err)
	}
	if c.dec.NumBytesRead() != len(b)-ControlHeaderSize {
		return 0, errTrailing
	}
	return uint16(b[1])<<8 | uint16(b[2]), nil
}

func kindMatches(k Kind, msg any) bool {
	switch msg.(type) {
	case *Handshake:
		return k == KindHandshake
	case *Quality:
		return k == KindQuality
	case *QualityReply:
		return k == KindQualityReply
	case *Disconnect:
		return k == KindDisconnect
	case *Ready:
		return k == KindReady
	case *Start:
		return k == KindStart
	case *Go:
		return k == KindGo
	case *Checksum:
		return k == KindChecksum
	case *State:
		return k == KindState
	}
	return false
}
