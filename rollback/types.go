package rollback

import (
	"time"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// MaxPlayers is the largest number of players in a session.
const MaxPlayers = wire.MaxPlayers

// Frame is a simulation frame number; the first frame of a match is 0.
type Frame int32

// maxFrame is the last frame number of a match: Advance and Idle return
// ErrFrameLimit once it is next (after 414 days at 60 Hz; every frame
// number a packet carries stays below wire.MaxFrame).
const maxFrame Frame = wire.MaxFrame - 2048

// PlayerID identifies a player, from 0 to Config.Players-1.
type PlayerID int

// Input is one player's quantized input for one frame, bit-packed according
// to the session's [Layout]. Bits outside the layout must be zero.
type Input uint64

// InputStatus says where an input given to [Game.Step] came from.
type InputStatus uint8

// Input statuses.
const (
	// Confirmed inputs are the player's real inputs for the frame.
	Confirmed InputStatus = 1 + iota // confirmed
	// Predicted inputs are guesses; the frame is re-simulated if they were wrong.
	Predicted // predicted
	// Disconnected marks a player who has left; the input is the zero input.
	Disconnected // disconnected
)

// PlayerInput is one player's input for a frame, as given to [Game.Step].
type PlayerInput struct {
	Input  Input
	Status InputStatus
}

// Game is the deterministic simulation that a [Session] drives.
type Game interface {
	// Step advances the state held in the session's arena by exactly one
	// frame. in has one entry per player, indexed by PlayerID; Step must not
	// retain it. Step must be a pure function of the arena's contents, f and
	// in: the session calls it again for frames it re-simulates.
	Step(f Frame, in []PlayerInput)
}

// PartialStepper is implemented by a game that can advance its state by
// part of a frame, for [Session.Extrapolate]. The state it leaves is thrown
// away, so StepPartial need not be deterministic, but it must keep its
// state in the arena like Step.
type PartialStepper interface {
	// StepPartial advances the state by fraction of frame f (0 < fraction
	// < 1) with the inputs in, which it must not retain.
	StepPartial(f Frame, in []PlayerInput, fraction float64)
}

// Observer follows the frames a session simulates, so that systems outside
// the game state can tell a first simulation from a re-simulation. The
// sound package's Ledger is one. The session calls it synchronously from
// its own methods.
type Observer interface {
	// Simulating is called just before every [Game.Step] of the live
	// state, with the frame about to be simulated. A frame not after one
	// already simulated starts a re-simulation: a rollback steps the frames
	// from its snapshot on, in order, up to the present.
	Simulating(f Frame)
	// Extrapolating is called with true before [Session.Extrapolate] steps
	// the game by part of a frame, and with false once it has rendered and
	// thrown the extrapolated state away. The session also calls it around
	// each Game.Step that moves a snapshot forward in place over a frame
	// simulated before with the same inputs (now final): Simulating is not
	// called for those, and nothing in them is new.
	Extrapolating(on bool)
}

// Recorder receives the final record of a match as it becomes final: the
// inputs of each frame once no rollback can change them, and each desync
// checksum once its frame is final. A replay.Writer is one. The session
// calls it synchronously from its own methods.
type Recorder interface {
	// Begin is called once, by NewSession, with the match's parameters.
	Begin(m MatchInfo)
	// Confirmed gives frame f's final inputs, for f = 0, 1, 2, … in order:
	// each is Confirmed, or Disconnected with the input the stand-in gave
	// (Config.StandIn; the zero input without one). in must not be
	// retained.
	Confirmed(f Frame, in []PlayerInput)
	// Checksum gives the desync checksum of the state at the start of
	// frame f, once every frame before f has been given to Confirmed.
	Checksum(f Frame, sum uint64)
}

// MatchInfo describes a match to a [Recorder].
type MatchInfo struct {
	Players   int
	Layout    Layout
	SessionID uint64
	// ChecksumEvery is the checksum interval in frames (0: no checksums).
	ChecksumEvery int
	// GameChecksum is true when the checksums hash Config.ChecksumData's
	// data rather than the whole arena.
	GameChecksum bool
}

// GameFunc adapts a function to the [Game] interface.
type GameFunc func(f Frame, in []PlayerInput)

// Step calls g(f, in).
func (g GameFunc) Step(f Frame, in []PlayerInput) { g(f, in) }

// Transport carries datagrams between this machine and its peers. Peers are
// numbered by their index in [Config.Peers]. The session calls a Transport
// only from its own methods, never concurrently.
type Transport interface {
	// Send sends one datagram to peer. It must not retain packet. An error
	// is counted in the statistics and otherwise ignored: the protocol
	// resends every unacknowledged input in the next packet.
	Send(peer int, packet []byte) error
	// Receive copies the next datagram that has arrived into buf and returns
	// its length and sender. ok is false when nothing is waiting. It must not
	// block.
	Receive(buf []byte) (n, peer int, ok bool)
}

// Result describes one call to [Session.Advance] or [Session.Idle]. Its
// Events slice is reused by the next call.
type Result struct {
	// Frame is the frame that was simulated (the first, when a lockstep
	// session or a lowered input lag simulated several), or the frame that
	// is waiting when Stalled.
	Frame Frame
	// Stalled is true when no new frame was simulated. The local inputs
	// given for this tick stay queued: do not add them again.
	Stalled bool
	// Simulated is the number of new frames simulated: 0 when Stalled, 1
	// usually, more when a lowered input lag or a lockstep schedule caught
	// up.
	Simulated int
	// Resimulated is the number of frames re-simulated by a rollback.
	Resimulated int
	// Hitch is true, in lockstep mode, when the call ended with a frame
	// due on the playout schedule still waiting for an input (the playout
	// buffer ran dry); frames may have been simulated before it.
	Hitch  bool
	Events []Event
}

// maxInputLagHistogram is the length of Stats.LagFrames.
const maxInputLagHistogram = 6

// Stats are the session's running statistics.
type Stats struct {
	Frame          Frame // frames simulated so far
	ConfirmedFrame Frame // every input before this frame is confirmed

	Rollbacks         int64                       // restores of a snapshot
	ResimulatedFrames int64                       // frames simulated again by rollbacks, in the live state or in a snapshot
	MaxRollbackFrames int                         // deepest rollback: frames between the first mispredicted frame and the present
	MaxResimulated    int                         // most frames re-simulated by one rollback
	StallFrames       int64                       // Advance calls that simulated nothing because a peer's input was missing (starvation)
	Hitches           int64                       // lockstep: Advance calls that ended with a due frame still missing an input
	AdvantageStalls   int64                       // frames stalled to give a slower peer back its frames
	LagStalls         int64                       // frames stalled to raise the input lag
	InputLag          int                         // the current local input lag, in frames
	Advantage         float64                     // the largest input frame advantage a peer had over us, last 100-frame window
	QueuedStalls      int                         // advantage stalls waiting to be spread out
	LagFrames         [maxInputLagHistogram]int64 // frames simulated at each input lag, 0 to 4 and 5+ in the last
	Saves             int64                       // snapshots copied from the live state
	SnapshotSteps     int64                       // frames simulated inside a snapshot to move it forward (part of ResimulatedFrames)

	PacketsSent     int64
	BytesSent       int64 // datagram payload bytes
	QuietTicks      int64 // sends that left the input packets out (lazy sending, Config.SendEveryTick)
	SendErrors      int64
	PacketsReceived int64
	BytesReceived   int64
	PacketsInvalid  int64 // malformed, from an unknown peer, another session or a link without keys yet, or with impossible frame numbers
	// PacketsForged counts sealed datagrams that failed the MAC check:
	// forged, altered, or from an earlier match (also in PacketsInvalid
	// and in the peer's PacketsForged).
	PacketsForged int64
	// PacketsDuplicate counts genuine datagrams taken before (a duplicate
	// the network made, or a replay), ignored.
	PacketsDuplicate int64
	// PacketsOverBudget counts datagrams dropped unjudged because their
	// peer had already sent 64 in this call (a flood); also in that
	// peer's PacketsDropped.
	PacketsOverBudget int64
	// Decided counts the relay clock's decisions taken (RelayClock), and
	// DecisionConflicts those for a frame whose input was here and
	// differed: a peer's, only from a relay that lies (the decision wins).
	Decided, DecisionConflicts int64

	// Spectators is how many spectators this machine serves now
	// (Config.MaxSpectators); SpectatorPackets and SpectatorBytes count
	// what it sent them (also in PacketsSent and BytesSent).
	Spectators       int
	SpectatorPackets int64
	SpectatorBytes   int64
	// SpectatorsCut counts the spectators and joiners this machine cut
	// off because they had not taken the state within their budget: four
	// times its compressed size sent, or 10 s plus four times its transfer
	// time at TransferRate (docs/tuning.md).
	SpectatorsCut int64

	// Join is how this machine came back, when it joined in progress
	// (Config.InProgress).
	Join WatchStats

	// With Config.Recover: the desyncs the match played on past, the
	// report of the latest (with Recovered set, and Adopted when this
	// machine loaded the kept state), and the time from its detection to
	// the kept state loaded here (or, kept here, to the report).
	Recovered    int
	Desync       *desync.Error
	RecoveryTime time.Duration
}

// PeerStats are one peer's network statistics.
type PeerStats struct {
	RTT               time.Duration // smoothed round-trip time; 0 until measured
	SendPacketsPerSec float64       // over the last complete second
	SendBytesPerSec   float64
	RecvPacketsPerSec float64
	RecvBytesPerSec   float64
	PacketsSent       int64
	PacketsReceived   int64
	PacketsDropped    int64 // from this peer: malformed, foreign session, no keys yet, forged, impossible frames, or over the per-call budget
	PacketsForged     int64 // from this peer's address: failed the MAC check (part of PacketsDropped)
	LossBursts        int64 // times a loss burst outran the redundancy window (every unacked frame is then resent for 10 s)
	LocalFrameLag     Frame // on our last send: our next input frame (frame plus input lag) minus its first frame we lack
	RemoteFrameLag    Frame // on its last packet: the frames of its input we have minus the frames of ours it acknowledged
	FramesBehind      Frame // how far its input stream is behind ours
	Verified          bool  // completed the handshake
	Interrupted       bool  // silent for longer than Timeouts.Interrupt
	Disconnected      bool
	DisconnectFrame   Frame // when Disconnected and agreed: its inputs from this frame on are the default input
	DisconnectAgreed  bool
	SinceLastHeard    time.Duration
	// Reserved: the peer's slot is reserved (Peer.Late) and its machine
	// has not taken its players yet.
	Reserved bool
	// StateBytes and StateTime are the last state transfer of a join in
	// progress (Config.InProgress) between this machine and the peer,
	// either way. When the peer joined through us: the compressed state it
	// acknowledged, and the time from its handshake to that. When we
	// joined through it: the state it sent us, and the time from
	// NewSession to the whole state. Zero when no state went between the
	// two.
	StateBytes int
	StateTime  time.Duration
	// Suspected counts, by Suspicion, what this peer was caught at
	// (EventSuspect); index 0 is unused.
	Suspected [numSuspicions]int64
}
