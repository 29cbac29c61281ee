package report

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// tickCostCaption is the caption of the tick-cost plot, drawn for a run
// with Run.TickCosts (the soak's -step-cost).
const tickCostCaption = "Modelled tick cost (the soak's -step-cost): the share of ticks, of every machine of every match, that cost at least x (Game.Step calls × the step cost + bytes saved and restored × the copy cost), on a log scale, with the median, 99th percentile and maximum marked"

// tickCosts plots the distribution of costs (nanoseconds, sorted) as the
// share of ticks costing at least each value, on a log axis: the bulk of
// the ticks (one step) at the top left, the tail a player feels as dropped
// frames at the bottom right.
func tickCosts(p *plot.Plot, costs []float64) error {
	p.Title.Text = "Tick cost (model)"
	p.X.Label.Text = "modelled tick cost (ms)"
	p.Y.Label.Text = "share of ticks costing at least this"
	n := len(costs)
	if n == 0 || costs[n-1] == 0 {
		p.Title.Text += " (no work)"
		niceAxis(&p.X, false, true)
		niceAxis(&p.Y, false, true)
		return nil
	}
	var ccdf plotter.XYs
	for i := 0; i < n; {
		j := i
		for j < n && costs[j] == costs[i] {
			j++
		}
		ccdf = append(ccdf, plotter.XY{X: costs[i] / 1e6, Y: float64(n-i) / float64(n)})
		i = j
	}
	line, err := plotter.NewLine(stairs(ccdf))
	if err != nil {
		return err
	}
	line.Color, line.Width = barColour, vg.Points(1.8)
	p.Add(line)
	floor := math.Pow(10, math.Floor(math.Log10(1/float64(n))))
	at := func(q float64) float64 { return costs[max(0, int(math.Ceil(q*float64(n)))-1)] / 1e6 }
	if err := addMarkers(p, floor, 1,
		marker{"median " + FormatFloat(at(0.5), 3) + " ms", at(0.5), meanColour, nil},
		marker{"99th percentile " + FormatFloat(at(0.99), 3) + " ms", at(0.99), p95Colour, dashed},
		marker{"maximum " + FormatFloat(costs[n-1]/1e6, 3) + " ms", costs[n-1] / 1e6, maxColour, dotted},
	); err != nil {
		return err
	}
	niceAxis(&p.X, false, true)
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = floor, 1
	return nil
}

// stairs draws the steps of a distribution through points sorted by x:
// each value holds until the next x.
func stairs(xy plotter.XYs) plotter.XYs {
	out := make(plotter.XYs, 0, 2*len(xy))
	for i, pt := range xy {
		if i > 0 {
			out = append(out, plotter.XY{X: pt.X, Y: xy[i-1].Y})
		}
		out = append(out, pt)
	}
	return out
}
