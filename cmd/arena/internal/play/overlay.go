package play

import (
	"fmt"
	"slices"
	"time"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/fixed"
	"github.com/rewindgg/rewind/rollback"
)

// Overlay is what the demo's overlay shows: how the netcode is doing, over
// the last complete second and since the start.
type Overlay struct {
	Local      []rollback.PlayerID
	Frame      rollback.Frame
	RTT        time.Duration // the slowest peer's smoothed round trip
	Rollbacks  int           // in the last second
	Depth      int           // rollback depth: the most frames a rollback went back (to the first mispredicted frame), in the whole match (rollback.Stats.MaxRollbackFrames)
	Resim      int           // frames re-simulated in the last second (rollbacks' and snapshots' steps: rollback.Stats.ResimulatedFrames)
	TickFrames int           // the most frames simulated in one tick (re-simulated and new: a rollback plus a catch-up), in the last second
	TickAll    int           // and in the whole match
	Advantage  float64       // frames a peer ran ahead of us (rollback.Stats.Advantage)
	InputLag   int           // frames
	Stalls     int64         // frames not simulated, in the whole match: starved, or smoothing
	SentBps    float64       // bytes a second, UDP/IP headers included
	RecvBps    float64
	Peers      int // peers connected
	// FPS and TicksPerSec are the game loop's, over the last second: the
	// frames drawn and the ticks run (60 when the loop keeps up). The
	// caller measures and sets them.
	FPS, TicksPerSec float64
}

// Lines renders the overlay as text.
func (o Overlay) Lines() []string {
	return []string{
		fmt.Sprintf("%.0f FPS   %.0f ticks/s   frame %d   players %v   peers %d", o.FPS, o.TicksPerSec, o.Frame, o.Local, o.Peers),
		fmt.Sprintf("rtt %d ms   input lag %d   advantage %.1f   stalls %d", o.RTT.Milliseconds(), o.InputLag, o.Advantage, o.Stalls),
		fmt.Sprintf("rollbacks %d/s   re-simulated frames %d/s   rollback depth %d (deepest in the match)", o.Rollbacks, o.Resim, o.Depth),
		fmt.Sprintf("frames simulated in a tick %d (most in the last second; %d in the match)", o.TickFrames, o.TickAll),
		fmt.Sprintf("sent %.1f KB/s   received %.1f KB/s", o.SentBps/1000, o.RecvBps/1000),
	}
}

// Overlay returns the overlay's figures, as of the last complete second
// (and the current frame).
func (m *Match) Overlay() Overlay {
	o := m.over
	o.Frame = m.s.Frame()
	return o
}

// udpHeaders is what IPv4 and UDP add to every datagram.
const udpHeaders = 28

// meter gathers the overlay's per-second figures.
type meter struct {
	ticks     int
	tickMost  int // the most frames simulated in a tick this second
	tickMatch int // and in the match
	last      rollback.Stats
}

func (mt *meter) tick(m *Match, res rollback.Result) {
	mt.tickMost = max(mt.tickMost, res.Resimulated+res.Simulated)
	mt.tickMatch = max(mt.tickMatch, mt.tickMost)
	if mt.ticks++; mt.ticks < 60 {
		return
	}
	st := m.s.Stats()
	o := &m.over
	o.Rollbacks = int(st.Rollbacks - mt.last.Rollbacks)
	o.Depth, o.Resim = st.MaxRollbackFrames, int(st.ResimulatedFrames-mt.last.ResimulatedFrames)
	o.TickFrames, o.TickAll = mt.tickMost, mt.tickMatch
	o.Advantage, o.InputLag = st.Advantage, st.InputLag
	o.Stalls = st.StallFrames + st.AdvantageStalls + st.LagStalls
	o.SentBps = float64(st.BytesSent - mt.last.BytesSent + udpHeaders*(st.PacketsSent-mt.last.PacketsSent))
	o.RecvBps = float64(st.BytesReceived - mt.last.BytesReceived + udpHeaders*(st.PacketsReceived-mt.last.PacketsReceived))
	o.RTT, o.Peers = 0, 0
	for i := range m.cfg.Peers {
		if ps, ok := m.s.PeerStats(i); ok && ps.Verified && !ps.Disconnected {
			o.RTT = max(o.RTT, ps.RTT)
			o.Peers++
		}
	}
	mt.ticks, mt.tickMost, mt.last = 0, 0, st
}

// Ghost is where a remote ship was drawn, by prediction, before a
// correction moved it: the demo draws it fading for GhostFrames, so that
// a viewer sees rollback happen.
type Ghost struct {
	Ship int
	X, Y float64 // arena units (0 to 1024)
	Age  int     // frames since the correction
}

// GhostFrames is how long a ghost is shown.
const GhostFrames = 30

// GhostDistance is how far (arena units) a correction must move a ship
// for a ghost: less is not visible.
const GhostDistance = 3.0

// Ghosts returns the ghosts to draw now.
func (m *Match) Ghosts() []Ghost { return m.ghost.live }

// ghosts finds corrections: before each Advance it notes where each
// remote ship would be one frame later with its current velocity (what
// the prediction draws); when the Advance rolled back and the ship is
// now far from there, the prediction was wrong about it.
type ghosts struct {
	frame  int32
	expect [arena.MaxShips]struct {
		x, y fixed.Num
		ok   bool
	}
	live []Ghost
	seen int // ghosts made in the whole match
}

func (gh *ghosts) before(w *arena.World, local []rollback.PlayerID) {
	gh.frame = w.Frame
	for i := range gh.expect {
		e := &gh.expect[i]
		s := &w.Ships[i]
		e.ok = i < int(w.Players) && s.Alive && !slices.Contains(local, rollback.PlayerID(i))
		e.x, e.y = s.X.Add(s.VX), s.Y.Add(s.VY)
	}
}

func (gh *ghosts) after(w *arena.World, res rollback.Result) {
	kept := gh.live[:0]
	for _, g := range gh.live {
		if g.Age++; g.Age < GhostFrames {
			kept = append(kept, g)
		}
	}
	gh.live = kept
	if res.Resimulated == 0 || w.Frame != gh.frame+1 {
		return // no correction, or not one frame on: nothing to compare with
	}
	for i := range gh.expect {
		e := &gh.expect[i]
		s := &w.Ships[i]
		if !e.ok || !s.Alive {
			continue
		}
		dx, dy := wrapDelta(s.X.Sub(e.x)).Float(), wrapDelta(s.Y.Sub(e.y)).Float()
		if dx*dx+dy*dy >= GhostDistance*GhostDistance {
			gh.seen++
			gh.live = append(gh.live, Ghost{Ship: i, X: wrapPos(e.x).Float(), Y: wrapPos(e.y).Float()})
		}
	}
}

// wrapDelta is the shortest difference across the arena's wrapping edge.
func wrapDelta(d fixed.Num) fixed.Num {
	half := arena.Size.DivInt(2)
	switch {
	case d.Greater(half):
		return d.Sub(arena.Size)
	case d.Less(half.Neg()):
		return d.Add(arena.Size)
	}
	return d
}

func wrapPos(v fixed.Num) fixed.Num { return v.Mod(arena.Size) }
