package match

import (
	"time"

	"github.com/rewindgg/rewind/rollback"
)

// SampleEvery is the timeline's period: one sample a second at 60 Hz.
const SampleEvery = 60

// Sample is one machine's second of a match, for the soak report.
type Sample struct {
	Second    int     // seconds since the match began, on the machine's clock
	Machine   int     // the machine's index
	Rollbacks int64   // rollbacks in that second
	Stalls    int64   // frames stalled in that second (starvation, frame advantage, input lag)
	InputLag  int     // the input lag at the end of it, in frames
	Advantage float64 // the largest input frame advantage a peer had over it (the session's last window)
	BytesSent float64 // payload plus UDP/IP headers sent in that second, per peer
	RTT       float64 // the mean smoothed round trip to its peers, ms (0 until known)
}

// DepthBuckets is the length of Result.RollbackDepths.
const DepthBuckets = 2*maxRollbackLimit + 1

// timeline keeps one machine's samples and the previous sample's counters.
type timeline struct {
	samples []Sample
	last    rollback.Stats
	depths  [DepthBuckets]int64
}

// sample adds machine i's sample when a second of ticks has passed.
func (rn *run) sample(i int) {
	m := &rn.ms[i]
	if m.ticks%SampleEvery != 0 {
		return
	}
	st := m.s.Stats()
	tl := &m.tl
	peers := machinesOf(rn.c) - 1
	smp := Sample{Second: m.ticks / SampleEvery, Machine: i,
		Rollbacks: st.Rollbacks - tl.last.Rollbacks,
		Stalls:    st.StallFrames + st.AdvantageStalls + st.LagStalls - tl.last.StallFrames - tl.last.AdvantageStalls - tl.last.LagStalls,
		InputLag:  st.InputLag, Advantage: st.Advantage,
	}
	if peers > 0 {
		packets, bytes := st.PacketsSent-tl.last.PacketsSent, st.BytesSent-tl.last.BytesSent
		smp.BytesSent = float64(bytes+UDPOverhead*packets) / float64(peers)
		var rtt time.Duration
		for j := range peers {
			ps, _ := m.s.PeerStats(j)
			rtt += ps.RTT
		}
		smp.RTT = float64(rtt/time.Duration(peers)) / float64(time.Millisecond)
	}
	tl.samples = append(tl.samples, smp)
	tl.last = st
}
