package determinism

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rewindgg/rewind/cmd/rewindvet/internal/mathscan"
)

// TestMathFuncsUpToDate derives the list of platform-dependent math
// functions again from the installed Go ($(go env GOROOT)) and fails if
// the checked-in mathfuncs.go differs: run go generate ./determinism.
func TestMathFuncsUpToDate(t *testing.T) {
	out, err := exec.Command("go", "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) != 2 {
		t.Fatalf("go env GOROOT GOVERSION: %q", out)
	}
	tab, err := mathscan.Scan(fields[0])
	if err != nil {
		t.Fatal(err)
	}
	want, err := tab.Source("determinism")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("mathfuncs.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		var diff []string
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				diff = append(diff, "- "+g, "+ "+w)
			}
		}
		t.Fatalf("mathfuncs.go is stale for %s (%s): run go generate ./determinism in cmd/rewindvet\n%s",
			fields[1], fields[0], strings.Join(diff, "\n"))
	}
	// The list must hold the functions everyone knows to differ.
	for _, name := range []string{"Sin", "Exp", "Log", "Pow"} {
		if _, ok := mathFuncs[name]; !ok {
			t.Errorf("math.%s is not in mathFuncs", name)
		}
	}
	for name := range mathscan.Exact {
		if _, ok := mathFuncs[name]; ok {
			t.Errorf("math.%s is exact but listed", name)
		}
	}
}
