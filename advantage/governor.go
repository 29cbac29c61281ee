package advantage

// Governor decides when a rollback session stalls to keep the match fair:
// it feeds a [Tracker], queues the article's stalls at the end of every
// window, adds Rewind's drift term, and spreads the queued stalls out with
// [StallPeriod]. A session asks it once per frame whether to stall
// ([Governor.Stall]) and tells it every frame it simulated
// ([Governor.Simulated]). The zero value is not usable; use [NewGovernor].
// It allocates nothing after construction.
//
// The drift term: the article stalls the average advantage of the last
// window, so a steady drift (a peer whose clock runs slow) leaves a
// standing lead of one window's drift. The drift per window is estimated as
// the stalls taken in the window plus half the change in advantage,
// smoothed over about four windows; it is stalled evenly through the next
// window, and under a sustained drift the lead is taken from a quarter of a
// simulation frame instead of the article's dead zone of 0.75. With no
// drift it adds nothing.
type Governor struct {
	tracker   *Tracker
	smoothing bool // false: measure only, never stall

	queued int // stalls waiting to be spread out
	since  int // frames since the last stall taken from the queue
	tokens int // stalls it may still take: MaxStalls more each window, at most 2*MaxStalls

	stallsSeen int64   // frames not simulated (every reason) at the last window's end
	drift      float64 // estimated frames of drift per window (smoothed)
	lastAdv    float64
	windows    int
	driftEvery float64 // frames between paced drift stalls; 0 for none
	sinceDrift float64
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

// NewGovernor returns a governor for the given number of remote peers. With
// smoothing false it only measures (Config.NoFrameAdvantage, a lockstep
// session, a session without peers).
func NewGovernor(peers int, smoothing bool) *Governor {
	return &Governor{tracker: NewTracker(peers), smoothing: smoothing, tokens: MaxStalls}
}

// Local records the localFrameLag of a message sent to peer (see
// [Tracker.Local]).
func (g *Governor) Local(peer, lag int) { g.tracker.Local(peer, lag) }

// Remote records the remoteFrameLag of a message received from peer (see
// [Tracker.Remote]).
func (g *Governor) Remote(peer, lag int) { g.tracker.Remote(peer, lag) }

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
	return true
}

// Simulated counts one simulated frame. stalled is the session's running
// total of frames not simulated, for any reason (each gives frames back to
// the peers). It reports whether the frame ended a window: then
// [Governor.Advantage] and [Governor.LinkLag] are the new window's, and the
// stalls for it are queued.
func (g *Governor) Simulated(stalled int64) bool {
	if g.smoothing && g.driftEvery > 0 {
		g.sinceDrift++
		if g.sinceDrift >= g.driftEvery {
			g.sinceDrift -= g.driftEvery
			g.queued++
		}
	}
	adv, ok := g.tracker.Frame()
	if !ok {
		return false
	}
	if g.smoothing {
		g.queued = min(g.queued+StallFrames(adv)+g.driftStalls(adv, stalled), 2*MaxStalls)
	}
	g.tokens = min(g.tokens+MaxStalls, 2*MaxStalls)
	return true
}

// driftStalls updates the drift estimate at the end of a window with
// advantage adv, and returns the extra stall to queue now: one, when a
// drift is under way and the article's rule stalls nothing.
func (g *Governor) driftStalls(adv float64, stalled int64) int {
	taken := stalled - g.stallsSeen
	g.stallsSeen = stalled
	if g.windows > 0 {
		sample := float64(taken) + (adv-g.lastAdv)/2
		g.drift += (sample - g.drift) / 4
	}
	g.windows++
	g.lastAdv = adv
	if g.drift < 1 {
		g.driftEvery = 0
		return 0
	}
	g.driftEvery = float64(Window) / min(g.drift, maxDriftStalls)
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
