// Command rewindvet reports what makes a rollback game's Step
// non-deterministic: map ranging, clock reads, global randomness,
// goroutines and channels, fusable floating-point multiply-adds,
// platform-dependent math functions, float-to-integer conversions, NaN
// bits, int narrowing, the environment and the machine, addresses,
// package-level and captured state and package unsafe, in every function
// reachable (through static calls, interfaces, function values and
// closures) from the Step (and StepPartial) method of a type that
// implements github.com/rewindgg/rewind/rollback.Game, and from a
// Config's StandIn. -nofloat forbids floating point there.
// See package determinism for what it checks and what it cannot see.
//
// Run it on its own or through go vet:
//
//	rewindvet ./...
//	go vet -vettool=$(which rewindvet) ./...
//
// A comment //rewind:allow <reason> on the line of a finding, or alone on
// the line above, silences it.
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/rewindgg/rewind/cmd/rewindvet/determinism"
)

func main() { singlechecker.Main(determinism.Analyzer) }
