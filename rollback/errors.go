package rollback

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors returned by a [Session]. Each is returned wrapped with details;
// test for it with errors.Is.
var (
	// ErrInput: a local input that the session cannot take, or one it
	// lacks; the message says which. AddLocalInput returns it for a player
	// not in Config.Local and for bits outside the layout, Advance when
	// called before every local player's input for the frame to simulate
	// was added, and Layout.Pack for values that do not fit the layout.
	ErrInput = errors.New("rollback: invalid local input")
	// ErrClosed: the session was closed; every method that changes it
	// returns ErrClosed after Close.
	ErrClosed = errors.New("rollback: session closed")
	// ErrExtrapolate: Extrapolate cannot extrapolate (the message says
	// why), or Advance, Idle, Extrapolate or Close was called from inside
	// Extrapolate's render, while the arena holds the throwaway state.
	ErrExtrapolate = errors.New("rollback: cannot extrapolate")
	// ErrFrameLimit: the match reached the last frame number the
	// protocol carries, 2,147,480,576 (414 days at 60 Hz). Every machine
	// gets it at the same frame.
	ErrFrameLimit = errors.New("rollback: the match reached the last frame number")
)

// errInRender is ErrExtrapolate for a call from inside Extrapolate's
// render.
var errInRender = fmt.Errorf("%w: called from inside its render", ErrExtrapolate)

// errSnapshot reports a rollback with no usable snapshot: unreachable while
// the invariants hold; returned rather than a panic.
var errSnapshot = errors.New("rollback: no usable snapshot")

// errRand reports that Config.Rand could not supply a nonce.
var errRand = errors.New("rollback: cannot read random nonce")

// ConfigError reports an invalid [Config] or [SpectatorConfig] field:
// NewSession and NewSpectator return it, and [Layout.Check] for an
// invalid layout (Field "Layout"). Test for it with errors.As.
type ConfigError struct {
	Field  string // such as "Peers[1].Players[0]"
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("rollback: invalid Config.%s: %s", e.Field, e.Reason)
}

func cfgErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// HandshakeError reports that a [Session]'s handshake with some peers,
// or a [Spectator]'s with its source, failed. Either they did not complete
// it within Timeout (Hints say what arrived), or a peer is configured
// differently in something every machine of a match must share (Field
// says what: Ours is the value here, Theirs the one its handshake
// carried). The handshake fails on both machines then: each sends the
// other its terms first. A Spectator, or a session joining in progress,
// also fails with Field "State" when its arena cannot hold the state its
// source sent: another game, or another version of it. With three or
// more machines, a peer that says another machine's signing key is not
// the one that machine sent us fails the start with Field "signing keys"
// (docs/security.md): one of the two lies, and the match does not start.
type HandshakeError struct {
	// Peers are the indices in Config.Peers of the machines concerned (a
	// Spectator's: its Source).
	Peers []int
	// Timeout is the wait that ran out (Timeouts.Handshake); 0 when a
	// peer's terms differ.
	Timeout time.Duration
	// Hints say what the missing peers' addresses sent that did not count
	// (a handshake for another session, one that failed the Secret's
	// check), or that nothing came from them at all. They are what
	// arrived, not proof of who sent it.
	Hints []string
	// Field is what a peer's terms differ in: "Players", "Local",
	// "Local and Peers", "Layout", "Lockstep", "TickRate",
	// "ChecksumEvery", "NoStartDelay", "protocol version", "State" or
	// "signing keys"; empty for a timeout.
	Field, Ours, Theirs string
}

func (e *HandshakeError) Error() string {
	if e.Field == fieldSigningKeys {
		return fmt.Sprintf("rollback: peer %d says %s, but here %s: one of them lies, and the match cannot start", e.peer(), e.Theirs, e.Ours)
	}
	if e.Field != "" {
		return fmt.Sprintf("rollback: peer %d is configured differently: %s is %s here and %s there", e.peer(), e.Field, e.Ours, e.Theirs)
	}
	msg := fmt.Sprintf("rollback: handshake timed out after %v waiting for peers %v: check that every machine has the same SessionID and Secret, that each has the right addresses for the others, and that no firewall drops their UDP", e.Timeout, e.Peers)
	if len(e.Hints) > 0 {
		msg += " (" + strings.Join(e.Hints, "; ") + ")"
	}
	return msg
}

func (e *HandshakeError) peer() int {
	if len(e.Peers) == 0 {
		return -1
	}
	return e.Peers[0]
}

// fieldSigningKeys is HandshakeError.Field for machines that disagree
// about a signing key.
const fieldSigningKeys = "signing keys"

// termsError is a HandshakeError for peer i's terms differing in field.
func termsError(i int, field, ours, theirs string) *HandshakeError {
	return &HandshakeError{Peers: []int{i}, Field: field, Ours: ours, Theirs: theirs}
}
