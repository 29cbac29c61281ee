// Command determinism runs the determinism matrix for games that
// implement determinism.Game (package determinism): it records replays of
// their matches on this machine, with rollbacks (a sync-test match and a
// two-machine match over a simulated network, for each of several seeds),
// then re-simulates the same replay files on linux/amd64 (GOAMD64=v1 and
// v3), linux/amd64 v1 on a CPU without FMA (qemu-x86_64-static -cpu
// Nehalem, checked to lack FMA first), linux/386 (SSE2 and softfloat),
// linux/arm64 (qemu-aarch64-static) and js/wasm (Node.js), and prints a
// table: game, platform, and "verified" or "diverged at frame F of seed S
// KIND: field <name> (value here, value on the host)".
//
// From the game's module (one that requires github.com/rewindgg/rewind):
//
//	go run github.com/rewindgg/rewind/cmd/determinism -game ./path/to/yourgame
//
// Each -game package exports func Determinism() []determinism.Game. The
// command writes a main package into a new directory of that module
// (_rewind_determinism_*, removed at the end) that passes those games to
// determinism.Main, builds it once per platform, runs "record" on this
// machine and "verify" on each platform.
//
//	determinism -game PKG [-game PKG...] [-func Determinism] [-out DIR]
//	  [-frames N] [-seeds 1,2,3] [-profile wifi] [-synctest 7]
//	  [-platforms LIST] [-allow-skip LIST] [-may-diverge LIST] [-json FILE]
//
// Every frame has a checksum, and the host's state at each is kept beside
// the replay (FILE.states, with the host's layout of the arena), so a
// divergence is named at its first frame with the field that differs
// first, both values shown. A platform that lays the state out otherwise
// (386 aligns 64-bit fields to 4 bytes) cannot match checksums of the
// whole arena: its states are compared with the host's field by field, and
// the table says "checksums differ by layout only" when every field
// matches (a failure for a game that must verify: its peers there would
// report a desync).
//
// Exit status: 0 when the table was produced, every platform ran (or was
// named in -allow-skip), and every game verified on every platform that
// ran, but the games named (by prefix) in -may-diverge, whose divergence
// is a finding; 1 when one did not, a platform was skipped without
// -allow-skip naming it, a platform failed to build or run, or a
// recording failed its sync test; 2 when the program could not be
// generated, built or run on this machine, or for bad usage.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/rewindgg/rewind/determinism"
)

// verbose prints progress on stderr.
var verbose = true

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// config is the command line.
type config struct {
	games                    []string
	fn, out, jsonFile        string
	frames, syncTest         int
	seeds, profile           string
	platforms                []platform
	allowSkip, mayDiverge    []string
	buildTimeout, runTimeout time.Duration
}

func parse(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("determinism", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.Func("game", "a package (a path or pattern, from this directory) that exports func Determinism() []determinism.Game; repeatable", func(s string) error {
		c.games = append(c.games, s)
		return nil
	})
	fs.StringVar(&c.fn, "func", "Determinism", "the function each -game package exports")
	fs.StringVar(&c.out, "out", filepath.Join(os.TempDir(), "rewind-determinism"), "directory for the replays and the builds")
	fs.IntVar(&c.frames, "frames", 1200, "frames per match")
	fs.StringVar(&c.seeds, "seeds", "1,2,3", "comma-separated seeds: each plays a sync-test match and a two-machine match")
	fs.StringVar(&c.profile, "profile", "wifi", "the two-machine match's network (a rollback/netsim preset or spec)")
	fs.IntVar(&c.syncTest, "synctest", 7, "frames the sync-test match rolls back every frame")
	only := fs.String("platforms", "", "comma-separated platform slugs to run (default all: "+slugs()+")")
	allow := fs.String("allow-skip", "", "comma-separated platform slugs that may be skipped (any other skipped platform fails the run)")
	may := fs.String("may-diverge", "", "comma-separated game name prefixes whose divergence is a finding, not a failure")
	fs.StringVar(&c.jsonFile, "json", "", "also write every cell to this file, as JSON")
	fs.DurationVar(&c.buildTimeout, "build-timeout", 10*time.Minute, "time limit of each build")
	fs.DurationVar(&c.runTimeout, "run-timeout", 20*time.Minute, "time limit of each platform's re-simulation")
	fs.BoolVar(&verbose, "v", true, "progress on stderr")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() != 0 || len(c.games) == 0 {
		return c, fmt.Errorf("usage: determinism -game PKG [flags]")
	}
	var err error
	if c.platforms, err = choose(*only); err != nil {
		return c, err
	}
	if c.allowSkip, err = slugList(*allow); err != nil {
		return c, fmt.Errorf("-allow-skip: %w", err)
	}
	c.mayDiverge = splitList(*may)
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintln(stderr, "determinism:", err)
		}
		return 2
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		fmt.Fprintln(stderr, "determinism:", err)
		return 2
	}
	if abs, err := filepath.Abs(c.out); err == nil {
		c.out = abs // the programs run elsewhere (Node, qemu): absolute paths
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()

	// 1. The program, generated into the games' module, built and run here.
	pkgs, err := resolve(ctx, c.games)
	if err != nil {
		fmt.Fprintln(stderr, "determinism:", err)
		return 2
	}
	prog, err := generate(pkgs, c.fn)
	if err != nil {
		fmt.Fprintln(stderr, "determinism:", err)
		return 2
	}
	defer prog.Close()
	progress("recording on %s: %d frames a match, seeds %s", determinism.Build(), c.frames, c.seeds)
	m := &matrix{AllowSkip: c.allowSkip, MayDiverge: c.mayDiverge}
	paths, code := recordAll(ctx, c, prog, m, stderr)
	if code != 0 {
		return code
	}

	// 2. Build and run each platform's program.
	m.runPlatforms(ctx, c, prog, paths, stderr)

	// 3. The table.
	fmt.Fprintf(stdout, "Determinism matrix: replays recorded on %s (%s, %s): for each seed (%s), a sync-test match\n",
		determinism.Build(), runtime.Version(), cpuSummary(), c.seeds)
	fmt.Fprintf(stdout, "(every frame rolled back %d frames) and a two-machine match over a simulated %s network, %d frames each,\n", c.syncTest, c.profile, c.frames)
	fmt.Fprintf(stdout, "a checksum every frame; %s. Re-simulated from the same files on each platform.\n\n", rollbackSummary(m))
	m.printTable(stdout)
	m.printFindings(stdout)
	if c.jsonFile != "" {
		if err := m.writeJSON(c.jsonFile); err != nil {
			fmt.Fprintln(stderr, "determinism:", err)
			return 2
		}
	}
	fmt.Fprintf(stdout, "\nReplays and reference states in %s; %v in all.\n", c.out, time.Since(start).Round(100*time.Millisecond))
	if probs := m.problems(); len(probs) > 0 {
		fmt.Fprintln(stdout, "\nFAILED:")
		for _, p := range probs {
			fmt.Fprintln(stdout, "- "+p)
		}
		return 1
	}
	fmt.Fprintln(stdout, "\nPASSED: every platform ran and every game that must verify verified.")
	return 0
}

// runPlatforms builds the program for each platform, runs its verify on
// the replays there, and fills m's platforms and cells.
func (m *matrix) runPlatforms(ctx context.Context, c config, prog *program, paths []string, stderr io.Writer) {
	results := map[string]map[string]determinism.Result{}
	for _, p := range c.platforms {
		progress("building %s", p.Name)
		b := build(ctx, prog, c.out, p, c.buildTimeout)
		m.Platforms = append(m.Platforms, &b)
		if b.Err != "" {
			fmt.Fprintf(stderr, "%s: %s\n%s\n", p.Name, b.Err, b.Detail)
			continue
		}
		runnerFor(ctx, &b, c.out, c.runTimeout)
		if b.Skip != "" || b.Err != "" {
			progress("%s: %s%s", p.Name, b.Skip, b.Err)
			continue
		}
		progress("re-simulating on %s (%s)", p.Name, b.Via)
		results[p.Slug] = resimulate(ctx, &b, paths, c.runTimeout)
		if b.Detail != "" {
			fmt.Fprintf(stderr, "%s printed:\n%s\n", p.Name, b.Detail)
		}
	}
	for _, row := range m.Games {
		cells := make([]cell, len(m.Platforms))
		for p, b := range m.Platforms {
			cells[p] = cell{Game: row, Platform: b}
			if res, ok := results[b.Slug]; ok {
				for _, rec := range row.Recs {
					cells[p].Results = append(cells[p].Results, res[rec.File])
				}
			}
		}
		m.Cells = append(m.Cells, cells)
	}
}

// rollbackSummary says how much the recording sessions rolled back.
func rollbackSummary(m *matrix) string {
	var rollbacks, resim int64
	n := 0
	for _, row := range m.Games {
		for _, r := range row.Recs {
			rollbacks, resim, n = rollbacks+r.Rollbacks, resim+r.Resimulated, n+1
		}
	}
	return fmt.Sprintf("%d replays, whose recording sessions rolled back %d times and re-simulated %d frames", n, rollbacks, resim)
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
