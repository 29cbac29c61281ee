package main

import (
	"slices"
	"time"
)

// drawStats measures the drawing: how long each call of Draw took (a
// monotonic clock, in the game's own code: nothing of it reaches the
// simulation), how many frames were drawn and ticks run over how long,
// and the process's CPU time over the same span. The -result JSON
// reports them (perf). The first warmUp frames are left out: under a
// software GL they compile its shaders (tens of milliseconds a frame, and
// Ebitengine drops the ticks it cannot catch up), which says nothing of
// what a frame costs once the game runs.
type drawStats struct {
	seen             int             // Draw calls so far, the warm-up's included
	measuring        bool            // the Draw under way is measured (past the warm-up)
	durations        []time.Duration // each Draw's, in order
	renders          []time.Duration // from each Draw's start to the next Update or Draw
	drawStart        time.Time       // the last Draw's start, until the next call measures its render
	first, last      time.Time       // the first Draw's start and the last Draw's end
	ticks            int             // Update calls that ran a tick since the first Draw
	cpuFirst, cpuEnd time.Duration   // the process's CPU time (user+system) at the first Draw's start and the last Draw's end
}

// warmUp is the frames drawn before the measuring starts: a second's.
const warmUp = 60

// begin is called at the start of Draw; end(start) at its end.
func (d *drawStats) begin() time.Time {
	now := d.enter()
	d.seen++
	if d.measuring = d.seen > warmUp; !d.measuring {
		return now
	}
	if d.first.IsZero() {
		d.first = now
		d.cpuFirst = processCPU()
		d.durations = make([]time.Duration, 0, 1<<14)
		d.renders = make([]time.Duration, 0, 1<<14)
	}
	d.drawStart = now
	return now
}

// enter is called when Update or Draw starts: what happened since the
// last Draw started was that Draw, then Ebitengine sending the frame to
// the GL and presenting it (the software GL's rasterizing included).
func (d *drawStats) enter() time.Time {
	now := time.Now()
	if !d.drawStart.IsZero() {
		d.renders = append(d.renders, now.Sub(d.drawStart))
		d.drawStart = time.Time{}
	}
	return now
}

func (d *drawStats) end(start time.Time) {
	if !d.measuring {
		return
	}
	d.last = time.Now()
	d.durations = append(d.durations, d.last.Sub(start))
	d.cpuEnd = processCPU()
}

// tick counts an Update that advanced the match.
func (d *drawStats) tick() {
	if !d.first.IsZero() {
		d.ticks++
	}
}

// perf is the drawing's figures in the -result JSON. Draw is measured
// inside Draw: it is what the game's drawing code costs on the calling
// goroutine (building the frame's vertices), while sending them
// (DrawFinalScreen) and the GPU's work (on Xvfb, Mesa's software
// rasterizer on the CPU) come after Draw, when Ebitengine flushes the
// frame and presents it; render covers all of it, in wall time (a busy
// machine's preemptions included), and the CPU per frame all of it in
// CPU time (with the simulation, the network and the sound: the whole
// process).
type perf struct {
	DrawP50       float64 `json:"draw_p50_ms"`
	DrawP95       float64 `json:"draw_p95_ms"`
	DrawMax       float64 `json:"draw_max_ms"`
	RenderP50     float64 `json:"render_p50_ms"` // from Draw's start to the next Update or Draw: Draw, the GL's work and the present
	RenderP95     float64 `json:"render_p95_ms"`
	FPS           float64 `json:"fps"`              // Draw calls a second, from the first to the last
	TicksPerSec   float64 `json:"ticks_per_second"` // ticks run a second over the same span
	CPUPerFrameMS float64 `json:"cpu_ms_per_frame"` // the process's CPU time over the same span, per drawn frame
	Seconds       float64 `json:"seconds"`          // the span measured
	WarmUp        int     `json:"warm_up_frames"`   // the frames drawn before the span, not measured
	// LoadAverage is the machine's 1-, 5- and 15-minute load averages
	// when the figures were taken (/proc/loadavg; absent where unknown):
	// the frame rate follows whatever else the machine runs.
	LoadAverage []float64 `json:"load_average,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// summary is the figures so far (zero before two frames were drawn).
func (d *drawStats) summary() perf {
	n := len(d.durations)
	if n < 2 {
		return perf{}
	}
	s := slices.Clone(d.durations)
	slices.Sort(s)
	span := d.last.Sub(d.first)
	p := perf{DrawP50: ms(s[n/2]), DrawP95: ms(s[n*95/100]), DrawMax: ms(s[n-1]), Seconds: span.Seconds(), WarmUp: warmUp,
		LoadAverage: loadAverage()}
	if r := slices.Sorted(slices.Values(d.renders)); len(r) > 0 {
		p.RenderP50, p.RenderP95 = ms(r[len(r)/2]), ms(r[len(r)*95/100])
	}
	if secs := span.Seconds(); secs > 0 {
		p.FPS = float64(n) / secs
		p.TicksPerSec = float64(d.ticks) / secs
	}
	if d.cpuFirst >= 0 && d.cpuEnd >= 0 {
		p.CPUPerFrameMS = ms(d.cpuEnd-d.cpuFirst) / float64(n)
	}
	return p
}
