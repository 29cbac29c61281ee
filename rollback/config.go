package rollback

import (
	"io"
	"log/slog"
	"reflect"
	"slices"
	"time"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/desync/bundle"

	"github.com/rewindgg/rewind/predict"
	"github.com/rewindgg/rewind/savestate"
)

// Defaults.
const (
	defaultMaxRollback = 20 // frames; the INVERSUS value
	// maxRollbackLimit bounds MaxRollback so that every frame number a healthy
	// match puts in a packet fits the 8-bit relative fields of the header.
	maxRollbackLimit = 64
	// maxInputLag bounds InputLag for the same reason.
	maxInputLag = 30

	defaultHandshakeTimeout  = 10 * time.Second
	defaultInterruptTimeout  = 750 * time.Millisecond // GGPO's disconnect notice
	defaultDisconnectTimeout = 5 * time.Second        // GGPO's disconnect
	defaultQualityInterval   = time.Second
	defaultRedundantFrames   = 8

	// defaultTickRate is the lockstep simulation rate, in frames a second.
	defaultTickRate = 60
	// maxTickRate bounds Config.TickRate.
	maxTickRate = 240
	// defaultPlayoutDelay is the lockstep playout delay (Gaffer's value).
	defaultPlayoutDelay = 100 * time.Millisecond
	// lockstepCatchUp is the most frames a lockstep Advance simulates to
	// catch up with the playout schedule (Gaffer's value): more would make
	// a slow render frame slower still.
	lockstepCatchUp = 4
)

// The modes a handshake's terms carry (Config.Lockstep).
const (
	rollbackMode = 1 + iota
	lockstepMode
)

// Peer is another machine in the match.
type Peer struct {
	// Players are the players whose inputs that machine sends; it must list
	// the same players as its own Config.Local.
	Players []PlayerID
	// Late reserves the machine's slot: it joins after the start (a
	// Session with InProgress set, as a machine that comes back does). The
	// match starts without it, its players play the StandIn from frame 0,
	// and it takes them over at a frame every machine agrees on, at any
	// time in the match (RejoinWindow applies only once it has played).
	// Every machine that starts the match must mark the same peers Late.
	// Rollback mode only.
	Late bool
}

// Config configures a [Session]. Zero values mean the documented defaults.
// NewSession copies what it needs; the caller may reuse the Config.
type Config struct {
	// testHooks is what this module's own test support asks of the
	// session (liar.go: set only by WithTestHooks, in a build with the
	// tag rewind_adversary); in every game's build it is empty, of size 0.
	//lint:ignore U1000 only a build with the tag rewind_adversary reads it (liar.go).
	testHooks

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
	// Lockstep makes this a lockstep session: it simulates a frame only
	// once every player's input for it has arrived, on a steady schedule a
	// playout delay behind the first inputs received: no prediction, no
	// rollback, no snapshots (see the package documentation). false is
	// rollback mode: it predicts missing remote inputs, simulates on, and
	// rolls back and re-simulates when a prediction was wrong. Every
	// machine of a match must agree.
	Lockstep bool
	// TickRate is the lockstep simulation rate in frames a second, 1 to
	// 240 (10 for an RTS); 0 means 60. Rollback mode runs at 60.
	TickRate int
	// PlayoutDelay is how long after the first inputs arrived from every
	// peer a lockstep session simulates frame 0; frame f is then due
	// f/TickRate later. It absorbs jitter and lost packets; 0 means
	// 100 ms (Gaffer's value), negative means none. Lockstep only.
	PlayoutDelay time.Duration
	// MaxRollback is the most frames a rollback reaches back, 1 to
	// 64; 0 means 20 (the INVERSUS value). The session stalls
	// rather than run further ahead of a peer's last input.
	MaxRollback int
	// InputLag is the local input lag in frames, 0 to 30, at
	// the start of the match: an input added while frame f is next is used
	// for frame f+InputLag. Unless FixedInputLag is set, the session then
	// re-evaluates it every 100 frames with inputlag.Next (at most
	// inputlag.Max), raising it by stalling and lowering it by simulating
	// the queued inputs at once.
	InputLag int
	// FixedInputLag keeps the input lag at InputLag for the whole match.
	// Rollback mode only: lockstep's is always InputLag, and it refuses
	// the option.
	FixedInputLag bool
	// NoFrameAdvantage turns off frame-advantage stall smoothing: the
	// session never stalls to give a slower peer back its frames.
	// Rollback mode only (lockstep refuses it).
	NoFrameAdvantage bool
	// NoStartDelay starts the first frame as soon as every peer has
	// completed the handshake, without the start-of-match wait.
	NoStartDelay bool
	// ChecksumEvery is the desync-detection interval: the session
	// checksums the state at the start of every frame that is a multiple of
	// it, once every input before it is final, and compares with the
	// peers'. 0 means desync.DefaultEvery (500); negative turns detection
	// off. 10 is a good value while debugging.
	ChecksumEvery int
	// ChecksumData, if not nil, appends the data to checksum (positions,
	// say) to dst and returns it; nil checksums the whole arena.
	ChecksumData func(dst []byte) []byte
	// Marks, if not nil, are the marks the game calls between its systems
	// inside Step (desync.Marks.Mark): a sync test (SyncTest) then traces
	// every step and names, in its *desync.Error's System, the first
	// system whose output differs between the two simulations. Without a
	// trace a mark costs a nil check and a branch. With peers, Marks (or
	// Bundle) turns the time machine on: on a detected desync the session
	// re-simulates from the latest checksum frame agreed (a peer's matched)
	// with the marks traced, the machines exchange the re-simulations'
	// checksums and marks with their states (docs/protocol.md, "The trace
	// section"), and the report names the first divergent frame
	// (desync.Error.FirstFrame) and system; until a desync it keeps the
	// final inputs and the agreed state, as Bundle does.
	Marks *desync.Marks
	// Recover plays a match on past a detected desync instead of ending
	// it (recover.go): the machines keep the state a majority of their
	// checksums of the frame vouch for — with two machines, or a tie, the
	// lower machine's (by lowest PlayerID) — and the odd machine loads it
	// at that frame, simulates again to the present and plays on: its game
	// sees one jump. Events and the report are as without it
	// (EventDesyncDetected, then EventDesyncReport with the field), but
	// Advance returns no error; Stats.Desync is the report, with Recovered
	// set. A second desync within 600 frames of a recovered one ends the
	// match as without Recover. Rollback mode only, with checksums of the
	// whole arena (ChecksumData nil).
	Recover bool
	// Bundle, if not nil, is handed a desync bundle (package
	// desync/bundle) of each desync this machine detects, and of each peer
	// it finds outvoted, up to 4 in a match: the state at the latest
	// checksum frame where a peer's checksum matched ours, the final inputs from there
	// to the desync's frame, and this machine's re-simulation of them —
	// a checksum per frame and, with Marks, each step's marks — with the
	// report as detected (its Field, FirstFrame and System are named
	// later, by the exchange with the peer). The game writes it
	// somewhere (Bundle.WriteTo); cmd/desync sets two machines' bundles
	// side by side. It is called from Advance, after the re-simulation,
	// which costs the frames since the agreed frame (up to twice
	// ChecksumEvery) once; until a desync, the session keeps a copy of
	// each frame's final inputs, of the state at the latest agreed
	// checksum frame (a peer's checksum matched ours there) and of the
	// states at the two newest final checksum frames not yet agreed:
	// three states more. Needs peers and checksums (ChecksumEvery not
	// negative).
	Bundle func(*bundle.Bundle)
	// Observer, if not nil, is told every frame the session simulates and
	// every extrapolation (a sound.Ledger, for rollback-safe sound).
	Observer Observer
	// Recorder, if not nil, receives every frame's final inputs and the
	// desync checksums as they become final (a replay.Writer records a
	// replay). With a Recorder the checksums are computed even without
	// peers.
	Recorder Recorder
	// Log, if not nil, receives the detailed network log: a record for
	// every packet of inputs sent and received, every snapshot saved and
	// restored, every frame simulated (with its inputs and a checksum of
	// the state), and every desync checksum. Give it a slog.JSONHandler
	// at level Debug or lower; cmd/netlog diffs two peers' logs. It costs
	// allocations and a hash of the arena per simulated frame: a
	// debugging aid, off by default.
	Log slog.Handler
	// Predictor guesses remote inputs; nil means predict.RepeatLast.
	// Rollback mode only (lockstep never predicts, and refuses it).
	Predictor predict.Predictor
	// Snapshots is the snapshot policy; 0 is the adaptive policy (see
	// [SnapshotPolicy]).
	Snapshots SnapshotPolicy
	// SnapshotInterval fixes the adaptive policy's cadence: a ring of
	// snapshots saved every SnapshotInterval frames, 1 to MaxRollback (1
	// saves every frame, as GGPO does). 0 lets the policy choose it.
	// Adaptive policy only.
	SnapshotInterval int
	// StepCost and SaveCost tell the adaptive policy what one Game.Step
	// and one snapshot copy (a save or a restore of the whole State) cost.
	// Both 0 means measured with Clock (a sampled Step, every save): a
	// game leaves them 0; a test or a simulation on virtual time, whose
	// Clock never moves during an Advance, gives them to get the choice of
	// a real game (without them it measures a free Step and keeps two
	// backups). They change which frames are saved, never what is
	// simulated.
	StepCost, SaveCost time.Duration
	// Clock reads a monotonic clock as the time elapsed since some fixed
	// instant; nil means the machine's. The session reads it once per
	// Advance and never sleeps. Give every session of a netsim match its
	// node's clock (netsim.Network.Clock).
	Clock func() time.Duration
	// Rand supplies the handshake's nonce and key pair; nil means
	// crypto/rand. A seeded source makes a match reproducible bit for bit
	// (tests, the soak); a game leaves it nil.
	Rand io.Reader
	// Secret, if set, is a key the lobby hands every machine of the match
	// (at least 16 random bytes, new for each match). Handshakes are then
	// authenticated with it and the link keys derived from it, so that a
	// machine without it cannot take part, even one on the path between
	// the players (docs/security.md). Every machine must have the same
	// Secret, or none.
	Secret []byte
	// SessionID identifies the match; every machine in it must use the same
	// value (from the lobby or matchmaker), and a new match a new one.
	SessionID uint64
	// Timeouts bound how long the session waits on the other machines.
	Timeouts Timeouts
	// QualityInterval is the period of the round-trip-time pings; 0 means 1 s.
	QualityInterval time.Duration
	// RedundantFrames is how many of the newest frames every input packet
	// repeats; older unacknowledged frames are resent only when the peer's
	// acknowledgement stops moving for longer than a round trip. 0 means 8
	// in rollback mode and -1 in lockstep; -1 resends every unacknowledged
	// frame in every packet (INVERSUS, Gaffer).
	RedundantFrames int
	// SendEveryTick sends the local inputs on every tick. By default a
	// session leaves a tick's input packets out when its local inputs
	// have not changed since its last input packet (lazy sending): never
	// two ticks in a row, and only once the match has run 5 s and every
	// link has a measured round trip, lost no datagram in the last 5 s, and
	// is short enough that a tick's delay cannot stall a peer (one-way
	// delay minus input lag within half of MaxRollback). On a clean link
	// that is up to half the datagrams while the players hold still (or
	// hold a direction), with no rollback added: the peers' repeat-last
	// predictions are right about every frame left out. Lossy and long
	// links are sent every tick anyway. Rollback mode only (lockstep
	// sends on its own schedule, and refuses it).
	SendEveryTick bool
	// MaxSpectators is how many spectators this machine serves directly
	// (a [Spectator] that names it as its source), at any time in the
	// match; 0 means none. Spectators reach it through the Transport's
	// peer indexes from len(Peers) on (udp.Transport.AcceptGuests), are
	// authenticated like peers (the same SessionID and Secret), and never
	// affect the match: each is sent the state at a final frame and then
	// the final inputs, and sends back only acknowledgements. More
	// spectators join through spectators that relay
	// (SpectatorConfig.MaxSpectators).
	MaxSpectators int
	// TransferRate paces the state sent to each joining spectator or
	// machine, in bytes a second; 0 means about
	// 120 KB/s (2 KiB a tick).
	TransferRate int
	// SpectatorDelay is the stream delay this machine enforces, against
	// stream sniping, 0 to 20 s: it sends its spectators each frame's
	// inputs no sooner than this after the frame became final here, and
	// the state they start from no sooner than this after its frame
	// (a spectator's own SpectatorConfig.Delay is the viewer's choice,
	// which a modified viewer ignores). A spectator then waits up to
	// SpectatorDelay more to start. Machines coming back into the match
	// are never delayed. 0: none.
	SpectatorDelay time.Duration
	// StandIn, if not nil, gives the input of player p for frame f while p
	// is absent (its machine disconnected, until it takes p back), with the
	// State at the start of frame f: a bot or an AI takes over. It must be
	// deterministic, a function of the state, f and p only: every machine
	// calls it for the same frames and must get the same inputs. The
	// input has status Disconnected. nil means the zero input.
	StandIn func(f Frame, p PlayerID) Input
	// RejoinWindow is how long after a peer is disconnected its machine
	// may come back (a Session with InProgress set: docs/protocol.md,
	// "Reconnect") and take its players back from the stand-in; 0 means
	// 60 s, negative never. Rollback mode only:
	// lockstep refuses any but 0.
	RejoinWindow time.Duration
	// InProgress makes this machine join a match already under way: it
	// dropped out (a crash, a link down past Timeouts.Disconnect) and comes
	// back within the others' RejoinWindow, with the same Config as before
	// (a new Rand). It first receives the state at a final frame from a
	// peer and catches up with the final inputs since, then takes its
	// players back at a frame every machine agrees on, once a majority of
	// the machines that play there (all, with three machines or fewer)
	// confirm the state's checksum there. Until then Advance reports
	// Stalled or simulates the match as a spectator would, and takes local
	// inputs only from the take-over frame on (EventTookOver). Rollback
	// mode only, without a Recorder or SyncTest.
	InProgress bool
	// SyncTest, when positive, turns on sync-test mode: every frame the
	// session rolls back SyncTest frames (at most MaxRollback), re-simulates
	// them and compares checksums of the arena with the first simulation.
	// All players must be local.
	SyncTest int
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func (c *Config) maxRollback() int {
	if c.MaxRollback == 0 {
		return defaultMaxRollback
	}
	return c.MaxRollback
}

func sortedPlayers(ps []PlayerID) []PlayerID {
	out := slices.Clone(ps)
	slices.Sort(out)
	return out
}

// isNil reports whether tr is nil, or a nil pointer, map, slice, channel
// or function in the interface (a typed nil, which a nil check misses).
func isNil(tr Transport) bool {
	if tr == nil {
		return true
	}
	switch v := reflect.ValueOf(tr); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return v.IsNil()
	}
	return false
}
