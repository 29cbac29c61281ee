package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rewindgg/rewind/determinism"
)

// printFindings writes, under the table, the fused multiply-adds of each
// build, then what each game's row means: verified everywhere, or where it
// diverged (platforms that diverged alike grouped: they run the same
// arithmetic), and the platforms whose layout differs.
func (m *matrix) printFindings(w io.Writer) {
	fmt.Fprintln(w, "\nFused multiply-adds per build: \"fuses\" is the program's run-time probe of x*y+z (determinism.Fuses);")
	fmt.Fprintln(w, "the counts are of the compiler's listing (go build -gcflags=PKG=-S) of the game packages and of math.Sin's Go code.")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PLATFORM\tFUSES x*y+z\tFMA IN THE GAMES\tIN math.Sin\tmath.Exp")
	for _, b := range m.Platforms {
		fuses := b.Fuses
		if fuses == "" {
			fuses = "not run"
		}
		if b.FMA.Lines == nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", b.Name, fuses, b.Err)
			continue
		}
		l := b.FMA
		exp := l.Exp
		if b.NoFMA && strings.Contains(exp, "used only if") {
			exp += " (not here)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", b.Name, fuses, len(l.Lines["game"]), len(l.Lines["math.sin"]), exp)
	}
	tw.Flush()

	fmt.Fprintln(w, "\nFindings:")
	for _, b := range m.Platforms {
		if b.Checked != "" {
			fmt.Fprintf(w, "- %s runs on a CPU without FMA: %s.\n", b.Name, b.Checked)
		}
	}
	for g, row := range m.Games {
		m.gameFinding(w, g, row)
	}
	for g, row := range m.Games {
		var where []string
		layout := ""
		for p, c := range m.Cells[g] {
			if c.outcome() == determinism.LayoutOnly {
				where, layout = append(where, m.Platforms[p].Name), c.Results[c.first(determinism.LayoutOnly)].Layout
			}
		}
		if len(where) > 0 {
			fmt.Fprintf(w, "- %s: its checksums (xxhash of the whole arena) and replays are NOT portable to %s: %s.\n", row.Name, list(where), layout)
			fmt.Fprintln(w, "  Go aligns 64-bit fields to 4 bytes there and to 8 here, so the arena's bytes differ where its values do not: a")
			fmt.Fprintln(w, "  peer built for it would report a desync at the first checksum against a 64-bit peer. Hashing the values")
			fmt.Fprintln(w, "  (Config.ChecksumData) or laying the state out alike on both (64-bit fields at multiples of 8, explicit padding")
			fmt.Fprintln(w, "  to a multiple of 8) would make them portable.")
		}
	}
}

// gameFinding writes one game's line of findings.
func (m *matrix) gameFinding(w io.Writer, g int, row *gameRow) {
	var ver, keys, skip []string
	groups := map[string][]string{}
	for p, c := range m.Cells[g] {
		switch c.outcome() {
		case determinism.Diverged:
			r := c.Results[c.first(determinism.Diverged)]
			k := fmt.Sprintf("frame %d, %s", r.Frame, r.Field)
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], m.Platforms[p].Name)
		case determinism.Verified, determinism.LayoutOnly:
			ver = append(ver, m.Platforms[p].Name)
		case skipped:
			skip = append(skip, m.Platforms[p].Name)
		}
	}
	var div []string
	for _, k := range keys {
		frame, _, _ := strings.Cut(k, ",")
		d := fmt.Sprintf("%s (%s)", strings.Join(groups[k], ", "), frame)
		if len(groups[k]) > 1 {
			d = fmt.Sprintf("%s (%s, all with the same values)", strings.Join(groups[k], ", "), frame)
		}
		div = append(div, d)
	}
	where := "nowhere"
	if len(div) > 0 {
		where = "on " + strings.Join(div, "; ")
	}
	kind := "must verify everywhere"
	if m.mayDiverge(row.Name) {
		kind = "may diverge (-may-diverge): a finding, not a failure"
	}
	fmt.Fprintf(w, "- %s (%s): verified on %s; diverged %s", row.Name, kind, list(ver), where)
	if len(skip) > 0 {
		fmt.Fprintf(w, "; skipped on %s", list(skip))
	}
	fmt.Fprintln(w, ".")
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
