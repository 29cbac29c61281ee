// Command determinism runs the determinism matrix (make determinism, through
// determinism.sh beside it): it records replays on this machine of seeded
// two-player bot matches of the arena example (fixed point) and of a
// float game (cmd/determinism/floatgame, non-deterministic across platforms
// on purpose), then re-simulates the same replay files with the
// re-simulator (cmd/determinism/resim) cross-compiled for linux/amd64
// (GOAMD64=v1 and v3), linux/386 (SSE2 and softfloat), linux/arm64 (under
// qemu-aarch64-static) and js/wasm (under Node.js), and prints a table:
// game, platform, and "verified (N frames, M checksums)" or "diverged at
// frame F: field <name>".
//
//	determinism [-out DIR] [-frames N] [-seed S] [-platforms LIST] [-root DIR]
//
// Every frame has a checksum, and the host's state at each is kept beside
// the replay (FILE.states, with the host's layout of the arena), so a
// divergence is named at its first frame with the field that differs
// first, both values shown. A platform that lays the state out otherwise
// (386 aligns 64-bit fields to 4 bytes) cannot match checksums of the
// whole arena: its states are compared with the host's field by field, and
// the table says "checksums differ by layout only" when every field
// matches.
//
// Exit status: 0 when the table was produced and every field of the
// arena's state was reproduced on every platform that ran (by its
// checksums, or field by field where the layout differs; the float game
// diverging is a finding, not a failure); 1 when the arena diverged
// somewhere, or a platform failed to build or run; 2 when the replays
// could not be recorded, or for bad usage.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/rewindgg/rewind/cmd/determinism/internal/check"
)

// verbose prints progress on stderr.
var verbose = true

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("determinism", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", filepath.Join(os.TempDir(), "rewind-determinism"), "directory for the replays and the re-simulators")
	frames := fs.Int("frames", 3000, "frames per match")
	seed := fs.Uint64("seed", 1, "the matches' seed")
	only := fs.String("platforms", "", "comma-separated platform slugs to run (default all: "+slugs()+")")
	root := fs.String("root", ".", "the module's root directory (where go build runs)")
	buildTimeout := fs.Duration("build-timeout", 10*time.Minute, "time limit of each build")
	runTimeout := fs.Duration("run-timeout", 10*time.Minute, "time limit of each platform's re-simulation")
	fs.BoolVar(&verbose, "v", true, "progress on stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *frames < 2 || *frames > 1_000_000 {
		fmt.Fprintln(stderr, "usage: determinism [flags]  (-frames from 2 to 1000000)")
		fs.PrintDefaults()
		return 2
	}
	if _, err := os.Stat(filepath.Join(*root, "go.mod")); err != nil {
		fmt.Fprintf(stderr, "determinism: -root %s: %v\n", *root, err)
		return 2
	}
	chosen, err := choose(*only)
	if err != nil {
		fmt.Fprintln(stderr, "determinism:", err)
		return 2
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(stderr, "determinism:", err)
		return 2
	}
	if abs, err := filepath.Abs(*out); err == nil {
		*out = abs // the re-simulators run elsewhere (Node, qemu): absolute paths
	}
	ctx := context.Background()
	start := time.Now()

	// 1. Record on the host.
	progress("recording %d games of %d frames on %s", len(games), *frames, check.Build())
	m := &matrix{}
	var paths []string
	for _, g := range games {
		file, err := recordMatch(g, *frames, *seed)
		if err == nil {
			var rec recorded
			rec, err = writeReplay(*out, g, file)
			m.Games = append(m.Games, rec)
			paths = append(paths, rec.Path)
		}
		if err != nil {
			fmt.Fprintf(stderr, "determinism: recording %s: %v\n", g.Name, err)
			return 2
		}
	}

	// 2. Build and run each platform's re-simulator.
	results := map[string]map[string]check.Result{}
	for _, p := range chosen {
		progress("building %s", p.Name)
		b := build(ctx, *root, *out, p, *buildTimeout)
		m.Platforms = append(m.Platforms, &b)
		if b.Err != "" {
			fmt.Fprintf(stderr, "%s: %s\n%s\n", p.Name, b.Err, b.Detail)
			continue
		}
		runnerFor(ctx, &b, *runTimeout)
		if b.Skip != "" || b.Err != "" {
			progress("%s: %s%s", p.Name, b.Skip, b.Err)
			continue
		}
		progress("re-simulating on %s (%s)", p.Name, b.Via)
		results[p.Slug] = resimulate(ctx, &b, paths, *runTimeout)
		if b.Detail != "" {
			fmt.Fprintf(stderr, "%s printed:\n%s\n", p.Name, b.Detail)
		}
	}
	for _, rec := range m.Games {
		row := make([]cell, len(m.Platforms))
		for p, b := range m.Platforms {
			row[p] = cell{Game: rec, Platform: b, Result: results[b.Slug][rec.Path]}
		}
		m.Cells = append(m.Cells, row)
	}

	// 3. The table.
	fmt.Fprintf(stdout, "Determinism matrix: %d-frame two-player bot matches (seed %d, a checksum every frame) recorded on\n", *frames, *seed)
	fmt.Fprintf(stdout, "%s (%s, %s), re-simulated from the same replay files on each platform.\n\n", check.Build(), runtime.Version(), cpuSummary())
	m.printTable(stdout)
	m.printFindings(stdout)
	fmt.Fprintf(stdout, "\nReplays and reference states in %s; %v in all.\n", *out, time.Since(start).Round(100*time.Millisecond))
	if ok, _ := m.arenaOK(); !ok {
		return 1
	}
	for _, b := range m.Platforms {
		if b.Err != "" {
			return 1
		}
	}
	return 0
}

// choose returns the platforms named in a comma-separated list of slugs,
// or all of them for "".
func choose(only string) ([]platform, error) {
	if only == "" {
		return platforms, nil
	}
	var out []platform
	for s := range strings.SplitSeq(only, ",") {
		found := false
		for _, p := range platforms {
			if p.Slug == strings.TrimSpace(s) {
				out, found = append(out, p), true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown platform %q (known: %s)", s, slugs())
		}
	}
	return out, nil
}

func slugs() string {
	var s []string
	for _, p := range platforms {
		s = append(s, p.Slug)
	}
	return strings.Join(s, ",")
}

// cpuSummary names this machine's CPU and whether it has FMA and AVX2
// (math.Exp on amd64 takes its FMA path on such a CPU, v1 build or not).
func cpuSummary() string {
	model := "CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "386" {
		return model
	}
	if miss := missingCPUFlags([]string{"fma", "avx2"}); len(miss) > 0 {
		return model + " without " + strings.Join(miss, ", ")
	}
	return model + " with fma and avx2"
}

// started is when the run started, for progress.
var started = time.Now()

func progress(format string, args ...any) {
	if verbose {
		fmt.Fprintf(os.Stderr, "determinism: %5.1fs "+format+"\n", append([]any{time.Since(started).Seconds()}, args...)...)
	}
}
