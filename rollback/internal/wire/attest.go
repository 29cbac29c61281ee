package wire

import "encoding/binary"

// Statements (docs/protocol.md, "Statements"): with three or more machines
// every machine signs, with a per-match Ed25519 key, each interval of
// StatementInterval frames of its own inputs, and sends the statement to
// every peer. Peers echo a digest of every statement they hold for an
// interval, and relay statements to a peer whose echo is missing or
// differs. Two valid statements of one machine for one interval are proof
// that it sent different inputs to different machines.

// Sizes of the statement protocol.
const (
	// StatementFrames is the shortest statement interval, in frames: a
	// match's interval is StatementFrames, twice or four times it
	// (StatementInterval).
	StatementFrames = 16
	// MaxStatementFrames is the longest statement interval.
	MaxStatementFrames = 4 * StatementFrames
	// SigningKeySize is the size of an Ed25519 public key.
	SigningKeySize = 32
	// SignatureSize is the size of an Ed25519 signature.
	SignatureSize = 64
	// EchoDigestSize is the size of an echoed interval digest.
	EchoDigestSize = 16
	// MaxEchoes is the most interval digests one Attest echoes, and the
	// most intervals it says which statements it holds of.
	MaxEchoes = 8
	// MaxStatementPlayers is the most players one machine of a match of
	// three or more machines has.
	MaxStatementPlayers = MaxPlayers - 2
	// MaxStatementInputs is the most inputs a statement carries: every
	// frame of the longest interval for a machine with the most players
	// (no match has both: StatementInterval keeps a statement with its
	// inputs within MaxControlSize).
	MaxStatementInputs = MaxStatementFrames * MaxStatementPlayers
)

// attestFixed is the most bytes of an Attest that are not its statement's
// inputs: the array, Want, a full Have, From, a full Echo, the statement's
// fields, its inputs' array header and the signature.
const attestFixed = 1 + 5 + 2 + MaxEchoes + 5 + 2 + MaxEchoes*EchoDigestSize + 1 + 1 + 5 + 1 + 3 + 2 + SignatureSize

// StatementInterval returns the statement interval of a match whose
// machines have at most players players each and whose inputs are bits
// wide: the longest of 64, 32 and 16 frames whose statement, with its
// inputs as wide as they can be, fits an Attest of MaxControlSize bytes
// (a repair carries them). A signature (64 bytes) per interval per peer
// is most of what statements cost: with one player per machine and inputs
// of 32 bits or less, 64 frames.
func StatementInterval(players, bits int) int {
	per := uintSize(bits)
	for n := MaxStatementFrames; n > StatementFrames; n /= 2 {
		if attestFixed+n*players*per <= MaxControlSize {
			return n
		}
	}
	return StatementFrames
}

// uintSize is the most bytes msgpack takes for an unsigned integer of
// bits bits.
func uintSize(bits int) int {
	switch {
	case bits <= 7:
		return 1
	case bits <= 8:
		return 2
	case bits <= 16:
		return 3
	case bits <= 32:
		return 5
	}
	return 9
}

// Keys carries the sender's view of every machine's signing key (Ed25519
// public keys), SigningKeySize bytes per machine in ascending order of
// their lowest PlayerID, its own included; an entry of zero bytes is one
// it does not know yet. Sent until the match starts: a match starts only
// once every machine reports the same keys.
type Keys struct {
	Keys []byte
}

// Attest carries the sender's echo — the digests of the intervals From,
// From+1, … whose statements it holds, EchoDigestSize bytes each — the
// first interval Want whose digest it has not had from the receiver, the
// machines whose statement it holds of Want, Want+1, … (Have, one byte per
// interval, bit x: machine x), and,
// when HasStatement, one statement: machine Machine's signature Sig over
// its inputs of the first Frames frames of interval Interval (frames
// Interval×StatementInterval on, frame-major, the machine's players in
// ascending order). Inputs carries those inputs, or is empty: the
// receiver has them from the machine's input packets (a machine sends its
// own statements so; relayed ones carry their inputs).
type Attest struct {
	Want         uint32
	Have         []byte
	From         uint32
	Echo         []byte
	HasStatement bool
	Machine      uint8
	Interval     uint32
	Frames       uint8
	Inputs       []uint64
	Sig          []byte
}

// Kind returns the message's kind.
func (*Keys) Kind() Kind   { return KindKeys }
func (*Attest) Kind() Kind { return KindAttest }

func (m *Keys) appendBody(b []byte) []byte { return appendBytes(appendArray(b, 1), m.Keys) }

func (m *Keys) parseBody(r reader) reader {
	r.array(1)
	k := r.bytes(MaxMachines * SigningKeySize)
	if len(k)%SigningKeySize != 0 {
		r.fail(errRange)
	}
	m.Keys = append(m.Keys[:0], k...)
	return r
}

func (m *Attest) appendBody(b []byte) []byte {
	b = appendArray(b, 10)
	b = appendUint(appendBytes(appendUint(b, uint64(m.Want)), m.Have), uint64(m.From))
	b = appendBytes(b, m.Echo)
	b = appendUint(appendUint(appendBool(b, m.HasStatement), uint64(m.Machine)), uint64(m.Interval))
	b = appendUint(b, uint64(m.Frames))
	b = appendArray(b, len(m.Inputs))
	for _, v := range m.Inputs {
		b = appendUint(b, v)
	}
	return appendBytes(b, m.Sig)
}

func (m *Attest) parseBody(r reader) reader {
	r.array(10)
	want, have := uint32(r.uint(maxU32)), r.bytes(MaxEchoes)
	from, echo := uint32(r.uint(maxU32)), r.bytes(MaxEchoes*EchoDigestSize)
	if len(echo)%EchoDigestSize != 0 {
		r.fail(errRange)
	}
	has, machine, interval := r.bool(), uint8(r.uint(MaxMachines-1)), uint32(r.uint(maxU32))
	frames := uint8(r.uint(MaxStatementFrames))
	n := r.arrayLen(MaxStatementInputs)
	m.Inputs = m.Inputs[:0]
	for range n {
		m.Inputs = append(m.Inputs, r.uint(1<<64-1))
	}
	sig := r.bytes(SignatureSize)
	switch {
	case has != (len(sig) == SignatureSize), !has && (n != 0 || machine != 0 || interval != 0 || frames != 0):
		r.fail(errRange) // a statement is whole, or absent and zero
	case has && (frames == 0 || n%int(frames) != 0):
		r.fail(errRange) // its inputs are whole frames
	}
	m.Want, m.Have, m.From, m.Echo = want, append(m.Have[:0], have...), from, append(m.Echo[:0], echo...)
	m.HasStatement, m.Machine, m.Interval, m.Frames = has, machine, interval, frames
	m.Sig = append(m.Sig[:0], sig...)
	return r
}

// statementDomain starts every signed statement: a signature over it can
// mean nothing else.
const statementDomain = "rewind statement v1\x00"

// AppendStatement appends to b the bytes a machine signs for a statement:
// the domain, the session id, the machine, the interval and the inputs,
// each input as 8 big-endian bytes.
func AppendStatement(b []byte, session uint64, machine uint8, interval uint32, inputs []uint64) []byte {
	b = append(b, statementDomain...)
	b = binary.BigEndian.AppendUint64(b, session)
	b = append(b, machine)
	b = binary.BigEndian.AppendUint32(b, interval)
	b = append(b, byte(len(inputs)))
	for _, v := range inputs {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}
