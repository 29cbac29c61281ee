package match

import "github.com/rewindgg/rewind/rollback"

// frameGaps measures what the frame-advantage governor aims at, from
// outside the sessions: how many frames apart two machines really are at
// the same instant of network time. The sessions' own measure
// (Result.AdvantageSum) is their estimate, built from the packets they
// see, so it cannot judge a change to how the estimate is made (a machine
// that sends less often is seen later); this can.
//
// Each pair of machines is sampled once a tick of network time while both
// count (they have run 10 s of ticks, simulated a frame, are not done and
// not dropped); a pair's samples are averaged over windows of
// advantage.Window, as the estimate is, and the windows' absolute means
// are summed.
type frameGaps struct {
	win      []advAcc // by pair: i<j in order (0,1), (0,2), …, (1,2), …
	sum, max float64
	n        int
}

// sample takes one sample of every pair whose machines both count; frames
// holds each machine's frame, -1 for one that does not count.
func (g *frameGaps) sample(frames []rollback.Frame) {
	if g.win == nil {
		g.win = make([]advAcc, len(frames)*(len(frames)-1)/2)
	}
	k := 0
	for i := range frames {
		for j := i + 1; j < len(frames); j, k = j+1, k+1 {
			if frames[i] < 0 || frames[j] < 0 {
				continue
			}
			if a, full := g.win[k].window(float64(frames[i] - frames[j])); full {
				g.sum += a
				g.n++
				g.max = max(g.max, a)
			}
		}
	}
}

// counted returns machine m's frame if it counts for the gaps at the
// match's current end target, else -1.
func (m *machine) counted(target rollback.Frame) rollback.Frame {
	if m.s == nil || m.dead.Load() || m.finished || m.ticks < settleTicks {
		return -1
	}
	f := m.s.Frame()
	if f <= 0 || f >= target {
		return -1
	}
	return f
}
