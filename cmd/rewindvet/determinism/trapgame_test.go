package determinism_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/rewindgg/rewind/cmd/rewindvet/determinism"
)

// recorder is an analysistest.Testing that keeps the complaints about
// unexpected diagnostics and facts instead of failing: the trap game has
// markers, not want comments, and TestTrapGame counts them itself.
type recorder struct{ msgs []string }

func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

var markRx = regexp.MustCompile(`// (trap|fine):([\w-]+)`)

// trapKinds maps each trap category of the trap game to the kinds
// (diagnostic categories) that report it: a finding of another kind on
// the line does not count.
var trapKinds = map[string][]string{
	"interface": {"math"}, "interface-maprange": {"maprange"}, "generic": {"rand"},
	"generic-store": {"rand"}, "embedded-interface": {"math"},
	"funcvalue": {"rand"}, "funcvalue-field": {"time"}, "funcvalue-var": {"math"},
	"helper-interface": {"time"}, "helper-constructor": {"time"}, "helper-funcvalue": {"math"},
	"helper-init-table": {"math"}, "helper-float2int": {"floatconv"},
	"init-methodvalue": {"time"}, "init-table": {"math"}, "init-goroutine": {"goroutine"},
	"init-goroutine-detached": {"goroutine"}, "init-goroutine-read": {"globalvar"}, "init-handler": {"time"}, "init-local-dep": {"time"},
	"closure": {"capture"}, "closure-field": {"capture"}, "closure-map": {"capture"}, "helper-closure": {"capture"}, "closure-subscribed": {"capture"}, "closure-queued": {"capture"},
	"standin": {"env"}, "standin-assigned": {"runtime"},
	"runtime": {"runtime"}, "goarch": {"runtime"}, "env": {"env"}, "maphash": {"maphash"},
	"reflect": {"maprange", "address"}, "fmt-p": {"address"}, "fmt-pointer": {"address"},
	"syncmap": {"maprange"}, "sort-interface": {"math"}, "helper-callback": {"rand"}, "syncpool": {"syncpool"},
	"float2int": {"floatconv"}, "nanbits": {"nanbits"}, "narrow": {"narrow"}, "narrow-uint32": {"narrow"},
	"maprange-floatsum": {"maprange"}, "maprange-unsorted": {"maprange"}, "maprange-call": {"maprange"},
	"maprange-values": {"maprange"}, "argmax-ties": {"maprange"}, "sort-ties": {"maprange"},
}

// knownMisses are the trap lines the analyzer is known not to report
// (file:line → why); empty when it reports them all.
var knownMisses = map[string]string{}

// TestTrapGame runs the analyzer on example.com/trapgame, a game that
// hides its traps the way real games do, and checks that every line
// marked "trap:<category>" is reported and no line marked
// "fine:<category>" is. It logs the recall (traps reported / traps) and
// the false positives (look-alikes reported).
func TestTrapGame(t *testing.T) {
	dir := filepath.Join(analysistest.TestData(), "src", "example.com", "trapgame")
	traps, fines := make(map[string]string), make(map[string]string) // file:line → category
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := markRx.FindStringSubmatch(line); m != nil {
				key := fmt.Sprintf("%s:%d", filepath.Base(path), i+1)
				if m[1] == "trap" {
					traps[key] = m[2]
				} else {
					fines[key] = m[2]
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(traps) < 30 || len(fines) < 20 {
		t.Fatalf("the trap game has %d traps and %d look-alikes, want at least 30 and 20", len(traps), len(fines))
	}

	rec := new(recorder)
	results := analysistest.Run(rec, analysistest.TestData(), determinism.Analyzer, "example.com/trapgame", "example.com/trapgame/helpers")
	got := make(map[string][]string)
	kinds := make(map[string][]string) // file:line → the categories reported
	for _, r := range results {
		if r.Err != nil {
			t.Fatalf("analysis failed: %v", r.Err)
		}
		for _, d := range r.Diagnostics {
			p := r.Pass.Fset.Position(d.Pos)
			key := fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
			got[key] = append(got[key], d.Message)
			kinds[key] = append(kinds[key], d.Category)
		}
	}

	found, fps := 0, 0
	for key, cat := range traps {
		want, ok := trapKinds[cat]
		if !ok {
			t.Errorf("%s: trap category %s has no entry in trapKinds", key, cat)
			continue
		}
		if slices.ContainsFunc(kinds[key], func(k string) bool { return slices.Contains(want, k) }) {
			found++
			t.Logf("%s: trap %s: %s", key, cat, strings.Join(got[key], " | "))
			continue
		}
		if why, ok := knownMisses[key]; ok {
			t.Logf("%s: trap %s not reported (known: %s)", key, cat, why)
			continue
		}
		if len(got[key]) > 0 {
			t.Errorf("%s: trap %s reported as another kind than %v: %s", key, cat, want, strings.Join(got[key], " | "))
			continue
		}
		t.Errorf("%s: trap %s not reported", key, cat)
	}
	for key, cat := range fines {
		if msgs := got[key]; len(msgs) > 0 {
			fps++
			t.Errorf("%s: look-alike %s reported: %s", key, cat, strings.Join(msgs, " | "))
		}
	}
	var other []string
	for key, msgs := range got {
		if _, ok := traps[key]; ok {
			continue
		}
		if _, ok := fines[key]; ok {
			continue
		}
		other = append(other, key+": "+strings.Join(msgs, " | "))
	}
	sort.Strings(other)
	for _, o := range other {
		t.Logf("also reported (unmarked line): %s", o)
	}
	t.Logf("recall: %d of %d traps (%.0f%%); look-alikes reported: %d of %d",
		found, len(traps), 100*float64(found)/float64(len(traps)), fps, len(fines))
	if found*10 < len(traps)*9 {
		t.Errorf("recall %d/%d is under 90%%", found, len(traps))
	}
}
