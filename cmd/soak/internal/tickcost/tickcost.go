// Package tickcost is the soak's tick-cost model: what each tick of each
// machine would cost a game whose Game.Step is expensive and whose state
// is large, from the work the tick really did (match.TickWork: the
// Game.Step calls, simulated, re-simulated or moving a snapshot forward,
// and the snapshot copies, saved and restored). A tick costs
//
//	steps × Step + bytes copied × CopyNsPerByte
//
// and the model reports the CPU per simulated second and the tick cost's
// median, 99th percentile and maximum. The model is arithmetic on the
// match's figures: given the same work and parameters it gives the same
// figures. Only MeasureCopy reads a clock, to find a default copy cost for
// the machine it runs on.
package tickcost

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rewindgg/rewind/internal/match"
)

// Model is the cost of a tick's work.
type Model struct {
	Step          time.Duration // one Game.Step call
	CopyNsPerByte float64       // one byte of a snapshot saved or restored
	// StateBytes, when positive, is the bytes every copy moves (a game
	// with a state that large); 0 takes the bytes the session really
	// copied (the arena's used bytes).
	StateBytes int
}

// ErrModel reports unusable model parameters.
var ErrModel = errors.New("tickcost: invalid model")

// Check reports whether the parameters are usable.
func (m Model) Check() error {
	switch {
	case m.Step < 0:
		return fmt.Errorf("%w: step cost %v is negative", ErrModel, m.Step)
	case m.CopyNsPerByte < 0 || math.IsNaN(m.CopyNsPerByte) || math.IsInf(m.CopyNsPerByte, 0):
		return fmt.Errorf("%w: copy cost %v ns per byte", ErrModel, m.CopyNsPerByte)
	case m.StateBytes < 0:
		return fmt.Errorf("%w: state size %d is negative", ErrModel, m.StateBytes)
	}
	return nil
}

// Bytes is the bytes the tick's copies moved, as the model counts them.
func (m Model) Bytes(w match.TickWork) int64 {
	if m.StateBytes > 0 {
		return int64(w.Saves+w.Restores) * int64(m.StateBytes)
	}
	return w.SavedBytes + w.RestoredBytes
}

// Cost is the modelled CPU time of one tick, in nanoseconds.
func (m Model) Cost(w match.TickWork) float64 {
	return float64(w.Steps)*float64(m.Step) + float64(m.Bytes(w))*m.CopyNsPerByte
}

// Figures are the model's figures over many ticks.
type Figures struct {
	Ticks     int   // ticks modelled (every tick of every machine)
	Steps     int64 // Game.Step calls
	Simulated int64 // new frames simulated
	Saves     int64
	Restores  int64
	Bytes     int64 // bytes copied, as the model counts them
	// CPUPerSecond is the modelled CPU a machine spends per second of game
	// it simulates (60 new frames): the cost of every tick over the
	// frames simulated.
	CPUPerSecond time.Duration
	// P50, P99 and Max are the tick cost's median, 99th percentile
	// (nearest rank) and maximum over every tick.
	P50, P99, Max time.Duration
	// Costs are the ticks' costs in nanoseconds, sorted: the distribution
	// the report plots.
	Costs []float64
}

// Figures models every tick of work.
func (m Model) Figures(work []match.TickWork) Figures {
	f := Figures{Ticks: len(work), Costs: make([]float64, len(work))}
	var total float64
	for i, w := range work {
		f.Steps += int64(w.Steps)
		f.Simulated += int64(w.Simulated)
		f.Saves += int64(w.Saves)
		f.Restores += int64(w.Restores)
		f.Bytes += m.Bytes(w)
		f.Costs[i] = m.Cost(w)
		total += f.Costs[i]
	}
	if len(work) == 0 {
		return f
	}
	slices.Sort(f.Costs)
	if f.Simulated > 0 {
		f.CPUPerSecond = duration(total / (float64(f.Simulated) / 60))
	}
	f.P50, f.P99, f.Max = duration(rank(f.Costs, 0.50)), duration(rank(f.Costs, 0.99)), duration(f.Costs[len(f.Costs)-1])
	return f
}

// rank is the q-quantile of sorted (nearest rank).
func rank(sorted []float64, q float64) float64 {
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}

func duration(ns float64) time.Duration { return time.Duration(math.Round(ns)) }
