package main

import (
	"fmt"
	"html/template"
	"io"

	"github.com/rewindgg/rewind/desync/bundle"
)

// report is the comparison of two bundles, as text and as a page.
type report struct {
	Title    string
	Machines [2]machine
	D        bundle.Divergence
	Step     int32       // the step before D.Frame
	Marks    [][4]string // that step's marks side by side: A's system and hash, B's
}

// machine is one bundle's summary.
type machine struct {
	File, Span, Report, Reproduced, Note string
}

func newReport(files []string, bs [2]*bundle.Bundle, d bundle.Divergence) *report {
	r := &report{Title: "Desync: " + files[0] + " and " + files[1], D: d, Step: d.Frame - 1}
	for i, b := range bs {
		m := &r.Machines[i]
		m.File, m.Note = files[i], b.Note
		m.Span = fmt.Sprintf("frames %d to %d (%d steps), player %d of %d, session %#x", b.Start, b.Start+int32(b.Frames()), b.Frames(), b.Local, b.Players, b.SessionID)
		m.Report = b.Report.Error()
		switch {
		case b.State == nil:
			m.Reproduced = "no re-simulation"
		case b.Reproduced():
			m.Reproduced = "yes: its re-simulation reached its own checksum at the desync's frame"
		case !b.WholeArena:
			m.Reproduced = "unknown: its checksums hash the game's data (Config.ChecksumData), not the arena"
		default:
			m.Reproduced = "NO: its re-simulation did not reach its own checksum (this machine's game does not repeat itself, or keeps state outside the arena)"
		}
		if d.Frame > b.Start && int(d.Frame-1-b.Start) < len(b.Traces) {
			for j, mk := range b.Traces[d.Frame-1-b.Start] {
				for len(r.Marks) <= j {
					r.Marks = append(r.Marks, [4]string{})
				}
				r.Marks[j][2*i], r.Marks[j][2*i+1] = mk.System, fmt.Sprintf("%016x", mk.Sum)
			}
		}
	}
	return r
}

func (r *report) text(w io.Writer) {
	for i, m := range r.Machines {
		fmt.Fprintf(w, "%c: %s: %s\n   %s\n   re-simulation reproduced: %s\n", 'A'+i, m.File, m.Span, m.Report, m.Reproduced)
		if m.Note != "" {
			fmt.Fprintf(w, "   note: %s\n", m.Note)
		}
	}
	if r.D.Frame < 0 {
		fmt.Fprintf(w, "no divergence: %s\n", r.D.Note)
		return
	}
	fmt.Fprintf(w, "first divergent frame: %d (the state at its start differs)\n", r.D.Frame)
	if r.D.System != "" {
		fmt.Fprintf(w, "first system whose output differs: %s (in frame %d's step)\n", r.D.System, r.Step)
	}
	if r.D.Note != "" {
		fmt.Fprintf(w, "note: %s\n", r.D.Note)
	}
	if len(r.D.Fields) > 0 {
		fmt.Fprintf(w, "fields that differ at the start of frame %d (A | B):\n", r.D.Frame)
		for _, f := range r.D.Fields {
			fmt.Fprintf(w, "  %-40s %20s | %s\n", f.Path, f.Local, f.Remote)
		}
	}
}

func (r *report) html(w io.Writer) error { return page.Execute(w, r) }

// page is styled as the soak's report (cmd/soak/internal/report).
var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; } td, th { border: 1px solid #ccc; padding: .25rem .6rem; text-align: left; }
td { font-variant-numeric: tabular-nums; } code { background: #f3f3f3; padding: .1rem .3rem; } .fail { color: #a00; } .pass { color: #070; }
table.provenance th { font-weight: normal; color: #555; }
</style></head><body>
<h1>{{.Title}}</h1>
{{range $i, $m := .Machines}}<h2>{{if eq $i 0}}A{{else}}B{{end}}: <code>{{$m.File}}</code></h2>
<table class="provenance"><tr><th>span</th><td>{{$m.Span}}</td></tr><tr><th>report</th><td>{{$m.Report}}</td></tr>
<tr><th>re-simulation reproduced</th><td>{{$m.Reproduced}}</td></tr>{{with $m.Note}}<tr><th>note</th><td>{{.}}</td></tr>{{end}}</table>
{{end}}
<h2>Divergence</h2>
{{if lt .D.Frame 0}}<p class="pass">No divergence: {{.D.Note}}</p>{{else}}
<table><tr><th>first divergent frame</th><td class="fail">{{.D.Frame}}</td></tr>
<tr><th>first system whose output differs</th><td class="fail">{{if .D.System}}{{.D.System}} (frame {{.Step}}'s step){{else}}unknown{{end}}</td></tr>
{{with .D.Note}}<tr><th>note</th><td>{{.}}</td></tr>{{end}}</table>
{{if .Marks}}<h3>Frame {{.Step}}'s step, system by system</h3>
<table><tr><th>A: system</th><th>state hash after it</th><th>B: system</th><th>state hash after it</th></tr>
{{range .Marks}}<tr><td>{{index . 0}}</td><td><code>{{index . 1}}</code></td><td>{{index . 2}}</td><td><code>{{index . 3}}</code></td></tr>
{{end}}</table>{{end}}
{{if .D.Fields}}<h3>Fields that differ at the start of frame {{.D.Frame}}</h3>
<table><tr><th>field</th><th>A</th><th>B</th></tr>
{{range .D.Fields}}<tr><td><code>{{.Path}}</code></td><td>{{.Local}}</td><td>{{.Remote}}</td></tr>
{{end}}</table>{{end}}{{end}}
</body></html>
`))
