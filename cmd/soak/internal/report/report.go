// Package report writes the soak's HTML report: an index.html that opens
// with where the run came from (date, commit, command line, machine), a
// table across the profiles when there are several, then a table per
// profile, the failing matches with the command that reproduces each, and
// PNG plots drawn offline with gonum/plot: the misprediction depth and the
// frames re-simulated per rollback, each a histogram; rollbacks, stalls,
// frame advantage, input lag, bandwidth and round-trip time per second,
// each as the mean over every machine of every match with its 95th
// percentile and maximum; with the soak's tick-cost model, the
// distribution of the modelled tick cost. The page loads nothing from anywhere: the plots
// are files beside it.
package report

import (
	"fmt"
	"html/template"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/rewindgg/rewind/internal/match"
)

// Page is the whole report.
type Page struct {
	Title string
	// Header says where the run came from: label and value (date, commit,
	// command, machine).
	Header [][2]string
	// Summary compares the profiles of a -profiles run (nil for one).
	Summary *Table
	Runs    []Run
}

// Table is a table with a header row.
type Table struct {
	Columns []string
	Rows    [][]string
}

// Run is one profile's soak.
type Run struct {
	Profile  string
	Rows     [][2]string // the summary table: label, value
	Results  []match.Result
	Failures []Failure
	// Desyncs, when not nil, lists the desyncs: those that ended a match
	// and those played on past (-recover), with what the desync bundles
	// named.
	Desyncs *Table
	// TickCosts, when not empty, are the modelled cost of every tick of
	// every machine, in nanoseconds, sorted (the soak's -step-cost): the
	// section then has one more plot, their distribution.
	TickCosts []float64
}

// Failure is a failed match and the command that reproduces it.
type Failure struct {
	Match  int
	Seed   uint64
	Reason string
	Repro  string
}

// plots are each profile's figures: file name, caption, drawing.
var plots = []struct {
	name, caption string
	draw          func(*plot.Plot, []match.Result) error
}{
	{"mispredictions", "Misprediction depth: how many frames before the present the first mispredicted frame was, per rollback (every machine of every match)", mispredictionDepths},
	{"resimulated", "Frames re-simulated per rollback: from the snapshot restored, at or before the mispredicted frame, up to the present", resimulated},
	{"rollbacks", "Rollbacks per second on a machine: mean over every machine of every match, 95th percentile and maximum", rollbacksOverTime},
	{"stalls", "Frames stalled per second on a machine (a peer's input missing, frame advantage, input lag): mean, 95th percentile and maximum", stallsOverTime},
	{"advantage", "Frame advantage: the largest a peer had over a machine, in its last 100-frame window: mean, 95th percentile and maximum", advantageOverTime},
	{"inputlag", "Input lag on a machine at the end of each second: mean, 95th percentile and maximum", inputLagOverTime},
	{"bandwidth", "Bytes sent per second per peer, UDP/IP headers included: mean, 95th percentile and maximum", bandwidth},
	{"rtt", "Smoothed round-trip time to the peers (a machine's mean): mean, 95th percentile and maximum", rtt},
}

// Plots is how many plots each profile's section has (one more with
// Run.TickCosts).
func Plots() int { return len(plots) }

// Write writes dir/index.html and its plots.
func Write(dir string, page Page) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data := pageData{Page: page}
	for i, r := range page.Runs {
		sec := section{Run: r}
		prefix := fmt.Sprintf("%d-%s", i, safe(r.Profile))
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
		if len(r.TickCosts) > 0 {
			p := plot.New()
			if err := tickCosts(p, r.TickCosts); err != nil {
				return fmt.Errorf("report: tickcost: %w", err)
			}
			file := prefix + "-tickcost.png"
			if err := p.Save(18*vg.Centimeter, 9*vg.Centimeter, filepath.Join(dir, file)); err != nil {
				return fmt.Errorf("report: %s: %w", file, err)
			}
			sec.Plots = append(sec.Plots, figure{File: file, Caption: tickCostCaption})
		}
		data.Sections = append(data.Sections, sec)
	}
	f, err := os.Create(filepath.Join(dir, "index.html"))
	if err != nil {
		return err
	}
	if err := index.Execute(f, data); err != nil {
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

// Dist summarizes a histogram whose bucket d counts the events of size d.
type Dist struct {
	N    int64   // events
	Mean float64 // mean size
	P95  int     // the 95th percentile (nearest rank)
	Max  int     // the largest size (the last bucket: that or more)
}

// Histogram summarizes h.
func Histogram(h []int64) Dist {
	var d Dist
	var sum float64
	for v, n := range h {
		d.N += n
		sum += float64(v) * float64(n)
		if n > 0 {
			d.Max = v
		}
	}
	if d.N == 0 {
		return d
	}
	d.Mean = sum / float64(d.N)
	rank := int64(math.Ceil(0.95 * float64(d.N)))
	var seen int64
	for v, n := range h {
		if seen += n; seen >= rank {
			d.P95 = v
			break
		}
	}
	return d
}

// MispredictionDepths is the histogram of every match's rollbacks by
// misprediction depth.
func MispredictionDepths(rs []match.Result) Dist {
	return Histogram(sumHist(rs, func(r *match.Result) []int64 { return r.MispredictionDepths[:] }))
}

// Resimulated is the histogram of every match's rollbacks by frames
// re-simulated.
func Resimulated(rs []match.Result) Dist {
	return Histogram(sumHist(rs, func(r *match.Result) []int64 { return r.RollbackDepths[:] }))
}

func sumHist(rs []match.Result, h func(*match.Result) []int64) []int64 {
	out := make([]int64, match.DepthBuckets)
	for i := range rs {
		for d, n := range h(&rs[i]) {
			out[d] += n
		}
	}
	return out
}

var (
	barColour  = color.RGBA{R: 60, G: 110, B: 180, A: 255}
	meanColour = color.RGBA{R: 20, G: 60, B: 140, A: 255}
	p95Colour  = color.RGBA{R: 220, G: 120, B: 0, A: 255}
	maxColour  = color.RGBA{R: 190, G: 30, B: 30, A: 255}
	bandColour = color.NRGBA{R: 190, G: 30, B: 30, A: 50}
)

func mispredictionDepths(p *plot.Plot, rs []match.Result) error {
	p.Title.Text = "Misprediction depth"
	p.X.Label.Text = "frames back to the first mispredicted frame"
	return histogram(p, sumHist(rs, func(r *match.Result) []int64 { return r.MispredictionDepths[:] }))
}

func resimulated(p *plot.Plot, rs []match.Result) error {
	p.Title.Text = "Frames re-simulated"
	p.X.Label.Text = "frames re-simulated by one rollback"
	return histogram(p, sumHist(rs, func(r *match.Result) []int64 { return r.RollbackDepths[:] }))
}

// histogram draws h as bars, with the mean, the 95th percentile and the
// maximum as vertical lines named in the legend.
func histogram(p *plot.Plot, h []int64) error {
	p.Y.Label.Text = "rollbacks"
	d := Histogram(h)
	values := make(plotter.Values, min(d.Max+2, len(h)))
	top := 0.0
	for v := range values {
		values[v] = float64(h[v])
		top = max(top, values[v])
	}
	bars, err := plotter.NewBarChart(values, vg.Points(4))
	if err != nil {
		return err
	}
	bars.Color = barColour
	bars.LineStyle.Width = 0
	p.Add(bars)
	if d.N > 0 {
		if err := addMarkers(p, 0, top,
			marker{"mean " + FormatFloat(d.Mean, 1), d.Mean, meanColour, nil},
			marker{"95th percentile " + strconv.Itoa(d.P95), float64(d.P95), p95Colour, dashed},
			marker{"maximum " + strconv.Itoa(d.Max), float64(d.Max), maxColour, dotted},
		); err != nil {
			return err
		}
	} else {
		p.Title.Text += " (no rollbacks)"
	}
	niceAxis(&p.X, true, true)
	p.X.Min = max(p.X.Min, -0.5) // bar 0 is centred on 0
	p.Y.Max *= legendRoom
	niceAxis(&p.Y, true, true)
	return nil
}

// legendRoom makes room above the data for the legend.
const legendRoom = 1.3

// spread is, for each second, the mean, 95th percentile and maximum of v
// over every machine of every match that reached it.
func spread(rs []match.Result, v func(match.Sample) float64) (mean, p95, maxs plotter.XYs) {
	var at [][]float64
	for _, r := range rs {
		for _, s := range r.Timeline {
			for len(at) <= s.Second {
				at = append(at, nil)
			}
			at[s.Second] = append(at[s.Second], v(s))
		}
	}
	for sec, vs := range at {
		if len(vs) == 0 {
			continue
		}
		slices.Sort(vs)
		sum := 0.0
		for _, x := range vs {
			sum += x
		}
		x := float64(sec)
		mean = append(mean, plotter.XY{X: x, Y: sum / float64(len(vs))})
		p95 = append(p95, plotter.XY{X: x, Y: vs[int(math.Ceil(0.95*float64(len(vs))))-1]})
		maxs = append(maxs, plotter.XY{X: x, Y: vs[len(vs)-1]})
	}
	return mean, p95, maxs
}

// overTime plots v per second: the band from the 95th percentile up to
// the maximum, the 95th percentile dashed and the mean. A count's axis
// (integer) is labelled with integers; a quantity that cannot be negative
// starts at 0.
func overTime(p *plot.Plot, rs []match.Result, title, unit string, v func(match.Sample) float64, integer, nonNegative bool) error {
	p.Title.Text = title
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = unit
	mean, p95, maxs := spread(rs, v)
	if len(mean) == 0 {
		p.Title.Text += " (no samples)"
	} else {
		ring := append(slices.Clone(p95), reversed(maxs)...)
		band, err := plotter.NewPolygon(ring)
		if err != nil {
			return err
		}
		band.Color, band.LineStyle.Width = bandColour, 0
		top, err := plotter.NewLine(maxs)
		if err != nil {
			return err
		}
		top.Color, top.Width = maxColour, vg.Points(0.5)
		pl, err := plotter.NewLine(p95)
		if err != nil {
			return err
		}
		pl.Color, pl.Width, pl.Dashes = p95Colour, vg.Points(1.2), []vg.Length{vg.Points(4), vg.Points(2)}
		ml, err := plotter.NewLine(mean)
		if err != nil {
			return err
		}
		ml.Color, ml.Width = meanColour, vg.Points(1.8)
		p.Add(band, top, pl, ml)
		p.Legend.Add("mean", ml)
		p.Legend.Add("95th percentile", pl)
		p.Legend.Add("maximum (band from the 95th percentile)", band, top)
		p.Legend.Top = true
		p.Y.Max += (p.Y.Max - min(0, p.Y.Min)) * (legendRoom - 1)
	}
	niceAxis(&p.X, true, true)
	niceAxis(&p.Y, integer, nonNegative)
	return nil
}

func reversed(xy plotter.XYs) plotter.XYs {
	out := slices.Clone(xy)
	slices.Reverse(out)
	return out
}

func rollbacksOverTime(p *plot.Plot, rs []match.Result) error {
	return overTime(p, rs, "Rollbacks", "rollbacks per second", func(s match.Sample) float64 { return float64(s.Rollbacks) }, true, true)
}

func stallsOverTime(p *plot.Plot, rs []match.Result) error {
	return overTime(p, rs, "Stalls", "frames stalled per second", func(s match.Sample) float64 { return float64(s.Stalls) }, true, true)
}

func advantageOverTime(p *plot.Plot, rs []match.Result) error {
	return overTime(p, rs, "Frame advantage", "frames", func(s match.Sample) float64 { return s.Advantage }, false, true)
}

func inputLagOverTime(p *plot.Plot, rs []match.Result) error {
	return overTime(p, rs, "Input lag", "frames", func(s match.Sample) float64 { return float64(s.InputLag) }, true, true)
}

func bandwidth(p *plot.Plot, rs []match.Result) error {
	return overTime(p, rs, "Bandwidth", "bytes per second per peer", func(s match.Sample) float64 { return s.BytesSent }, false, true)
}

func rtt(p *plot.Plot, rs []match.Result) error {
	return overTime(p, rs, "Round-trip time", "ms", func(s match.Sample) float64 { return s.RTT }, false, true)
}

// niceAxis gives ax round bounds, from 0 when fromZero (and the data are
// not below it), and ticks at a round step labelled as plainly as the
// step allows: integers as integers, never "500.00". An axis with
// integer set has integer ticks only. An axis without data, or with every
// value the same, still spans a step.
func niceAxis(ax *plot.Axis, integer, fromZero bool) {
	lo, hi := ax.Min, ax.Max
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || lo > hi {
		lo, hi = 0, 1
	}
	if fromZero {
		lo, hi = min(lo, 0), max(hi, 0)
	}
	if hi-lo < 1e-9 {
		hi = lo + 1
	}
	step := niceStep((hi-lo)/5, integer)
	ax.Min = math.Floor(lo/step+1e-9) * step
	ax.Max = math.Ceil(hi/step-1e-9) * step
	ax.Tick.Marker = ticks{step: step}
}

// niceStep is the smallest of 1, 2, 2.5 and 5 times a power of ten not
// below raw (at least 1, and no 2.5, for an integer axis).
func niceStep(raw float64, integer bool) float64 {
	if integer && raw <= 1 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		s := m * mag
		if integer && s != math.Trunc(s) {
			continue
		}
		if s >= raw*(1-1e-9) {
			return s
		}
	}
	return 10 * mag
}

// ticks labels every multiple of step.
type ticks struct{ step float64 }

func (t ticks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	prec := decimals(t.step)
	for k := math.Ceil(lo/t.step - 1e-9); k*t.step <= hi+t.step*1e-9; k++ {
		v := k * t.step
		out = append(out, plot.Tick{Value: v, Label: FormatFloat(v, prec)})
		if half := v + t.step/2; half < hi {
			out = append(out, plot.Tick{Value: half}) // a minor tick
		}
	}
	return out
}

// decimals is how many decimals a multiple of step needs.
func decimals(step float64) int {
	for d := 0; d < 9; d++ {
		scaled := step * math.Pow(10, float64(d))
		if math.Abs(scaled-math.Round(scaled)) < 1e-9*max(1, scaled) {
			return d
		}
	}
	return 9
}

// FormatFloat formats v with at most prec decimals and none it does not
// need: 500 is "500", 2.50 is "2.5", -0.0 is "0".
func FormatFloat(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

type figure struct{ File, Caption string }

type section struct {
	Run
	Plots []figure
}

type pageData struct {
	Page
	Sections []section
}

var index = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; } td, th { border: 1px solid #ccc; padding: .25rem .6rem; text-align: left; }
td { font-variant-numeric: tabular-nums; } img { max-width: 100%; } figure { margin: 1.5rem 0; }
table.summary td { text-align: right; } table.summary td:first-child { text-align: left; }
code { background: #f3f3f3; padding: .1rem .3rem; } .fail { color: #a00; } .pass { color: #070; }
table.provenance th { font-weight: normal; color: #555; }
</style></head><body>
<h1>{{.Title}}</h1>
<table class="provenance">{{range .Header}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
{{with .Summary}}<h2>Profiles</h2>
<table class="summary"><tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{range .Sections}}<h2>Profile {{.Profile}}</h2>
<table>{{range .Rows}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
{{with .Desyncs}}<h3>Desyncs and recoveries</h3>
<table><tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{if .Failures}}<h3 class="fail">Failing matches</h3><ul>{{range .Failures}}<li>match {{.Match}}, seed {{.Seed}}: {{.Reason}}<br>reproduce: <code>{{.Repro}}</code></li>{{end}}</ul>
{{else}}<p>Every match completed and verified.</p>{{end}}
{{range .Plots}}<figure><img src="{{.File}}" alt="{{.Caption}}"><figcaption>{{.Caption}}</figcaption></figure>{{end}}
{{end}}</body></html>
`))

// marker is a vertical line at x on a plot, named in its legend.
type marker struct {
	label  string
	x      float64
	colour color.Color
	dashes []vg.Length
}

// The markers' dash patterns: the 95th or 99th percentile, the maximum.
var (
	dashed = []vg.Length{vg.Points(4), vg.Points(2)}
	dotted = []vg.Length{vg.Points(1), vg.Points(2)}
)

// addMarkers draws each marker from y0 to y1 and names it in the legend,
// at the top.
func addMarkers(p *plot.Plot, y0, y1 float64, ms ...marker) error {
	for _, m := range ms {
		l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: y0}, {X: m.x, Y: y1}})
		if err != nil {
			return err
		}
		l.Color, l.Width, l.Dashes = m.colour, vg.Points(1.5), m.dashes
		p.Add(l)
		p.Legend.Add(m.label, l)
	}
	p.Legend.Top = true
	return nil
}
