package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rewindgg/rewind/cmd/soak/internal/tickcost"
	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/savestate"
)

// The tick-cost model (-step-cost, -copy-cost, -state-size): what each
// tick of each machine would cost a game with an expensive Step and a
// large state, from the work the tick really did (match.TickWork). It
// changes nothing in the matches; it adds the summary's tick_cost.

// TickCostJSON is the tick-cost model's part of the JSON report.
type TickCostJSON struct {
	// StepCostNs, CopyNsPerByte and StateBytes are the model's parameters:
	// -step-cost, -copy-cost (CopyCostMeasured: measured at the start of
	// the run, not given; give it to reproduce the figures) and
	// -state-size (0: the bytes the sessions really copied, the arena's
	// used bytes, CopyBytes).
	StepCostNs       int64   `json:"step_cost_ns"`
	CopyNsPerByte    float64 `json:"copy_ns_per_byte"`
	CopyCostMeasured bool    `json:"copy_cost_measured"`
	StateBytes       int     `json:"state_bytes"`
	CopyBytes        int     `json:"copy_bytes"` // the bytes one modelled copy moves
	// Ticks are every machine's ticks of every match; Steps the Game.Step
	// calls they made (new frames, re-simulated ones and snapshots moved
	// forward), Simulated the new frames, Saves and Restores the snapshot
	// copies, BytesCopied the bytes those moved as modelled.
	Ticks       int   `json:"ticks"`
	Steps       int64 `json:"steps"`
	Simulated   int64 `json:"simulated_frames"`
	Saves       int64 `json:"saves"`
	Restores    int64 `json:"restores"`
	BytesCopied int64 `json:"bytes_copied"`
	// CPUMsPerSecond is the modelled CPU a machine spends per second of
	// game it simulates; P50Ms, P99Ms and MaxMs the tick cost's median,
	// 99th percentile and maximum over every tick of every machine.
	CPUMsPerSecond float64 `json:"cpu_ms_per_second"`
	P50Ms          float64 `json:"tick_p50_ms"`
	P99Ms          float64 `json:"tick_p99_ms"`
	MaxMs          float64 `json:"tick_max_ms"`
}

// modelFlags are the model's flags, as parsed.
type modelFlags struct {
	step      time.Duration
	copyCost  float64
	copySet   bool // -copy-cost given: not measured
	stateSize sizeFlag
}

// on reports whether the model runs.
func (m *modelFlags) on() bool { return m.step > 0 }

// add defines the model's flags on fs.
func (m *modelFlags) add(fs *flag.FlagSet) {
	fs.DurationVar(&m.step, "step-cost", 0, "tick-cost model: the CPU one Game.Step costs (e.g. 500us); every tick of every machine then costs its Game.Step calls (new frames, re-simulated ones, snapshots moved forward) × this + the bytes its snapshot saves and restores copied × -copy-cost, and the summary, the JSON (tick_cost) and the report give the CPU per simulated second and the tick cost's p50, p99 and maximum (0: the model is off)")
	fs.Func("copy-cost", "tick-cost model: ns per byte a snapshot save or restore costs (default: measured on this machine at the start, the median of 15 timings of copying a -state-size buffer; printed, and in the JSON, to give here to reproduce a run's figures)", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Errorf("%q: want ns per byte, 0 or more", s)
		}
		m.copyCost, m.copySet = v, true
		return nil
	})
	fs.Var(&m.stateSize, "state-size", "tick-cost model: the bytes one snapshot copy moves, e.g. 1MiB for a game with that large a state (default: the arena's used bytes, what the sessions really copy); the matches are unchanged")
}

// model resolves the flags into the model, measuring the copy cost when
// -copy-cost was not given (the measurement is announced on w).
func (m *modelFlags) model(players int, w io.Writer) (tickcost.Model, error) {
	md := tickcost.Model{Step: m.step, CopyNsPerByte: m.copyCost, StateBytes: int(m.stateSize)}
	if err := md.Check(); err != nil {
		return md, err
	}
	if !m.copySet {
		size, err := copyBytes(md, players)
		if err != nil {
			return md, err
		}
		md.CopyNsPerByte = tickcost.MeasureCopy(size, 15)
		fmt.Fprintf(w, "tick-cost model: copy cost measured %s ns per byte over %d bytes (-copy-cost %s reproduces it)\n",
			formatNs(md.CopyNsPerByte), size, formatNs(md.CopyNsPerByte))
	}
	return md, nil
}

// everyFrame is -snapshots every-frame: the adaptive policy's ring with
// its interval fixed at 1 (Config.SnapshotInterval), GGPO's policy.
const everyFrame = "every-frame"

// modelCosts are the Step and copy costs the sessions are told
// (Config.StepCost and SaveCost) when the model runs: the model's, so
// that the adaptive policy chooses as it would for that game on this
// machine, and a run with -copy-cost given is reproducible bit for bit.
// Without the model, none: the sessions measure with their virtual
// clocks, which see a free Step.
func (o *options) modelCosts() (step, save time.Duration) {
	if !o.model.on() {
		return 0, 0
	}
	size, _ := copyBytes(o.tickModel, o.players) // players were checked: a fresh arena takes them
	return o.tickModel.Step, time.Duration(math.Round(o.tickModel.CopyNsPerByte * float64(size)))
}

// formatNs gives v with every digit it needs to parse back to itself.
func formatNs(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// copyBytes is the bytes one copy moves in md: -state-size, or the
// arena's used bytes for players (a fresh arena: the game allocates
// everything at the start).
func copyBytes(md tickcost.Model, players int) (int, error) {
	if md.StateBytes > 0 {
		return md.StateBytes, nil
	}
	a, err := savestate.New(0)
	if err != nil {
		return 0, err
	}
	if _, err := arena.New(a, players, 1); err != nil {
		return 0, err
	}
	return a.Used(), nil
}

// tickCostJSON models every tick of rs.
func tickCostJSON(md tickcost.Model, measured bool, players int, rs []match.Result) (*TickCostJSON, tickcost.Figures) {
	var work []match.TickWork
	for i := range rs {
		work = append(work, rs[i].TickWork...)
	}
	f := md.Figures(work)
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
	size, _ := copyBytes(md, players) // players were checked: a fresh arena takes them
	return &TickCostJSON{StepCostNs: md.Step.Nanoseconds(), CopyNsPerByte: md.CopyNsPerByte, CopyCostMeasured: measured,
		StateBytes: md.StateBytes, CopyBytes: size, Ticks: f.Ticks, Steps: f.Steps, Simulated: f.Simulated,
		Saves: f.Saves, Restores: f.Restores, BytesCopied: f.Bytes,
		CPUMsPerSecond: ms(f.CPUPerSecond), P50Ms: ms(f.P50), P99Ms: ms(f.P99), MaxMs: ms(f.Max)}, f
}

// line is the summary's line for the model.
func (t *TickCostJSON) line() string {
	return fmt.Sprintf("tick cost (Step %v, copy %s ns/B × %d B): %.3f ms CPU per simulated second; tick p50 %.3f ms, p99 %.3f ms, max %.3f ms (%d steps, %d saves, %d restores over %d ticks)",
		time.Duration(t.StepCostNs), formatNs(t.CopyNsPerByte), t.CopyBytes, t.CPUMsPerSecond, t.P50Ms, t.P99Ms, t.MaxMs,
		t.Steps, t.Saves, t.Restores, t.Ticks)
}

// sizeFlag is a byte count given as 4096, 64KiB or 1MiB.
type sizeFlag int

func (s *sizeFlag) String() string {
	if s == nil || *s == 0 {
		return ""
	}
	return strconv.Itoa(int(*s))
}

func (s *sizeFlag) Set(v string) error {
	n, unit := v, 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			n, unit = strings.TrimSuffix(v, u.suffix), u.mult
			break
		}
	}
	k, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || k < 0 || k > (1<<30)/unit {
		return fmt.Errorf("%q: want bytes up to 1GiB, e.g. 4096, 64KiB or 1MiB", v)
	}
	*s = sizeFlag(k * unit)
	return nil
}
