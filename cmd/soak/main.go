// Command soak plays many matches of the arena example over a simulated
// hostile network and proves that every one of them ended in sync.
//
// Each match runs one rollback session per machine (one per player unless
// -machines says otherwise) over netsim on a virtual
// 60 Hz clock, with bots as players, until every input is confirmed on every
// machine; then each machine's arena must equal, byte for byte, an offline
// replay of the inputs the bots really gave. Match i uses seed+i, so any
// failure is reproduced with -seed and -matches 1 and the run's other
// flags: the summary prints that command under each failed match.
//
// With -report DIR the soak writes DIR/index.html: where the run came from
// (date, commit, command, machine), a table across the profiles of
// -profiles, and per profile a table, the failed matches and plots
// (docs/soak.md). On a terminal a progress bar is drawn on stderr;
// elsewhere a plain progress line is written every few seconds.
//
//	soak [-matches 20] [-players 2] [-machines N] [-frames 3600] [-seed 1] [-profile wifi] [-json FILE] [-transport sim|tcp-model|udp]
//	     [-mode rollback|lockstep] [-tick 60] [-playout 100ms] [-forge RATE]
//	     [-adversary KIND|all] [-adversary-machine N]
//	     [-step-cost D] [-copy-cost NS] [-state-size BYTES]
//	     [-topology mesh|relay] [-relay-hops half|full]
//
// With -topology relay every machine has one link, to a relay node in the
// middle of the netsim network (package relay; with -transport udp, a
// socket of its own on loopback), which forwards the
// sessions' datagrams in envelopes merged once a tick; each hop has half
// the profile (-relay-hops full: the whole profile), so that a relayed path
// is as impaired as a mesh link. The summary and the JSON give the wire
// each machine sent and was sent (up_/down_bytes_per_machine_per_second,
// UDP/IP headers included; in the relay topology, envelopes to and from
// the relay), beside the sessions' own datagrams
// (bytes_per_peer_per_second).
//
// With -mode lockstep the sessions run in lockstep mode at -tick Hz with a
// -playout delay; the summary counts hitches (render frames a due frame
// waited for an input), and a match must not roll back. -transport
// tcp-model makes every netsim link a TCP model (docs/lockstep.md).
//
// With -forge RATE an off-path attacker who knows every address and the
// session id sends every machine RATE forged datagrams a second as if from
// the other machines' addresses, from before the handshake (offpath.Forger:
// random bytes, mangled copies of the match's datagrams, replays of an
// earlier match with the same session id, handshakes racing the real
// ones); a forged datagram a session takes as valid fails the soak.
//
// With -adversary KIND one machine of every match (-adversary-machine, or
// by default machine i%machines in match i) runs a modified protocol that
// lies as KIND says (docs/security.md, "A peer that lies"; "all": match i
// tells kind i%10+1, from machine (i%10 + i/10) % machines). Only the honest
// machines are judged: they must verify, and suspect and disconnect none
// of their own; the summary says whether and when they named the liar,
// how fast they played and their input lag.
//
// With -step-cost D the soak models a game whose Game.Step costs D: every
// tick of every machine costs its Game.Step calls × D + the bytes its
// snapshot saves and restores copied × -copy-cost (ns per byte; measured
// at the start when not given), each copy -state-size bytes (default: the
// arena's used bytes). The summary, the JSON (tick_cost) and the report
// give the CPU per simulated second and the tick cost's p50, p99 and
// maximum (docs/soak.md, "The tick-cost model"). The matches are
// unchanged.
//
// Profiles are the presets lan, wifi, continental, intercontinental, far and
// hell, or a spec such as latency=80ms,jitter=10ms,loss=2%,dup=1%,reorder=1%
// (all one-way). With -transport udp the matches run in real time over UDP
// sockets on loopback, every machine with its own socket and a 60 Hz pacer,
// the profile applied by a shaper in front of each socket. Exit status: 0 when every match completed and verified and
// the soak rolled back at least once, 1 otherwise, 2 for bad flags.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/rewindgg/rewind/cmd/soak/internal/report"
	"github.com/rewindgg/rewind/cmd/soak/internal/tickcost"
	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/desync/bundle"
	"github.com/rewindgg/rewind/internal/liar"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// Summary is the JSON report. Field names are part of the command's interface.
type Summary struct {
	Matches        int    `json:"matches"`
	Players        int    `json:"players"`
	Machines       int    `json:"machines"`
	FramesPerMatch int    `json:"frames_per_match"`
	Seed           uint64 `json:"seed"`
	Profile        string `json:"profile"`
	MaxRollback    int    `json:"max_rollback"`
	InputLag       int    `json:"input_delay"`
	Snapshots      string `json:"snapshots"`
	Transport      string `json:"transport"`
	Topology       string `json:"topology"`                // mesh or relay
	RelayHops      string `json:"relay_hops,omitempty"`    // relay: half or full, each hop's share of the profile
	RelayMoveMs    int64  `json:"relay_move_ms,omitempty"` // -relay-move: the relay died mid-match and the machines moved this long after
	// -relay-clock: the relay is the match clock, with this allowance;
	// -slow: that machine's clock is starved (match.Config.Slow).
	RelayClock       bool    `json:"relay_clock,omitempty"`
	RelayAllowanceMs float64 `json:"relay_allowance_ms,omitempty"`
	Slow             *int    `json:"slow_machine,omitempty"`
	// The relay clock's decisions (frames decided for a late machine), and
	// those a session held a different input for (0 from an honest relay).
	Decisions         int64 `json:"decisions,omitempty"`
	DecisionConflicts int64 `json:"decision_conflicts,omitempty"`
	// With -slow: the slowest other machine's speed (frames per tick from
	// its first frame to the last) over every match, and the other
	// machines' stall frames per minute per machine.
	OthersSpeedMin             float64 `json:"others_speed_min,omitempty"`
	OthersStallFramesPerMinute float64 `json:"others_stall_frames_per_minute,omitempty"`
	Mode                       string  `json:"mode"`
	TickRate                   int     `json:"tick_rate"`
	PlayoutMs                  int64   `json:"playout_ms,omitempty"` // lockstep: the playout delay (-1: none)

	Completed int `json:"completed"`
	Verified  int `json:"verified"`
	Desyncs   int `json:"desyncs"`
	Errors    int `json:"errors"`

	Rollbacks              int64   `json:"rollbacks"`
	ResimulatedFrames      int64   `json:"resimulated_frames"`
	MaxRollbackFrames      int     `json:"max_rollback_frames"`
	MaxResimulatedFrames   int     `json:"max_resimulated_frames"`
	RollbacksPer100Frames  float64 `json:"rollbacks_per_100_frames"`
	MatchesWithoutRollback int     `json:"matches_without_rollback"`
	StallFrames            int64   `json:"stall_frames"`
	// The misprediction depth of a rollback is how many frames before the
	// present its first mispredicted frame was (max_rollback_frames is the
	// sessions' deepest); a rollback re-simulates from a snapshot at or
	// before that frame. Means and 95th percentiles over the rollbacks;
	// the maximum depth the probe measured (internal/match).
	MispredictionDepthMean float64 `json:"misprediction_depth_mean"`
	MispredictionDepthP95  int     `json:"misprediction_depth_p95"`
	MispredictionDepthMax  int     `json:"misprediction_depth_max"`
	ResimulatedMean        float64 `json:"resimulated_per_rollback_mean"`
	ResimulatedP95         int     `json:"resimulated_per_rollback_p95"`
	// Hitches counts, in lockstep mode, the render frames (60 Hz ticks)
	// that ended with a frame due on the playout schedule still missing an
	// input; HitchesPerMinute is per machine.
	Hitches          int64   `json:"hitches"`
	HitchesPerMinute float64 `json:"hitches_per_minute"`
	// HitchSpells counts the runs of consecutive hitches: the waits a
	// player sees. HitchSpellMeanMs is their mean length.
	HitchSpells      int64   `json:"hitch_spells"`
	HitchSpellMeanMs float64 `json:"hitch_spell_mean_ms"`
	PacketsInvalid   int64   `json:"packets_invalid"`
	TransportDrops   int64   `json:"transport_drops"`
	Hits             int64   `json:"hits"`

	PacketsSent            int64   `json:"packets_sent"`
	BytesSent              int64   `json:"bytes_sent"`
	PacketsPerPeerPerFrame float64 `json:"packets_per_peer_per_frame"`
	BytesPerPeerPerSecond  float64 `json:"bytes_per_peer_per_second"`
	// The wire (netsim; over udp in the relay topology only, counted by
	// the clients and the relay), UDP/IP headers included: what each machine
	// gave the network a second, what was sent to it, and its datagrams
	// a tick. In the relay topology, envelopes to and from the relay; in
	// the mesh, the same as the sessions' own (bytes_per_peer_per_second).
	UpBytesPerMachinePerSecond   float64 `json:"up_bytes_per_machine_per_second,omitempty"`
	DownBytesPerMachinePerSecond float64 `json:"down_bytes_per_machine_per_second,omitempty"`
	UpPacketsPerMachinePerTick   float64 `json:"up_packets_per_machine_per_tick,omitempty"`

	SimulatedSeconds      float64          `json:"simulated_seconds"`
	WallSeconds           float64          `json:"wall_seconds"`
	Skew                  float64          `json:"skew"`
	Hiccups               int              `json:"hiccups_per_minute"`
	MeanAbsAdvantage      float64          `json:"mean_abs_advantage"`
	MaxAbsAdvantage       float64          `json:"max_abs_advantage"`
	MeanAbsFrameGap       float64          `json:"mean_abs_frame_gap"` // the ground truth: machines' frames apart at the same network instant (netsim)
	MaxAbsFrameGap        float64          `json:"max_abs_frame_gap"`
	EarlyAbsAdvantage     float64          `json:"early_abs_advantage"`
	StallFramesPerMinute  float64          `json:"stall_frames_per_minute"`
	AdvantageStallFrames  int64            `json:"advantage_stall_frames"`
	InputLagStallFrames   int64            `json:"input_lag_stall_frames"`
	StallCadenceViolation int              `json:"stall_cadence_violations"`
	InputLagHistogram     map[string]int64 `json:"input_lag_histogram"`
	InputLagFinal         [][]int          `json:"input_lag_final"`

	// DesyncsDetected counts the matches that a session ended with a
	// detected desync; DesyncReports describes each.
	DesyncsDetected int `json:"desyncs_detected"`
	// DesyncsNamedEverywhere counts those whose every machine that
	// reported the desync, two at least (both ends of a mismatch), named
	// the first differing field (the match runs on up to 5 s after the
	// first report for the others').
	DesyncsNamedEverywhere int `json:"desyncs_field_named_everywhere"`
	// DesyncsTracedEverywhere counts the desyncs (ended matches and
	// recoveries) whose every machine that reported it named, by itself,
	// the first divergent frame and the first system whose output
	// differs (desync.Error.FirstFrame and System: the time machine).
	DesyncsTracedEverywhere int            `json:"desyncs_system_named_everywhere"`
	DesyncReports           []DesyncReport `json:"desync_reports,omitempty"`
	ChecksumEvery           int            `json:"checksum_every"`
	InjectDesync            int            `json:"inject_desync,omitempty"`
	InjectSystem            string         `json:"inject_desync_system,omitempty"`
	// With -recover: the matches played on past a desync, the time from
	// its detection to the kept state loaded on the machine that loaded
	// it, and each recovery's report (the machine that loaded it).
	DesyncsRecovered int            `json:"desyncs_recovered,omitempty"`
	RecoveryMs       *MeanMaxMs     `json:"recovery_ms,omitempty"`
	RecoveryReports  []DesyncReport `json:"recovery_reports,omitempty"`

	// With -forge: ForgeRate is the rate, ForgedDatagrams the forged
	// datagrams sent, ForgedReceived those the sessions received (over UDP
	// the transport drops the stranger's), PacketsForged the ones a MAC
	// check caught, and ForgedAccepted those a session took as valid
	// (must be 0: any fails the soak).
	ForgeRate       int   `json:"forge_rate,omitempty"`
	ForgedDatagrams int64 `json:"forged_datagrams"`
	ForgedReceived  int64 `json:"forged_received"`
	ForgedAccepted  int64 `json:"forged_accepted"`
	PacketsForged   int64 `json:"packets_forged"`

	// Suspects counts what the sessions caught their peers at
	// (EventSuspect; every machine still playing, the adversary's own
	// suspicions included), SuspectsByKind the same by suspicion. An
	// honest soak has none.
	Suspects       int64            `json:"suspects"`
	SuspectsByKind map[string]int64 `json:"suspects_by_kind"`
	// Adversary summarizes -adversary (absent without it).
	Adversary *AdversaryJSON `json:"adversary,omitempty"`

	// With -spectators: how many spectators watched, how many ended with
	// the offline re-simulation's state at the last frame they reached,
	// the time from a spectator's start to its first frame simulated, its
	// frames simulated per tick while catching up, and the mean compressed
	// size of the states joiners received.
	Spectators         int        `json:"spectators"`
	SpectatorsVerified int        `json:"spectators_verified"`
	SpectatorsRelayed  int        `json:"spectators_relayed"`
	SpectatorsLeft     int        `json:"spectators_left_early"`
	SpectatorJoinMs    *MeanMaxMs `json:"spectator_join_ms,omitempty"`
	SpectatorCatchUp   float64    `json:"spectator_catchup_frames_per_tick"`
	JoinStateBytes     float64    `json:"join_state_bytes"`
	// With -witnesses: the spectators' sources and witnesses a vote went
	// against, the witnesses lost for any reason, and the frames whose
	// final inputs a witness confirmed.
	Witnesses          int   `json:"witnesses,omitempty"`
	SpectatorsRefuted  int   `json:"spectator_sources_refuted,omitempty"`
	WitnessesOutvoted  int   `json:"witnesses_outvoted,omitempty"`
	WitnessesLost      int   `json:"witnesses_lost,omitempty"`
	FramesCorroborated int64 `json:"frames_corroborated,omitempty"`
	// With -rejoin: the machines that crashed and came back, those whose
	// match then verified (the stand-in's inputs for their absence
	// included), and the time from the restart to the take-over.
	Rejoins         int        `json:"rejoins"`
	RejoinsVerified int        `json:"rejoins_verified"`
	RejoinMs        *MeanMaxMs `json:"rejoin_ms,omitempty"`
	// With -late-join: the machines that started mid-match in a reserved
	// slot, those whose match then verified, and the time from their
	// start to the take-over.
	LateJoins         int        `json:"late_joins"`
	LateJoinsVerified int        `json:"late_joins_verified"`
	LateJoinMs        *MeanMaxMs `json:"late_join_ms,omitempty"`

	// Sound totals every match's sound report; SoundPerMatch has each.
	Sound         SoundJSON   `json:"sound"`
	SoundPerMatch []SoundJSON `json:"sound_per_match"`
	Extrapolate   bool        `json:"extrapolate"`

	// ReplaysVerified counts the machines' replays (-record) that verified
	// offline.
	ReplaysVerified int    `json:"replays_verified"`
	RecordDir       string `json:"record_dir,omitempty"`

	// TickCost is the tick-cost model's figures (-step-cost; absent
	// without it).
	TickCost *TickCostJSON `json:"tick_cost,omitempty"`

	// WebRTC reports -transport webrtc (absent otherwise).
	WebRTC *WebRTCJSON `json:"webrtc,omitempty"`

	Passed   bool   `json:"passed"`
	Failures []Fail `json:"failures,omitempty"`
}

// Fail describes one failed match.
type Fail struct {
	Match  int    `json:"match"`
	Seed   uint64 `json:"seed"`
	Reason string `json:"reason"`
	// Flags are what reproduces the match besides -seed and -matches 1
	// (-adversary: its kind and machine).
	Flags string `json:"flags,omitempty"`
	// Reproduce is the command that plays the match again alone, with
	// every flag of the run that the match depends on.
	Reproduce string `json:"reproduce,omitempty"`
}

// AdversaryJSON summarizes the matches with an adversary (-adversary).
type AdversaryJSON struct {
	Kind    string `json:"kind"`    // the kind, or "all"
	Machine int    `json:"machine"` // the lying machine; -1 when it rotates
	Matches int    `json:"matches"`
	// Detected counts the matches in which some honest machine named the
	// adversary (EventSuspect), DetectedAtFrameMax the latest frame, over
	// them, of the first naming.
	Detected           int   `json:"detected"`
	DetectedAtFrameMax int32 `json:"detected_at_frame_max"`
	// HonestVerified counts the matches whose honest machines agreed with
	// each other and the offline re-simulation of the inputs they used.
	HonestVerified int `json:"honest_verified"`
	// HonestSpeedMin is the slowest honest machine's frames simulated per
	// 60 Hz tick, over every match; HonestInputLagMax the largest input
	// lag an honest machine simulated a frame at (5: 5 or more).
	HonestSpeedMin    float64 `json:"honest_speed_min"`
	HonestInputLagMax int     `json:"honest_input_lag_max"`
	// LookaheadFrames is the adversary's mean lookahead, averaged over the
	// matches; Lies the messages it changed or added.
	LookaheadFrames float64 `json:"lookahead_frames"`
	Lies            int64   `json:"lies"`
	// SuspectedHonest counts honest machines' suspicions of honest ones,
	// HonestDisconnected the matches in which an honest machine was
	// disconnected by another: any fails the match.
	SuspectedHonest    int64 `json:"suspected_honest"`
	HonestDisconnected int   `json:"honest_disconnected"`
	// NamedBySpectators counts the matches in which a spectator named the
	// adversary (EventSuspect: its witnesses outvoted it), and
	// SpectatorsSuspectedHonest the spectators' namings of honest
	// machines: any fails the match.
	NamedBySpectators         int   `json:"named_by_spectators"`
	SpectatorsSuspectedHonest int64 `json:"spectators_suspected_honest"`
	// Suspicions counts the honest machines' suspicions of the adversary,
	// by suspicion.
	Suspicions map[string]int64 `json:"suspicions"`
	// ByKind has the same per kind (-adversary all).
	ByKind map[string]*AdversaryJSON `json:"by_kind,omitempty"`
}

// DesyncReport is one detected desync.
type DesyncReport struct {
	Match int    `json:"match"`
	Seed  uint64 `json:"seed"`
	Frame int32  `json:"desync_detected_frame"` // the frame whose checksums differed
	// The first frame at whose start two machines' re-simulations differ,
	// and the first system whose output differs in the step before it
	// (with -inject-desync, which turns the time machine on): what the
	// machines' own reports named (desync.Error.FirstFrame and System,
	// exchanged over the network), or else what their desync bundles set
	// side by side after the match name; absent when unknown. The
	// bundles' is also given apart (offline_*): a match whose reports
	// disagree with it fails. FrameNamedBy and SystemNamedBy are the
	// machines whose report named the frame, and a system.
	DivergentFrame *int32 `json:"desync_frame,omitempty"`
	System         string `json:"desync_system,omitempty"`
	OfflineFrame   *int32 `json:"offline_desync_frame,omitempty"`
	OfflineSystem  string `json:"offline_desync_system,omitempty"`
	FrameNamedBy   []int  `json:"frame_named_by,omitempty"`
	SystemNamedBy  []int  `json:"system_named_by,omitempty"`
	DetectedAt     int32  `json:"detected_at_frame"`        // the frame the detecting machine had reached
	Field          string `json:"desync_field"`             // the first differing field and both values, when known (from the bundles when the report names none)
	Machine        int    `json:"machine,omitempty"`        // a recovery's: the machine that loaded the kept state
	NamedBy        []int  `json:"field_named_by,omitempty"` // the machines whose report named the field
}

// SoundJSON compares the Event sounds (shots, explosions) each peer heard
// with the ground truth, the offline re-simulation with every input known,
// summed over the peers (docs/soak.md).
type SoundJSON struct {
	TrueSounds     int     `json:"true_sounds"`      // true sounds × peers: what should have been heard
	Duplicates     int     `json:"duplicates"`       // a sound started while an earlier start of it still played
	Missed         int     `json:"missed"`           // a true sound with no start left playing
	Phantoms       int     `json:"phantoms"`         // starts of sounds that did not happen
	PhantomsFaded  int     `json:"phantoms_faded"`   // of those, faded out
	PhantomHeardMs float64 `json:"phantom_heard_ms"` // mean time a phantom played before its fade began
	Restarts       int     `json:"restarts"`         // true sounds faded by a correction, then started again by a later one
	LateStarts     int     `json:"late_starts"`      // true sounds started after their frame was first shown
	LateStartsMs   float64 `json:"late_starts_ms"`   // mean lateness of the true sounds heard (0 for those on time)
	LateStartMaxMs float64 `json:"late_start_max_ms"`
	Evicted        int64   `json:"history_evictions"`              // history entries pushed out during a re-simulation
	Suppressed     int64   `json:"suppressed_while_extrapolating"` // requests ignored while extrapolating
	LoopsStarted   int64   `json:"stateful_started"`               // Stateful sounds (engine loops) started
	LoopsLate      int64   `json:"stateful_started_late"`          // of those, started part-way in by a correction
	LoopsStopped   int64   `json:"stateful_stopped"`               // Stateful sounds stopped by the game or a correction
}

func soundJSON(r match.SoundReport) SoundJSON {
	j := SoundJSON{TrueSounds: r.True, Duplicates: r.Duplicates, Missed: r.Missed, Phantoms: r.Phantoms,
		PhantomsFaded: r.PhantomsFaded, Restarts: r.Restarts, LateStarts: r.LateStarts, LateStartMaxMs: r.LateMax,
		Evicted: r.Evicted, Suppressed: r.Suppressed,
		LoopsStarted: r.StatefulStarted, LoopsLate: r.StatefulLate, LoopsStopped: r.StatefulStopped}
	if heard := r.True - r.Missed; heard > 0 {
		j.LateStartsMs = round2(r.LateSum / float64(heard))
	}
	if r.PhantomsFaded > 0 {
		j.PhantomHeardMs = round2(r.PhantomSum / float64(r.PhantomsFaded))
	}
	return j
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

type options struct {
	matches, players, machines, frames, parallel, maxRollback, delay     int
	seed                                                                 uint64
	profile, jsonPath, snapshots, transport, network, record, logDir     string
	injectSystem, bundleDir                                              string
	reportDir, profiles, mode                                            string
	tick                                                                 int
	playout                                                              time.Duration
	profileNames                                                         []string
	args                                                                 []string
	matchFlags                                                           []flagWords // the flags set that a match depends on (reproduce)
	fixedLag, noSmoothing, noStartDelay, extrapolate, everyTick, recover bool
	skew                                                                 float64
	hiccups, checksumEvery, injectDesync, redundant, forge               int
	spectators, witnesses                                                int
	rejoin, lateJoin                                                     int
	startSpread, handshakeTimeout                                        time.Duration
	relay                                                                bool
	topology, relayHops                                                  string
	relayMove                                                            time.Duration
	relayClock                                                           bool
	relayAllowance                                                       time.Duration
	slow                                                                 int
	webrtc                                                               *webrtcRun // with -transport webrtc: the current profile's
	adversary                                                            string     // a liar.Kind's name, "all", or "" for none
	adversaryMachine                                                     int        // -1: rotating (options.adversaryOf)
	adversaryKind                                                        liar.Kind
	model                                                                modelFlags // -step-cost, -copy-cost, -state-size (tickcost.go)
	tickModel                                                            tickcost.Model
	snapInterval                                                         int // -snapshots every-frame: 1
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := newFlagSet(&o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return 2
		}
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 2
	}
	return o.run(fs, args, stdout, stderr)
}

// newFlagSet is the command's flags, each setting its field of o.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&o.matches, "matches", 20, "matches to play")
	fs.IntVar(&o.players, "players", 2, "players per match (2 to 8)")
	fs.IntVar(&o.machines, "machines", 0, "machines per match, 2 to -players; players are dealt round-robin (default one per player)")
	fs.IntVar(&o.frames, "frames", 3600, "frames per match")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the first match; match i uses seed+i")
	fs.StringVar(&o.profile, "profile", "wifi", "network profile: a preset or a spec like latency=80ms,jitter=10ms,loss=2%")
	fs.StringVar(&o.jsonPath, "json", "", "write the JSON summary to FILE (- for stdout)")
	fs.IntVar(&o.parallel, "parallel", runtime.GOMAXPROCS(0), "matches to run at once")
	fs.IntVar(&o.maxRollback, "maxrollback", defaultMaxRollback, "Config.MaxRollback")
	fs.IntVar(&o.delay, "delay", 0, "Config.InputLag, in frames")
	fs.StringVar(&o.snapshots, "snapshots", "adaptive", "snapshot policy: adaptive (the session's default: a ring saved every k frames, k adapted; with -step-cost it is told the model's Step and copy costs), two-backups, every-frame (the adaptive policy's ring with k fixed at 1: GGPO's save every frame) or constant-cost")
	fs.BoolVar(&o.fixedLag, "fixed-lag", false, "keep the input lag at -delay (Config.FixedInputLag)")
	fs.BoolVar(&o.noSmoothing, "no-smoothing", false, "turn frame-advantage stalls and the start delay off (Config.NoFrameAdvantage)")
	fs.BoolVar(&o.noStartDelay, "no-start-delay", false, "start without the start-of-match wait (Config.NoStartDelay)")
	fs.Var(&percentFlag{v: &o.skew, check: func(f float64) error {
		if f < 0 || f >= 0.5 {
			return errors.New("want 0 to 50%")
		}
		return nil
	}}, "skew", "the last machine's clock runs this much slow, e.g. 3% or 0.03")
	fs.IntVar(&o.hiccups, "hiccups", 0, "with -transport netsim: every machine freezes for 200 ms this many times a minute")
	fs.IntVar(&o.checksumEvery, "checksum-every", 0, "desync checksum interval in frames (Config.ChecksumEvery; 0 for 500)")
	fs.BoolVar(&o.recover, "recover", false, "every session plays on past a detected desync (Config.Recover): with -inject-desync every match must then recover and verify")
	fs.IntVar(&o.injectDesync, "inject-desync", 0, "corrupt one byte of the last machine's state (ship 0's score) at this frame; every match must then end with a detected desync")
	fs.StringVar(&o.injectSystem, "inject-desync-system", "", "with -inject-desync, corrupt the byte inside this system of the arena game (ships or shots) rather than after the step: every match's desync reports, on every machine that reported it, must then name it online, as its bundles offline (desync_system)")
	fs.StringVar(&o.bundleDir, "bundle", "", "every machine writes its first desync bundle into DIR (match-SEED-machine-I.bundle); go run ./cmd/desync sets two side by side (bundles are made with -inject-desync even without it)")
	fs.BoolVar(&o.extrapolate, "extrapolate", true, "render every tick a fraction of a frame ahead (Session.Extrapolate) and check the state is untouched")
	fs.StringVar(&o.profiles, "profiles", "", "a comma-separated list of profiles to run in turn (a matrix; overrides -profile; the JSON is then {profiles: [...], passed})")
	fs.StringVar(&o.reportDir, "report", "", "write an HTML report with plots into DIR (index.html)")
	fs.StringVar(&o.logDir, "log", "", "every machine writes its detailed network log into DIR (match-SEED-machine-I.jsonl); cmd/netlog diffs two")
	fs.StringVar(&o.record, "record", "", "every machine records a replay into DIR (match-SEED-machine-I.rwr), verified offline after the match; examples/arena/cmd/replay re-runs them")
	fs.BoolVar(&o.everyTick, "every-tick", false, "Config.SendEveryTick: send the inputs every tick (no lazy sending)")
	fs.IntVar(&o.redundant, "redundant", 0, "Config.RedundantFrames: the newest frames every input packet repeats (0 for 8, -1 for every unacknowledged frame)")
	fs.DurationVar(&o.handshakeTimeout, "handshake-timeout", 0, "Config.HandshakeTimeout (0 for 10s; a 2 s one-way link needs more)")
	fs.DurationVar(&o.startSpread, "start-spread", 0, "the host (machine 0) starts this much before the others")
	fs.StringVar(&o.transport, "transport", "netsim", "sim or netsim (virtual time), tcp-model (netsim with every link a TCP model: in order, a lost packet resent after two round trips), udp (real sockets on loopback, real time, profile applied by a shaper) or webrtc (pion data channels on loopback, in process, real time, profile applied by a shaper)")
	fs.BoolVar(&o.relay, "relay", false, "with -transport webrtc: every connection goes through a TURN relay run in process (ICE policy relay)")
	fs.StringVar(&o.topology, "topology", "mesh", "mesh (every machine linked to every other) or relay (every machine's one link is to a relay in the middle, package relay: a netsim node, or with -transport udp a socket of its own)")
	fs.StringVar(&o.relayHops, "relay-hops", "half", "with -topology relay: each hop (machine to relay, relay to machine) has half the profile, so a relayed path is as impaired as a mesh link, or full: each hop the whole profile")
	fs.BoolVar(&o.relayClock, "relay-clock", false, "with -topology relay on netsim: the relay is the match clock (relay.Clock): it decides, signed, the input of a machine late for a frame by more than -relay-allowance, and nobody stalls for it")
	fs.DurationVar(&o.relayAllowance, "relay-allowance", 0, "with -relay-clock: how late a machine's input may reach the relay (0: 40 ms plus the profile's jitter)")
	fs.IntVar(&o.slow, "slow", -1, "machine N is slow: its clock is starved, freezing 50 to 240 ms about every 2 s (match.Config.Slow); the report gives the others' speed and stalls")
	fs.DurationVar(&o.relayMove, "relay-move", 0, "with -topology relay on netsim: the relay dies at a random moment of each match's first fifth to half, and the machines move to another relay this long after (relay.Client.Move, as a lobby would move the match); 0: never")
	fs.StringVar(&o.mode, "mode", "rollback", "rollback or lockstep (Config.Mode)")
	fs.IntVar(&o.tick, "tick", defaultTickRate, "with -mode lockstep: the simulation rate in Hz (Config.TickRate; rollback runs at 60)")
	fs.DurationVar(&o.playout, "playout", 0, "with -mode lockstep: the playout delay (Config.PlayoutDelay; 0 for 100ms, negative for none)")
	fs.StringVar(&o.network, "network", "udp4", "with -transport udp: udp4 (127.0.0.1) or udp6 (::1)")
	fs.StringVar(&o.adversary, "adversary", "", "one machine of every match runs a modified protocol that lies: "+kindNames()+", or all (match i tells kind i%"+strconv.Itoa(int(liar.NumKinds)-1)+"+1)")
	fs.IntVar(&o.adversaryMachine, "adversary-machine", -1, "with -adversary: the machine that lies (-1: machine i%machines in match i; with all, each round of the kinds moves every kind to the next machine)")
	fs.IntVar(&o.lateJoin, "late-join", 0, "K player machines (not the host, nor the one -rejoin crashes) have reserved slots (rollback.Peer.Late): the match starts without them and each starts at a random time in its first half, joining in progress and taking its players from a stand-in that reads the state; each match must verify")
	fs.IntVar(&o.rejoin, "rejoin", 0, "K (0 or 1) player machines crash at a random frame and restart 1 to 10 s later (a fresh session joining in progress: rollback.Config.InProgress), taking their players back from a stand-in that reads the state; each match must verify with the absence as agreed")
	fs.IntVar(&o.witnesses, "witnesses", 0, "with -spectators: each spectator also watches through N other player machines (SpectatorConfig.Witnesses: 1 to 3, fewer than the machines) and checks its source's state and inputs against theirs")
	fs.IntVar(&o.spectators, "spectators", 0, "N spectators watch every match: a quarter join at the start, a quarter in the last second, the rest at random moments; a quarter leave early (half crash); each player machine serves "+strconv.Itoa(match.SpectatorsPerMachine)+" directly, the rest join through spectators that relay. Each must end with the offline re-simulation's state")
	o.model.add(fs)
	fs.IntVar(&o.forge, "forge", 0, "an off-path attacker sends every machine RATE forged datagrams a second as if from its peers (random, mangled copies, an earlier match's, handshakes); one taken as valid fails the soak")
	return fs
}

// run plays the soak o's flags (parsed from args by fs) describe.
func (o options) run(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	profs, policy, err := o.check(fs.NArg())
	if err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 2
	}
	for _, dir := range []string{o.record, o.logDir, o.bundleDir} {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "soak: %v\n", err)
			return 2
		}
	}
	o.args = args
	o.matchFlags = matchFlags(fs)
	human := stdout
	if o.jsonPath == "-" {
		human = stderr
	}
	if o.model.on() {
		if o.tickModel, err = o.model.model(o.players, human); err != nil {
			fmt.Fprintf(stderr, "soak: %v\n", err)
			return 2
		}
	}
	began := time.Now()
	bar := newProgress(stderr, o.matches*len(profs), len(profs) > 1)
	var sums []Summary
	var runs []report.Run
	for k, prof := range profs {
		po := o
		po.profile = o.profileNames[k]
		if o.transport == "webrtc" {
			if po.webrtc, err = newWebRTCRun(o.relay); err != nil {
				fmt.Fprintf(stderr, "soak: %v\n", err)
				return 1
			}
		}
		start := time.Now()
		results := playAll(po, prof, policy, bar)
		s := summarize(po, results, policy)
		s.WallSeconds = time.Since(start).Seconds()
		var costs tickcost.Figures
		if o.model.on() {
			s.TickCost, costs = tickCostJSON(o.tickModel, !o.model.copySet, o.players, results)
		}
		if po.webrtc != nil {
			po.webrtc.report(&s)
			po.webrtc.close()
		}
		bar.clear()
		printSummary(human, &s)
		sums = append(sums, s)
		rr := reportRun(po, &s, results)
		rr.TickCosts = costs.Costs
		runs = append(runs, rr)
	}
	var table *report.Table
	if len(sums) > 1 {
		table = profileTable(sums, runs)
		printTable(human, table)
	}
	if o.reportDir != "" {
		page := report.Page{Title: "Rewind soak report", Header: provenance(o, began), Summary: table, Runs: runs}
		if err := report.Write(o.reportDir, page); err != nil {
			fmt.Fprintf(stderr, "soak: -report: %v\n", err)
			return 1
		}
		fmt.Fprintf(human, "report: %s\n", filepath.Join(o.reportDir, "index.html"))
	}
	passed := true
	for _, s := range sums {
		passed = passed && s.Passed
	}
	if o.jsonPath != "" {
		var v any = &sums[0]
		if len(sums) > 1 {
			v = Matrix{Profiles: sums, Passed: passed}
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "soak: %v\n", err)
			return 1
		}
		b = append(b, '\n')
		if o.jsonPath == "-" {
			_, err = stdout.Write(b)
		} else {
			err = os.WriteFile(o.jsonPath, b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "soak: -json: %v\n", err)
			return 1
		}
	}
	if !passed {
		return 1
	}
	return 0
}

// MeanMaxMs is a mean and a maximum, in milliseconds.
type MeanMaxMs struct {
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// Matrix is the JSON report of a soak over several profiles (-profiles).
type Matrix struct {
	Profiles []Summary `json:"profiles"`
	Passed   bool      `json:"passed"`
}

// playAll plays o.matches matches on o.parallel workers. Each match's
// result depends only on its own seed, never on the parallelism.
func playAll(o options, prof netsim.Profile, policy rollback.SnapshotPolicy, bar *progress) []match.Result {
	results := make([]match.Result, o.matches)
	jobs := make(chan int)
	var wg sync.WaitGroup
	workers := min(o.parallel, o.matches)
	if o.transport == "udp" || o.transport == "webrtc" {
		workers = o.matches // real time: every match at once; they mostly sleep
	}
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				c := match.Config{Players: o.players, Machines: o.machines, Frames: o.frames, Seed: o.seed + uint64(i),
					Profile: prof, MaxRollback: o.maxRollback, InputLag: o.delay, Snapshots: policy,
					FixedInputLag: o.fixedLag, NoFrameAdvantage: o.noSmoothing, NoStartDelay: o.noStartDelay,
					Skew: o.skew, Hiccups: o.hiccups, StartSpread: o.startSpread, Extrapolate: o.extrapolate,
					ChecksumEvery: o.checksumEvery, InjectDesync: o.injectDesync, Recover: o.recover, Record: o.record != "", Log: o.logDir != "",
					HandshakeTimeout: o.handshakeTimeout, RedundantFrames: o.redundant, SendEveryTick: o.everyTick,
					Lockstep: o.mode == "lockstep", TickRate: o.tick, Playout: o.playout, Reliable: o.transport == "tcp-model",
					Forge: o.forge, Spectators: o.spectators, Witnesses: o.witnesses, TickWork: o.model.on(), SnapshotInterval: o.snapInterval,
					Relay: o.topology == "relay", RelayFullHops: o.relayHops == "full"}
				c.StepCost, c.SaveCost = o.modelCosts()
				c.InjectSystem, c.Bundle = o.injectSystem, o.injectDesync > 0 || o.bundleDir != ""
				c.Adversary, c.AdversaryMachine = o.adversaryOf(i)
				if o.rejoin > 0 {
					rejoinPlan(&c, o.machines)
				}
				if o.lateJoin > 0 {
					latePlan(&c, o.machines, o.lateJoin)
				}
				if o.relayMove > 0 {
					relayMovePlan(&c, o.relayMove)
				}
				c.RelayClock, c.RelayAllowance = o.relayClock, o.allowance(prof)
				c.Slow, c.SlowMachine = o.slow >= 0, max(o.slow, 0)
				switch o.transport {
				case "udp":
					results[i] = match.RunUDP(c, match.UDPOptions{Network: o.network})
				case "webrtc":
					results[i] = o.webrtc.play(c, prof)
				default:
					results[i] = match.Run(c)
				}
				if o.record != "" {
					results[i].ReplayErr = errors.Join(results[i].ReplayErr, save(o.record, c.Seed, "rwr", results[i].Replays))
				}
				if o.bundleDir != "" {
					if err := save(o.bundleDir, c.Seed, "bundle", firstBundles(results[i].Bundles)); err != nil && results[i].Err == nil {
						results[i].Err = err
					}
				}
				if o.logDir != "" {
					if err := save(o.logDir, c.Seed, "jsonl", results[i].Logs); err != nil && results[i].Err == nil {
						results[i].Err = err
					}
				}
				bar.tick(o.profile, failReason(o, &results[i]) != "")
			}
		})
	}
	for i := range o.matches {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return results
}

// progress shows how far the soak is on stderr: on a terminal a bar
// redrawn in place; elsewhere (piped, in a log) a plain line every
// progressEvery and one when the last match is done:
//
//	soak: 120/1000 matches, 0 failed, 34 s
//
// A nil *progress shows nothing.
type progress struct {
	mu        sync.Mutex
	w         io.Writer
	bar       bool // a terminal
	profiles  bool // several profiles: the line names the current one
	total, n  int
	failed    int
	every     time.Duration
	now       func() time.Time
	start     time.Time
	lastShown time.Time
}

// progressEvery is how often a plain progress line is written.
const progressEvery = 5 * time.Second

func newProgress(w io.Writer, total int, profiles bool) *progress {
	f, ok := w.(*os.File)
	p := &progress{w: w, bar: ok && isTerminal(f), profiles: profiles, total: total, every: progressEvery, now: time.Now}
	p.start = p.now()
	p.lastShown = p.start
	return p
}

// tick counts a match of profile done (failed: it failed).
func (p *progress) tick(profile string, failed bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if failed {
		p.failed++
	}
	if p.bar {
		const width = 30
		n := width * p.n / p.total
		fmt.Fprintf(p.w, "\r%-18s [%s%s] %d/%d matches", profile, strings.Repeat("#", n), strings.Repeat(" ", width-n), p.n, p.total)
		return
	}
	now := p.now()
	if p.n < p.total && now.Sub(p.lastShown) < p.every {
		return
	}
	p.lastShown = now
	fmt.Fprintln(p.w, p.line(profile, now))
}

// line is the plain progress line at now.
func (p *progress) line(profile string, now time.Time) string {
	l := fmt.Sprintf("soak: %d/%d matches, %d failed, %.0f s", p.n, p.total, p.failed, now.Sub(p.start).Seconds())
	if p.profiles {
		l += " (profile " + profile + ")"
	}
	return l
}

// clear takes the bar off the terminal before a summary is printed.
func (p *progress) clear() {
	if p != nil && p.bar {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 70))
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// reportRun is one profile's section of the HTML report.
func reportRun(o options, s *Summary, results []match.Result) report.Run {
	rows := [][2]string{
		{"matches", fmt.Sprintf("%d × %d players on %d machines × %d frames, seed %d", s.Matches, s.Players, s.Machines, s.FramesPerMatch, s.Seed)},
		{"network", fmt.Sprintf("%s over %s, %s topology", s.Profile, s.Transport, s.Topology)},
		{"verified", fmt.Sprintf("%d of %d (desyncs %d, errors %d)", s.Verified, s.Matches, s.Desyncs, s.Errors)},
		{"rollbacks", fmt.Sprintf("%d (%.1f per 100 peer-frames)", s.Rollbacks, s.RollbacksPer100Frames)},
		{"misprediction depth", fmt.Sprintf("mean %s, 95th percentile %d, deepest %d frames back", report.FormatFloat(s.MispredictionDepthMean, 2), s.MispredictionDepthP95, s.MispredictionDepthMax)},
		{"frames re-simulated", fmt.Sprintf("%d; per rollback mean %s, 95th percentile %d, longest %d", s.ResimulatedFrames, report.FormatFloat(s.ResimulatedMean, 2), s.ResimulatedP95, s.MaxResimulatedFrames)},
		{"stalls", fmt.Sprintf("%.1f frames per minute per machine (starved %d, advantage %d, input lag %d)", s.StallFramesPerMinute, s.StallFrames, s.AdvantageStallFrames, s.InputLagStallFrames)},
		{"fairness", fmt.Sprintf("mean |advantage| %.2f frames, max %.2f; frames apart %.2f, max %.2f", s.MeanAbsAdvantage, s.MaxAbsAdvantage, s.MeanAbsFrameGap, s.MaxAbsFrameGap)},
		{"bandwidth", fmt.Sprintf("%.0f B/s per peer, %.2f packets per peer per frame", s.BytesPerPeerPerSecond, s.PacketsPerPeerPerFrame)},
		{"sound", fmt.Sprintf("%d true, %d duplicates, %d missed, %d/%d phantoms faded", s.Sound.TrueSounds, s.Sound.Duplicates, s.Sound.Missed, s.Sound.PhantomsFaded, s.Sound.Phantoms)},
		{"verdict", map[bool]string{true: "PASS", false: "FAIL"}[s.Passed]},
	}
	if a := s.Adversary; a != nil {
		rows = append(rows[:len(rows)-1],
			[2]string{"adversary", fmt.Sprintf("%s on %s: named in %d of %d matches (by frame %d at the latest); honest machines verified in %d, speed at least %.3f, input lag at most %d; %d suspicions of honest machines, %d honest disconnects",
				a.Kind, machineName(a.Machine), a.Detected, a.Matches, a.DetectedAtFrameMax, a.HonestVerified, a.HonestSpeedMin, a.HonestInputLagMax, a.SuspectedHonest, a.HonestDisconnected)},
			rows[len(rows)-1])
	}
	if s.DesyncsDetected > 0 || s.DesyncsRecovered > 0 {
		rows = append(rows[:len(rows)-1], [2]string{"desyncs", desyncLine(s)}, rows[len(rows)-1])
	}
	if s.Mode == "lockstep" {
		rows = append(rows[:len(rows)-1],
			[2]string{"lockstep", fmt.Sprintf("%d Hz, playout delay %d ms: %d hitches (%.2f per minute per machine) in %d waits of %.0f ms on average",
				s.TickRate, max(0, s.PlayoutMs), s.Hitches, s.HitchesPerMinute, s.HitchSpells, s.HitchSpellMeanMs)},
			rows[len(rows)-1])
	}
	if t := s.TickCost; t != nil {
		rows = append(rows[:len(rows)-1],
			[2]string{"tick cost (model)", fmt.Sprintf("Step %v, copy %s ns per byte × %d bytes: %s ms CPU per simulated second; tick p50 %s ms, p99 %s ms, maximum %s ms",
				time.Duration(t.StepCostNs), formatNs(t.CopyNsPerByte), t.CopyBytes, report.FormatFloat(t.CPUMsPerSecond, 3),
				report.FormatFloat(t.P50Ms, 3), report.FormatFloat(t.P99Ms, 3), report.FormatFloat(t.MaxMs, 3))},
			rows[len(rows)-1])
	}
	run := report.Run{Profile: s.Profile, Rows: rows, Results: results, Desyncs: desyncTable(s)}
	for _, f := range s.Failures {
		if f.Match >= 0 {
			run.Failures = append(run.Failures, report.Failure{Match: f.Match, Seed: f.Seed, Reason: f.Reason, Repro: f.Reproduce})
		}
	}
	return run
}

// desyncTable lists the desyncs of a run, the first 50 of each kind: the
// report's section (nil for none).
func desyncTable(s *Summary) *report.Table {
	if len(s.DesyncReports)+len(s.RecoveryReports) == 0 {
		return nil
	}
	t := &report.Table{Columns: []string{"match", "seed", "outcome", "checksum frame", "first divergent frame", "first system", "field"}}
	add := func(reps []DesyncReport, outcome func(DesyncReport) string) {
		for _, r := range reps[:min(len(reps), 50)] {
			frame := "?"
			if r.DivergentFrame != nil {
				frame = strconv.Itoa(int(*r.DivergentFrame))
			}
			t.Rows = append(t.Rows, []string{strconv.Itoa(r.Match), strconv.FormatUint(r.Seed, 10), outcome(r), strconv.Itoa(int(r.Frame)), frame, orUnknown(r.System), orUnknown(r.Field)})
		}
	}
	add(s.DesyncReports, func(DesyncReport) string { return "ended the match" })
	add(s.RecoveryReports, func(r DesyncReport) string {
		return fmt.Sprintf("recovered: machine %d loaded the kept state", r.Machine)
	})
	return t
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// desyncLine says what the desyncs of a run were: those that ended a
// match, those played on past (-recover), the time to the kept state
// loaded, and the first report's frame and field.
func desyncLine(s *Summary) string {
	line := fmt.Sprintf("%d ended a match (%d named the field on every machine), %d recovered from", s.DesyncsDetected, s.DesyncsNamedEverywhere, s.DesyncsRecovered)
	if m := s.RecoveryMs; m != nil {
		line += fmt.Sprintf(" (the kept state loaded %s ms after the detection on average, %s at most)", report.FormatFloat(m.Mean, 0), report.FormatFloat(m.Max, 0))
	}
	if s.DesyncsDetected+s.DesyncsRecovered > 0 {
		line += fmt.Sprintf("; %d named the first divergent frame and system on every machine that reported them", s.DesyncsTracedEverywhere)
	}
	reps := s.DesyncReports
	if len(reps) == 0 {
		reps = s.RecoveryReports
	}
	if len(reps) > 0 {
		line += fmt.Sprintf("; first: frame %d, %s", reps[0].Frame, reps[0].Field)
		if r := reps[0]; r.DivergentFrame != nil {
			line += fmt.Sprintf(" (first divergent frame %d", *r.DivergentFrame)
			if r.System != "" {
				line += ", system " + r.System
			}
			line += ")"
		}
	}
	return line
}

// profileTable compares the profiles of a -profiles run, one row each.
func profileTable(sums []Summary, runs []report.Run) *report.Table {
	t := &report.Table{Columns: []string{"profile", "verdict", "verified", "failed", "rollbacks per 100 peer-frames",
		"misprediction depth mean / p95 / max", "re-simulated per rollback mean / p95 / max", "stalled frames per minute",
		"mean |advantage|", "bytes/s per peer", "RTT p95 (ms)"}}
	for k, s := range sums {
		var rtts []float64
		for _, r := range runs[k].Results {
			for _, smp := range r.Timeline {
				if smp.RTT > 0 {
					rtts = append(rtts, smp.RTT)
				}
			}
		}
		rtt := "–"
		if len(rtts) > 0 {
			slices.Sort(rtts)
			rtt = report.FormatFloat(rtts[int(math.Ceil(0.95*float64(len(rtts))))-1], 0)
		}
		failed := 0
		for _, f := range s.Failures {
			if f.Match >= 0 {
				failed++
			}
		}
		t.Rows = append(t.Rows, []string{s.Profile, map[bool]string{true: "PASS", false: "FAIL"}[s.Passed],
			fmt.Sprintf("%d/%d", s.Verified, s.Matches), strconv.Itoa(failed),
			report.FormatFloat(s.RollbacksPer100Frames, 2),
			fmt.Sprintf("%s / %d / %d", report.FormatFloat(s.MispredictionDepthMean, 2), s.MispredictionDepthP95, s.MispredictionDepthMax),
			fmt.Sprintf("%s / %d / %d", report.FormatFloat(s.ResimulatedMean, 2), s.ResimulatedP95, s.MaxResimulatedFrames),
			report.FormatFloat(s.StallFramesPerMinute, 1), report.FormatFloat(s.MeanAbsAdvantage, 2),
			report.FormatFloat(s.BytesPerPeerPerSecond, 0), rtt})
	}
	return t
}

// printTable prints t with its columns aligned, under "profiles:".
func printTable(w io.Writer, t *report.Table) {
	fmt.Fprintln(w, "profiles:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  "+strings.Join(t.Columns, "\t"))
	for _, r := range t.Rows {
		fmt.Fprintln(tw, "  "+strings.Join(r, "\t"))
	}
	tw.Flush()
}

// provenance is the report's header: when, from which commit, by which
// command, on which machine.
func provenance(o options, began time.Time) [][2]string {
	cmd := append(soakCommand(o.adversary != ""), quoteAll(o.args)...)
	return [][2]string{
		{"date", began.UTC().Format("2006-01-02 15:04:05 UTC")},
		{"commit", commit()},
		{"command", strings.Join(cmd, " ")},
		{"machine", fmt.Sprintf("%s/%s, %d CPUs (GOMAXPROCS %d, -parallel %d), %s", runtime.GOOS, runtime.GOARCH,
			runtime.NumCPU(), runtime.GOMAXPROCS(0), o.parallel, runtime.Version())},
		{"took", fmt.Sprintf("%.1f s", time.Since(began).Seconds())},
	}
}

// commit is the commit the soak was built from: the build's VCS stamp
// (go build in a checkout), else git's HEAD in the working directory
// (go run and go test do not stamp one), with a note when the tree had
// uncommitted changes.
func commit() string {
	const dirty = " (with uncommitted changes)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.modified":
				modified = kv.Value
			}
		}
		if rev != "" {
			if modified == "true" {
				rev += dirty
			}
			return rev
		}
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown (no VCS stamp in the build, and no git checkout here)"
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		rev += dirty
	}
	return rev
}

// flagWords is one flag as the reproduce command gives it.
type flagWords struct {
	name  string
	words []string
}

// notForMatch are the flags that change nothing in a match, or that the
// reproduce command gives itself (-profile, -seed, -matches 1).
var notForMatch = map[string]bool{"matches": true, "seed": true, "profile": true, "profiles": true,
	"json": true, "report": true, "parallel": true, "step-cost": true, "copy-cost": true, "state-size": true}

// matchFlags is every flag given on fs's command line that a match
// depends on, as the reproduce command writes it (by name: -name value,
// a boolean as -name or -name=false), with its value as parsed.
func matchFlags(fs *flag.FlagSet) []flagWords {
	var out []flagWords
	fs.Visit(func(f *flag.Flag) {
		if notForMatch[f.Name] {
			return
		}
		v := f.Value.String()
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			w := "-" + f.Name
			if v != "true" {
				w += "=" + v
			}
			out = append(out, flagWords{f.Name, []string{w}})
			return
		}
		out = append(out, flagWords{f.Name, []string{"-" + f.Name, shellQuote(v)}})
	})
	return out
}

// reproduce is the command line that plays one match of a soak again
// alone: every flag of the run that the match depends on, -profile (the
// match's, from -profiles too), -seed (the match's) and -matches 1; the
// outputs (-json, -report) and -parallel are left out. flags, when not
// empty, replace -adversary and -adversary-machine (the match's own kind
// and machine, with -adversary all or a rotating machine).
func reproduce(set []flagWords, profile string, seed uint64, flags string) string {
	adversary := flags != ""
	for _, f := range set {
		adversary = adversary || f.name == "adversary"
	}
	out := soakCommand(adversary)
	for _, f := range set {
		if flags != "" && (f.name == "adversary" || f.name == "adversary-machine") {
			continue
		}
		out = append(out, f.words...)
	}
	out = append(out, "-profile", shellQuote(profile), "-seed", strconv.FormatUint(seed, 10), "-matches", "1")
	if flags != "" {
		out = append(out, flags)
	}
	return strings.Join(out, " ")
}

// soakCommand is how to run this command again from the repository's
// root: with the build tag its adversary needs when the run has one.
func soakCommand(adversary bool) []string {
	if adversary {
		return []string{"go", "run", "-tags", "rewind_adversary", "./cmd/soak"}
	}
	return []string{"go", "run", "./cmd/soak"}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=,.%:/+@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return out
}

// percentFlag is a fraction given as 3% or 0.03; String gives it back as
// it was given.
type percentFlag struct {
	v     *float64
	raw   string
	check func(float64) error
}

func (p *percentFlag) String() string {
	if p == nil {
		return ""
	}
	return p.raw
}

func (p *percentFlag) Set(s string) error {
	f, err := parsePercent(s)
	if err == nil {
		err = p.check(f)
	}
	*p.v, p.raw = f, s
	return err
}

// save writes one match's files (replays, logs) into dir, one per machine.
func save(dir string, seed uint64, ext string, files [][]byte) error {
	for i, b := range files {
		name := filepath.Join(dir, fmt.Sprintf("match-%d-machine-%d.%s", seed, i, ext))
		if err := os.WriteFile(name, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// firstBundles returns each machine's first desync bundle's file (none
// for a machine that made none).
func firstBundles(bs [][]*bundle.Bundle) [][]byte {
	var out [][]byte
	for _, b := range bs {
		if len(b) > 0 {
			out = append(out, b[0].Encode())
		}
	}
	return out
}

// splitProfiles splits a -profiles list at commas, keeping a spec's
// key=value parts together: "lan,latency=80ms,loss=2%,far" is lan, one
// spec, and far.
func splitProfiles(list string) []string {
	var out []string
	for _, part := range strings.Split(list, ",") {
		if n := len(out); n > 0 && strings.Contains(part, "=") && strings.Contains(out[n-1], "=") {
			out[n-1] += "," + part
			continue
		}
		out = append(out, part)
	}
	return out
}

func parsePercent(v string) (float64, error) {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		return f / 100, err
	}
	return strconv.ParseFloat(v, 64)
}

func (o *options) check(nargs int) ([]netsim.Profile, rollback.SnapshotPolicy, error) {
	if o.machines == 0 {
		o.machines = o.players
	}
	switch {
	case nargs > 0:
		return nil, 0, errors.New("unexpected arguments (all settings are flags)")
	case o.matches < 1:
		return nil, 0, fmt.Errorf("-matches: %d (want at least 1)", o.matches)
	case o.players < 2 || o.players > rollback.MaxPlayers:
		return nil, 0, fmt.Errorf("-players: %d (want 2 to %d)", o.players, rollback.MaxPlayers)
	case o.machines < 2 || o.machines > o.players:
		return nil, 0, fmt.Errorf("-machines: %d (want 2 to -players, %d)", o.machines, o.players)
	case o.frames < 1:
		return nil, 0, fmt.Errorf("-frames: %d (want at least 1)", o.frames)
	case o.parallel < 1:
		return nil, 0, fmt.Errorf("-parallel: %d (want at least 1)", o.parallel)
	case o.injectSystem != "" && o.injectSystem != "ships" && o.injectSystem != "shots":
		return nil, 0, fmt.Errorf("-inject-desync-system: %q (the arena's systems are ships and shots)", o.injectSystem)
	case o.injectSystem != "" && o.injectDesync <= 0:
		return nil, 0, errors.New("-inject-desync-system needs -inject-desync")
	case o.hiccups < 0:
		return nil, 0, fmt.Errorf("-hiccups: %d (want 0 or more)", o.hiccups)
	case o.startSpread < 0:
		return nil, 0, fmt.Errorf("-start-spread: %v (want 0 or more)", o.startSpread)
	case o.rejoin < 0 || o.rejoin > 1:
		return nil, 0, fmt.Errorf("-rejoin: %d (want 0 or 1)", o.rejoin)
	case o.rejoin > 0 && (o.mode == "lockstep" || o.transport == "tcp-model"):
		return nil, 0, errors.New("-rejoin: only in rollback mode over netsim or udp")
	case o.lateJoin < 0 || o.lateJoin+o.rejoin > o.machines-1:
		return nil, 0, fmt.Errorf("-late-join: %d (want 0 to %d: neither the host nor the machine -rejoin crashes)", o.lateJoin, o.machines-1-o.rejoin)
	case o.lateJoin > 0 && (o.mode == "lockstep" || o.spectators > 0 || o.record != ""):
		return nil, 0, errors.New("-late-join: only in rollback mode, without -spectators or -record")
	case o.witnesses < 0 || o.witnesses > 3 || (o.witnesses > 0 && (o.spectators == 0 || o.transport == "udp" || o.witnesses >= o.machines)):
		return nil, 0, fmt.Errorf("-witnesses: %d (want 0 to 3, fewer than the machines, with -spectators over netsim)", o.witnesses)
	case o.spectators < 0 || o.spectators > maxSpectators:
		return nil, 0, fmt.Errorf("-spectators: %d (want 0 to %d)", o.spectators, maxSpectators)
	case o.spectators > 0 && (o.transport == "tcp-model" || o.mode == "lockstep"):
		return nil, 0, errors.New("-spectators: only over netsim or udp in rollback mode")
	case o.forge < 0 || o.forge > maxForge:
		return nil, 0, fmt.Errorf("-forge: %d (want 0 to %d forged datagrams a second per machine)", o.forge, maxForge)
	case o.model.step < 0:
		return nil, 0, fmt.Errorf("-step-cost: %v (want 0, the model off, or more)", o.model.step)
	case !o.model.on() && (o.model.copySet || o.model.stateSize > 0):
		return nil, 0, errors.New("-copy-cost and -state-size: only with -step-cost (the tick-cost model)")
	}
	if err := o.checkAdversary(); err != nil {
		return nil, 0, err
	}
	if o.transport == "sim" {
		o.transport = "netsim"
	}
	switch {
	case (o.transport == "udp" || o.transport == "webrtc") && (o.skew != 0 || o.hiccups != 0 || o.startSpread != 0):
		return nil, 0, errors.New("-skew, -hiccups and -start-spread: only with -transport netsim (real clocks cannot be skewed here)")
	case o.transport != "netsim" && o.transport != "udp" && o.transport != "tcp-model" && o.transport != "webrtc":
		return nil, 0, fmt.Errorf("-transport: %q (want sim, tcp-model, udp or webrtc)", o.transport)
	case o.transport == "webrtc" && (o.spectators > 0 || o.forge > 0 || o.rejoin > 0 || o.lateJoin > 0):
		return nil, 0, errors.New("-transport webrtc: without -spectators, -forge, -rejoin and -late-join (they need sockets of their own: use -transport udp)")
	case o.relay && o.transport != "webrtc":
		return nil, 0, errors.New("-relay: only with -transport webrtc")
	case o.topology != "mesh" && o.topology != "relay":
		return nil, 0, fmt.Errorf("-topology: %q (want mesh or relay)", o.topology)
	case o.relayHops != "half" && o.relayHops != "full":
		return nil, 0, fmt.Errorf("-relay-hops: %q (want half or full)", o.relayHops)
	case o.relayClock && (o.topology != "relay" || o.transport != "netsim" || o.relayMove > 0 || o.mode == "lockstep"):
		return nil, 0, errors.New("-relay-clock: with -topology relay on netsim, in rollback mode, without -relay-move (not built yet)")
	case o.relayAllowance < 0 || o.relayAllowance > 0 && !o.relayClock:
		return nil, 0, errors.New("-relay-allowance: a duration ≥ 0, with -relay-clock")
	case o.slow >= o.machines || o.slow < -1:
		return nil, 0, fmt.Errorf("-slow: %d (want a machine, 0 to %d)", o.slow, o.machines-1)
	case o.relayMove < 0 || o.relayMove > 0 && (o.topology != "relay" || o.transport != "netsim"):
		return nil, 0, errors.New("-relay-move: a duration ≥ 0, with -topology relay on netsim")
	case o.topology == "relay" && (o.transport == "tcp-model" || o.transport == "webrtc" || o.spectators > 0 || o.forge > 0 && o.transport != "netsim"):
		return nil, 0, errors.New("-topology relay: only with -transport netsim or udp, without -spectators, and -forge only on netsim (not built yet)")
	case o.mode != "rollback" && o.mode != "lockstep":
		return nil, 0, fmt.Errorf("-mode: %q (want rollback or lockstep)", o.mode)
	case o.network != "udp4" && o.network != "udp6":
		return nil, 0, fmt.Errorf("-network: %q (want udp4 or udp6)", o.network)
	}
	if o.mode == "lockstep" {
		o.maxRollback = 0 // lockstep never rolls back (and rejects a MaxRollback)
	}
	var policy rollback.SnapshotPolicy // the zero value: adaptive
	switch o.snapshots {
	case policy.String():
	case everyFrame:
		o.snapInterval = 1
	case rollback.TwoBackups.String():
		policy = rollback.TwoBackups
	case rollback.ConstantCost.String():
		policy = rollback.ConstantCost
	default:
		return nil, 0, fmt.Errorf("-snapshots: %q (want adaptive, two-backups, every-frame or constant-cost)", o.snapshots)
	}
	if err := checkConfig(o, policy); err != nil {
		return nil, 0, err
	}
	if o.tick == 0 {
		o.tick = defaultTickRate // 0 means the default, as in Config
	}
	flagName, names := "-profile", []string{o.profile}
	if o.profiles != "" {
		flagName, names = "-profiles", splitProfiles(o.profiles)
	}
	var profs []netsim.Profile
	for _, name := range names {
		prof, err := netsim.ParseProfile(name)
		if err != nil {
			var presets []string
			for _, p := range netsim.Presets {
				presets = append(presets, p.Name)
			}
			return nil, 0, fmt.Errorf("%s: %v (presets: %s)", flagName, err, strings.Join(presets, ", "))
		}
		profs = append(profs, prof)
	}
	o.profileNames = names
	return profs, policy, nil
}

func summarize(o options, rs []match.Result, policy rollback.SnapshotPolicy) Summary {
	s := Summary{Skew: o.skew, Hiccups: o.hiccups, InputLagHistogram: map[string]int64{},
		Matches: o.matches, Players: o.players, Machines: o.machines, FramesPerMatch: o.frames, Seed: o.seed,
		Profile: o.profile, MaxRollback: o.maxRollback, InputLag: o.delay, Snapshots: o.snapshots, Transport: o.transport, Topology: o.topology,
		Mode: o.mode, TickRate: o.tick, PlayoutMs: playoutMs(o),
		Extrapolate: o.extrapolate, ChecksumEvery: o.checksumEvery, InjectDesync: o.injectDesync, InjectSystem: o.injectSystem, RecordDir: o.record,
		ForgeRate: o.forge}
	if s.ChecksumEvery == 0 {
		s.ChecksumEvery = desync.DefaultEvery
	}
	if o.topology == "relay" {
		s.RelayHops, s.RelayMoveMs = o.relayHops, o.relayMove.Milliseconds()
	}
	if o.relayClock {
		s.RelayClock = true
		if p, err := netsim.ParseProfile(o.profile); err == nil {
			s.RelayAllowanceMs = float64(o.allowance(p)) / float64(time.Millisecond)
		}
	}
	var othersStalls int64
	if o.slow >= 0 {
		s.Slow, s.OthersSpeedMin = &o.slow, 1
	}
	var upPackets, upBytes, downPackets, downBytes int64

	var ticks, advN int
	var snd match.SoundReport
	var spec match.SpectatorReport
	var rejoinMs, rejoinMax, lateMs, lateMax float64
	var advSum, earlySum, gapSum float64
	var gapN int
	adv := newAdversaries(o)
	s.SuspectsByKind = map[string]int64{}
	var recMs, recMax float64
	for i, r := range rs {
		seed := o.seed + uint64(i)
		on := onlineOf(&r)
		if (r.Detected != nil || len(r.Recoveries) > 0) && on.everywhere() {
			s.DesyncsTracedEverywhere++
		}
		for _, rc := range r.Recoveries {
			if rc.Report.Adopted {
				s.DesyncsRecovered++
				ms := float64(rc.Took) / float64(time.Millisecond)
				recMs, recMax = recMs+ms, max(recMax, ms)
				s.RecoveryReports = append(s.RecoveryReports, diverged(DesyncReport{Match: i, Seed: seed, Frame: rc.Report.Frame, Field: rc.Report.Field, Machine: rc.Machine}, on, r.Divergence))
			}
		}
		switch {
		case r.Detected != nil:
			s.DesyncsDetected++
			s.Desyncs++
			d := r.Detected
			rep := DesyncReport{Match: i, Seed: seed, Frame: d.Frame, DetectedAt: int32(r.DetectedAt), Field: d.Field}
			reported := 0
			for m, n := range r.Reported {
				if n > 0 {
					reported++
				}
				if n == 2 {
					rep.NamedBy = append(rep.NamedBy, m)
				}
			}
			if len(rep.NamedBy) == reported && reported >= 2 {
				s.DesyncsNamedEverywhere++
			}
			s.DesyncReports = append(s.DesyncReports, diverged(rep, on, r.Divergence))
		case r.Err != nil:
			s.Errors++
		case r.Completed && !r.Verified:
			s.Desyncs++
		}
		if reason := failReason(o, &r); reason != "" {
			f := Fail{Match: i, Seed: seed, Reason: reason}
			if o.adversary != "" {
				k, m := o.adversaryOf(i)
				f.Reason = fmt.Sprintf("adversary %v on machine %d: %s", k, m, reason)
				f.Flags = adversaryFlags(k, m)
			}
			f.Reproduce = reproduce(o.matchFlags, o.profile, seed, f.Flags)
			s.Failures = append(s.Failures, f)
		}
		s.Suspects += r.Suspects
		for k, n := range r.Suspected {
			if n > 0 {
				s.SuspectsByKind[rollback.Suspicion(k).String()] += n
			}
		}
		adv.add(r.Adversary, r.Spectators.Named, o.machines)
		spec.Add(r.Spectators)
		if r.Rejoin.Rejoined {
			s.Rejoins++
			ms := float64(r.Rejoin.JoinTime) / float64(time.Millisecond)
			rejoinMs, rejoinMax = rejoinMs+ms, max(rejoinMax, ms)
			if r.Rejoin.Verified {
				s.RejoinsVerified++
			}
		}
		for _, l := range r.Late {
			if l.Rejoined {
				s.LateJoins++
				ms := float64(l.JoinTime) / float64(time.Millisecond)
				lateMs, lateMax = lateMs+ms, max(lateMax, ms)
			}
			if l.Verified {
				s.LateJoinsVerified++
			}
		}
		snd.Add(r.Sound)
		s.SoundPerMatch = append(s.SoundPerMatch, soundJSON(r.Sound))
		if r.Completed {
			s.Completed++
		}
		if r.Verified {
			s.Verified++
		}
		if r.Completed && r.ReplayErr == nil {
			s.ReplaysVerified += len(r.Replays)
		}
		if r.Rollbacks == 0 {
			s.MatchesWithoutRollback++
		}
		s.Rollbacks += r.Rollbacks
		s.ResimulatedFrames += r.ResimulatedFrames
		s.MaxRollbackFrames = max(s.MaxRollbackFrames, r.MaxRollbackFrames)
		s.MaxResimulatedFrames = max(s.MaxResimulatedFrames, r.MaxResimulated)
		s.StallFrames += r.StallFrames
		s.Hitches += r.Hitches
		s.HitchSpells += r.HitchSpells
		s.AdvantageStallFrames += r.AdvantageStalls
		s.InputLagStallFrames += r.LagStalls
		s.StallCadenceViolation += r.CadenceViolations
		for k := range r.LagFrames {
			s.InputLagHistogram[lagBucket(k)] += r.LagFrames[k]
		}
		s.InputLagFinal = append(s.InputLagFinal, r.FinalInputLag)
		advSum += r.AdvantageSum
		advN += r.AdvantageWindows
		s.MaxAbsAdvantage = max(s.MaxAbsAdvantage, r.MaxAdvantage)
		gapSum += r.FrameGapSum
		gapN += r.FrameGapWindows
		s.MaxAbsFrameGap = max(s.MaxAbsFrameGap, r.MaxFrameGap)
		earlySum += r.EarlyAdvantage
		s.PacketsInvalid += r.PacketsInvalid
		s.TransportDrops += r.TransportDrops
		s.ForgedDatagrams += r.ForgedDatagrams
		s.ForgedReceived += r.ForgedReceived
		s.ForgedAccepted += r.ForgedAccepted
		s.PacketsForged += r.PacketsForged
		s.PacketsSent += r.PacketsSent
		s.BytesSent += r.BytesSent
		upPackets, upBytes = upPackets+r.UpPackets, upBytes+r.UpBytes
		downPackets, downBytes = downPackets+r.DownPackets, downBytes+r.DownBytes
		s.Hits += int64(r.Hits)
		ticks += r.Ticks
		s.Decisions += r.Decisions
		s.DecisionConflicts += r.DecisionConflicts
		if o.slow >= 0 {
			othersStalls += r.OthersStalls
			s.OthersSpeedMin = min(s.OthersSpeedMin, r.OthersSpeedMin)
		}
	}
	if o.slow >= 0 && ticks > 0 && o.machines > 1 {
		s.OthersStallFramesPerMinute = round2(float64(othersStalls) / float64(o.machines-1) / (float64(ticks) / 60 / 60))
	}
	s.SimulatedSeconds = float64(ticks) / 60
	if advN > 0 {
		s.MeanAbsAdvantage = advSum / float64(advN)
	}
	if gapN > 0 {
		s.MeanAbsFrameGap = gapSum / float64(gapN)
	}
	s.EarlyAbsAdvantage = earlySum / float64(len(rs))
	if ticks > 0 {
		s.StallFramesPerMinute = float64(s.StallFrames+s.AdvantageStallFrames+s.InputLagStallFrames) / float64(o.machines) / (s.SimulatedSeconds / 60)
		s.HitchesPerMinute = round2(float64(s.Hitches) / float64(o.machines) / (s.SimulatedSeconds / 60))
		if s.HitchSpells > 0 {
			s.HitchSpellMeanMs = round2(float64(s.Hitches) / float64(s.HitchSpells) * 1000 / 60)
		}
	}
	if ticks > 0 {
		peerFrames := float64(ticks) * float64(o.machines)
		s.PacketsPerPeerPerFrame = float64(s.PacketsSent) / peerFrames
		s.BytesPerPeerPerSecond = float64(s.BytesSent+match.UDPOverhead*s.PacketsSent) / float64(o.machines) / s.SimulatedSeconds
		s.RollbacksPer100Frames = 100 * float64(s.Rollbacks) / peerFrames
		s.UpBytesPerMachinePerSecond = round2(float64(upBytes+match.UDPOverhead*upPackets) / float64(o.machines) / s.SimulatedSeconds)
		s.DownBytesPerMachinePerSecond = round2(float64(downBytes+match.UDPOverhead*downPackets) / float64(o.machines) / s.SimulatedSeconds)
		s.UpPacketsPerMachinePerTick = round2(float64(upPackets) / peerFrames)
	}
	mis, resim := report.MispredictionDepths(rs), report.Resimulated(rs)
	s.MispredictionDepthMean, s.MispredictionDepthP95, s.MispredictionDepthMax = round2(mis.Mean), mis.P95, mis.Max
	s.ResimulatedMean, s.ResimulatedP95 = round2(resim.Mean), resim.P95
	s.Sound = soundJSON(snd)
	s.Adversary = adv.json()
	s.Spectators, s.SpectatorsVerified, s.SpectatorsRelayed, s.SpectatorsLeft = spec.Joined, spec.Verified, spec.Relayed, spec.Left+spec.Crashed
	if o.witnesses > 0 {
		s.Witnesses, s.SpectatorsRefuted, s.WitnessesOutvoted = o.witnesses, spec.Refuted, spec.Outvoted
		s.WitnessesLost, s.FramesCorroborated = spec.WitnessesLost, spec.Corroborated
	}
	if spec.Timed > 0 {
		s.SpectatorJoinMs = &MeanMaxMs{Mean: round2(spec.JoinMS / float64(spec.Timed)), Max: round2(spec.MaxJoinMS)}
		s.JoinStateBytes = round2(float64(spec.StateBytes) / float64(spec.Timed))
	}
	if s.DesyncsRecovered > 0 {
		s.RecoveryMs = &MeanMaxMs{Mean: round2(recMs / float64(s.DesyncsRecovered)), Max: round2(recMax)}
	}
	if s.Rejoins > 0 {
		s.RejoinMs = &MeanMaxMs{Mean: round2(rejoinMs / float64(s.Rejoins)), Max: round2(rejoinMax)}
	}
	if s.LateJoins > 0 {
		s.LateJoinMs = &MeanMaxMs{Mean: round2(lateMs / float64(s.LateJoins)), Max: round2(lateMax)}
	}
	if spec.CatchUpTicks > 0 {
		s.SpectatorCatchUp = round2(float64(spec.CatchUpFrames) / float64(spec.CatchUpTicks))
	}
	switch {
	case o.mode == "lockstep" && s.Rollbacks > 0:
		s.Failures = append(s.Failures, Fail{Match: -1, Seed: o.seed, Reason: fmt.Sprintf("lockstep rolled back %d times", s.Rollbacks)})
	case o.mode != "lockstep" && s.Rollbacks == 0:
		s.Failures = append(s.Failures, Fail{Match: -1, Seed: o.seed, Reason: "no match ever rolled back: the soak proved nothing"})
	}
	s.Passed = s.Verified == s.Matches && snd.Clean() && len(s.Failures) == 0
	return s
}

// failReason says why match r failed, or "" when it passed.
func failReason(o options, r *match.Result) string {
	if why := timeMachineFail(o, r); why != "" && (r.Adversary.Kind == liar.None || r.Adversary.Machine != o.machines-1) {
		return why
	}
	switch a := r.Adversary; {
	case r.Detected != nil:
		return fmt.Sprintf("desync detected at frame %d: %v", r.DetectedAt, r.Detected)
	case r.Err != nil:
		return r.Err.Error()
	case o.recover && o.injectDesync > 0 && o.injectDesync < o.frames && len(r.Recoveries) == 0 &&
		(a.Kind == liar.None || a.Machine != o.machines-1): // a liar that is the corrupted machine need not recover
		return fmt.Sprintf("the desync injected at frame %d was not recovered from", o.injectDesync)
	case o.injectSystem != "" && o.injectDesync > 0 && o.injectDesync < o.frames && (r.Divergence == nil || r.Divergence.System != o.injectSystem) &&
		(a.Kind == liar.None || a.Machine != o.machines-1):
		return fmt.Sprintf("the desync injected inside %q was not named by the bundles: %+v", o.injectSystem, r.Divergence)
	case !r.Completed:
		return fmt.Sprintf("did not finish in %d ticks", r.Ticks)
	case !r.Verified:
		return "desync: " + r.Desync
	case r.ForgedAccepted > 0:
		return fmt.Sprintf("%d forged datagrams taken as valid", r.ForgedAccepted)
	case a.HonestDisconnected:
		return "an honest machine disconnected another"
	case a.SuspectedHonest > 0:
		return fmt.Sprintf("honest machines suspected each other %d times", a.SuspectedHonest)
	case spectatorsNamedHonest(r.Spectators.Named, liarOf(a), o.machines) > 0:
		return fmt.Sprintf("spectators named honest machines %d times", spectatorsNamedHonest(r.Spectators.Named, liarOf(a), o.machines))
	case o.rejoin > 0 && !r.Rejoin.Verified:
		return "the machine that crashed did not come back verified"
	case o.lateJoin > 0 && !lateVerified(r.Late, o.lateJoin):
		return "a machine that joined late did not verify"
	case r.Spectators.Verified < r.Spectators.Joined:
		return fmt.Sprintf("%d of %d spectators did not verify: %v", r.Spectators.Joined-r.Spectators.Verified, r.Spectators.Joined, r.Spectators.Failures)
	case r.ReplayErr != nil:
		return "replay: " + r.ReplayErr.Error()
	case !r.Sound.Clean():
		return fmt.Sprintf("sound: %d duplicates, %d missed, %d of %d phantoms not faded",
			r.Sound.Duplicates, r.Sound.Missed, r.Sound.Phantoms-r.Sound.PhantomsFaded, r.Sound.Phantoms)
	}
	return ""
}

// playoutMs is the lockstep playout delay in effect, in milliseconds (-1
// for none; 0 outside lockstep).
// Config's documented defaults, which the summary reports where a flag
// leaves a field 0.
const (
	defaultMaxRollback = 20
	defaultTickRate    = 60
	defaultPlayout     = 100 * time.Millisecond
)

func playoutMs(o options) int64 {
	switch {
	case o.mode != "lockstep":
		return 0
	case o.playout < 0:
		return -1
	case o.playout == 0:
		return defaultPlayout.Milliseconds()
	}
	return o.playout.Milliseconds()
}

func printSummary(w io.Writer, s *Summary) {
	verdict := "PASS"
	if !s.Passed {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "soak %s: %d matches × %d players on %d machines × %d frames, profile %s over %s (%s), seed %d, %s mode, %s, max rollback %d, delay %d\n",
		verdict, s.Matches, s.Players, s.Machines, s.FramesPerMatch, s.Profile, s.Transport, s.Topology, s.Seed, s.Mode, s.Snapshots, s.MaxRollback, s.InputLag)
	fmt.Fprintf(w, "  completed %d/%d   verified %d/%d   desyncs %d   errors %d\n",
		s.Completed, s.Matches, s.Verified, s.Matches, s.Desyncs, s.Errors)
	if s.Mode == "lockstep" {
		fmt.Fprintf(w, "  lockstep at %d Hz, playout delay %d ms: hitches %d (%.2f per minute per machine) in %d waits of %.0f ms on average\n",
			s.TickRate, max(0, s.PlayoutMs), s.Hitches, s.HitchesPerMinute, s.HitchSpells, s.HitchSpellMeanMs)
	}
	fmt.Fprintf(w, "  rollbacks %d (%.1f per 100 peer-frames)   misprediction depth mean %s, p95 %d, deepest %d   re-simulated %d frames (per rollback mean %s, p95 %d, longest %d)   stalled %d frames\n",
		s.Rollbacks, s.RollbacksPer100Frames, report.FormatFloat(s.MispredictionDepthMean, 1), s.MispredictionDepthP95, s.MispredictionDepthMax,
		s.ResimulatedFrames, report.FormatFloat(s.ResimulatedMean, 1), s.ResimulatedP95, s.MaxResimulatedFrames, s.StallFrames)
	fmt.Fprintf(w, "  packets %d (%.2f per peer per frame)   %.0f B/s per peer (UDP/IP headers included)   ships destroyed %d\n",
		s.PacketsSent, s.PacketsPerPeerPerFrame, s.BytesPerPeerPerSecond, s.Hits)
	if s.UpPacketsPerMachinePerTick > 0 {
		fmt.Fprintf(w, "  wire (%s): %.0f B/s up, %.0f B/s down per machine (UDP/IP headers included), %.2f datagrams up per machine per tick\n",
			s.Topology, s.UpBytesPerMachinePerSecond, s.DownBytesPerMachinePerSecond, s.UpPacketsPerMachinePerTick)
	}
	if s.Mode != "lockstep" { // lockstep has neither frame-advantage stalls nor a dynamic input lag
		fmt.Fprintf(w, "  fairness: mean |advantage| %.2f frames (max %.2f, first 100 frames %.2f), frames apart %.2f (max %.2f)   stalls %.1f per minute per machine (advantage %d, input lag %d, cadence violations %d)\n",
			s.MeanAbsAdvantage, s.MaxAbsAdvantage, s.EarlyAbsAdvantage, s.MeanAbsFrameGap, s.MaxAbsFrameGap, s.StallFramesPerMinute, s.AdvantageStallFrames, s.InputLagStallFrames, s.StallCadenceViolation)
		fmt.Fprintf(w, "  input lag: frames at 0/1/2/3/4/5+: %d/%d/%d/%d/%d/%d\n", s.InputLagHistogram["0"], s.InputLagHistogram["1"],
			s.InputLagHistogram["2"], s.InputLagHistogram["3"], s.InputLagHistogram["4"], s.InputLagHistogram["5+"])
	}
	fmt.Fprintf(w, "  sound: %d true sounds heard by the peers, %d duplicates, %d missed, %d/%d phantoms faded (after %.0f ms on average), %d restarted, mean lateness %.1f ms (max %.0f)\n",
		s.Sound.TrueSounds, s.Sound.Duplicates, s.Sound.Missed, s.Sound.PhantomsFaded, s.Sound.Phantoms, s.Sound.PhantomHeardMs,
		s.Sound.Restarts, s.Sound.LateStartsMs, s.Sound.LateStartMaxMs)
	if s.RecordDir != "" {
		fmt.Fprintf(w, "  replays: %d verified offline, in %s\n", s.ReplaysVerified, s.RecordDir)
	}
	if s.Suspects > 0 {
		fmt.Fprintf(w, "  suspicions: %d (%s)\n", s.Suspects, counts(s.SuspectsByKind))
	}
	if a := s.Adversary; a != nil {
		by := ""
		if a.Detected > 0 {
			by = fmt.Sprintf(" (by frame %d at the latest)", a.DetectedAtFrameMax)
		}
		if a.NamedBySpectators > 0 || a.SpectatorsSuspectedHonest > 0 {
			by += fmt.Sprintf(", by spectators in %d (%d namings of honest machines)", a.NamedBySpectators, a.SpectatorsSuspectedHonest)
		}
		fmt.Fprintf(w, "  adversary %s on %s: named in %d/%d matches%s, honest verified %d/%d, speed ≥ %.3f, input lag ≤ %d, lookahead %.1f frames, %d lies, %d suspicions of honest machines, %d honest disconnects\n",
			a.Kind, machineName(a.Machine), a.Detected, a.Matches, by, a.HonestVerified, a.Matches,
			a.HonestSpeedMin, a.HonestInputLagMax, a.LookaheadFrames, a.Lies, a.SuspectedHonest, a.HonestDisconnected)
	}
	if s.Rejoins > 0 {
		fmt.Fprintf(w, "  rejoins: %d came back, %d verified; %.0f ms from restart to take-over on average (max %.0f)\n",
			s.Rejoins, s.RejoinsVerified, s.RejoinMs.Mean, s.RejoinMs.Max)
	}
	if s.LateJoins > 0 {
		fmt.Fprintf(w, "  late joins: %d took their slots, %d verified; %.0f ms from start to take-over on average (max %.0f)\n",
			s.LateJoins, s.LateJoinsVerified, s.LateJoinMs.Mean, s.LateJoinMs.Max)
	}
	if s.DesyncsRecovered > 0 {
		fmt.Fprintf(w, "  desyncs: %s\n", desyncLine(s))
	}
	if s.Witnesses > 0 {
		fmt.Fprintf(w, "  witnesses: %d a spectator; %d sources and %d witnesses outvoted, %d witnesses lost; %d frames corroborated\n",
			s.Witnesses, s.SpectatorsRefuted, s.WitnessesOutvoted, s.WitnessesLost, s.FramesCorroborated)
	}
	if s.Spectators > 0 {
		fmt.Fprintf(w, "  spectators: %d watched (%d through relays, %d left early), %d verified; first frame %.0f ms after the start on average (max %.0f); catch-up %.2f frames a tick; state %.0f bytes compressed\n",
			s.Spectators, s.SpectatorsRelayed, s.SpectatorsLeft, s.SpectatorsVerified, s.SpectatorJoinMs.Mean, s.SpectatorJoinMs.Max, s.SpectatorCatchUp, s.JoinStateBytes)
	}
	if s.ForgeRate > 0 {
		fmt.Fprintf(w, "  forgery: %d forged datagrams a second per machine: %d sent, %d received, %d caught by the MAC, %d taken as valid\n",
			s.ForgeRate, s.ForgedDatagrams, s.ForgedReceived, s.PacketsForged, s.ForgedAccepted)
	}
	if s.TickCost != nil {
		fmt.Fprintf(w, "  %s\n", s.TickCost.line())
	}
	fmt.Fprintf(w, "  %.0f simulated seconds in %.2f s of wall time\n", s.SimulatedSeconds, s.WallSeconds)
	for _, f := range s.Failures {
		if f.Match >= 0 {
			fmt.Fprintf(w, "  FAILED match %d (seed %d): %s\n    reproduce: %s\n", f.Match, f.Seed, f.Reason, f.Reproduce)
		} else {
			fmt.Fprintf(w, "  FAILED: %s\n", f.Reason)
		}
	}
}

// lagBucket names bucket k of Stats.LagFrames in the summary: the last
// one holds every higher lag.
func lagBucket(k int) string {
	if k == len(rollback.Stats{}.LagFrames)-1 {
		return strconv.Itoa(k) + "+"
	}
	return strconv.Itoa(k)
}

// maxSpectators bounds -spectators: a netsim network has 64 nodes.
const maxSpectators = 56

// maxForge bounds -forge. Past 64 datagrams from one address per tick
// (3,840 a second with one peer) a session drops the rest of them unjudged,
// genuine ones too (Stats.PacketsOverBudget): such a rate tests the flood
// budget, not forgery.
const maxForge = 100_000

// configFlags names the flag that sets each rollback.Config field.
var configFlags = map[string]string{
	"MaxRollback": "-maxrollback", "InputLag": "-delay", "RedundantFrames": "-redundant",
	"Timeouts.Handshake": "-handshake-timeout", "TickRate": "-tick", "PlayoutDelay": "-playout",
	"Snapshots": "-snapshots", "SnapshotInterval": "-snapshots", "Mode": "-mode",
}

// checkConfig checks the flags that become rollback.Config fields by the
// session's own validation, so the soak's bounds are always Config's: it
// builds a session of the configured mode and tuning and reports its
// *ConfigError under the flag's name.
func checkConfig(o *options, policy rollback.SnapshotPolicy) error {
	a, err := savestate.New(4096)
	if err != nil {
		return err
	}
	cfg := rollback.Config{Players: 2, Local: []rollback.PlayerID{0}, Peers: []rollback.Peer{{Players: []rollback.PlayerID{1}}},
		Layout: rollback.Layout{1}, State: a, Game: rollback.GameFunc(func(rollback.Frame, []rollback.PlayerInput) {}),
		Transport: noTransport{}, MaxRollback: o.maxRollback, InputLag: o.delay, RedundantFrames: o.redundant,
		Timeouts: rollback.Timeouts{Handshake: o.handshakeTimeout}, TickRate: o.tick, PlayoutDelay: o.playout, Snapshots: policy,
		SnapshotInterval: o.snapInterval}
	cfg.Lockstep = o.mode == "lockstep"
	_, err = rollback.NewSession(cfg)
	var ce *rollback.ConfigError
	if errors.As(err, &ce) {
		return fmt.Errorf("%s: %s", configFlags[ce.Field], ce.Reason)
	}
	return err
}

// noTransport is the transport of checkConfig's session, which never sends.
type noTransport struct{}

func (noTransport) Send(int, []byte) error          { return nil }
func (noTransport) Receive([]byte) (int, int, bool) { return 0, 0, false }

// rejoinPlan makes one machine of c's match (not the host, nor the
// adversary: an honest machine comes back, and the liar may be its
// source) crash at a random frame in its second fifth to half and restart
// 1 to 10 s later, drawn from the match's seed.
func rejoinPlan(c *match.Config, machines int) {
	r := rand.New(rand.NewPCG(c.Seed, 0x4e70))
	c.DropMachine = 1 + r.IntN(max(1, machines-1))
	if c.Adversary != liar.None && c.DropMachine == c.AdversaryMachine && machines > 2 {
		c.DropMachine = 1 + c.DropMachine%(machines-1)
	}
	c.DropAt = c.Frames/5 + r.IntN(max(1, c.Frames/2-c.Frames/5))
	c.RejoinAfter = time.Second + time.Duration(r.Int64N(int64(9*time.Second)))
	c.StandIn = true
}

// relayMovePlan kills c's relay at a random moment of the match's first
// fifth to half, drawn from its seed, and moves the machines to another
// after.
func relayMovePlan(c *match.Config, after time.Duration) {
	r := rand.New(rand.NewPCG(c.Seed, 0x5e1a))
	f := c.Frames/5 + r.IntN(max(1, c.Frames/2-c.Frames/5))
	c.RelayDiesAt, c.RelayMoveAfter = time.Duration(f)*match.Tick, after
}

// latePlan reserves k machines' slots in c's match (not the host, nor the
// machine that drops): each starts at a random time in the match's first
// half, drawn from its seed.
func latePlan(c *match.Config, machines, k int) {
	r := rand.New(rand.NewPCG(c.Seed, 0x1a7e))
	for _, m := range r.Perm(machines - 1) {
		m++
		if len(c.Late) == k {
			break
		}
		if (c.DropAt > 0 && m == c.DropMachine) || (c.Adversary != liar.None && m == c.AdversaryMachine) {
			continue // an honest machine comes late, and the liar may be its source
		}
		at := time.Duration(r.Int64N(int64(time.Duration(c.Frames) * match.Tick / 2)))
		c.Late = append(c.Late, match.LateJoin{Machine: m, At: at})
	}
	c.StandIn = true
}

// lateVerified reports whether all k late machines came and verified.
func lateVerified(late []match.RejoinReport, k int) bool {
	n := 0
	for _, l := range late {
		if l.Verified {
			n++
		}
	}
	return n == k
}

// allowance is the relay clock's allowance on profile p: -relay-allowance,
// or 40 ms and twice a hop's jitter (a path's), which an honest machine's
// envelope rarely misses but in a loss burst, and which leaves the
// decision time to reach the others within MaxRollback frames on hell
// (two hops of 85 ms and the allowance under 333 ms).
func (o options) allowance(p netsim.Profile) time.Duration {
	if !o.relayClock || o.relayAllowance > 0 {
		return o.relayAllowance
	}
	return 40*time.Millisecond + p.Jitter
}
