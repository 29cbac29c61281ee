package rollbacktest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/rollbacktest"
)

// script plays a short match with a late input on a lossy link, and
// returns every report along the way.
func script(t *testing.T, seed uint64) string {
	t.Helper()
	e, err := rollbacktest.New(rollbacktest.Config{Machines: 3, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(e.Advance(nil, 30))
	must(t, e.Hold(2, 0))
	must(t, e.SetInput(2, 7))
	b.WriteString(e.Advance(nil, 10))
	if _, err := e.Deliver(2, 0, -1, true); err != nil {
		t.Fatal(err)
	}
	must(t, e.Heal(2, 0))
	b.WriteString(e.AdvanceTo(60, 600))
	for i := range e.Machines() {
		st, err := e.Stats(i)
		must(t, err)
		ev, err := e.Events(i)
		must(t, err)
		b.WriteString(st + ev)
	}
	b.WriteString(e.Agreement(-1))
	return b.String()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeterministic: the same seed gives the same reports, byte for byte;
// the reports are the transcripts' expected outputs, so anything that
// varied from run to run would make them flaky.
func TestDeterministic(t *testing.T) {
	a, b := script(t, 3), script(t, 3)
	if a != b {
		t.Fatalf("two runs differ:\n%s\n---\n%s", a, b)
	}
	if !strings.Contains(a, "rollbacks=1") || !strings.Contains(a, "have the same state") {
		t.Fatalf("machine 0 rolled back once for the late input, and the machines agree:\n%s", a)
	}
}

// TestAgreementSeesADifference: with desync detection off, a game that
// goes wrong on one machine is caught by Agreement, not reported as
// agreeing (the transcripts' agree lines must be able to fail).
func TestAgreementSeesADifference(t *testing.T) {
	e, err := rollbacktest.New(rollbacktest.Config{Machines: 2, Seed: 1, Edit: func(i int, c *rollback.Config) {
		c.ChecksumEvery = -1
	}})
	must(t, err)
	must(t, e.Corrupt(1, 10))
	e.AdvanceTo(40, 600)
	if got, want := e.Agreement(-1), "state at 40: m0 m1 have DIFFERENT states"; !strings.Contains(got, want) {
		t.Fatalf("Agreement = %q, want %q in it", got, want)
	}
	if got := e.Agreement(-1); !strings.Contains(got, "final: machines [0 1] agree") {
		t.Fatalf("the inputs are the same; Agreement = %q", got)
	}
}

// TestErrors: commands that cannot be carried out say so.
func TestErrors(t *testing.T) {
	e, err := rollbacktest.New(rollbacktest.Config{Machines: 2, Seed: 1, Late: []int{1}})
	must(t, err)
	for name, err := range map[string]error{
		"no machine":  e.SetInput(5, 1),
		"no link":     e.Hold(0, 0),
		"not running": e.Crash(1),
		"running":     e.Restart(0),
		"no handshake yet": func() error {
			_, err := e.Forge(rollbacktest.Forgery{Kind: rollbacktest.ForgeHandshake, From: 1, To: 0})
			return err
		}(),
		"no input packet": func() error {
			_, err := e.Forge(rollbacktest.Forgery{Kind: rollbacktest.ForgeReplay, From: 1, To: 0})
			return err
		}(),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := rollbacktest.New(rollbacktest.Config{Machines: 2, Late: []int{0}}); err == nil {
		t.Error("machine 0 cannot be late")
	}
	if _, err := rollbacktest.ParseForgeKind("love letter"); err == nil {
		t.Error("an unknown forgery")
	}
}

// Example plays a two-machine match in which machine 1's input reaches
// machine 0 late: machine 0 rolls back.
func Example() {
	e, err := rollbacktest.New(rollbacktest.Config{Machines: 2, Seed: 1})
	if err != nil {
		panic(err)
	}
	e.Advance(nil, 30)   // the handshake, the start, 25 frames
	_ = e.Hold(1, 0)     // machine 1's datagrams to machine 0 wait
	_ = e.SetInput(1, 9) // while its player presses something
	e.Advance(nil, 5)
	_, _ = e.Deliver(1, 0, -1, false)
	_ = e.Heal(1, 0)
	fmt.Print(e.Advance(nil, 1))
	st, _ := e.Stats(0)
	fmt.Print(st)
	// Output:
	// m0: frame=32 stalled=0 resimulated=11
	// m1: frame=32 stalled=0 resimulated=0
	// m0: running frame=32 confirmed=31 final=31 rollbacks=1 resimulated=11 deepest=5 stalls=0
	//   received: invalid=0 forged=0 duplicate=0 over-budget=0
	//   peer 0 (m1): connected dropped=0 forged=0
}
