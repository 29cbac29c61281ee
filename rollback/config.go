package rollback

import (
	"errors"
	"fmt"
	"slices"

	"github.com/rewindgg/rewind/predict"
	"github.com/rewindgg/rewind/savestate"
)

// Defaults.
const (
	DefaultMaxRollback = 20 // frames; the INVERSUS value
	// MaxMaxRollback bounds MaxRollback so that every frame number a healthy
	// match puts in a packet fits the 8-bit relative fields of the header.
	MaxMaxRollback = 64
	// MaxInputDelay bounds InputDelay for the same reason.
	MaxInputDelay = 30
)

// SnapshotPolicy chooses when the session saves and restores the arena.
type SnapshotPolicy uint8

// Snapshot policies.
const (
	// TwoBackups is the INVERSUS policy (the default): two snapshots; a
	// rollback restores the newest one not after the first mispredicted
	// frame. Cheap on average, with a spike on a deep misprediction.
	TwoBackups SnapshotPolicy = 1 + iota
	// ConstantCost restores a MaxRollback-old snapshot and re-simulates
	// MaxRollback frames on every frame, whether or not anything was
	// mispredicted: the worst case every frame, so the cost never spikes.
	ConstantCost
)

func (p SnapshotPolicy) String() string {
	switch p {
	case TwoBackups:
		return "two-backups"
	case ConstantCost:
		return "constant-cost"
	default:
		return fmt.Sprintf("SnapshotPolicy(%d)", uint8(p))
	}
}

// Peer is another machine in the match.
type Peer struct {
	// Players are the players whose inputs that machine sends; it must list
	// the same players as its own Config.Local.
	Players []PlayerID
}

// Config configures a [Session]. Zero values mean the documented defaults.
// NewSession copies what it needs; the caller may reuse the Config.
type Config struct {
	// Players is the number of players in the match, 1 to MaxPlayers.
	Players int
	// Local are the players whose inputs this machine provides.
	Local []PlayerID
	// Peers are the other machines. Every player is local or belongs to
	// exactly one peer.
	Peers []Peer
	// Layout gives the bit widths of an input's fields (sum at most 64).
	Layout Layout
	// State is the arena holding the game's whole state. The game must have
	// allocated its state before NewSession, which takes the first snapshot.
	State *savestate.Arena
	// Game is the simulation.
	Game Game
	// Transport carries packets to the peers; required when Peers is not empty.
	Transport Transport
	// MaxRollback is the most frames a rollback reaches back, 1 to
	// MaxMaxRollback; 0 means DefaultMaxRollback (20). The session stalls
	// rather than run further ahead of a peer's last input.
	MaxRollback int
	// InputDelay is the fixed local input lag in frames, 0 to MaxInputDelay:
	// an input added while frame f is next is used for frame f+InputDelay.
	InputDelay int
	// Predictor guesses remote inputs; nil means predict.RepeatLast.
	Predictor predict.Predictor
	// Snapshots is the snapshot policy; 0 means TwoBackups.
	Snapshots SnapshotPolicy
	// SyncTest, when positive, turns on sync-test mode: every frame the
	// session rolls back SyncTest frames (at most MaxRollback), re-simulates
	// them and compares checksums of the arena with the first simulation.
	// All players must be local.
	SyncTest int
}

// ErrConfig is wrapped by every [*ConfigError].
var ErrConfig = errors.New("rollback: invalid config")

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

// validate checks c without modifying it.
func (c *Config) validate() error {
	if c.Players < 1 || c.Players > MaxPlayers {
		return cfgErr("Players", "%d (want 1 to %d)", c.Players, MaxPlayers)
	}
	var owner [MaxPlayers]string
	claim := func(field string, p PlayerID) error {
		if p < 0 || int(p) >= c.Players {
			return cfgErr(field, "player %d does not exist (Players is %d)", p, c.Players)
		}
		if owner[p] != "" {
			return cfgErr(field, "player %d is also listed as %s", p, owner[p])
		}
		owner[p] = field
		return nil
	}
	if len(c.Local) == 0 {
		return cfgErr("Local", "no local players")
	}
	for i, p := range c.Local {
		if err := claim(fmt.Sprintf("Local[%d]", i), p); err != nil {
			return err
		}
	}
	for i, peer := range c.Peers {
		if len(peer.Players) == 0 {
			return cfgErr(fmt.Sprintf("Peers[%d].Players", i), "a peer with no players")
		}
		for j, p := range peer.Players {
			if err := claim(fmt.Sprintf("Peers[%d].Players[%d]", i, j), p); err != nil {
				return err
			}
		}
	}
	for p := range c.Players {
		if owner[p] == "" {
			return cfgErr("Players", "player %d is neither local nor any peer's", p)
		}
	}
	if err := c.Layout.Check(); err != nil {
		return cfgErr("Layout", "%v", err)
	}
	if c.State == nil {
		return cfgErr("State", "nil arena")
	}
	if c.Game == nil {
		return cfgErr("Game", "nil")
	}
	if len(c.Peers) > 0 && c.Transport == nil {
		return cfgErr("Transport", "nil, with %d peers", len(c.Peers))
	}
	if c.MaxRollback < 0 || c.MaxRollback > MaxMaxRollback {
		return cfgErr("MaxRollback", "%d (want 1 to %d, or 0 for %d)", c.MaxRollback, MaxMaxRollback, DefaultMaxRollback)
	}
	if c.InputDelay < 0 || c.InputDelay > MaxInputDelay {
		return cfgErr("InputDelay", "%d (want 0 to %d)", c.InputDelay, MaxInputDelay)
	}
	if c.Snapshots > ConstantCost {
		return cfgErr("Snapshots", "unknown policy %d", c.Snapshots)
	}
	if c.SyncTest < 0 || c.SyncTest > c.maxRollback() {
		return cfgErr("SyncTest", "%d (want 0 to MaxRollback, %d)", c.SyncTest, c.maxRollback())
	}
	if c.SyncTest > 0 && len(c.Peers) > 0 {
		return cfgErr("SyncTest", "sync-test mode needs every player local (%d peers given)", len(c.Peers))
	}
	return nil
}

func (c *Config) maxRollback() int {
	if c.MaxRollback == 0 {
		return DefaultMaxRollback
	}
	return c.MaxRollback
}

func sortedPlayers(ps []PlayerID) []PlayerID {
	out := slices.Clone(ps)
	slices.Sort(out)
	return out
}
