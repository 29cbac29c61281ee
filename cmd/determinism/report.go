package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rewindgg/rewind/determinism"
)

// gameRow is one game: the replays recorded of it on the host.
type gameRow struct {
	Name string
	Recs []determinism.Recording
}

// cell is one game on one platform: a result per replay of the game.
type cell struct {
	Game     *gameRow
	Platform *binary
	Results  []determinism.Result // by Game.Recs; nil when the platform was skipped or failed to build
}

// Outcomes of a cell beside determinism's statuses.
const skipped = "skipped"

// outcome classifies a cell: skipped, error, diverged (some replay
// diverged), layout (some replay verified field by field only) or
// verified (every replay verified).
func (c cell) outcome() string {
	switch {
	case c.Platform.Skip != "":
		return skipped
	case c.Platform.Err != "":
		return determinism.Failed
	}
	out := determinism.Verified
	for _, r := range c.Results {
		switch r.Status {
		case determinism.Failed:
			return determinism.Failed
		case determinism.Diverged:
			out = determinism.Diverged
		case determinism.LayoutOnly:
			if out == determinism.Verified {
				out = determinism.LayoutOnly
			}
		}
	}
	return out
}

// first returns the index of the first replay whose status is s.
func (c cell) first(s string) int {
	return slices.IndexFunc(c.Results, func(r determinism.Result) bool { return r.Status == s })
}

// replayName names a replay in the table: "seed 2 two-machines".
func replayName(rec determinism.Recording) string {
	return fmt.Sprintf("seed %d %s", rec.Seed, rec.Kind)
}

// text is the cell's result column.
func (c cell) text() string {
	frames, sums := 0, 0
	for _, r := range c.Results {
		frames, sums = frames+r.Frames, sums+r.Checksums+r.ByFields
	}
	n := len(c.Results)
	switch o := c.outcome(); o {
	case skipped:
		return "skipped: " + c.Platform.Skip
	case determinism.Verified:
		s := fmt.Sprintf("verified (%d replays, %d frames, %d checksums)", n, frames, sums)
		for i, r := range c.Results {
			if r.Final != c.Game.Recs[i].Final {
				s += fmt.Sprintf("; %s: final state %s, the host's %s", replayName(c.Game.Recs[i]), r.Final, c.Game.Recs[i].Final)
				break
			}
		}
		return s
	case determinism.LayoutOnly:
		r := c.Results[c.first(o)]
		return fmt.Sprintf("checksums differ by layout only (%s); every field equals the host's at each of the %d checksum frames and at the end (%d replays)",
			r.Layout, sums, n)
	case determinism.Diverged:
		i := c.first(o)
		r := c.Results[i]
		s := fmt.Sprintf("diverged at frame %d", r.Frame)
		if r.Frame == c.Game.Recs[i].Frames {
			s += " (the last frame, which no checksum covers)"
		}
		div := 0
		for _, r := range c.Results {
			if r.Status == determinism.Diverged {
				div++
			}
		}
		return fmt.Sprintf("%s of %s: %s (%d of %d replays diverged)", s, replayName(c.Game.Recs[i]), describeField(r.Field, r.Fields), div, n)
	}
	if c.Platform.Err != "" {
		return "error: " + c.Platform.Err
	}
	i := c.first(determinism.Failed)
	return fmt.Sprintf("error: %s: %s", replayName(c.Game.Recs[i]), c.Results[i].Error)
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

// matrix is every cell, by game then platform, and the run's rules.
type matrix struct {
	Games      []*gameRow
	Platforms  []*binary
	Cells      [][]cell // [game][platform]
	AllowSkip  []string // platform slugs that may be skipped
	MayDiverge []string // game name prefixes whose divergence is a finding
}

// mayDiverge reports whether game's divergence is a finding, not a failure.
func (m *matrix) mayDiverge(game string) bool {
	for _, p := range m.MayDiverge {
		if p != "" && strings.HasPrefix(game, p) {
			return true
		}
	}
	return false
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

// problems lists what fails the run: a platform skipped that -allow-skip
// does not name, a platform that failed to build or run, and a game not
// in -may-diverge that did not verify somewhere. An empty list is a pass.
func (m *matrix) problems() []string {
	var out []string
	for _, b := range m.Platforms {
		switch {
		case b.Skip != "" && !slices.Contains(m.AllowSkip, b.Slug):
			out = append(out, fmt.Sprintf("%s was skipped (%s) and -allow-skip does not name %s", b.Name, b.Skip, b.Slug))
		case b.Err != "":
			out = append(out, fmt.Sprintf("%s: %s", b.Name, b.Err))
		}
	}
	for g, row := range m.Games {
		if m.mayDiverge(row.Name) {
			continue
		}
		var bad []string
		for p, c := range m.Cells[g] {
			if o := c.outcome(); o != determinism.Verified && o != skipped && m.Platforms[p].Err == "" {
				bad = append(bad, m.Platforms[p].Name)
			}
		}
		if len(bad) > 0 {
			out = append(out, fmt.Sprintf("%s did not verify on %s", row.Name, strings.Join(bad, ", ")))
		}
	}
	return out
}

// jsonCell is one cell of the -json file.
type jsonCell struct {
	Game     string `json:"game"`
	Platform string `json:"platform"` // the slug
	Outcome  string `json:"outcome"`  // verified, layout, diverged, error or skipped
	Frame    int    `json:"frame,omitempty"`
	Field    string `json:"field,omitempty"`
	Fuses    string `json:"fuses,omitempty"`
	Text     string `json:"text"`
}

// writeJSON writes every cell to file as a JSON array.
func (m *matrix) writeJSON(file string) error {
	var cells []jsonCell
	for g, row := range m.Games {
		for p, c := range m.Cells[g] {
			jc := jsonCell{Game: row.Name, Platform: m.Platforms[p].Slug, Outcome: c.outcome(), Fuses: m.Platforms[p].Fuses, Text: c.text()}
			if jc.Outcome == determinism.Diverged {
				r := c.Results[c.first(determinism.Diverged)]
				jc.Frame, jc.Field = r.Frame, r.Field
			}
			cells = append(cells, jc)
		}
	}
	b, err := json.MarshalIndent(cells, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}
