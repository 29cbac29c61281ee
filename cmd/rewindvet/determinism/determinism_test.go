package determinism_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/rewindgg/rewind/cmd/rewindvet/determinism"
)

// TestAnalyzer runs the analyzer on testdata/src: example.com/game has one
// of each trap, reachable and not, silenced and not; example.com/lib is the
// library it calls (cross-package facts); the rollback package is a stub.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), determinism.Analyzer, "example.com/game", "example.com/lib", "example.com/layout")
}

// TestSuggestedFix checks that the fix for a fusable multiply-add converts
// the product to its type.
func TestSuggestedFix(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), determinism.Analyzer, "example.com/fix")
}

// TestPartialOff checks -partial=false: StepPartial is not checked.
func TestPartialOff(t *testing.T) {
	if err := determinism.Analyzer.Flags.Set("partial", "false"); err != nil {
		t.Fatal(err)
	}
	defer determinism.Analyzer.Flags.Set("partial", "true")
	analysistest.Run(t, analysistest.TestData(), determinism.Analyzer, "example.com/partial")
}

// TestNoFloat checks -nofloat: every floating-point expression reachable
// from Step is reported, constants and unreachable code are not.
func TestNoFloat(t *testing.T) {
	if err := determinism.Analyzer.Flags.Set("nofloat", "true"); err != nil {
		t.Fatal(err)
	}
	defer determinism.Analyzer.Flags.Set("nofloat", "false")
	analysistest.Run(t, analysistest.TestData(), determinism.Analyzer, "example.com/nofloat")
}
