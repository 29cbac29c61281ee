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
	// ErrConfig is wrapped by every [*ConfigError] and by [Layout.Check]'s
	// errors.
	ErrConfig = errors.New("rollback: invalid config")
	// ErrFrameLimit: the match reached MaxFrame, the last frame number the
	// protocol carries (over a year at 60 Hz). Every machine gets it at the
	// same frame.
	ErrFrameLimit = errors.New("rollback: the match reached the last frame number")
	// ErrSigningKeys: with three or more machines, two machines disagree
	// about a machine's signing key (docs/security.md): one of them lies,
	// and the match does not start. The message names who said what.
	ErrSigningKeys = errors.New("rollback: machines disagree about a signing key")
)

// errInRender is ErrExtrapolate for a call from inside Extrapolate's
// render.
var errInRender = fmt.Errorf("%w: called from inside its render", ErrExtrapolate)

// errSnapshot reports a rollback with no usable snapshot: unreachable while
// the invariants hold; returned rather than a panic.
var errSnapshot = errors.New("rollback: no usable snapshot")

// errRand reports that Config.Rand could not supply a nonce.
var errRand = errors.New("rollback: cannot read random nonce")

// ConfigError reports an invalid [Config] field.
type ConfigError struct {
	Field  string // such as "Peers[1].Players[0]"
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("rollback: invalid Config.%s: %s", e.Field, e.Reason)
}

// Unwrap returns [ErrConfig].
func (e *ConfigError) Unwrap() error { return ErrConfig }

func cfgErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// SyncTestError reports that re-simulating a frame in sync-test mode gave a
// different arena than the first simulation: the game is not deterministic,
// or keeps state outside the arena.
type SyncTestError struct {
	Frame Frame  // the frame whose Step produced different states
	Want  uint64 // checksum of the arena after the first simulation
	Got   uint64 // checksum after the re-simulation
}

func (e *SyncTestError) Error() string {
	return fmt.Sprintf("rollback: sync test: frame %d re-simulated to checksum %016x, first simulated to %016x", e.Frame, e.Got, e.Want)
}

// HandshakeError reports that some peers did not complete the handshake
// within Config.HandshakeTimeout. Its message says what to check.
type HandshakeError struct {
	Peers   []int // indices in Config.Peers that did not complete it
	Timeout time.Duration
	// Hints say what the missing peers' addresses sent that did not count
	// (a handshake for another session, one that failed the Secret's
	// check), or that nothing came from them at all. They are what
	// arrived, not proof of who sent it.
	Hints []string
}

func (e *HandshakeError) Error() string {
	msg := fmt.Sprintf("rollback: handshake timed out after %v waiting for peers %v: check that every machine has the same SessionID and Secret, that each has the right addresses for the others, and that no firewall drops their UDP", e.Timeout, e.Peers)
	if len(e.Hints) > 0 {
		msg += " (" + strings.Join(e.Hints, "; ") + ")"
	}
	return msg
}

// TermsError reports that a peer is configured differently in something
// every machine of a match must share. The handshake fails with it on
// both machines: each sends the other its terms before failing. A
// Spectator, or a session joining in progress, also fails with it (Field
// "State") when its arena cannot hold the state its source sent: another
// game, or another version of it.
type TermsError struct {
	Peer  int    // index in Config.Peers (a Spectator's: its Source)
	Field string // "Players", "Local and Peers", "Layout", "Lockstep", "TickRate", "ChecksumEvery", "NoStartDelay", "protocol version" or "State"
	Ours  string // the value here
	// Theirs is the value the peer's handshake carried.
	Theirs string
}

func (e *TermsError) Error() string {
	return fmt.Sprintf("rollback: peer %d is configured differently: %s is %s here and %s there", e.Peer, e.Field, e.Ours, e.Theirs)
}
