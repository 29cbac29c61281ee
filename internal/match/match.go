// Package match plays whole matches of the arena example over a simulated
// network and verifies them. The tests, the benchmarks and cmd/soak share it.
//
// A match runs one rollback session per machine (by default one machine per
// player) over a seeded netsim network on a virtual 60 Hz clock, with bots for
// players. When every machine has simulated the last frame it keeps polling
// (Session.Idle) until every input of the match is confirmed everywhere.
// Then the match is verified: each machine's arena must be byte-for-byte the
// state that an offline run of the game reaches with the inputs the bots
// really produced.
package match

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/advantage"
	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/desync/bundle"
	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/internal/liar"
	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/rollbacktest/offpath"
	"github.com/rewindgg/rewind/savestate"
	"github.com/rewindgg/rewind/sound"
)

// Tick is the simulation period: 60 Hz.
const Tick = time.Second / 60

// UDPOverhead is the IPv4 + UDP header cost counted per packet.
const UDPOverhead = 28

// Config describes one match.
type Config struct {
	Players     int            // 1 to 8
	Machines    int            // 0 means one per player; player p plays on machine p % Machines
	Frames      int            // frames to play
	Seed        uint64         // seeds the network, the bots and the game
	Profile     netsim.Profile // every link's impairments
	MaxRollback int            // 0 for the session default
	InputLag    int
	Snapshots   rollback.SnapshotPolicy
	// SnapshotInterval, StepCost and SaveCost are the adaptive snapshot
	// policy's rollback.Config fields.
	SnapshotInterval   int
	StepCost, SaveCost time.Duration
	ArenaSize          int // 0 for 64 KiB
	// DropAt, when positive, stops machine DropMachine once it has
	// simulated DropAt frames: it Closes its session if DropClean, or just
	// goes silent (a crash). The others must agree on its disconnect frame.
	DropAt      int
	DropMachine int
	DropClean   bool
	// RejoinAfter, when positive, restarts the dropped machine this long
	// after it crashed (virtual time): a fresh arena and a session with
	// rollback.Config.InProgress, which takes its players back
	// (Result.Rejoin).
	RejoinAfter time.Duration
	// Late reserves machines' slots (rollback.Peer.Late): each starts at
	// its At as a session joining in progress, and takes its players from
	// the stand-in (Result.Late, in this order). Not machine 0, not the
	// one that drops; rollback mode, without Record or Spectators.
	Late []LateJoin
	// CorruptJoinState makes every machine but the one that comes back
	// hand it a state with a bit flipped (the joiner must refuse it), or
	// with CorruptJoinStateBy, only machine CorruptJoinStateBy-1 (the
	// joiner must watch through another).
	CorruptJoinState   bool
	CorruptJoinStateBy int
	// StandIn plays absent players with a stand-in that depends on the
	// whole state (rollback.Config.StandIn), not the zero input.
	StandIn bool
	// DisconnectTimeout, HandshakeTimeout and RejoinWindow are the
	// sessions' Config options (0: 5 s, 10 s and 60 s).
	DisconnectTimeout time.Duration
	HandshakeTimeout  time.Duration
	RejoinWindow      time.Duration
	// FixedInputLag, NoFrameAdvantage and NoStartDelay are the sessions'
	// Config options.
	FixedInputLag    bool
	NoFrameAdvantage bool
	NoStartDelay     bool
	// Skew makes the last machine's clock run this much slow (0.03: 3%).
	Skew float64
	// StartSpread starts the host (machine 0) this much before the others.
	StartSpread time.Duration
	// Hiccups freezes every machine for 200 ms this many times a minute, at
	// seeded random moments (netsim only).
	Hiccups int
	// ChecksumEvery is Config.ChecksumEvery of every session (0: 500).
	ChecksumEvery int
	// InjectDesync, when positive, makes the last machine's game flip one
	// bit of ship 0's score every time it simulates that frame: a
	// deliberate desync that the sessions must detect (a score is never
	// overwritten, so the states never converge again).
	InjectDesync int
	// InjectSystem, with InjectDesync, flips the bit inside the arena
	// game's system of this name ("ships" or "shots"; arena.Game.SetFault)
	// rather than after the step: the desync bundles must name it.
	InjectSystem string
	// Bundle makes every machine mark the arena game's systems
	// (rollback.Config.Marks) and make desync bundles
	// (rollback.Config.Bundle): Result.Bundles, and Result.Divergence
	// from two machines' bundles.
	Bundle bool
	// Recover is rollback.Config.Recover of every session: a desync
	// (InjectDesync's) is played on past (Result.Recoveries).
	Recover bool
	// Log makes every machine write the detailed network log
	// (rollback.Config.Log) into Result.Logs.
	Log bool
	// Record makes every machine record a replay (Result.Replays), each
	// verified offline at the end of a completed match.
	Record bool
	// Lockstep runs the sessions in lockstep (rollback.Config.Lockstep) at TickRate
	// frames a second (0: 60) with a playout delay of Playout (0: the
	// session default, negative: none). The machines still render, and
	// give input, on the 60 Hz loop.
	Lockstep bool
	TickRate int
	Playout  time.Duration
	// RedundantFrames and SendEveryTick are the sessions' Config options.
	RedundantFrames int
	SendEveryTick   bool
	// Reliable makes every link the netsim TCP model (Network.Reliable).
	Reliable bool
	// Extrapolate renders every tick a fraction of a frame ahead
	// (Session.Extrapolate, fractions 0, ¼, ½, ¾ in turn) and fails the
	// match if that changes the live state.
	Extrapolate bool
	// SessionID is every session's Config.SessionID; 0 means Seed.
	SessionID uint64
	// Forge, when positive, attacks the match (forge.go): every machine
	// receives Forge forged datagrams a second as if from the other
	// machines' addresses, from before the handshake (forged handshakes
	// race the real ones) to the end, of every offpath.ForgeKind in turn:
	// random bytes, mangled copies of the match's datagrams, replays of an
	// earlier match with the same session id (played first, at most 600
	// frames, with other nonces and keys), handshakes. Over UDP every
	// other one comes from a stranger's socket, the rest from the claimed
	// peer's own socket. Result.ForgedAccepted counts the ones a session
	// took as valid.
	Forge int
	// Adversary, when not liar.None, runs machine AdversaryMachine with a
	// modified protocol (adversary.go): its session gets a liar.Script
	// (rollback.TestHooks), and lies as the script's Kind says
	// (docs/security.md, "A peer that lies"). The match then judges the
	// honest machines only: Completed and Verified are theirs (Verified is
	// Result.Adversary.HonestVerified), a session error of the adversary's
	// only silences it (Result.Adversary.Err), and a disconnect that
	// involves it is no failure.
	Adversary        liar.Kind
	AdversaryMachine int
	// NoStatements turns off every machine's statements
	// (rollback/statements.go; on in every session of three or more
	// machines): only to measure what they cost, through
	// rollback.TestHooks.
	NoStatements bool
	// Spectators, when positive, has that many rollback.Spectators watch
	// the match (spectate.go): a quarter join at the start, a quarter in
	// the last second, the rest at seeded random moments; a quarter of
	// them leave early (half of those crash), and each player machine
	// serves SpectatorsPerMachine directly, the rest join through
	// spectators that relay. Result.Spectators says how each did; the
	// match is not done until every spectator that stays has simulated
	// every frame.
	Spectators int
	// Witnesses, with Spectators, has each spectator watch through that
	// many player machines besides its source
	// (rollback.SpectatorConfig.Witnesses): the next ones after its own
	// player machine (its relay's, for a spectator that joins through
	// another), leaving out DropMachine. Netsim only.
	Witnesses int
	// TickWork records what every tick of every machine cost its game and
	// its arena (Result.TickWork; tickwork.go): cmd/soak's tick-cost
	// model. It changes nothing in the match.
	TickWork bool

	// Relay plays the match in the relay topology (relay.go; over UDP
	// udp_relay.go): every machine's one link is to a relay in the middle,
	// which forwards the sessions' datagrams in envelopes (package relay),
	// and every session has a Secret the relay does not. Each hop, machine
	// to relay and relay to machine, has hopProfile(Profile): the path
	// through the relay is as impaired as a mesh link. RelayFullHops gives
	// each hop the whole Profile instead (a relay far off the path).
	Relay         bool
	RelayFullHops bool
	// RelayDiesAt, when positive, kills the relay at that network time
	// (it reads nothing more), and RelayMoveAfter later every machine's
	// relay.Client moves to a second relay (Client.Move), as a lobby would
	// move the match: the sessions see loss meanwhile, and must verify.
	RelayDiesAt    time.Duration
	RelayMoveAfter time.Duration
	// RelayClock makes the relay the match clock (relay.Clock; with
	// Relay, not with RelayDiesAt): it decides, signed, a machine's input
	// that reaches it later than RelayAllowance (0: relay.DefaultAllowance)
	// after its frame's slot. The offline truth takes its decisions.
	RelayClock     bool
	RelayAllowance time.Duration
	// Slow starves machine SlowMachine's clock (slow.go): it freezes for
	// 50 to 240 ms about every two seconds, and catches the ticks up after
	// (like pacer.Pacer); Result.Others* measure the other machines.
	Slow        bool
	SlowMachine int

	randSalt      uint64 // non-zero: the nonces and keys come from another stream than Seed's
	forgeCountAll bool   // tests: count every datagram received as forged
	// inspect, when set (tests), sees each machine's transport and test
	// hooks as its session gets them.
	inspect func(i int, tr rollback.Transport, h testHooks)
	// relayLink, when set (tests), wraps the relay's link; watch sees
	// each machine's session and events after each of its ticks.
	relayLink func(*netsim.Network, relay.Link) relay.Link
	watch     func(i int, s *rollback.Session, events []rollback.Event)
}

// Result is what happened in one match.
type Result struct {
	Completed bool   // every machine (with an adversary: every honest one) simulated every frame and confirmed every input
	Verified  bool   // every machine's final state equals the offline re-simulation (with an adversary: Adversary.HonestVerified)
	Desync    string // when not verified: which machine and the first differing field
	Err       error  // a session error, if any

	Ticks     int // virtual 60 Hz ticks the match took, drain included
	Checksums []uint64
	Want      uint64 // checksum of the offline re-simulation

	Rollbacks         int64
	ResimulatedFrames int64
	HitchSpells       int64 // lockstep: runs of consecutive hitches (the waits a player sees), all machines
	Hitches           int64 // lockstep: render ticks that ended with a due frame missing an input, all machines (not the last Advance, which waits for inputs past the end)
	MaxRollbackFrames int
	MaxResimulated    int
	StallFrames       int64
	// Decisions counts the relay clock's decided frames (Config.RelayClock);
	// DecisionConflicts those a session took for a frame whose input it
	// held, different (none from an honest relay).
	Decisions, DecisionConflicts int64
	// With Config.Slow: the slowest other machine's speed (frames simulated
	// per tick from its first frame to the last), and the others' stall
	// frames (starved, advantage and input lag), summed.
	OthersSpeedMin         float64
	OthersStalls           int64
	PacketsSent            int64
	BytesSent              int64 // payload only
	PacketsInvalid         int64
	TransportDrops         int64 // UDP only: datagrams the transport dropped (unknown address, oversized, queue full)
	Hits                   int32 // ships destroyed, from the final state
	AdvantageStalls        int64
	LagStalls              int64
	LagFrames              [lagHistogram]int64 // frames simulated at each input lag, all machines
	FinalInputLag          []int               // each remaining machine's input lag at the end
	CadenceViolations      int                 // frame-advantage stalls closer together than StallPeriod allows
	MachineAdvantageStalls []int64             // each remaining machine's frame-advantage stalls
	LossBursts             int64               // loss bursts that outran the redundancy window
	// AdvantageSum / AdvantageWindows is the mean absolute input advantage
	// of every peer pair after the first 10 s, averaged over 100-tick windows.
	AdvantageSum     float64
	AdvantageWindows int
	MaxAdvantage     float64 // the largest |windowed input advantage| after the first 10 s
	// FrameGapSum and FrameGapWindows are the ground truth the advantage
	// estimate aims at (gap.go): per pair of machines, the mean frame
	// difference at the same instant of network time over windows of
	// advantage.Window ticks, after the first 10 s, its absolute values
	// summed. MaxFrameGap is the largest window's. Netsim matches only.
	FrameGapSum     float64
	FrameGapWindows int
	MaxFrameGap     float64
	// EarlyAdvantage is |mean input advantage over the first 100 frames|,
	// averaged over every peer pair (the start delay's claim).
	EarlyAdvantage float64
	// Sound compares the Event sounds every remaining machine played with
	// the offline run's (completed matches only).
	Sound SoundReport
	// Detected is the first desync a session reported (nil for none), and
	// DetectedAt the frame that machine had reached when it did.
	Detected   *desync.Error
	DetectedAt rollback.Frame
	// Reported is, by machine, how far its desync reports went: 0 none,
	// 1 a desync without the field, 2 the first differing field named.
	// The match runs on after the first report, for up to 5 seconds,
	// until every machine's names the field (with three or more, a
	// machine that compares its checksums with no machine that diverged
	// never reports: the match then runs the 5 seconds).
	Reported []uint8
	// Reports are, by machine, its latest desync report: the error its
	// Advance returned last (nil: none). Traced says, by machine, whether
	// it named the first divergent frame (desync.Error.FirstFrame: the
	// time machine, with Config.Bundle, which marks the game's systems);
	// with Bundle the match runs on after the first report until every
	// reporting machine named the field and the frame, for up to 5
	// seconds. A recovery's reports are in Recoveries.
	Reports []*desync.Error
	Traced  []bool
	// Recoveries are the desyncs the machines played on past
	// (Config.Recover): each machine's latest report (Stats.Desync), and
	// the time from its detection to the kept state loaded (or kept).
	Recoveries []Recovery
	// Bundles are each machine's desync bundles (Config.Bundle), and
	// Divergence what the first two that set side by side name (the
	// first of the last machine's, which InjectDesync corrupts, against
	// the first of another's): the first divergent frame, system and
	// fields; nil without two.
	Bundles    [][]*bundle.Bundle
	Divergence *bundle.Divergence
	// Replays are the machines' replay files (Config.Record), and
	// ReplayFrames the frames each holds. ReplayErr is the first replay
	// that did not verify: unreadable, a checksum mismatch, or (holding
	// every frame) a final state other than the offline re-simulation's.
	Replays      [][]byte
	ReplayFrames []int
	ReplayErr    error
	// Logs are the machines' network logs (Config.Log), JSON lines.
	Logs [][]byte
	// Timeline has every machine's per-second samples, machine by machine;
	// RollbackDepths counts the rollbacks by frames re-simulated (the last
	// bucket: that many or more), MispredictionDepths by misprediction
	// depth: how many frames before the present the first mispredicted
	// frame was (mispredict.go; Stats.MaxRollbackFrames is the deepest).
	// RollbacksWithoutMisprediction counts the rollbacks that changed no
	// input (forced: Config.Snapshots ConstantCost).
	Timeline                      []Sample
	RollbackDepths                [DepthBuckets]int64
	MispredictionDepths           [DepthBuckets]int64
	RollbacksWithoutMisprediction int64
	// DisconnectFrame is the frame from which the dropped machine's players
	// played the default input, as every remaining machine agreed; -1 when
	// nothing was dropped.
	DisconnectFrame rollback.Frame
	// StartTick is the tick of its own loop on which the last machine to
	// start simulated its first frame: when the handshake and the start
	// were over everywhere (0 if some machine never started).
	StartTick int
	// PacketsForged counts the datagrams the sessions found forged (a
	// sealed datagram whose MAC failed; Stats.PacketsForged).
	PacketsForged int64
	// Suspects counts what the remaining machines caught their peers at
	// (PeerStats.Suspected, every peer of every machine): an honest match
	// has none. Suspected is the same by rollback.Suspicion.
	Suspects  int64
	Suspected [numSuspicions]int64
	// Config.Forge: ForgedDatagrams counts the forged datagrams sent,
	// ForgedKinds the same by offpath.ForgeKind, ForgedReceived those the
	// sessions received (over UDP the transport drops the stranger's),
	// and ForgedAccepted those a session took as valid from a peer (its
	// PeerStats.PacketsReceived went up on one): it must be 0.
	// ForgedHandshakesBeforeStart counts the forged handshakes sent
	// before every machine had started: the ones that raced the real
	// handshake.
	ForgedDatagrams             int64
	ForgedKinds                 [offpath.NumForgeKinds + 1]int64
	ForgedReceived              int64
	ForgedAccepted              int64
	ForgedHandshakesBeforeStart int64
	// Adversary is what Config.Adversary did and what the honest machines
	// made of it; zero without one.
	Adversary AdversaryReport
	// Spectators is what Config.Spectators did (completed matches).
	Spectators SpectatorReport
	// Rejoin is what Config.RejoinAfter did (completed matches).
	Rejoin RejoinReport
	// Late is what each of Config.Late did, in its order (completed
	// matches; From is 0).
	Late []RejoinReport
	// TickWork has, with Config.TickWork, every tick of every machine,
	// machine by machine (a machine's ticks while it was down excluded).
	TickWork []TickWork

	// UpPackets and UpBytes count the datagrams the machines gave the
	// network and their payload bytes (netsim; over UDP in the relay
	// topology only, counted by the relay.Clients and the relay; the
	// UDP/IP headers are UDPOverhead each), DownPackets and DownBytes those sent to
	// them; in the relay topology, to and from the relay (envelopes),
	// so that the sessions' PacketsSent and BytesSent are what is inside.
	UpPackets, UpBytes     int64
	DownPackets, DownBytes int64
}

// SimulatedSeconds is the virtual time the match took.
func (r *Result) SimulatedSeconds() float64 { return float64(r.Ticks) / 60 }

// ErrConfig reports an unusable match configuration.
var ErrConfig = errors.New("match: invalid config")

type machine struct {
	s         *rollback.Session
	a         *savestate.Arena
	g         *arena.Game
	players   []rollback.PlayerID
	bots      []*arena.Bot
	pending   []pendingInput   // each bot's sample not yet taken by the session
	lastIn    []rollback.Frame // with the relay clock: each player's last frame whose input the bot gave
	dead      atomic.Bool      // dropped; read by the other machines' goroutines
	cfg       rollback.Config
	deadAt    time.Duration // when it dropped, on its own clock
	rejoined  bool          // restarted (Config.RejoinAfter), or started late (Config.Late)
	late      bool          // Config.Late: absent until comeAt
	comeAt    time.Duration // when it (re)starts, on its own clock
	restartAt time.Duration
	finished  bool
	frame     atomicFrame // the session's frame, readable by the other machines' goroutines

	ticks       int // ticks run
	hitches     int64
	spells      int64 // runs of hitches: a starved event each
	lastAdvTick int   // tick of the last frame-advantage stall
	advWindow   []advAcc
	cadenceBad  int
	early       []advAcc // each peer's signed advantage summed over frames 1…100

	rec     *replay.Writer
	bundles []*bundle.Bundle // Config.Bundle's, in the order made
	file    bytes.Buffer
	log     bytes.Buffer

	tl   timeline
	mis  *mispredictions // the misprediction depth of every rollback (mispredict.go)
	work workMeter       // Config.TickWork (tickwork.go); its step count always runs

	ledger *sound.Ledger
	voices *voiceLog
	music  sound.Voice
	shown  []time.Duration // when each frame was first simulated
	render func()

	startTick int // the tick on which it simulated its first frame

	// With an adversary: the tick on which it first reached the last frame
	// and the frame it was then at, the first frame at which it suspected
	// each peer (-1: never), and the inputs each frame was last simulated
	// with (usedInputs).
	reachTick  int
	reachFrame rollback.Frame
	suspectAt  []rollback.Frame
	used       []rollback.PlayerInput
}

type pendingInput struct {
	in rollback.Input
	ok bool
}

// advAcc averages one peer's instantaneous input advantage (or, in
// frameGaps, one pair's frame gap) over a window.
type advAcc struct {
	sum float64
	n   int
}

// window adds sample v; when that fills a window of advantage.Window
// samples it returns the window's absolute mean and true, and starts the
// next window.
func (a *advAcc) window(v float64) (float64, bool) {
	a.sum += v
	a.n++
	if a.n < advantage.Window {
		return 0, false
	}
	mean := math.Abs(a.sum / float64(a.n))
	*a = advAcc{}
	return mean, true
}

// settleTicks is how many of its own ticks a machine runs before it is
// measured for fairness: the first 10 s, while the start settles.
const settleTicks = 600

// Run plays and verifies one match over netsim, on a virtual clock.
func Run(c Config) Result { return runNetsim(c, nil) }

// runNetsim is Run; tap, when set, is the network's Tap.
func runNetsim(c Config, tap func(from, to int, b []byte)) (r Result) {
	machines := max(1, machinesOf(c))
	if err := checkRelay(c, machines); err != nil {
		r.Err = err
		return r
	}
	nodes, prof := machines+relayNodes(c), c.Profile
	if c.Relay {
		if !c.RelayFullHops {
			prof = hopProfile(prof)
		}
	}
	nw, err := netsim.New(nodes, c.Seed, prof)
	if err != nil {
		r.Err = err
		return r
	}
	if c.Reliable {
		nw.Reliable()
	}
	if err := setClocks(nw, c, machines); err != nil {
		r.Err = err
		return r
	}
	nw.Tap = tap
	transport := func(i int) rollback.Transport { return nw.Endpoint(i) }
	var rl *relayNode
	if c.Relay {
		if rl, err = newRelayNode(nw, machines, c); err != nil {
			r.Err = err
			return r
		}
		transport = rl.transport
	}
	var fg *forgery
	if c.Forge > 0 && machines > 1 {
		if fg, err = newForgery(c, machines); err != nil {
			r.Err = err
			return r
		}
		defer fg.result(&r) // a failed match too: what was taken may be why
		nw.Tap = fg.f.Observe
		transport = func(i int) rollback.Transport {
			ep := nw.Endpoint(i)
			return fg.wrap(i, ep, func([]byte) bool { return ep.Injected() || c.forgeCountAll }, false)
		}
		if rl != nil {
			nw.Tap = nil // the clients' wrappers show the attacker the sessions' datagrams
			fg.inject = rl.injector(nw)
			transport = func(i int) rollback.Transport {
				ep := nw.Endpoint(i)
				return fg.wrap(i, rl.clients[i], func([]byte) bool { return ep.Injected() || c.forgeCountAll }, true)
			}
		}
	}
	rn, err := prepare(c, transport, func(i int) func() time.Duration { return nw.Clock(i) },
		func(i int) io.Reader { return seededRand(c.Seed, c.randSalt, i) })
	if err != nil {
		r.Err = err
		return r
	}
	if fg != nil {
		fg.bind(rn)
	}
	// Each machine runs its own 60 Hz loop on its own clock, paced like
	// pacer.Pacer (late frames are caught up, up to 250 ms); the network
	// moves in 1 ms steps.
	const step = time.Millisecond
	deadline := make([]time.Duration, machines)
	limit := time.Duration(4*ticksFor(c, c.Frames)+3600)*Tick + 10*c.Profile.Latency + c.HandshakeTimeout
	var detectedAt time.Duration
	specTick := 0           // the next spectator tick
	var gapAt time.Duration // the next frame-gap sample, in network time
	frames := make([]rollback.Frame, machines)
	for nw.Now() < limit {
		if fg != nil {
			fg.injectUntil(nw, nw.Now())
		}
		rn.retarget()
		done := true
		for i := range rn.ms {
			if !nw.Frozen(i) {
				now := nw.NodeNow(i)
				if now-deadline[i] > 250*time.Millisecond {
					deadline[i] = now
				}
				for now >= deadline[i] && !nw.Frozen(i) {
					deadline[i] += Tick
					_, err := rn.tick(i)
					rl.flush(i)
					if err != nil && !rn.adversaryFailed(i, err) && !rn.detected(&r, i, err) {
						r.Err = err
						return r
					}
				}
			}
			done = done && rn.ms[i].finished
		}
		if rl != nil {
			rl.poll(nw, c)
		}
		if rn.script != nil {
			done = rn.over(nw.Now(), func(i int) bool { return rn.ms[i].finished })
		}
		for ; len(rn.watchers) > 0 && time.Duration(specTick)*Tick <= nw.Now(); specTick++ {
			for k := range rn.watchers {
				if w := &rn.watchers[k]; w.s == nil && w.join <= specTick && !w.done {
					node := nw.AddNode()
					w.node = node // a netsim endpoint's peer n < node is node n
					if err := rn.startSpectator(k, nw.Endpoint(node), rn.parentNode(k), nw.Now, seededRand(c.Seed, 0x5bec, node)); err != nil {
						r.Err = err
						return r
					}
				}
				rn.tickSpectator(k, specTick)
			}
		}
		done = done && rn.spectatorsDone()
		for ; gapAt <= nw.Now(); gapAt += Tick {
			target := rollback.Frame(rn.target.Load())
			for i := range rn.ms {
				frames[i] = rn.ms[i].counted(target)
			}
			rn.gaps.sample(frames)
		}
		if r.Detected != nil {
			// The match is over; the machines keep exchanging their states
			// until the report names the field, for up to 5 seconds.
			if detectedAt == 0 {
				detectedAt = nw.Now()
			}
			if (allNamed(r.Reported) && (!c.Bundle || allTraced(r.Reported, r.Traced))) || nw.Now()-detectedAt > 5*time.Second {
				break
			}
		} else if done {
			r.Completed = true
			break
		}
		nw.Advance(step)
	}
	r.Ticks = int(nw.Now() / Tick)
	rl.decided(rn, &r)
	rn.finish(&r)
	rn.others(&r)
	wire(nw, machines, rl, &r)
	if c.Log {
		for i := range rn.ms {
			r.Logs = append(r.Logs, rn.ms[i].log.Bytes())
		}
	}
	return r
}

// setClocks applies c's clock skew, start spread and freezes.
func setClocks(nw *netsim.Network, c Config, machines int) error {
	for i := range machines {
		var clk netsim.NodeClock
		if i > 0 {
			clk.Offset = -c.StartSpread // the host (machine 0) starts first
		}
		if i == machines-1 && c.Skew != 0 {
			clk.Rate = 1 - c.Skew
		}
		if err := nw.SetNodeClock(i, clk); err != nil {
			return err
		}
		if c.Slow && i == c.SlowMachine {
			if err := slowFreezes(nw, c, i); err != nil {
				return err
			}
		}
		if c.Hiccups > 0 {
			r := rand.New(rand.NewPCG(c.Seed, uint64(i)+77))
			minutes := float64(c.Frames) / 3600
			for range int(float64(c.Hiccups)*minutes + 0.5) {
				at := time.Duration(r.Int64N(int64(time.Duration(c.Frames) * Tick)))
				if err := nw.AddFreeze(i, netsim.Freeze{At: at, For: 200 * time.Millisecond}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ticksFor is how many 60 Hz ticks frames simulation frames take.
func ticksFor(c Config, frames int) int {
	if c.Lockstep && c.TickRate > 0 {
		return frames * 60 / c.TickRate
	}
	return frames
}

func machinesOf(c Config) int {
	if c.Machines == 0 {
		return c.Players
	}
	return c.Machines
}

// run is one match in progress.
type run struct {
	c        Config
	size     int
	ms       []machine
	watchers []watcher        // Config.Spectators
	truth    []rollback.Input // truth[f*players+p]: the input player p really gave for frame f
	// repeated[f*players+p]: with the relay clock, player p's machine
	// caught up frame f on its own, its input of f-1 repeated.
	repeated []bool
	dropping bool
	target   atomic.Int32 // end, shared with the UDP runner's goroutines
	clockOf  func(i int) func() time.Duration

	rejoinMu  sync.Mutex
	rejoin    RejoinReport     // Config.RejoinAfter
	back      []rollback.Frame // by machine: its take-over frame, as the others saw it; -1: none
	rejoinWhy string           // the machines disagreed on its frames

	// With an adversary: the match's script, the adversary's own session
	// error, and when every honest machine was first done (+1; 0: not yet).
	script     *liar.Script
	advErr     error
	honestDone atomic.Int64

	gaps frameGaps // netsim only: the loop that owns the network time samples it

	advMu  sync.Mutex
	advSum float64 // |windowed input advantage| summed over peer pairs and windows
	advN   int
	advMax float64
}

// retarget moves the end of the match to the furthest frame any machine
// has reached: lowering the input lag simulates queued frames at once, so
// a machine can pass c.Frames, and every machine must stop on the same
// frame for the states to be compared. Safe to call concurrently.
func (rn *run) retarget() {
	t := rollback.Frame(rn.c.Frames)
	for i := range rn.ms {
		if !rn.ms[i].dead.Load() {
			t = max(t, rn.ms[i].frame.Load())
		}
	}
	rn.target.Store(int32(min(t, rollback.Frame(rn.c.Frames+maxInputLag))))
}

func prepare(c Config, transport func(i int) rollback.Transport, clock func(i int) func() time.Duration, rnd func(i int) io.Reader) (*run, error) {
	machines := machinesOf(c)
	if c.Players < 1 || c.Players > arena.MaxShips || c.Frames < 1 || machines < 1 || machines > c.Players {
		return nil, fmt.Errorf("%w: %d players on %d machines, %d frames", ErrConfig, c.Players, machines, c.Frames)
	}
	rn := &run{c: c, size: c.ArenaSize, ms: make([]machine, machines), clockOf: clock,
		rejoin:   RejoinReport{From: -1, Back: -1},
		truth:    make([]rollback.Input, (c.Frames+maxInputLag+1)*c.Players),
		repeated: make([]bool, (c.Frames+maxInputLag+1)*c.Players),
		dropping: c.DropAt > 0 && c.DropMachine >= 0 && c.DropMachine < machines}
	if err := checkAdversary(c, machines); err != nil {
		return nil, err
	}
	if err := checkLate(c, machines); err != nil {
		return nil, err
	}
	rn.back = make([]rollback.Frame, machines)
	for i := range rn.back {
		rn.back[i] = -1
	}
	if c.Adversary != liar.None {
		rn.script = &liar.Script{Kind: c.Adversary}
	}
	if rn.size == 0 {
		rn.size = 64 << 10
	}
	playersOf := func(i int) []rollback.PlayerID {
		var ps []rollback.PlayerID
		for p := i; p < c.Players; p += machines {
			ps = append(ps, rollback.PlayerID(p))
		}
		return ps
	}
	for i := range rn.ms {
		m := &rn.ms[i]
		m.players = playersOf(i)
		var err error
		if m.a, err = savestate.New(rn.size); err == nil {
			m.g, err = arena.New(m.a, c.Players, c.Seed)
		}
		if err != nil {
			return nil, err
		}
		if err := newMachineSound(m, clock(i)); err != nil {
			return nil, err
		}
		m.shown = make([]time.Duration, c.Frames+maxInputLag+1)
		g := m.g
		m.render = func() { _ = g.World().Ships[0].X } // through the handle: it sees the extrapolated state
		var peers []rollback.Peer
		for j := range machines {
			if j != i {
				_, late := lateAt(c, j)
				peers = append(peers, rollback.Peer{Players: playersOf(j), Late: late})
			}
		}
		var tr rollback.Transport
		if machines > 1 {
			tr = transport(i)
		}
		hooks := rn.hooksOf(i)
		if c.inspect != nil {
			c.inspect(i, tr, hooks)
		}
		m.suspectAt = make([]rollback.Frame, machines-1)
		for j := range m.suspectAt {
			m.suspectAt[j] = -1
		}
		var game rollback.Game = m.g
		if c.InjectDesync > 0 && i == machines-1 && machines > 1 {
			if c.InjectSystem != "" {
				m.g.SetFault(c.InjectSystem, rollback.Frame(c.InjectDesync), func(w *arena.World) { w.Ships[0].Score ^= 1 })
			} else {
				game = corrupting{m.g, rollback.Frame(c.InjectDesync)}
			}
		}
		if rn.script != nil {
			m.used = make([]rollback.PlayerInput, len(rn.truth))
			game = usedInputs{Game: m.g, step: game, players: c.Players, used: m.used}
		}
		m.mis = newMispredictions(c.Players)
		game = probedGame{Game: m.g, step: game, p: m.mis, steps: &m.work.steps}
		var rec rollback.Recorder
		if c.Record {
			m.rec = replay.NewWriter(&m.file, arena.ReplayName, arena.ReplayParams(c.Seed))
			rec = m.rec
		}
		var lh slog.Handler
		if c.Log {
			lh = slog.NewJSONHandler(&m.log, &slog.HandlerOptions{Level: slog.LevelDebug})
		}
		m.cfg = rollback.Config{Recorder: rec, Log: lh,
			Lockstep: c.Lockstep, TickRate: c.TickRate, PlayoutDelay: c.Playout, RedundantFrames: c.RedundantFrames, SendEveryTick: c.SendEveryTick,
			Players: c.Players, Local: m.players, Peers: peers, ChecksumEvery: c.ChecksumEvery,
			Layout: arena.Layout, State: m.a, Game: game, Transport: tr,
			MaxRollback: c.MaxRollback, InputLag: c.InputLag, Snapshots: c.Snapshots,
			SnapshotInterval: c.SnapshotInterval, StepCost: c.StepCost, SaveCost: c.SaveCost,
			Clock: clock(i), Rand: rnd(i), Observer: probedObserver{next: m.ledger, p: m.mis}, SessionID: sessionID(c), Timeouts: rollback.Timeouts{Disconnect: c.DisconnectTimeout, Handshake: c.HandshakeTimeout},
			FixedInputLag: c.FixedInputLag, NoFrameAdvantage: c.NoFrameAdvantage, NoStartDelay: c.NoStartDelay,
			MaxSpectators: spectatorSlots(c), RejoinWindow: c.RejoinWindow, Recover: c.Recover,
		}
		if c.Bundle {
			m.cfg.Marks = &desync.Marks{}
			m.g.SetMarks(m.cfg.Marks)
			m.cfg.Bundle = func(b *bundle.Bundle) { m.bundles = append(m.bundles, b) }
		}
		if c.Relay {
			m.cfg.Secret = relaySecret(c)
		}
		m.cfg = withTestHooks(m.cfg, hooks)
		if c.StandIn {
			a := m.a
			m.cfg.StandIn = func(f rollback.Frame, p rollback.PlayerID) rollback.Input { return standIn(a, f, p) }
		}
		if m.comeAt, m.late = lateAt(c, i); m.late {
			m.dead.Store(true) // until comeAt: restart makes its session
		} else {
			if m.s, err = rollback.NewSession(m.cfg); err != nil {
				return nil, err
			}
		}
		for _, p := range m.players {
			m.bots = append(m.bots, arena.NewBot(c.Seed*0x9e3779b97f4a7c15+uint64(p)))
			m.pending = append(m.pending, pendingInput{})
			if c.RelayClock {
				m.lastIn = append(m.lastIn, rollback.Frame(c.InputLag)-1)
			}
		}
	}
	if c.Spectators > 0 {
		rn.watchers = planSpectators(c, machines)
	}
	rn.retarget()
	return rn, nil
}

// spectatorSlots is each player machine's Config.MaxSpectators.
func spectatorSlots(c Config) int {
	if c.Spectators > 0 {
		// Each spectator may take a slot on each of its witnesses.
		return min(SpectatorsPerMachine+c.Spectators*c.Witnesses, 32)
	}
	return 0
}

// tick runs one frame of machine i: input and Advance until the last
// frame, Idle after it. It reports whether the machine has done its part:
// every frame simulated and every input confirmed, or dropped.
func (rn *run) tick(i int) (fin bool, err error) {
	c, m := &rn.c, &rn.ms[i]
	if m.dead.Load() {
		if !rn.comesBack(i) || m.rejoined {
			m.finished = true
			return true, nil
		}
		if ok, err := rn.restart(i); !ok || err != nil {
			m.finished = false // it comes back
			return false, err
		}
	}
	end := rollback.Frame(rn.target.Load())
	before := m.s.Stats()
	m.work.start()
	defer func() {
		m.frame.Store(m.s.Frame())
		m.finished = fin
		if c.TickWork {
			m.work.end(before, m.s.Stats(), m.a.Used())
		}
		rn.measure(m, before)
		rn.sample(i)
		if m.startTick == 0 && m.s.Frame() > 0 {
			m.startTick = m.ticks
		}
		m.noteReached(rollback.Frame(c.Frames))
	}()
	if rn.dropping && i == c.DropMachine && m.s.Frame() >= rollback.Frame(c.DropAt) && !m.rejoined {
		m.dead.Store(true)
		m.deadAt = rn.clockOf(i)()
		m.comeAt = m.deadAt + c.RejoinAfter
		if c.DropClean {
			_ = m.s.Close()
		}
		return true, nil
	}
	from := m.s.Frame()
	var res rollback.Result
	if m.s.Frame() < end {
		for k, p := range m.players {
			extra := false
			// Lockstep takes every input its clock has made due (one a
			// tick, more after a freeze); rollback mode one per Advance.
			for {
				f := int(m.s.InputFrame(p))
				if c.Lockstep && f >= c.Frames {
					break // no input past the end: every machine stops exactly there
				}
				if !m.pending[k].ok {
					m.pending[k] = pendingInput{m.bots[k].Next(), true}
				}
				in := m.pending[k].in
				queued, err := m.s.AddLocalInput(p, in)
				if err != nil {
					return false, fmt.Errorf("machine %d: %w", i, err)
				}
				if !queued {
					if !c.Lockstep {
						m.pending[k].ok = false // the session stalled: this tick's sample is dropped
					}
					break // lockstep: none due yet; the sample waits for its tick
				}
				m.pending[k].ok = false
				if f < len(rn.truth)/c.Players {
					rn.truth[f*c.Players+int(p)] = in
				}
				if m.lastIn != nil {
					m.lastIn[k] = rollback.Frame(f)
				}
				if !c.Lockstep && (!c.RelayClock || extra) {
					break // with the relay clock a late session takes a second (rollback.Session.AddLocalInput)
				}
				extra = true
			}
		}
		if res, err = m.s.Advance(); err != nil {
			return false, fmt.Errorf("machine %d: %w", i, err)
		}
		rn.noteRepeated(m)
	} else if res, err = m.s.Idle(); err != nil {
		return false, fmt.Errorf("machine %d: %w", i, err)
	}
	if res.Resimulated > 0 {
		m.tl.depths[min(res.Resimulated, DepthBuckets-1)]++
	}
	if res.Hitch && m.s.Frame() < end {
		m.hitches++ // not the last Advance, which waits for the inputs past the end it will never get
		for _, e := range res.Events {
			if e.Kind == rollback.EventStarved {
				m.spells++
			}
		}
	}
	m.noteEvents(res.Events)
	if c.watch != nil {
		c.watch(i, m.s, res.Events)
	}
	rn.noteRejoin(i, res.Events)
	m.afterTick(from, res.Events)
	if c.Extrapolate {
		if err := m.extrapolate(); err != nil {
			return false, fmt.Errorf("machine %d: %w", i, err)
		}
	}
	return m.s.Frame() == end && m.s.ConfirmedFrame() >= end && end == rollback.Frame(rn.target.Load()), nil
}

// corrupting is the arena game with a deliberate desync: on frame at (every
// time it is simulated) it flips the lowest bit of ship 0's score.
type corrupting struct {
	*arena.Game
	at rollback.Frame
}

func (c corrupting) Step(f rollback.Frame, in []rollback.PlayerInput) {
	c.Game.Step(f, in)
	if f == c.at {
		c.World().Ships[0].Score ^= 1
	}
}

// Recovery is one machine's recovery from a desync (Config.Recover).
type Recovery struct {
	Machine int
	Count   int          // desyncs it played on past
	Report  desync.Error // the latest (Adopted: it loaded the kept state)
	Took    time.Duration
}

// detected records err in r if it is a desync report from machine i.
func (rn *run) detected(r *Result, i int, err error) bool {
	var de *desync.Error
	if !errors.As(err, &de) {
		return false
	}
	if r.Reported == nil {
		r.Reported = make([]uint8, len(rn.ms))
		r.Reports, r.Traced = make([]*desync.Error, len(rn.ms)), make([]bool, len(rn.ms))
	}
	r.Reported[i] = max(r.Reported[i], 1)
	if de.Field != "" {
		r.Reported[i] = 2
	}
	r.Reports[i] = de
	r.Traced[i] = r.Traced[i] || de.FirstFrame > 0
	switch {
	case r.Detected == nil:
		r.Detected, r.DetectedAt = de, rn.ms[i].s.Frame()
	case de.Frame == r.Detected.Frame && told(de) > told(r.Detected):
		// The report: a later Advance returns the error again, now naming
		// the field, or the first divergent frame and system (the first
		// one is never changed).
		r.Detected = de
	}
	return true
}

// told is how much a report names: the field, and the first divergent
// frame.
func told(e *desync.Error) int {
	n := 0
	if e.Field != "" {
		n++
	}
	if e.FirstFrame > 0 {
		n++
	}
	return n
}

// allTraced reports whether every machine that reported a desync named
// the first divergent frame (Result.Traced).
func allTraced(reported []uint8, traced []bool) bool {
	for i, n := range reported {
		if n > 0 && !traced[i] {
			return false
		}
	}
	return true
}

// allNamed reports whether every machine's desync report named the field
// (Result.Reported; false before any report).
func allNamed(reported []uint8) bool {
	for _, n := range reported {
		if n != 2 {
			return false
		}
	}
	return len(reported) > 0
}

// measure samples machine m after a tick: the frame-advantage stall
// cadence and, after the first 10 seconds, each peer's input advantage
// averaged over 100-tick windows.
func (rn *run) measure(m *machine, before rollback.Stats) {
	m.ticks++
	after := m.s.Stats()
	if after.AdvantageStalls > before.AdvantageStalls {
		if m.lastAdvTick > 0 && m.ticks-m.lastAdvTick < advantage.StallPeriod(before.QueuedStalls) {
			m.cadenceBad++
		}
		m.lastAdvTick = m.ticks
	}
	if machinesOf(rn.c) < 2 {
		return
	}
	if f := m.s.Frame(); f > 0 && f <= advantage.Window {
		if m.early == nil {
			m.early = make([]advAcc, machinesOf(rn.c)-1)
		}
		for j := range m.early {
			if ps, ok := m.s.PeerStats(j); ok && ps.Verified && !ps.Disconnected {
				m.early[j].sum += float64(ps.LocalFrameLag - ps.RemoteFrameLag)
				m.early[j].n++
			}
		}
	}
	if m.ticks < settleTicks {
		return
	}
	if m.advWindow == nil {
		m.advWindow = make([]advAcc, machinesOf(rn.c)-1)
	}
	for j := range m.advWindow {
		ps, ok := m.s.PeerStats(j)
		if !ok || ps.Disconnected || !ps.Verified {
			continue
		}
		if a, full := m.advWindow[j].window(float64(ps.LocalFrameLag - ps.RemoteFrameLag)); full {
			rn.advMu.Lock()
			rn.advSum += a
			rn.advN++
			rn.advMax = max(rn.advMax, a)
			rn.advMu.Unlock()
		}
	}
}

type atomicFrame struct{ v atomic.Int32 }

func (a *atomicFrame) Load() rollback.Frame   { return rollback.Frame(a.v.Load()) }
func (a *atomicFrame) Store(f rollback.Frame) { a.v.Store(int32(f)) }

// finish gathers the statistics and, for a completed match, verifies it.
func (rn *run) finish(r *Result) {
	c, ms := rn.c, rn.ms
	rn.divergence(r)
	c.Frames = int(rn.target.Load()) // every machine stopped here
	r.DisconnectFrame = -1
	var discFrom [arena.MaxShips]rollback.Frame
	for p := range discFrom {
		discFrom[p] = rollback.Frame(c.Frames)
	}
	adv := rn.adversary()
	var backAt []rollback.Frame
	if r.Completed && (rn.dropping && c.RejoinAfter > 0 || len(c.Late) > 0) {
		if backAt = rn.absences(r, discFrom[:c.Players]); backAt == nil {
			return
		}
	}
	if rn.dropping && r.Completed && c.RejoinAfter == 0 {
		for i := range ms {
			if i == c.DropMachine || i == adv || ms[i].late {
				continue // a late machine may have come after the agreement
			}
			peer := c.DropMachine
			if peer > i {
				peer--
			}
			ps, _ := ms[i].s.PeerStats(peer)
			if !ps.DisconnectAgreed {
				r.Err = fmt.Errorf("machine %d never agreed on machine %d's disconnect", i, c.DropMachine)
				return
			}
			if r.DisconnectFrame >= 0 && ps.DisconnectFrame != r.DisconnectFrame {
				r.Desync = fmt.Sprintf("disconnect frames differ: %d and %d", r.DisconnectFrame, ps.DisconnectFrame)
				return
			}
			r.DisconnectFrame = ps.DisconnectFrame
		}
		for _, p := range ms[c.DropMachine].players {
			discFrom[p] = r.DisconnectFrame
		}
	}
	if !rn.dropping && adv < 0 {
		// Nobody was meant to leave: a peer that timed out is the match's
		// failure, not a desync of the default inputs that replaced it.
		// (With an adversary, Adversary.HonestDisconnected says it.)
		for i := range ms {
			if ms[i].s == nil {
				continue // a late machine that never came
			}
			for j := range machinesOf(c) - 1 {
				if ps, ok := ms[i].s.PeerStats(j); ok && ps.Disconnected && r.Err == nil {
					r.Err = fmt.Errorf("machine %d disconnected its peer %d (silent for longer than the disconnect timeout)", i, j)
				}
			}
		}
	}
	alive := 0
	for i := range ms {
		if ms[i].dead.Load() {
			continue
		}
		alive = i
		st := ms[i].s.Stats()
		if st.Recovered > 0 {
			r.Recoveries = append(r.Recoveries, Recovery{Machine: i, Count: st.Recovered, Report: *st.Desync, Took: st.RecoveryTime})
		}
		r.Rollbacks += st.Rollbacks
		r.ResimulatedFrames += st.ResimulatedFrames
		r.MaxRollbackFrames = max(r.MaxRollbackFrames, st.MaxRollbackFrames)
		r.MaxResimulated = max(r.MaxResimulated, st.MaxResimulated)
		r.StallFrames += st.StallFrames
		r.Hitches += ms[i].hitches
		r.HitchSpells += ms[i].spells
		r.AdvantageStalls += st.AdvantageStalls
		r.LagStalls += st.LagStalls
		for k := range r.LagFrames {
			r.LagFrames[k] += st.LagFrames[k]
		}
		r.FinalInputLag = append(r.FinalInputLag, st.InputLag)
		r.MachineAdvantageStalls = append(r.MachineAdvantageStalls, st.AdvantageStalls)
		for j := range machinesOf(rn.c) - 1 {
			if ps, ok := ms[i].s.PeerStats(j); ok {
				r.LossBursts += ps.LossBursts
				for k, n := range ps.Suspected {
					r.Suspected[k] += n
					r.Suspects += n
				}
			}
		}
		r.CadenceViolations += ms[i].cadenceBad
		r.PacketsSent += st.PacketsSent
		r.BytesSent += st.BytesSent
		r.PacketsInvalid += st.PacketsInvalid
		r.PacketsForged += st.PacketsForged
		r.Checksums = append(r.Checksums, xxhash.Sum64(ms[i].a.Bytes()))
	}
	for i := range ms {
		r.Timeline = append(r.Timeline, ms[i].tl.samples...)
		r.TickWork = append(r.TickWork, ms[i].work.ticks...)
		for d, n := range ms[i].tl.depths {
			r.RollbackDepths[d] += n
		}
		if p := ms[i].mis; p != nil {
			p.flush()
			for d, n := range p.depths {
				r.MispredictionDepths[d] += n
			}
			r.RollbacksWithoutMisprediction += p.none
		}
	}
	r.Hits = ms[alive].g.World().Hits
	for i := range ms {
		if ms[i].late {
			continue // it started when it came
		}
		if ms[i].startTick == 0 {
			r.StartTick = 0
			break
		}
		r.StartTick = max(r.StartTick, ms[i].startTick)
	}
	r.AdvantageSum, r.AdvantageWindows, r.MaxAdvantage = rn.advSum, rn.advN, rn.advMax
	r.FrameGapSum, r.FrameGapWindows, r.MaxFrameGap = rn.gaps.sum, rn.gaps.n, rn.gaps.max
	var early advAcc
	for i := range ms {
		for _, e := range ms[i].early {
			if e.n > 0 {
				early.sum += math.Abs(e.sum / float64(e.n))
				early.n++
			}
		}
	}
	if early.n > 0 {
		r.EarlyAdvantage = early.sum / float64(early.n)
	}
	if rn.script != nil {
		rn.adversaryReport(r)
	}
	if !r.Completed {
		return
	}
	truth, disc := rn.truth, discFrom[:c.Players]
	if rn.script != nil {
		var why string
		if truth, disc, why = rn.honestTruth(backAt); why != "" {
			r.Desync = why
			return
		}
	}
	var ts truthSet
	tl, err := sound.NewLedger(sound.Config{Backend: &ts})
	if err != nil {
		r.Err = err
		return
	}
	want, err := offline(c, rn.size, truth, disc, backAt, tl, nil)
	if err != nil {
		r.Err = err
		return
	}
	index := make(map[soundKey]bool, len(ts.keys))
	for _, k := range ts.keys {
		index[k] = true
	}
	for i := range ms {
		if !ms[i].dead.Load() && rn.honest(i) && !ms[i].rejoined {
			r.Sound.Add(scoreSound(&ms[i], ts.keys, index, rollback.Frame(c.Frames)))
		}
	}
	r.Want = xxhash.Sum64(want.Bytes())
	if len(rn.watchers) > 0 {
		rn.spectatorReport(c, r, truth, disc, backAt)
	}
	if c.Record {
		rn.checkReplays(r)
	}
	r.Verified = true
	k := 0
	for i := range ms {
		if ms[i].dead.Load() {
			continue
		}
		k++
		if rn.honest(i) && r.Checksums[k-1] != r.Want {
			r.Verified = false
			r.Desync = fmt.Sprintf("machine %d: %s", i, FirstDifference(want, ms[i].a))
			break
		}
	}
	r.Adversary.HonestVerified = rn.script != nil && r.Verified
	r.Rejoin.Verified = r.Rejoin.Rejoined && r.Verified
	for k := range r.Late {
		r.Late[k].Verified = r.Late[k].Rejoined && r.Verified
	}
}

// checkReplays closes every machine's replay and verifies it offline.
func (rn *run) checkReplays(r *Result) {
	for i := range rn.ms {
		m := &rn.ms[i]
		if err := m.rec.Close(); err != nil && r.ReplayErr == nil {
			r.ReplayErr = fmt.Errorf("machine %d: %w", i, err)
		}
		r.Replays = append(r.Replays, m.file.Bytes())
		rp, err := replay.Read(bytes.NewReader(m.file.Bytes()))
		var rep replay.Report
		if err == nil {
			rep, err = arena.VerifyReplay(rp, rn.size)
		}
		if err == nil && rep.Frames == rn.c.Frames && rep.Final != r.Want && rn.honest(i) {
			err = fmt.Errorf("holds every frame but ends in %016x, not %016x", rep.Final, r.Want)
		}
		if err != nil && r.ReplayErr == nil {
			r.ReplayErr = fmt.Errorf("machine %d's replay: %w", i, err)
		}
		r.ReplayFrames = append(r.ReplayFrames, rep.Frames)
	}
}

// SeededRand returns a deterministic nonce source for machine i of a match.
func SeededRand(seed uint64, i int) *rand.ChaCha8 { return seededRand(seed, 0, i) }

// seededRand is SeededRand; another salt gives another stream.
func seededRand(seed, salt uint64, i int) *rand.ChaCha8 {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	binary.LittleEndian.PutUint64(key[8:], uint64(i)+1)
	binary.LittleEndian.PutUint64(key[16:], salt)
	return rand.NewChaCha8(key)
}

// Offline replays a match without a network: it steps a fresh game through
// c.Frames frames with the given inputs (frame-major, c.Players per frame),
// every one confirmed, except that player p plays the default input with
// status Disconnected from frame discFrom[p] on (nil: nobody left). The game
// triggers its sounds through l, which may be nil.
func Offline(c Config, size int, truth []rollback.Input, discFrom []rollback.Frame, l *sound.Ledger) (*savestate.Arena, error) {
	return offline(c, size, truth, discFrom, nil, l, nil)
}

// offline is Offline; at, when not nil, sees the state at the start of
// every frame, and at the end (frame c.Frames).
// backAt, when not nil, ends each absence: player p plays its inputs again
// from frame backAt[p] on.
func offline(c Config, size int, truth []rollback.Input, discFrom, backAt []rollback.Frame, l *sound.Ledger, at func(rollback.Frame, *savestate.Arena)) (*savestate.Arena, error) {
	a, err := savestate.New(size)
	if err != nil {
		return nil, err
	}
	g, err := arena.New(a, c.Players, c.Seed)
	if err != nil {
		return nil, err
	}
	g.SetLedger(l)
	in := make([]rollback.PlayerInput, c.Players)
	for f := range c.Frames {
		if at != nil {
			at(rollback.Frame(f), a)
		}
		for p := range in {
			in[p] = rollback.PlayerInput{Input: truth[f*c.Players+p], Status: rollback.Confirmed}
			if discFrom != nil && rollback.Frame(f) >= discFrom[p] && (backAt == nil || rollback.Frame(f) < backAt[p]) {
				in[p] = rollback.PlayerInput{Status: rollback.Disconnected}
				if c.StandIn {
					in[p].Input = standIn(a, rollback.Frame(f), rollback.PlayerID(p))
				}
			}
		}
		if l != nil {
			l.Simulating(rollback.Frame(f))
		}
		g.Step(rollback.Frame(f), in)
	}
	if at != nil {
		at(rollback.Frame(c.Frames), a)
	}
	return a, nil
}

// FirstDifference names the first byte at which two arenas differ, by field.
func FirstDifference(want, got *savestate.Arena) string {
	wb, gb := want.Bytes(), got.Bytes()
	for i := range min(len(wb), len(gb)) {
		if wb[i] != gb[i] {
			return fmt.Sprintf("byte %d (%s): want %#02x, got %#02x", i, want.FieldPath(i), wb[i], gb[i])
		}
	}
	if len(wb) != len(gb) {
		return fmt.Sprintf("used size: want %d, got %d", len(wb), len(gb))
	}
	return "no difference"
}
