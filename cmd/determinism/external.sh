#!/usr/bin/env bash
# The determinism matrix for a game outside the repository (make
# determinism runs it after the project's games): a module in a temporary
# directory, with a replace of github.com/rewindgg/rewind to this checkout,
# holds fusegame, whose Step computes x*y+z on float64 values. The
# documented command, run from that module,
#
#   go run github.com/rewindgg/rewind/cmd/determinism -game ./fusegame
#
# must exit 1 and name fusegame diverged, with a frame and a field, on
# every platform whose build fuses x*y+z (arm64 always; amd64 v3 when the
# compiler fuses there), and verified on every other; no platform may be
# skipped. The checker below reads the command's -json file.
#
# Environment: DETERMINISM_OUT, the work directory; EXTERNAL_CELLS, the
# platforms expected in the table (default 7, all); arguments are passed
# to the command (e.g. -platforms amd64-v1,arm64 with EXTERNAL_CELLS=2).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${DETERMINISM_OUT:-${TMPDIR:-/tmp}/rewind-determinism}/external"
rm -rf "$out"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod

mkdir "$work/fusegame" "$work/checkcells"
cat >"$work/go.mod" <<EOF
module example.com/outside

go 1.26

require github.com/rewindgg/rewind v0.0.0-00010101000000-000000000000

replace github.com/rewindgg/rewind => $root
EOF
cp "$root/go.sum" "$work/go.sum"
cat >"$work/fusegame/fusegame.go" <<'GO'
// Package fusegame is a game outside the Rewind repository whose Step
// computes x*y+z on float64 values: the determinism matrix must find it
// diverging where the compiler fuses that into one instruction.
package fusegame

import (
	"github.com/rewindgg/rewind/determinism"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// World is the whole state.
type World struct {
	Frame int64
	X     [2]float64 // a logistic map per player: chaotic, so one ulp grows
	R     [2]float64
}

// Determinism is the matrix's entry point.
func Determinism() []determinism.Game { return []determinism.Game{game{}} }

type game struct{}

func (game) Name() string            { return "fusegame" }
func (game) Layout() rollback.Layout { return rollback.Layout{4} }

func (game) New(a *savestate.Arena, players int, seed uint64) (rollback.Game, error) {
	h, err := savestate.Alloc[World](a)
	if err != nil {
		return nil, err
	}
	w := h.Get(a)
	for p := range w.X {
		w.X[p] = float64(seed%7+1) / 16
	}
	return rollback.GameFunc(func(f rollback.Frame, in []rollback.PlayerInput) {
		w := h.Get(a)
		w.Frame++
		for p := range w.X {
			w.R[p] = 3.9 + float64(in[p%len(in)].Input)/1000
			rx := w.R[p] * w.X[p]
			w.X[p] = rx*-w.X[p] + rx // r·x·(1-x) as x*y+z: fusable
		}
	}), nil
}
GO
cat >"$work/checkcells/main.go" <<'GO'
// Command checkcells checks the matrix's -json file for fusegame.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

type cell struct {
	Game, Platform, Outcome, Field, Fuses string
	Frame                                 int
}

func main() {
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	var cells []cell
	if err := json.Unmarshal(b, &cells); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	bad, arm := 0, false
	for _, c := range cells {
		want := "verified"
		if c.Fuses == "yes" {
			want = "diverged"
		}
		ok := c.Outcome == want && (want == "verified" || (c.Frame > 0 && strings.HasPrefix(c.Field, "fusegame.World.X[")))
		arm = arm || (c.Platform == "arm64" && c.Outcome == "diverged")
		fmt.Printf("%-14s fuses=%-3s %-9s want %-9s %s\n", c.Platform, c.Fuses, c.Outcome, want, map[bool]string{true: "ok", false: "WRONG"}[ok])
		if !ok {
			bad++
		}
	}
	want := 7 // every platform
	fmt.Sscan(os.Getenv("EXTERNAL_CELLS"), &want)
	if !arm || len(cells) != want || bad > 0 {
		fmt.Printf("external matrix check FAILED: %d cells, %d wrong, arm64 diverged: %v\n", len(cells), bad, arm)
		os.Exit(1)
	}
	fmt.Println("external matrix check passed: fusegame diverged where x*y+z fuses and verified elsewhere")
}
GO
cd "$work"
go mod tidy >/dev/null
echo "expected: the command exits 1, naming fusegame diverged where the build fuses x*y+z and verified elsewhere"
status=0
go run github.com/rewindgg/rewind/cmd/determinism -game ./fusegame -frames 600 -seeds 1,2 -out "$out" -json "$out/cells.json" "$@" || status=$?
if [ "$status" -ne 1 ]; then
	echo "external matrix check FAILED: the command exited $status, not 1 (fusegame diverges and -may-diverge does not name it)"
	exit 1
fi
go run ./checkcells "$out/cells.json"
