package match

import (
	"math/rand/v2"
	"time"

	"github.com/rewindgg/rewind/rollback/netsim"
)

// A slow machine (Config.Slow): its clock is starved in bursts, a game
// whose frames now and then take far longer than a tick (a busy CPU, a
// hitch of the OS). It freezes for slowMin to slowMax, about every
// slowEvery (seeded, in virtual time); the match loop catches its ticks up
// after each freeze, as pacer.Pacer does (up to 250 ms), so it runs late
// only during and just after each.
const (
	slowEvery = 2 * time.Second
	slowMin   = 50 * time.Millisecond
	slowMax   = 240 * time.Millisecond
)

// slowFreezes adds machine i's freezes over the match's length.
func slowFreezes(nw *netsim.Network, c Config, i int) error {
	r := rand.New(rand.NewPCG(c.Seed, uint64(i)+0x510e))
	end := time.Duration(c.Frames) * Tick
	for at := slowEvery / 2; at < end; {
		d := slowMin + time.Duration(r.Int64N(int64(slowMax-slowMin)))
		if err := nw.AddFreeze(i, netsim.Freeze{At: at, For: d}); err != nil {
			return err
		}
		at += d + slowEvery/2 + time.Duration(r.Int64N(int64(slowEvery)))
	}
	return nil
}

// others fills r's measures of the machines other than the slow one.
func (rn *run) others(r *Result) {
	if !rn.c.Slow {
		return
	}
	r.OthersSpeedMin = 1
	for i := range rn.ms {
		m := &rn.ms[i]
		if i == rn.c.SlowMachine || m.dead.Load() {
			continue
		}
		st := m.s.Stats()
		r.OthersStalls += st.StallFrames + st.AdvantageStalls + st.LagStalls
		if m.reachTick > 0 && m.startTick > 0 {
			r.OthersSpeedMin = min(r.OthersSpeedMin, float64(m.reachFrame)/float64(m.reachTick-m.startTick+1))
		}
	}
}
