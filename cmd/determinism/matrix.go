package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/rewindgg/rewind/determinism"
)

// platform is one column of the matrix: a build of the games' program and
// how this machine runs it.
type platform struct {
	Name string   // as the table shows it
	Slug string   // in file names
	Env  []string // the build's GOOS, GOARCH and level
	GOOS string
	Arch string // GOARCH
	// v3 needs the CPU features of GOAMD64=v3 to run natively.
	V3 bool
	// NoFMA runs under qemu-x86_64-static with a CPU model without FMA
	// (noFMACPU), checked first (fmaprobe.go): code that chooses FMA at
	// run time, such as math.Exp's assembly, takes its other path.
	NoFMA bool
}

var platforms = []platform{
	{Name: "linux/amd64 v1", Slug: "amd64-v1", GOOS: "linux", Arch: "amd64", Env: []string{"GOAMD64=v1"}},
	{Name: "linux/amd64 v3", Slug: "amd64-v3", GOOS: "linux", Arch: "amd64", Env: []string{"GOAMD64=v3"}, V3: true},
	{Name: "linux/amd64 v1 no FMA", Slug: "amd64-nofma", GOOS: "linux", Arch: "amd64", Env: []string{"GOAMD64=v1"}, NoFMA: true},
	{Name: "linux/386 sse2", Slug: "386-sse2", GOOS: "linux", Arch: "386", Env: []string{"GO386=sse2"}},
	{Name: "linux/386 softfloat", Slug: "386-softfloat", GOOS: "linux", Arch: "386", Env: []string{"GO386=softfloat"}},
	{Name: "linux/arm64", Slug: "arm64", GOOS: "linux", Arch: "arm64"},
	{Name: "js/wasm", Slug: "wasm", GOOS: "js", Arch: "wasm"},
}

// v3Features are the /proc/cpuinfo flags of GOAMD64=v3 (LZCNT, which
// Linux lists as abm, is left out: some hypervisors hide the flag while
// the instruction works; the binary's own start-up check has the last
// word, see runnerFor).
var v3Features = []string{"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe"}

// missingCPUFlags returns the flags of want that /proc/cpuinfo lacks (all
// of them when it cannot be read).
func missingCPUFlags(want []string) []string {
	b, err := os.ReadFile("/proc/cpuinfo")
	have := map[string]bool{}
	if err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
				for _, f := range strings.Fields(v) {
					have[f] = true
				}
				break
			}
		}
	}
	var miss []string
	for _, f := range want {
		if !have[f] {
			miss = append(miss, f)
		}
	}
	return miss
}

// binary is one platform's build of the program, with how to run it.
type binary struct {
	platform
	Path  string
	Run   []string // the command before the binary's arguments: the binary itself, or an emulator and it
	Via   string   // "native", "qemu-aarch64-static", "node"…
	Fuses string   // "yes" or "no": the program's run-time probe of x*y+z (determinism.Fuses)
	// Checked is what was checked of the emulated CPU (the no-FMA column).
	Checked string
	Skip    string // why it cannot run here, if it cannot
	Err     string // why it could not be built or started
	Detail  string // what the run printed on stderr, when it failed
	FMA     fmaListing
}

// listingFlags make the compiler print its assembly listing of the game
// packages and of package math (go build -gcflags=PKG=-S: the compiler's
// own listing, which, unlike go tool objdump, decodes amd64's VEX-encoded
// FMA instructions and covers wasm). The flags change no instruction, and
// the build cache replays the listing, so a warm build costs no more.
func listingFlags(games []string) []string {
	out := []string{"-gcflags=math=-S"}
	for _, g := range games {
		out = append(out, "-gcflags="+g+"=-S")
	}
	return out
}

// build cross-compiles the program for p into dir, and reads the fused
// multiply-adds of the compiler's listing (b.FMA).
func build(ctx context.Context, prog *program, dir string, p platform, timeout time.Duration) binary {
	b := binary{platform: p, Path: filepath.Join(dir, "matrix-"+p.Slug)}
	if p.Arch == "wasm" {
		b.Path += ".wasm"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := command(ctx, "go", append(append([]string{"build", "-o", b.Path}, listingFlags(prog.Games)...), prog.Pkg)...)
	cmd.Dir = prog.ModDir
	cmd.Env = buildEnv(p)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Err = fmt.Sprintf("build failed: %v", err)
		if ctx.Err() != nil {
			b.Err = fmt.Sprintf("build timed out after %v", timeout)
		}
		// The errors, without the listing.
		var msgs []string
		for line := range strings.Lines(string(out)) {
			if !strings.HasPrefix(line, "\t") && !strings.Contains(line, " STEXT ") {
				msgs = append(msgs, strings.TrimRight(line, "\n"))
			}
		}
		b.Detail = tail(strings.Join(msgs, "\n"), 20)
		return b
	}
	b.FMA = parseListing(string(out), prog.Games)
	b.FMA.Exp = expImpl(ctx, p, len(b.FMA.Lines["math.exp"]))
	return b
}

// buildEnv is the environment of p's builds: cgo off, GOOS, GOARCH and
// the architecture level (duplicates in Env: the last wins).
func buildEnv(p platform) []string {
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.GOOS, "GOARCH="+p.Arch, "GOAMD64=", "GO386=", "GOARM64=")
	return append(env, p.Env...)
}

// runnerFor decides how this machine runs b: natively, under
// qemu-user-static or under Node, checking with a run of its "probe". It
// sets b.Run and b.Via, or b.Skip. work is a directory for the FMA probe
// (fmaprobe.go).
func runnerFor(ctx context.Context, b *binary, work string, timeout time.Duration) {
	defer func() {
		if b.Skip != "" {
			b.Run, b.Via = nil, ""
		}
	}()
	hostArch := runtime.GOARCH
	switch {
	case b.Arch == "wasm":
		nodeRunner(ctx, b)
	case b.NoFMA:
		if !b.qemu("x86_64", "-cpu", noFMACPU) {
			b.Skip = "qemu-x86_64-static is not installed (apt-get install qemu-user-static)"
			return
		}
		checked, err := checkNoFMA(ctx, b.Run[:len(b.Run)-1], work, timeout)
		if err != nil {
			b.Err = err.Error()
			return
		}
		b.Via += " (no FMA, checked)"
		b.Checked = checked
	case b.Arch == hostArch || (hostArch == "amd64" && b.Arch == "386"):
		b.Run, b.Via = []string{b.Path}, "native"
		if miss := missingCPUFlags(v3Features); b.V3 && len(miss) > 0 && !b.qemu("x86_64", "-cpu", "max") {
			b.Skip = fmt.Sprintf("this CPU lacks %s and qemu-x86_64-static is not installed", strings.Join(miss, ", "))
		}
	case b.Arch == "arm64":
		if !b.qemu("aarch64") {
			b.Skip = "qemu-aarch64-static is not installed (apt-get install qemu-user-static)"
		}
	case b.Arch == "amd64":
		if !b.qemu("x86_64", "-cpu", "max") {
			b.Skip = "qemu-x86_64-static is not installed"
		}
	case b.Arch == "386":
		if !b.qemu386() {
			b.Skip = "qemu-i386-static is not installed"
		}
	default:
		b.Skip = "no way to run " + b.Arch + " here"
	}
	if b.Skip == "" && b.Err == "" {
		firstRun(ctx, b, timeout)
	}
}

// qemu makes b run under qemu-ARCH-static with the flags extra, and
// reports whether that emulator is installed.
func (b *binary) qemu(arch string, extra ...string) bool {
	name := "qemu-" + arch + "-static"
	path, err := exec.LookPath(name)
	if err != nil {
		return false
	}
	b.Run, b.Via = append(append([]string{path}, extra...), b.Path), name+strings.Join(append([]string{""}, extra...), " ")
	return true
}

// qemu386 runs b under qemu-i386-static. Its version 7.2 (Debian 12's)
// loses the GS segment, the 386 runtime's goroutine pointer, on returning
// from a signal handler: a Go program dies ("bad g in signal handler") at
// its first asynchronous preemption (SIGURG). Without them it runs.
func (b *binary) qemu386() bool { return b.qemu("i386", "-E", "GODEBUG=asyncpreemptoff=1") }

// nodeRunner makes b, a js/wasm build, run under Node.js with Go's glue.
func nodeRunner(ctx context.Context, b *binary) {
	node, err := exec.LookPath("node")
	if err != nil {
		node, err = exec.LookPath("nodejs")
	}
	if err != nil {
		b.Skip = "Node.js is not installed (apt-get install nodejs)"
		return
	}
	glue, err := wasmExec(ctx)
	if err != nil {
		b.Skip = err.Error()
		return
	}
	b.Run, b.Via = []string{node, "--stack-size=8192", glue, b.Path}, "node "+nodeVersion(ctx, node)
}

// firstRun runs b's probe. Natively, the kernel may lack 32-bit support
// (then qemu-i386-static runs it), the CPU GOAMD64=v3 (then
// qemu-x86_64-static -cpu max does).
func firstRun(ctx context.Context, b *binary, timeout time.Duration) {
	out, err := probe(ctx, b, timeout)
	if err != nil && b.Via == "native" {
		switch {
		case b.Arch == "386" && errors.Is(err, syscall.ENOEXEC):
			if !b.qemu386() {
				b.Skip = "this kernel does not run 32-bit x86 binaries and qemu-i386-static is not installed"
				return
			}
			out, err = probe(ctx, b, timeout)
		case b.V3 && strings.Contains(out, "microarchitecture"):
			if !b.qemu("x86_64", "-cpu", "max") {
				b.Skip = "this CPU does not run GOAMD64=v3 binaries and qemu-x86_64-static is not installed"
				return
			}
			out, err = probe(ctx, b, timeout)
		}
	}
	if err != nil {
		b.Err = fmt.Sprintf("does not start (%s): %v", b.Via, err)
		b.Detail = tail(out, 10)
	}
}

// probe runs the program's "probe": it must print one line, of its build
// and whether it fuses x*y+z (b.Fuses), and exit with status 0.
func probe(ctx context.Context, b *binary, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := command(ctx, b.Run[0], append(append([]string{}, b.Run[1:]...), "probe")...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("timed out after %v", timeout)
	}
	if err != nil {
		return string(out), err
	}
	for line := range strings.Lines(string(out)) {
		if r, ok := determinism.ParseLine([]byte(line)); ok && r.Status == determinism.Probe {
			b.Fuses = map[bool]string{true: "yes", false: "no"}[r.Fuses]
			return string(out), nil
		}
	}
	return string(out), errors.New("its probe printed no result")
}

// wasmExec finds Go's Node.js glue for js/wasm binaries.
func wasmExec(ctx context.Context) (string, error) {
	root, err := goroot(ctx)
	if err != nil {
		return "", err
	}
	for _, p := range []string{"lib/wasm/wasm_exec_node.js", "misc/wasm/wasm_exec_node.js"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			return filepath.Join(root, p), nil
		}
	}
	return "", fmt.Errorf("no wasm_exec_node.js under %s", root)
}

// goroot returns go env GOROOT.
func goroot(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := command(ctx, "go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// command is exec.CommandContext, with a bound on the wait for output
// still held by the children of a process that was killed.
func command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// nodeVersion returns node --version.
func nodeVersion(ctx context.Context, node string) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := command(ctx, node, "--version").Output()
	if err != nil {
		return "(version unknown)"
	}
	return strings.TrimSpace(string(out))
}

// resimulate runs b on the replays and returns its result for each, by
// path. A replay the run printed nothing for (it crashed, or timed out)
// gets a Failed result saying so.
func resimulate(ctx context.Context, b *binary, replays []string, timeout time.Duration) map[string]determinism.Result {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := append(append(append([]string{}, b.Run[1:]...), "verify"), replays...)
	cmd := command(ctx, b.Run[0], args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	why := ""
	switch {
	case ctx.Err() != nil:
		why = fmt.Sprintf("timed out after %v", timeout)
	case err != nil && !isExit1(err):
		why = err.Error()
	}
	res, complete := parseResults(stdout.Bytes(), replays, why)
	if !complete {
		b.Detail = tail(stderr.String(), 10)
	}
	if verbose {
		fmt.Fprintf(os.Stderr, "  %s: %d replays in %v\n", b.Name, len(replays), time.Since(start).Round(time.Millisecond))
	}
	return res
}

// parseResults reads the program's verify lines: a result for each
// replay, by path. A replay it printed nothing for gets a Failed result
// saying why (the run's error, or "no result line"); complete is false
// then.
func parseResults(stdout []byte, replays []string, why string) (res map[string]determinism.Result, complete bool) {
	res = map[string]determinism.Result{}
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if r, ok := determinism.ParseLine(sc.Bytes()); ok {
			res[r.File] = r
		}
	}
	if why == "" {
		why = "no result line"
	}
	complete = true
	for _, rp := range replays {
		if _, ok := res[rp]; !ok {
			res[rp] = determinism.Result{File: rp, Status: determinism.Failed, Error: why}
			complete = false
		}
	}
	return res, complete
}

// isExit1 is the program's "something did not verify".
func isExit1(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 1
}

// fmaInstr matches the fused multiply-add instructions of the compiler's
// assembly listing: amd64's VFMADD231SD and kin, arm64's FMADDD, FMSUBD,
// FNMSUBD, FNMADDD (and their single-precision forms).
var fmaInstr = regexp.MustCompile(`^(VFN?M(ADD|SUB)[0-9]{3}S[SD]|FN?M(ADD|SUB)[SD])$`)

// fmaListing is what the compiler generated for a build: per function
// group ("game": the -game packages' functions, "math.sin", "math.exp": the pure Go Exp), the fused
// multiply-add instructions, each as "file:line INSTR args"; and how
// math.Exp is implemented there.
type fmaListing struct {
	Lines map[string][]string
	Exp   string
}

// parseListing collects the fused multiply-adds of a compiler listing.
func parseListing(out string, games []string) fmaListing {
	l := fmaListing{Lines: map[string][]string{}}
	group := ""
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if !strings.HasPrefix(line, "\t") {
			// "pkg.func STEXT size=…" starts a function's listing.
			name, rest, _ := strings.Cut(line, " ")
			group = ""
			switch {
			case !strings.HasPrefix(rest, "STEXT"):
			case inPackages(name, games):
				group = "game"
			case name == "math.sin":
				group = "math.sin"
			case name == "math.exp" || name == "math.expmulti":
				group = "math.exp"
			}
			continue
		}
		// "\t0x0001 00001 (file:line)\tINSTR\targs"
		f := strings.Split(strings.TrimPrefix(line, "\t"), "\t")
		if group == "" || len(f) < 2 || !fmaInstr.MatchString(f[1]) {
			continue
		}
		pos := f[0]
		if i := strings.LastIndex(pos, "("); i >= 0 {
			pos = strings.Trim(filepath.Base(pos[i:]), "()")
		}
		l.Lines[group] = append(l.Lines[group], strings.TrimSpace(pos+" "+strings.Join(f[1:], " ")))
	}
	return l
}

// inPackages reports whether the function name (a listing's
// "path/pkg.Func" or "path/pkg.(*T).M") is of one of the packages.
func inPackages(name string, pkgs []string) bool {
	for _, p := range pkgs {
		if rest, ok := strings.CutPrefix(name, p+"."); ok && rest != "" {
			return true
		}
	}
	return false
}

// expImpl says how math.Exp is implemented on p: in assembly when
// GOROOT/src/math has exp_GOARCH.s (with its FMA instructions counted, and
// amd64's run-time choice noted), in Go otherwise (fused Go instructions
// counted).
func expImpl(ctx context.Context, p platform, goFused int) string {
	root, err := goroot(ctx)
	if err != nil {
		return "?"
	}
	src, err := os.ReadFile(filepath.Join(root, "src", "math", "exp_"+p.Arch+".s"))
	if err != nil {
		return fmt.Sprintf("Go, %d fused", goFused)
	}
	n := 0
	for line := range strings.Lines(string(src)) {
		if f := strings.Fields(line); len(f) > 0 && fmaInstr.MatchString(f[0]) {
			n++
		}
	}
	s := fmt.Sprintf("assembly (exp_%s.s), %d FMA", p.Arch, n)
	if strings.Contains(string(src), "useFMA") {
		s += " used only if the CPU has FMA"
	}
	return s
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
