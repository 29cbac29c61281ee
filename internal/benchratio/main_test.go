package main

import (
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	in := `goos: linux
pkg: github.com/rewindgg/rewind/rollback
BenchmarkAdvance/steady-1KiB-plain-2   	 3363378	       300.0 ns/op	        10.81 bytes/packet	       0 B/op	       0 allocs/op
BenchmarkAdvance/steady-1KiB-plain-2   	 3363378	       310.0 ns/op	        10.81 bytes/packet	       0 B/op	       0 allocs/op
BenchmarkAdvance/steady-1KiB-plain-2   	 3363378	       900.0 ns/op	        10.81 bytes/packet	       0 B/op	       0 allocs/op
BenchmarkFloor/steady-1KiB-2           	 8090064	       150.0 ns/op	        10.00 bytes/packet	       0 B/op	       0 allocs/op
BenchmarkFloor/steady-1KiB-2           	 8090064	       160.0 ns/op	        10.00 bytes/packet	       0 B/op	       0 allocs/op
BenchmarkAdvance/rollback20-1MiB-2     	   40539	     28000 ns/op	         1.000 rollbacks/op	         0 saves/op	      25 B/op	       0 allocs/op
PASS
`
	runs, failed, err := parse(strings.NewReader(in))
	if err != nil || failed != "" {
		t.Fatal(err, failed)
	}
	var out strings.Builder
	report(&out, runs)
	want := "steady: 310.0 ns / floor 155.0 ns = 2.00 (target 1.5; medians of 3 and 2)\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q (the rollback pair has no floor: left out)", out.String(), want)
	}
}

// TestFailed: a failed package is reported, as go test prints it.
func TestFailed(t *testing.T) {
	in := "BenchmarkFloor/steady-1KiB-2 \t 8090064 \t 150.0 ns/op\n--- FAIL: BenchmarkX\nFAIL\tgithub.com/rewindgg/rewind/rollback\t1.2s\nok  \tgithub.com/rewindgg/rewind/savestate\t0.1s\n"
	runs, failed, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if failed != "FAIL\tgithub.com/rewindgg/rewind/rollback\t1.2s" {
		t.Fatalf("failed = %q", failed)
	}
	if len(runs["BenchmarkFloor/steady-1KiB"]) != 1 {
		t.Fatalf("runs = %v", runs)
	}
}
