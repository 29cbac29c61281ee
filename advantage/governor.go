package advantage

// Governor decides when a rollback session stalls to keep the match fair:
// it feeds a [Tracker], queues the article's stalls at the end of every
// window, adds Rewind's drift term, and spreads the queued stalls out with
// [StallPeriod]. A session asks it once per frame whether to stall
// ([Governor.Stall]) and tells it every frame it simulated
// ([Governor.Simulated]). The zero value is not usable; use [NewGovernor].
// It allocates nothing after construction.
//
// Three things keep it from chasing what is no lead (issue 49):
//
//   - Every frame the session does not simulate for another reason (a
//     wait for a peer's input, a raised input lag) gives frames back as a
//     stall does: it pays one queued stall. A machine that fell behind
//     waiting for a loss burst's inputs does not then stall the lead it
//     had before as well.
//   - A large lead is acted on within recentFrames (5) frames: every 5
//     frames the estimate of those 5 alone is taken, and when it is worth
//     at least earlyStalls (5) stalls (a peer that waited a loss burst's
//     inputs out is behind by the burst), they are queued at once; the
//     window's end queues only what they did not cover. Waiting for the
//     window's end left two machines on hell 10 frames apart for over
//     100 frames. Not in the first window: its lags are the start's
//     transient (the first inputs are a one-way trip away), which the
//     start delay takes care of; acted on, 2 players on far stalled
//     twenty times as often.
//   - The drift term is an integral per peer, not a guess from the stalls
//     taken: each peer's advantage, once it has stayed beyond driftBand
//     in the same direction for driftWindows windows in a row, adds
//     driftGain of itself to that peer's drift (frames per window), and
//     the largest peer's drift is stalled evenly through the next window.
//     Stalls the peers take too (every machine waiting out the same
//     burst, four machines each stalling for the largest of their noisy
//     estimates) leave the advantage where it was and add nothing; the
//     old estimate (stalls taken + half the change in advantage) took
//     them for a drift, paced more stalls, and fed on itself: 4 players on
//     intercontinental stalled 132 frames a minute, 93% of them for
//     fairness. Under a sustained drift the lead is taken from a quarter
//     of a simulation frame instead of the article's dead zone of 0.75.
type Governor struct {
	tracker   *Tracker
	smoothing bool // false: measure only, never stall

	queued int // stalls waiting to be spread out
	since  int // frames since the last stall taken from the queue
	tokens int // stalls it may still take: MaxStalls more each window, at most 2*MaxStalls
	early  int // stalls queued early in this window, for a large recent lead

	own         int64 // stalls taken from the queue, all told
	ownSeen     int64 // own at the last Simulated
	stalledSeen int64 // the session's frames not simulated at the last Simulated

	drift      []float64 // per peer: its estimated drift, frames per window
	streak     []int     // per peer: windows in a row beyond driftBand, ahead (+) or behind (-)
	driftEvery float64   // frames between paced drift stalls; 0 for none
	sinceDrift float64
	settled    bool // a window has ended: the recent estimates count
}

// MaxStalls is the most frames a Governor stalls per Window, on average:
// however far ahead the peers' timing makes this machine look — a peer
// that stays behind on purpose, a lie — it keeps 95% of full speed. Each
// window adds MaxStalls to an allowance of at most 2*MaxStalls (a token
// bucket), so a short honest burst (a frozen machine catching up) is
// stalled at once and a clock up to 5% slow is followed (maxDriftStalls);
// a larger honest gap (a start without the start delay) closes over
// several windows. At most 2*MaxStalls stalls wait in the queue.
const MaxStalls = 5

// driftDeadZone is the simulation advantage stalled under a sustained drift.
const driftDeadZone = 0.25

// maxDriftStalls caps the rate term: 5 frames a window is a clock 5% slow.
const maxDriftStalls = 5

// driftBand, driftWindows and driftGain make the drift term: a peer's
// simulation advantage beyond driftBand frames, the same way for
// driftWindows windows in a row, adds driftGain of itself to its drift.
// Measured with the soak (docs/architecture.md): a 3% slow clock is
// followed (TestSlowPeer), while the noise of 4 players on
// intercontinental and of hell's bursts rarely lasts three windows.
const (
	driftBand    = 0.75
	driftWindows = 3
	driftGain    = 0.5
)

// earlyStalls is the fewest stalls the estimate of the last recentFrames
// frames must be worth to be queued at once rather than at the window's
// end: 5, an advantage of 9 input frames, far beyond what 5 frames of
// noise make (with 3, 4 players on intercontinental stalled a fifth more).
const earlyStalls = 5

// NewGovernor returns a governor for the given number of remote peers. With
// smoothing false it only measures (Config.NoFrameAdvantage, a lockstep
// session, a session without peers).
func NewGovernor(peers int, smoothing bool) *Governor {
	n := max(0, peers)
	return &Governor{tracker: NewTracker(peers), smoothing: smoothing, tokens: MaxStalls,
		drift: make([]float64, n), streak: make([]int, n)}
}

// Local records the localFrameLag of a message sent to peer (see
// [Tracker.Local]).
func (g *Governor) Local(peer, lag int) { g.tracker.Local(peer, lag) }

// Remote records the remoteFrameLag of a message received from peer (see
// [Tracker.Remote]).
func (g *Governor) Remote(peer, lag int) { g.tracker.Remote(peer, lag) }

// StaleLocal records a localFrameLag that counts toward the link lag only
// (see [Tracker.StaleLocal]).
func (g *Governor) StaleLocal(peer, lag int) { g.tracker.StaleLocal(peer, lag) }

// StaleRemote records a remoteFrameLag that counts toward the link lag
// only (see [Tracker.StaleRemote]).
func (g *Governor) StaleRemote(peer, lag int) { g.tracker.StaleRemote(peer, lag) }

// Stall is asked once per frame the session could simulate. It reports
// whether to stall this frame instead, spending one queued stall: one every
// StallPeriod(queued) frames.
func (g *Governor) Stall() bool {
	if g.queued == 0 || g.tokens == 0 {
		return false
	}
	g.since++
	if g.since < StallPeriod(g.queued) {
		return false
	}
	g.queued--
	g.tokens--
	g.since = 0
	g.own++
	return true
}

// Simulated counts one simulated frame. stalled is the session's running
// total of frames not simulated, for any reason (each gives frames back to
// the peers): those that were not the governor's own pay queued stalls.
// It reports whether the frame ended a window: then [Governor.Advantage]
// and [Governor.LinkLag] are the new window's, and the stalls for it are
// queued.
func (g *Governor) Simulated(stalled int64) bool {
	if other := (stalled - g.stalledSeen) - (g.own - g.ownSeen); other > 0 {
		g.queued = max(0, g.queued-int(min(other, int64(g.queued))))
	}
	g.stalledSeen, g.ownSeen = stalled, g.own
	if g.smoothing && g.driftEvery > 0 {
		g.sinceDrift++
		if g.sinceDrift >= g.driftEvery {
			g.sinceDrift -= g.driftEvery
			g.queued++
		}
	}
	adv, ok := g.tracker.Frame()
	if !ok {
		if g.smoothing && g.tracker.recentOK && g.settled {
			g.earlyLead(g.tracker.recentAdv)
		}
		return false
	}
	if g.smoothing {
		g.queued = min(g.queued+max(0, StallFrames(adv)-g.early)+g.driftStalls(adv), 2*MaxStalls)
	}
	g.early = 0
	g.settled = true
	g.tokens = min(g.tokens+MaxStalls, 2*MaxStalls)
	return true
}

// earlyLead queues, after recentFrames frames whose estimate is adv,
// the stalls it is worth if they are at least earlyStalls and more than
// are queued.
func (g *Governor) earlyLead(adv float64) {
	if k := min(StallFrames(adv), 2*MaxStalls); k >= earlyStalls && k > g.queued {
		g.early += k - g.queued
		g.queued = k
	}
}

// driftStalls updates each peer's drift at the end of a window whose
// largest advantage is adv, and returns the extra stall to queue now:
// one, when a drift is under way and the article's rule stalls nothing.
func (g *Governor) driftStalls(adv float64) int {
	most := 0.0
	for i := range g.drift {
		a, ok := g.tracker.lastPeer[i], g.tracker.lastOK[i]
		if !ok {
			continue
		}
		sim := a / 2
		switch {
		case sim >= driftBand:
			g.streak[i] = max(g.streak[i], 0) + 1
		case sim <= -driftBand:
			g.streak[i] = min(g.streak[i], 0) - 1
		default:
			g.streak[i] = 0
		}
		if g.streak[i] >= driftWindows || g.streak[i] <= -driftWindows {
			g.drift[i] = min(max(g.drift[i]+driftGain*sim, -maxDriftStalls), maxDriftStalls)
		}
		most = max(most, g.drift[i])
	}
	if most < 1 {
		g.driftEvery = 0
		return 0
	}
	g.driftEvery = float64(Window) / most
	if sim := adv / 2; sim >= driftDeadZone && StallFrames(adv) == 0 {
		return 1
	}
	return 0
}

// Bound caps the link lag peer can cause (see [Tracker.Bound]).
func (g *Governor) Bound(peer int, most float64) { g.tracker.Bound(peer, most) }

// Peer returns peer's input advantage over us in the window so far
// ([Tracker.Peer]).
func (g *Governor) Peer(peer int) (float64, bool) { return g.tracker.Peer(peer) }

// Queued returns the stalls waiting to be spread out.
func (g *Governor) Queued() int { return g.queued }

// Advantage returns the largest input advantage a peer had over us in the
// last complete window ([Tracker.Last]).
func (g *Governor) Advantage() float64 { return g.tracker.Last() }

// LinkLag returns the frames of lag the most distant peer's link caused in
// the last complete window ([Tracker.LastLocalLag]); it feeds inputlag.Next.
func (g *Governor) LinkLag() float64 { return g.tracker.LastLocalLag() }
