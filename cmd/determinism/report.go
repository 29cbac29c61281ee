package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rewindgg/rewind/cmd/determinism/internal/check"
)

// cell is one game on one platform.
type cell struct {
	Game     recorded
	Platform *binary
	Result   check.Result // zero when the platform was skipped or failed to build
}

// outcome classifies a cell: "verified", "diverged", "error" or "skipped".
func (c cell) outcome() string {
	switch {
	case c.Platform.Skip != "":
		return "skipped"
	case c.Platform.Err != "":
		return check.Failed
	}
	return c.Result.Status
}

// text is the cell's result column.
func (c cell) text() string {
	r := c.Result
	switch c.outcome() {
	case "skipped":
		return "skipped: " + c.Platform.Skip
	case check.Verified:
		s := fmt.Sprintf("verified (%d frames, %d checksums)", r.Frames, r.Checksums)
		if r.Final != c.Game.Final {
			s += fmt.Sprintf("; final state %s, the host's %s", r.Final, c.Game.Final)
		}
		return s
	case check.LayoutOnly:
		return fmt.Sprintf("checksums differ by layout only (%s); every field equals the host's at each of the %d checksum frames and at the end (%d frames)",
			r.Layout, r.ByFields+r.Checksums, r.Frames)
	case check.Diverged:
		s := fmt.Sprintf("diverged at frame %d", r.Frame)
		if r.Frame == c.Game.Frames {
			s += " (the last frame, which no checksum covers)"
		}
		return s + ": " + describeField(r.Field, r.Fields)
	}
	if c.Platform.Err != "" {
		return "error: " + c.Platform.Err
	}
	return "error: " + r.Error
}

// describeField turns desync.Compare's "path: ours vs theirs" into
// "field path (ours here, theirs on the host)".
func describeField(field string, fields int) string {
	if field == "" {
		return "field unknown"
	}
	path, values, ok := strings.Cut(field, ": ")
	here, host, ok2 := strings.Cut(values, " vs ")
	if !ok || !ok2 || strings.HasPrefix(field, "(") {
		return field
	}
	s := fmt.Sprintf("field %s (%s here, %s on the host", path, here, host)
	if fields > 1 {
		s += fmt.Sprintf("; %d fields differ", fields)
	}
	return s + ")"
}

// matrix is every cell, by game then platform.
type matrix struct {
	Games     []recorded
	Platforms []*binary
	Cells     [][]cell // [game][platform]
}

// printTable writes the matrix as a table.
func (m *matrix) printTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GAME\tPLATFORM\tRUN BY\tRESULT")
	for g := range m.Games {
		for p, b := range m.Platforms {
			via := b.Via
			if via == "" {
				via = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Games[g].Name, b.Name, via, m.Cells[g][p].text())
		}
	}
	tw.Flush()
}

// arenaOK reports whether the fixed-point arena verified on every platform
// that ran, checksums included (a state whose layout differs on a
// platform fails: its peers there would report a desync), and lists the
// platforms where it did not.
func (m *matrix) arenaOK() (bool, []string) {
	var bad []string
	for g, rec := range m.Games {
		if rec.Float {
			continue
		}
		for p, c := range m.Cells[g] {
			if o := c.outcome(); o != check.Verified && o != "skipped" {
				bad = append(bad, m.Platforms[p].Name)
			}
		}
	}
	return len(bad) == 0, bad
}

// printFindings summarises the float game's rows, with the fused
// instructions each build holds, and says so
// honestly when it diverged nowhere, listing the fused instructions the
// compiler generated for its Step on amd64 v1, v3 and arm64.
func (m *matrix) printFindings(w io.Writer) {
	fmt.Fprintln(w, "\nFused multiply-adds per build: \"fuses\" is the re-simulator's run-time probe of the float game's x*y+z;")
	fmt.Fprintln(w, "the counts are of the compiler's listing (go build -gcflags=PKG=-S) of the float game and math.Sin's Go code.")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PLATFORM\tFUSES x*y+z\tFMA IN floatgame\tIN math.Sin\tmath.Exp")
	for p, b := range m.Platforms {
		fuses := "not run"
		for g := range m.Games {
			if r := m.Cells[g][p].Result; r.Status != "" && r.Build != "" {
				fuses = map[bool]string{true: "yes", false: "no"}[r.Fuses]
				break
			}
		}
		if b.Err != "" && b.FMA.Lines == nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", b.Name, fuses, b.Err)
			continue
		}
		l := b.FMA
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", b.Name, fuses, len(l.Lines["floatgame"]), len(l.Lines["math.sin"]), l.Exp)
	}
	tw.Flush()

	fmt.Fprintln(w, "\nFindings:")
	if ok, bad := m.arenaOK(); ok {
		fmt.Fprintln(w, "- arena (fixed point): every field of its state reproduced on every platform that ran.")
	} else {
		fmt.Fprintf(w, "- arena (fixed point): NOT verified on %s. That is a determinism bug (or a broken build).\n", strings.Join(bad, ", "))
	}
	for g, rec := range m.Games {
		var where []string
		layout := ""
		for p, c := range m.Cells[g] {
			if c.outcome() == check.LayoutOnly {
				where, layout = append(where, m.Platforms[p].Name), c.Result.Layout
			}
		}
		if len(where) > 0 {
			fmt.Fprintf(w, "- %s: its checksums (xxhash of the whole arena) and replays are NOT portable to %s: %s.\n", rec.Name, list(where), layout)
			fmt.Fprintln(w, "  Go aligns 64-bit fields to 4 bytes there and to 8 here, so the arena's bytes differ where its values do not: a")
			fmt.Fprintln(w, "  peer built for it would report a desync at the first checksum against a 64-bit peer. Hashing the values")
			fmt.Fprintln(w, "  (Config.ChecksumData) or laying the state out alike on both (64-bit fields at multiples of 8, explicit padding")
			fmt.Fprintln(w, "  to a multiple of 8) would make them portable.")
		}
	}
	anywhere := false
	for g, rec := range m.Games {
		if !rec.Float {
			continue
		}
		// Platforms that diverged alike (the same frame, field and values)
		// are grouped: they run the same arithmetic.
		var ver []string
		var keys []string
		groups := map[string][]string{}
		for p, c := range m.Cells[g] {
			switch c.outcome() {
			case check.Diverged:
				k := fmt.Sprintf("frame %d, %s", c.Result.Frame, c.Result.Field)
				if _, ok := groups[k]; !ok {
					keys = append(keys, k)
				}
				groups[k] = append(groups[k], m.Platforms[p].Name)
			case check.Verified, check.LayoutOnly:
				ver = append(ver, m.Platforms[p].Name)
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
		if len(div) > 0 {
			anywhere = true
		}
		where := "nowhere"
		if len(div) > 0 {
			where = "on " + strings.Join(div, "; ")
		}
		fmt.Fprintf(w, "- %s (mode %s): verified on %s; diverged %s.\n", rec.Name, rec.Mode, list(ver), where)
	}
	if anywhere {
		fmt.Fprintln(w, "  The float game diverging is the expected finding, not a failure: float64 code is reproducible across")
		fmt.Fprintln(w, "  platforms only when no operation may be fused and every libm call is the same code on each.")
		return
	}
	fmt.Fprintln(w, "- The float game did NOT diverge on any platform: every build reproduced the host's checksums.")
	fmt.Fprintln(w, "  The fused instructions the compiler generated for it, by build (go build -gcflags=PKG=-S, FMA lines):")
	for _, b := range m.Platforms {
		if !slices.Contains([]string{"amd64-v1", "amd64-v3", "arm64"}, b.Slug) {
			continue
		}
		l := b.FMA.Lines["floatgame"]
		fmt.Fprintf(w, "  %s: %d fused instructions\n", b.Name, len(l))
		for i, line := range l {
			if i == 12 {
				fmt.Fprintf(w, "    … %d more\n", len(l)-i)
				break
			}
			fmt.Fprintln(w, "    "+line)
		}
	}
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
