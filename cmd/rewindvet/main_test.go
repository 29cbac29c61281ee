package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// trapWants maps each marker of examples/traps to a piece of the message
// its line must get.
var trapWants = map[string]string{
	"maprange":   "range over a map: iteration order is randomised per run",
	"mapkeys":    "maps.Keys outside slices.Sorted",
	"time":       "time.Now: the wall clock differs",
	"rand":       "rand.Intn: the global generator",
	"randmethod": "(*rand.Rand).Intn: a *rand.Rand keeps its state on the heap",
	"cryptorand": "crypto/rand.Read: it differs on every machine",
	"goroutine":  "go statement: goroutine scheduling order",
	"send":       "channel send:",
	"receive":    "channel receive:",
	"select":     "select: select picks a random ready case",
	"close":      "close of a channel:",
	"fma":        "the compiler may fuse it into one FMA instruction",
	"fmalocal":   "holds the unrounded product",
	"math":       "math.Sin: it is assembly on",
	"globalvar":  "package variable spawned",
	"unsafe":     "use of package unsafe",
	"crosspkg":   "calls wallclock.Seconds, which calls time.Now at wallclock.go:",
	"allow":      "//rewind:allow without a reason",
	"layout":     "traps.Score.Points is at byte 4 (4 bytes) on 386 and arm, but at byte 8 (8 bytes) on amd64, arm64 and wasm",
}

var (
	diagRx   = regexp.MustCompile(`^(\S+\.go):(\d+):(\d+): (.*)$`)
	markerRx = regexp.MustCompile(`(?://|/\*) trap: (\w+)`)
)

// TestVetExamples builds rewindvet and runs it through go vet from the
// repository's root on examples/traps, whose every marked line must be
// reported exactly once (and nothing else), and on examples/arena and
// examples/quickstart, which must have no findings.
func TestVetExamples(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if mod, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !bytes.Contains(mod, []byte("module github.com/rewindgg/rewind\n")) {
		t.Fatalf("%s is not the repository's root (go.mod: %v)", root, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	bin := filepath.Join(t.TempDir(), "rewindvet")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// The marked lines.
	want := make(map[string]string) // examples/traps/traps.go:12 → marker
	files, err := filepath.Glob(filepath.Join(root, "examples", "traps", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples/traps/*.go: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for i, line := range strings.Split(string(data), "\n") {
			if m := markerRx.FindStringSubmatch(line); m != nil {
				if _, ok := trapWants[m[1]]; !ok {
					t.Errorf("%s:%d: unknown trap marker %q", rel, i+1, m[1])
				}
				want[filepath.ToSlash(rel)+":"+strconv.Itoa(i+1)] = m[1]
			}
		}
	}
	for name := range trapWants {
		found := false
		for _, m := range want {
			found = found || m == name
		}
		if !found {
			t.Errorf("examples/traps has no %q trap", name)
		}
	}

	cmd := exec.CommandContext(ctx, "go", "vet", "-vettool="+bin, "./examples/traps", "./examples/arena", "./examples/quickstart")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("go vet: %v\n%s", err, out)
	}
	got := make(map[string][]string)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "go: downloading ") || line == "" {
			continue
		}
		m := diagRx.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("unexpected output from go vet: %s", line)
			continue
		}
		key := filepath.ToSlash(m[1]) + ":" + m[2]
		got[key] = append(got[key], m[4])
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		marker, ok := want[k]
		switch {
		case !ok:
			t.Errorf("%s: unexpected finding: %s", k, strings.Join(got[k], " | "))
		case len(got[k]) != 1:
			t.Errorf("%s: trap %s reported %d times: %s", k, marker, len(got[k]), strings.Join(got[k], " | "))
		case !strings.Contains(got[k][0], trapWants[marker]):
			t.Errorf("%s: trap %s reported as %q, want it to say %q", k, marker, got[k][0], trapWants[marker])
		}
	}
	for k, marker := range want {
		if len(got[k]) == 0 {
			t.Errorf("%s: trap %s not reported", k, marker)
		}
	}
	if t.Failed() {
		t.Logf("go vet output:\n%s", out)
	}
}
