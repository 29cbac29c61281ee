// Command benchratio reads `go test -bench` output on its standard input and
// prints, for each of the session's benchmarks that has a floor, the
// median of its runs against the median of the floor's, from the same run:
//
//	go test -run '^$' -count 5 \
//	  -bench '^Benchmark(Advance|Floor)$/^(steady-1KiB-plain|steady-1KiB|rollback20-1MiB)$|^BenchmarkCopy$/^(restore|one-copy)-1MiB$' \
//	  ./rollback ./savestate | go run ./internal/benchratio
//
// prints
//
//	steady: 250.1 ns / floor 160.2 ns = 1.56 (target 1.5; medians of 5 and 5)
//	rollback20-1MiB: 25123.0 ns / floor 23456.0 ns = 1.07 (target 1.2; medians of 5 and 5)
//	restore-1MiB: 22000.0 ns / one copy 29000.0 ns = 0.76 (below 1 when copied in pieces; medians of 5 and 5)
//
// A pair with a benchmark missing from the input is left out. The exit
// status is 0 whatever the ratios: the machine is shared and noisy, and a
// reader judges them (docs/experiments.md, "Snapshots: measurements"). It is 1 when
// the input says a package failed (a line that starts with FAIL), so that
// `go test ... | tee bench.txt` followed by benchratio fails as go test did.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// pair is a benchmark and its floor.
type pair struct {
	label, bench, floorLabel, floor, note string
}

var pairs = []pair{
	{"steady", "BenchmarkAdvance/steady-1KiB-plain", "floor", "BenchmarkFloor/steady-1KiB", "target 1.5"},
	{"rollback20-1MiB", "BenchmarkAdvance/rollback20-1MiB", "floor", "BenchmarkFloor/rollback20-1MiB", "target 1.2"},
	{"restore-1MiB", "BenchmarkCopy/restore-1MiB", "one copy", "BenchmarkCopy/one-copy-1MiB", "below 1 when copied in pieces"},
}

func main() {
	runs, failed, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}
	report(os.Stdout, runs)
	if failed != "" {
		fmt.Fprintf(os.Stderr, "benchratio: the benchmarks failed: %s\n", failed)
		os.Exit(1)
	}
}

// parse returns the ns/op of every run of every benchmark in r, by name
// without the -GOMAXPROCS suffix, and the first line that says a package
// failed ("" if none did).
func parse(r io.Reader) (runs map[string][]float64, failed string, err error) {
	runs = map[string][]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "FAIL") && failed == "" {
			failed = sc.Text()
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		for k := 2; k+1 < len(f); k++ {
			if f[k+1] != "ns/op" {
				continue
			}
			v, err := strconv.ParseFloat(f[k], 64)
			if err != nil {
				return nil, "", fmt.Errorf("%q: %v", sc.Text(), err)
			}
			name := f[0]
			if i := strings.LastIndexByte(name, '-'); i > 0 {
				if _, err := strconv.Atoi(name[i+1:]); err == nil {
					name = name[:i]
				}
			}
			runs[name] = append(runs[name], v)
			break
		}
	}
	return runs, failed, sc.Err()
}

// report prints each pair whose two benchmarks ran.
func report(w io.Writer, runs map[string][]float64) {
	for _, p := range pairs {
		a, b := runs[p.bench], runs[p.floor]
		if len(a) == 0 || len(b) == 0 {
			continue
		}
		ma, mb := median(a), median(b)
		fmt.Fprintf(w, "%s: %.1f ns / %s %.1f ns = %.2f (%s; medians of %d and %d)\n",
			p.label, ma, p.floorLabel, mb, ma/mb, p.note, len(a), len(b))
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
