package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/determinism"
)

func TestMain(m *testing.M) {
	verbose = false
	os.Exit(m.Run())
}

// The whole command on this machine's own platform: the program is
// generated into the module, built, records the arena and the float game
// (a sync-test match and a two-machine match that rolled back) and
// verifies them natively; the generated directory is gone afterwards.
func TestHostMatrix(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("builds the program: linux/amd64, not -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	js := filepath.Join(dir, "cells.json")
	var out, errs bytes.Buffer
	code := run([]string{"-game", "../../examples/arena", "-game", "./floatgame", "-platforms", "amd64-v1",
		"-frames", "120", "-seeds", "5", "-may-diverge", "floatgame/", "-out", dir, "-json", js, "-v=false"}, &out, &errs)
	t.Log("\n" + out.String())
	require.Equal(t, 0, code, errs.String())
	table := out.String()
	assert.Regexp(t, `(?m)^arena +linux/amd64 v1 +native +verified \(2 replays, \d+ frames, \d+ checksums\)$`, table)
	assert.Regexp(t, `(?m)^floatgame/fma\+sin\+exp +linux/amd64 v1 +native +verified`, table)
	assert.Regexp(t, `rolled back [1-9]\d* times`, table)
	assert.Contains(t, table, "PASSED")
	var cells []jsonCell
	b, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &cells))
	require.Len(t, cells, 5) // arena and four float games, one platform
	assert.Equal(t, jsonCell{Game: "arena", Platform: "amd64-v1", Outcome: "verified", Fuses: "no", Text: cells[0].Text}, cells[0])
	left, err := filepath.Glob("../../_rewind_determinism_*")
	require.NoError(t, err)
	assert.Empty(t, left, "the generated program was not removed")
}

// matrixOf makes a matrix of one game on the given platforms, each cell
// with the given outcome.
func matrixOf(game string, outcomes map[string]string) *matrix {
	row := &gameRow{Name: game, Recs: []determinism.Recording{{File: "a.rwr", Game: game, Frames: 10, Seed: 1, Kind: determinism.SyncTest}}}
	m := &matrix{Games: []*gameRow{row}}
	var cells []cell
	for _, slug := range []string{"amd64-v1", "arm64", "wasm"} {
		b := &binary{platform: platform{Name: slug, Slug: slug}, Via: "native"}
		c := cell{Game: row, Platform: b}
		switch o := outcomes[slug]; o {
		case skipped:
			b.Skip, b.Via = "Node.js is not installed", ""
		default:
			c.Results = []determinism.Result{{File: "a.rwr", Status: o, Frame: 4, Field: "g.W.X: 1 vs 2", Fields: 1}}
		}
		m.Platforms = append(m.Platforms, b)
		cells = append(cells, c)
	}
	m.Cells = [][]cell{cells}
	return m
}

// A skipped platform fails the run unless -allow-skip names it.
func TestSkipFails(t *testing.T) {
	m := matrixOf("g", map[string]string{"amd64-v1": determinism.Verified, "arm64": determinism.Verified, "wasm": skipped})
	probs := m.problems()
	require.Len(t, probs, 1)
	assert.Equal(t, "wasm was skipped (Node.js is not installed) and -allow-skip does not name wasm", probs[0])
	m.AllowSkip = []string{"wasm"}
	assert.Empty(t, m.problems())
	m.AllowSkip = []string{"arm64"}
	assert.Len(t, m.problems(), 1)

	var out bytes.Buffer
	m.printTable(&out)
	assert.Regexp(t, `(?m)^g +wasm +- +skipped: Node.js is not installed$`, out.String())

	// -allow-skip takes known platforms only.
	var errs bytes.Buffer
	assert.Equal(t, 2, run([]string{"-game", ".", "-allow-skip", "amd64-v9"}, &out, &errs))
	assert.Contains(t, errs.String(), `unknown platform "amd64-v9"`)
}

// A game that diverges fails the run unless -may-diverge names it; the
// table names the frame, the replay and the field.
func TestMayDiverge(t *testing.T) {
	m := matrixOf("fusegame", map[string]string{"amd64-v1": determinism.Verified, "arm64": determinism.Diverged, "wasm": determinism.Verified})
	assert.Equal(t, []string{"fusegame did not verify on arm64"}, m.problems())
	m.MayDiverge = []string{"fuse"}
	assert.Empty(t, m.problems())
	var out bytes.Buffer
	m.printTable(&out)
	assert.Regexp(t, `(?m)^fusegame +arm64 +native +diverged at frame 4 of seed 1 sync-test: field g\.W\.X \(1 here, 2 on the host\) \(1 of 1 replays diverged\)$`, out.String())
	out.Reset()
	m.printFindings(&out)
	assert.Contains(t, out.String(), "- fusegame (may diverge (-may-diverge): a finding, not a failure): verified on amd64-v1, wasm; diverged on arm64 (frame 4).")
}

// A line that is not a result, or a replay the program never reported
// on (it crashed), gives a Failed result.
func TestParseResults(t *testing.T) {
	line := determinism.Result{File: "/x/a.rwr", Status: determinism.Diverged, Frame: 7, Field: "f: 1 vs 2"}.Line()
	out := append([]byte("panic: something\n{not json\n"), line...)
	res, complete := parseResults(out, []string{"/x/a.rwr", "/x/b.rwr"}, "signal: killed")
	assert.False(t, complete)
	assert.Equal(t, 7, res["/x/a.rwr"].Frame)
	assert.Equal(t, determinism.Result{File: "/x/b.rwr", Status: determinism.Failed, Error: "signal: killed"}, res["/x/b.rwr"])
	assert.Equal(t, "field f (1 here, 2 on the host)", describeField("f: 1 vs 2", 1))
	assert.Equal(t, "(no reference states given)", describeField("(no reference states given)", 0))
}

// The compiler's listing yields the fused instructions of the game
// packages and of math.Sin, by function group.
func TestParseListing(t *testing.T) {
	out := "# example.com/fusegame\n" +
		"example.com/fusegame.pull STEXT size=200 args=0x38 locals=0x0\n" +
		"\t0x0000 00000 (/x/fusegame.go:275)\tSUBSD\t(AX), X0\n" +
		"\t0x0010 00016 (/x/fusegame.go:195)\tVFMADD231SD\tX1, X0, X2\n" +
		"\t0x0000 f2 0f 5c 00 f2 0f 5c 48 08 84 db 74 0f f2 0f 10  ..\\....H...t....\n" +
		"example.com/fusegamer.x STEXT size=200 args=0x38 locals=0x0\n" +
		"\t0x0010 00016 (/x/fusegamer.go:1)\tVFMADD231SD\tX1, X0, X2\n" +
		"math.sin STEXT size=480 args=0x8 locals=0x18\n" +
		"\t0x0040 00064 (/go/src/math/sin.go:220)\tFMADDD\tF1, F2, F3, F4\n" +
		"math.Cos STEXT size=64\n" +
		"\t0x0040 00064 (/go/src/math/sin.go:150)\tFMADDD\tF1, F2, F3, F4\n"
	l := parseListing(out, []string{"example.com/fusegame"})
	assert.Equal(t, []string{"fusegame.go:195 VFMADD231SD X1, X0, X2"}, l.Lines["game"])
	assert.Equal(t, []string{"sin.go:220 FMADDD F1, F2, F3, F4"}, l.Lines["math.sin"])
	assert.Len(t, l.Lines, 2)
}

// The no-FMA column's check passes on qemu's Nehalem and fails on a model
// with FMA (-cpu max): it can tell them apart.
func TestCheckNoFMA(t *testing.T) {
	qemu, err := exec.LookPath("qemu-x86_64-static")
	if err != nil || testing.Short() {
		t.Skip("needs qemu-x86_64-static (apt-get install qemu-user-static); not -short")
	}
	ctx := t.Context()
	work := t.TempDir()
	checked, err := checkNoFMA(ctx, []string{qemu, "-cpu", noFMACPU}, work, 2*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, "under -cpu Nehalem, CPUID has no FMA and VFMADD231SD faults; under -cpu max, it gives the fused result", checked)
	_, err = checkNoFMA(ctx, []string{qemu, "-cpu", "max"}, work, 2*time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has FMA")
}
