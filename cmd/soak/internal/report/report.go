// Package report writes the soak's HTML report: an index.html with a
// table per profile, the failing matches with the command that reproduces
// each, and PNG plots drawn offline with gonum/plot (rollback depths,
// rollbacks and stalls over time, frame advantage and input lag, bandwidth
// and round-trip time per machine). The page loads nothing from anywhere:
// the plots are files beside it.
package report

import (
	"fmt"
	"html/template"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/rewindgg/rewind/internal/match"
)

// Run is one profile's soak.
type Run struct {
	Profile  string
	Rows     [][2]string // the summary table: label, value
	Results  []match.Result
	Failures []Failure
}

// Failure is a failed match and the command that reproduces it.
type Failure struct {
	Seed   uint64
	Reason string
	Repro  string
}

// Write writes dir/index.html and its plots.
func Write(dir, title string, runs []Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	page := pageData{Title: title}
	for i, r := range runs {
		sec := section{Run: r}
		prefix := fmt.Sprintf("%d-%s", i, safe(r.Profile))
		plots := []struct {
			name, caption string
			draw          func(*plot.Plot, []match.Result) error
		}{
			{"depths", "Rollbacks by frames re-simulated (every machine of every match)", depths},
			{"rollbacks", "Rollbacks and stalled frames per second, per match (mean over matches, all machines)", rollbacksOverTime},
			{"advantage", "Frame advantage (the largest a peer had, per machine) and input lag over time (mean over matches)", advantageOverTime},
			{"bandwidth", "Bytes sent per second per peer, each machine (mean over matches; UDP/IP headers included)", bandwidth},
			{"rtt", "Smoothed round-trip time to the peers, each machine (mean over matches)", rtt},
		}
		for _, pl := range plots {
			p := plot.New()
			if err := pl.draw(p, r.Results); err != nil {
				return fmt.Errorf("report: %s: %w", pl.name, err)
			}
			file := prefix + "-" + pl.name + ".png"
			if err := p.Save(18*vg.Centimeter, 9*vg.Centimeter, filepath.Join(dir, file)); err != nil {
				return fmt.Errorf("report: %s: %w", file, err)
			}
			sec.Plots = append(sec.Plots, figure{File: file, Caption: pl.caption})
		}
		page.Sections = append(page.Sections, sec)
	}
	f, err := os.Create(filepath.Join(dir, "index.html"))
	if err != nil {
		return err
	}
	if err := index.Execute(f, page); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, strings.ToLower(s))
}

func depths(p *plot.Plot, rs []match.Result) error {
	p.Title.Text = "Rollback depth"
	p.X.Label.Text = "frames re-simulated"
	p.Y.Label.Text = "rollbacks"
	var h [match.DepthBuckets]float64
	last := 1
	for _, r := range rs {
		for d, n := range r.RollbackDepths {
			h[d] += float64(n)
			if n > 0 {
				last = max(last, d)
			}
		}
	}
	bars, err := plotter.NewBarChart(plotter.Values(h[:last+1]), vg.Points(4))
	if err != nil {
		return err
	}
	bars.Color = color.RGBA{R: 60, G: 110, B: 180, A: 255}
	bars.LineStyle.Width = 0
	p.Add(bars)
	return nil
}

// series averages a per-second value over the matches that reached that
// second: one machine's, or (machine -1) the sum over the machines.
func series(rs []match.Result, machine int, v func(match.Sample) float64) plotter.XYs {
	var sum, n []float64
	for _, r := range rs {
		var has []bool
		for _, s := range r.Timeline {
			if machine >= 0 && s.Machine != machine {
				continue
			}
			for len(sum) <= s.Second {
				sum, n = append(sum, 0), append(n, 0)
			}
			for len(has) <= s.Second {
				has = append(has, false)
			}
			sum[s.Second] += v(s)
			if !has[s.Second] {
				has[s.Second] = true
				n[s.Second]++
			}
		}
	}
	var xy plotter.XYs
	for sec := range sum {
		if n[sec] > 0 {
			xy = append(xy, plotter.XY{X: float64(sec), Y: sum[sec] / n[sec]})
		}
	}
	return xy
}

func machines(rs []match.Result) int {
	m := 0
	for _, r := range rs {
		for _, s := range r.Timeline {
			m = max(m, s.Machine+1)
		}
	}
	return m
}

func lines(p *plot.Plot, named ...any) error {
	p.Legend.Top = true
	return plotutil.AddLines(p, named...)
}

func rollbacksOverTime(p *plot.Plot, rs []match.Result) error {
	p.Title.Text = "Rollbacks and stalls"
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "per second, per match"
	return lines(p,
		"rollbacks", series(rs, -1, func(s match.Sample) float64 { return float64(s.Rollbacks) }),
		"stalled frames", series(rs, -1, func(s match.Sample) float64 { return float64(s.Stalls) }))
}

func perMachine(p *plot.Plot, rs []match.Result, label string, v func(match.Sample) float64, extra ...any) error {
	var named []any
	for m := range machines(rs) {
		named = append(named, fmt.Sprintf("%s, machine %d", label, m), series(rs, m, v))
	}
	return lines(p, append(named, extra...)...)
}

func advantageOverTime(p *plot.Plot, rs []match.Result) error {
	p.Title.Text = "Frame advantage and input lag"
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "frames"
	var lag []any
	for m := range machines(rs) {
		lag = append(lag, fmt.Sprintf("input lag, machine %d", m), series(rs, m, func(s match.Sample) float64 { return float64(s.InputLag) }))
	}
	return perMachine(p, rs, "advantage", func(s match.Sample) float64 { return s.Advantage }, lag...)
}

func bandwidth(p *plot.Plot, rs []match.Result) error {
	p.Title.Text = "Bandwidth"
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "bytes per second per peer"
	return perMachine(p, rs, "sent", func(s match.Sample) float64 { return s.BytesSent })
}

func rtt(p *plot.Plot, rs []match.Result) error {
	p.Title.Text = "Round-trip time"
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "ms"
	return perMachine(p, rs, "RTT", func(s match.Sample) float64 { return s.RTT })
}

type figure struct{ File, Caption string }

type section struct {
	Run
	Plots []figure
}

type pageData struct {
	Title    string
	Sections []section
}

var index = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; } td, th { border: 1px solid #ccc; padding: .25rem .6rem; text-align: left; }
td:nth-child(2) { font-variant-numeric: tabular-nums; } img { max-width: 100%; } figure { margin: 1.5rem 0; }
code { background: #f3f3f3; padding: .1rem .3rem; } .fail { color: #a00; }
</style></head><body>
<h1>{{.Title}}</h1>
{{range .Sections}}<h2>Profile {{.Profile}}</h2>
<table>{{range .Rows}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
{{if .Failures}}<h3 class="fail">Failing matches</h3><ul>{{range .Failures}}<li>seed {{.Seed}}: {{.Reason}}<br>reproduce: <code>{{.Repro}}</code></li>{{end}}</ul>
{{else}}<p>Every match completed and verified.</p>{{end}}
{{range .Plots}}<figure><img src="{{.File}}" alt="{{.Caption}}"><figcaption>{{.Caption}}</figcaption></figure>{{end}}
{{end}}</body></html>
`))
