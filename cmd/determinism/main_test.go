package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/cmd/determinism/floatgame"
	"github.com/rewindgg/rewind/cmd/determinism/internal/check"
	"github.com/rewindgg/rewind/internal/replaytest"
	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
)

// The test binary doubles as the host's re-simulator: run with this
// variable set, it is resim.
const resimEnv = "DETERMINISM_TEST_RESIM"

func TestMain(m *testing.M) {
	if os.Getenv(resimEnv) == "1" {
		os.Exit(check.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	verbose = false
	os.Exit(m.Run())
}

// The harness on the host only: short replays of the arena and of the
// float game verify; a replay whose input was changed (its checksums and
// reference states those of the real match) is reported diverged at the
// frame after the change, with the field; a truncated one is an error.
// The re-simulator runs as a process (this test binary), through the
// harness's runner, parser and table.
func TestHostMatrix(t *testing.T) {
	dir := t.TempDir()
	const frames = 300
	var recs []recorded
	for _, g := range []game{games[0], games[len(games)-1]} {
		file, err := recordMatch(g, frames, 7)
		require.NoError(t, err, g.Name)
		rec, err := writeReplay(dir, g, file)
		require.NoError(t, err, g.Name)
		require.Equal(t, frames, rec.Frames)
		require.Equal(t, frames-1, rec.Checksums, "a checksum every frame but the first and the last")
		recs = append(recs, rec)
	}
	float := recs[1]

	// Player 1's pulse flipped on frame 100: its well's mass differs from
	// frame 101 on.
	orig, err := os.ReadFile(float.Path)
	require.NoError(t, err)
	rp, err := replay.Read(bytes.NewReader(orig))
	require.NoError(t, err)
	changed := rewrite(t, rp, func(f rollback.Frame, p rollback.PlayerID, in rollback.Input) rollback.Input {
		if f == 100 && p == 1 {
			in ^= floatgame.Pack(0, 0, true)
		}
		return in
	})
	perturbed := recorded{game: game{Name: "float perturbed", Float: true}, Path: filepath.Join(dir, "perturbed.rwr"),
		Frames: frames, Checksums: frames - 1}
	require.NoError(t, os.WriteFile(perturbed.Path, changed, 0o644))
	states, err := os.ReadFile(float.Path + ".states")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(perturbed.Path+".states", states, 0o644))
	cut := recorded{game: game{Name: "float cut", Float: true}, Path: filepath.Join(dir, "cut.rwr")}
	require.NoError(t, os.WriteFile(cut.Path, orig[:len(orig)-3], 0o644))
	recs = append(recs, perturbed, cut)

	self, err := os.Executable()
	require.NoError(t, err)
	t.Setenv(resimEnv, "1")
	b := &binary{platform: platform{Name: "host", Slug: "host", GOOS: runtime.GOOS, Arch: runtime.GOARCH}, Path: self}
	ctx := context.Background()
	runnerFor(ctx, b, time.Minute)
	require.Empty(t, b.Skip)
	require.Empty(t, b.Err, b.Detail)
	var paths []string
	for _, r := range recs {
		paths = append(paths, r.Path)
	}
	res := resimulate(ctx, b, paths, time.Minute)

	for _, r := range recs[:2] {
		got := res[r.Path]
		assert.Equal(t, check.Verified, got.Status, "%s: %+v", r.Name, got)
		assert.Equal(t, frames, got.Frames, r.Name)
		assert.Equal(t, frames-1, got.Checksums, r.Name)
		assert.Equal(t, r.Final, got.Final, r.Name)
		assert.Equal(t, check.Build(), got.Build)
	}
	assert.Equal(t, "arena", res[recs[0].Path].Game)
	assert.Equal(t, "floatgame/fma+sin+exp", res[float.Path].Game)

	div := res[perturbed.Path]
	require.Equal(t, check.Diverged, div.Status, "%+v", div)
	assert.Equal(t, 101, div.Frame)
	assert.Equal(t, 100, div.Checksums, "frames 1 to 100 matched")
	assert.Regexp(t, `^floatgame\.World\.Wells\[1\]\.Mass: [12] vs [12]$`, div.Field)
	assert.Greater(t, div.Fields, 1, "the bodies it pulls differ too")

	bad := res[cut.Path]
	assert.Equal(t, check.Failed, bad.Status)
	assert.Contains(t, bad.Error, "the file ends at offset")

	m := &matrix{Games: recs, Platforms: []*binary{b}}
	for _, r := range recs {
		m.Cells = append(m.Cells, []cell{{Game: r, Platform: b, Result: res[r.Path]}})
	}
	var out bytes.Buffer
	m.printTable(&out)
	table := out.String()
	t.Log("\n" + table)
	assert.Regexp(t, `(?m)^arena +host +native +verified \(300 frames, 299 checksums\)$`, table)
	assert.Regexp(t, `(?m)^float all +host +native +verified \(300 frames, 299 checksums\)$`, table)
	assert.Regexp(t, `(?m)^float perturbed +host +native +diverged at frame 101: field floatgame\.World\.Wells\[1\]\.Mass \([12] here, [12] on the host; \d+ fields differ\)$`, table)
	assert.Regexp(t, `(?m)^float cut +host +native +error: replay: block \d+ at offset \d+: the file ends`, table)
	ok, badPlatforms := m.arenaOK()
	assert.True(t, ok, badPlatforms)
}

// A line that is not a result, or a replay the re-simulator never
// reported on (it crashed), gives a Failed result.
func TestParseResults(t *testing.T) {
	line := check.Result{File: "/x/a.rwr", Status: check.Diverged, Frame: 7, Field: "f: 1 vs 2"}.Line()
	out := append([]byte("panic: something\n{not json\n"), line...)
	res, complete := parseResults(out, []string{"/x/a.rwr", "/x/b.rwr"}, "signal: killed")
	assert.False(t, complete)
	assert.Equal(t, 7, res["/x/a.rwr"].Frame)
	assert.Equal(t, check.Result{File: "/x/b.rwr", Status: check.Failed, Error: "signal: killed"}, res["/x/b.rwr"])
	assert.Equal(t, "field f (1 here, 2 on the host)", describeField("f: 1 vs 2", 1))
	assert.Equal(t, "(no reference states given)", describeField("(no reference states given)", 0))
}

// A damaged states file is an error, never a panic, and a divergence
// without its states is still reported with its frame.
func TestStatesDamaged(t *testing.T) {
	dir := t.TempDir()
	file, err := recordMatch(games[1], 60, 3)
	require.NoError(t, err)
	rec, err := writeReplay(dir, games[1], file)
	require.NoError(t, err)
	states, err := os.ReadFile(rec.Path + ".states")
	require.NoError(t, err)
	_, err = check.ReadState(rec.Path+".states", 30)
	require.NoError(t, err)
	_, err = check.ReadState(rec.Path+".states", 61)
	assert.ErrorContains(t, err, "no state of frame 61")
	for _, n := range []int{0, 10, len(states) / 2} {
		require.NoError(t, os.WriteFile(rec.Path+".states", states[:n], 0o644))
		_, err = check.ReadState(rec.Path+".states", 59)
		assert.Error(t, err, "cut at %d", n)
	}
	require.NoError(t, os.WriteFile(rec.Path+".states", []byte("garbage"), 0o644))
	rp, err := replay.Read(bytes.NewReader(file))
	require.NoError(t, err)
	changed := rewrite(t, rp, func(f rollback.Frame, p rollback.PlayerID, in rollback.Input) rollback.Input {
		if f == 20 && p == 0 {
			in ^= floatgame.Pack(0, 0, true)
		}
		return in
	})
	require.NoError(t, os.WriteFile(rec.Path, changed, 0o644))
	r := check.Verify(rec.Path, rec.Path+".states")
	assert.Equal(t, check.Diverged, r.Status)
	assert.Equal(t, 21, r.Frame)
	assert.Contains(t, r.Field, "no reference state")
	r = check.Verify(rec.Path, "")
	assert.Equal(t, 21, r.Frame)
	assert.Equal(t, "(no reference states given)", r.Field)
}

// rewrite records rp again, each input passed through change
// (replaytest.Rewrite).
func rewrite(t *testing.T, rp *replay.Replay, change func(rollback.Frame, rollback.PlayerID, rollback.Input) rollback.Input) []byte {
	t.Helper()
	b, err := replaytest.Rewrite(rp, change)
	require.NoError(t, err)
	return b
}

// When the float game verifies everywhere, the findings say so and list
// the fused instructions the compiler generated instead.
func TestFindingsWithoutDivergence(t *testing.T) {
	float := recorded{game: games[1], Frames: 10, Checksums: 9, Final: "00"}
	arenaRec := recorded{game: games[0], Frames: 10, Checksums: 9, Final: "00"}
	var bs []*binary
	for _, slug := range []string{"amd64-v1", "amd64-v3", "arm64"} {
		b := &binary{platform: platform{Name: slug, Slug: slug}, Via: "native"}
		if slug != "amd64-v1" {
			b.FMA = fmaListing{Lines: map[string][]string{"floatgame": {"floatgame.go:195 VFMADD231SD X1, X0, X2"}}}
		}
		bs = append(bs, b)
	}
	m := &matrix{Games: []recorded{arenaRec, float}, Platforms: bs}
	for _, rec := range m.Games {
		var row []cell
		for _, b := range bs {
			row = append(row, cell{Game: rec, Platform: b, Result: check.Result{Status: check.Verified, Build: b.Name, Frames: 10, Checksums: 9, Final: "00"}})
		}
		m.Cells = append(m.Cells, row)
	}
	var out bytes.Buffer
	m.printFindings(&out)
	s := out.String()
	assert.Contains(t, s, "The float game did NOT diverge on any platform")
	assert.Contains(t, s, "amd64-v3: 1 fused instructions\n    floatgame.go:195 VFMADD231SD X1, X0, X2\n")
	assert.Contains(t, s, "amd64-v1: 0 fused instructions\n")
	assert.Contains(t, s, "float fma (mode fma): verified on amd64-v1, amd64-v3, arm64; diverged nowhere.")
}

// The compiler's listing yields the fused instructions of the float game
// and of math.Sin, by function group.
func TestParseListing(t *testing.T) {
	out := "# github.com/rewindgg/rewind/cmd/determinism/floatgame\n" +
		"github.com/rewindgg/rewind/cmd/determinism/floatgame.pull STEXT size=200 args=0x38 locals=0x0\n" +
		"\t0x0000 00000 (/x/floatgame.go:275)\tSUBSD\t(AX), X0\n" +
		"\t0x0010 00016 (/x/floatgame.go:195)\tVFMADD231SD\tX1, X0, X2\n" +
		"\t0x0000 f2 0f 5c 00 f2 0f 5c 48 08 84 db 74 0f f2 0f 10  ..\\....H...t....\n" +
		"math.sin STEXT size=480 args=0x8 locals=0x18\n" +
		"\t0x0040 00064 (/go/src/math/sin.go:220)\tFMADDD\tF1, F2, F3, F4\n" +
		"math.Cos STEXT size=64\n" +
		"\t0x0040 00064 (/go/src/math/sin.go:150)\tFMADDD\tF1, F2, F3, F4\n"
	l := parseListing(out)
	assert.Equal(t, []string{"floatgame.go:195 VFMADD231SD X1, X0, X2"}, l.Lines["floatgame"])
	assert.Equal(t, []string{"sin.go:220 FMADDD F1, F2, F3, F4"}, l.Lines["math.sin"])
	assert.Len(t, l.Lines, 2)
}
