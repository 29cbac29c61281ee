// Package advantage keeps a rollback match fair: it measures how many frames
// of input advantage the remote machines have over this one, turns that
// into frames to stall, spreads the stalls out so nobody notices, and
// computes the start-of-match wait that keeps the host from starting ahead.
//
// The rules are the INVERSUS article's ("Frame Advantage" to "Startup
// Advantage"): each received input message gives remoteFrameLag, the frames
// of our input the peer is predicting; each sent one gives localFrameLag,
// the frames of the peer's input we are predicting. Their difference,
// averaged over 100 frames, is the input advantage the peer has over us;
// stalling one frame moves it by two, so the simulation advantage is half.
package advantage

import (
	"math"
	"time"
)

// Window is the number of frames over which lags are averaged.
const Window = 100

// StallFrames returns how many frames to stall for the given input frame
// advantage (the largest a remote peer has over us): half of it is the
// simulation advantage, and at 0.75 or more the machine stalls
// max(1, int(simulationAdvantage+0.5)) frames. Below that, or for a
// negative advantage, it returns 0.
func StallFrames(inputAdvantage float64) int {
	sim := 0.5 * inputAdvantage
	if sim >= 0.75 {
		return max(1, int(sim+0.5))
	}
	return 0
}

// StallPeriod returns how often, in frames, to stall while queued stalls
// wait: once every 10, 9, 8, …, 2 frames for 1…9 queued, every frame for 10
// or more, and 0 (never) for none.
func StallPeriod(queued int) int {
	switch {
	case queued <= 0:
		return 0
	case queued >= 10:
		return 1
	default:
		return 11 - queued
	}
}

// StartDelay returns how long machine local should wait, once every
// machine is ready, so that all start their first frame together. rtt is the
// full mesh of round-trip times (rtt[i][j] from i to j; the diagonal is
// ignored) and host the machine that decided to start. Each machine learns
// that every other is ready through the host and that other: the delay is
// how much later the slowest machine gets there than local does. Indices
// out of range, or a mesh that is not square, give 0.
func StartDelay(rtt [][]time.Duration, host, local int) time.Duration {
	n := len(rtt)
	if host < 0 || host >= n || local < 0 || local >= n {
		return 0
	}
	for _, row := range rtt {
		if len(row) != n {
			return 0
		}
	}
	at := func(i, j int) time.Duration {
		if i == j {
			return 0
		}
		return rtt[i][j]
	}
	delay := func(target int) time.Duration {
		var d time.Duration
		for peer := range n {
			if peer != target {
				// from the host to peer, then from peer to target; halved
				// because the pings are round trips
				d = max(d, (at(host, peer)+at(peer, target))/2)
			}
		}
		return d
	}
	mine := delay(local)
	var wait time.Duration
	for i := range n {
		wait = max(wait, delay(i)-mine)
	}
	return wait
}

// Tracker accumulates the frame lags of each peer's messages and, every
// Window frames, yields the averaged input advantage: the largest over the
// peers of mean localFrameLag − mean remoteFrameLag, and never below 0. The
// zero value is not usable; use [NewTracker]. It allocates nothing after
// construction.
type Tracker struct {
	peers     []lags
	bound     []float64 // per peer: the most link lag our own measurements justify
	frames    int
	last      float64
	lastLocal float64
	lastPeer  []float64 // per peer: its advantage over us in the last window
	lastOK    []bool    // per peer: whether it had messages both ways in it

	recentAdv float64 // the largest advantage of the last recentFrames frames
	recentOK  bool    // set on the frame that ends them (not the whole window)
}

// recentFrames is how many frames the early estimate covers (Tracker's
// recentAdv), taken anew every recentFrames frames: short, to see a peer
// that fell behind within a tenth of a second of its frames coming back;
// the Governor acts on it only when it is large (earlyStalls).
const recentFrames = 5

type lags struct {
	window sums // the current window
	recent sums // the last recentFrames frames
	link   sums // every lag, the stale ones too: the link lag's
}

// sums is a mean of each direction's lags in the making.
type sums struct {
	local, remote   float64
	nLocal, nRemote int
}

func (s *sums) addLocal(lag int) {
	s.local += float64(lag)
	s.nLocal++
}

func (s *sums) addRemote(lag int) {
	s.remote += float64(lag)
	s.nRemote++
}

// advantage returns the mean local lag less the mean remote lag, and
// whether there were lags both ways.
func (s *sums) advantage() (float64, bool) {
	if s.nLocal == 0 || s.nRemote == 0 {
		return 0, false
	}
	return s.local/float64(s.nLocal) - s.remote/float64(s.nRemote), true
}

// NewTracker returns a tracker for the given number of remote peers.
func NewTracker(peers int) *Tracker {
	n := max(0, peers)
	t := &Tracker{peers: make([]lags, n), bound: make([]float64, n), lastPeer: make([]float64, n), lastOK: make([]bool, n)}
	for i := range t.bound {
		t.bound[i] = math.Inf(1)
	}
	return t
}

// Bound caps the link lag (LastLocalLag) peer can cause at most frames:
// what the caller's own measurement of the link (its round trip) justifies,
// whatever the peer's acknowledgements say. Unbounded until set.
func (t *Tracker) Bound(peer int, most float64) {
	if peer >= 0 && peer < len(t.bound) {
		t.bound[peer] = most
	}
}

// Local records the localFrameLag of a message sent to peer:
// nextLocalFrameToSimulate − nextRemoteFrameToReceive.
func (t *Tracker) Local(peer, lag int) {
	if peer >= 0 && peer < len(t.peers) {
		p := &t.peers[peer]
		p.window.addLocal(lag)
		p.recent.addLocal(lag)
		p.link.addLocal(lag)
	}
}

// Remote records the remoteFrameLag of a message received from peer:
// nextRemoteFrameToReceive − nextLocalFrameRequestedByPeer.
func (t *Tracker) Remote(peer, lag int) {
	if peer >= 0 && peer < len(t.peers) {
		p := &t.peers[peer]
		p.window.addRemote(lag)
		p.recent.addRemote(lag)
		p.link.addRemote(lag)
	}
}

// StaleLocal records a localFrameLag too stale for the advantage: made
// while the newest of the peer's frames we had was old (a loss burst: the
// lag grows a frame a tick although neither machine moved). It counts
// toward the link lag ([Tracker.LastLocalLag]) only.
func (t *Tracker) StaleLocal(peer, lag int) {
	if peer >= 0 && peer < len(t.peers) {
		t.peers[peer].link.addLocal(lag)
	}
}

// StaleRemote records a remoteFrameLag too stale for the advantage: the
// peer's acknowledgement was old (our packets to it were lost). It counts
// toward the link lag ([Tracker.LastLocalLag]) only.
func (t *Tracker) StaleRemote(peer, lag int) {
	if peer >= 0 && peer < len(t.peers) {
		t.peers[peer].link.addRemote(lag)
	}
}

// Frame counts one simulated frame. On every Window-th frame it returns
// the averaged advantage and true, and starts a new window; peers with no
// message in both directions during the window are left out. Every
// recentFrames frames it also takes the estimate of those frames alone
// (the Governor acts on a large one at once).
func (t *Tracker) Frame() (float64, bool) {
	t.frames++
	t.recentOK = false
	if t.frames%recentFrames == 0 {
		t.recentAdv = math.Inf(-1)
		for i := range t.peers {
			if a, ok := t.peers[i].recent.advantage(); ok {
				t.recentAdv = max(t.recentAdv, a)
			}
			t.peers[i].recent = sums{}
		}
		t.recentOK = t.frames < Window && !math.IsInf(t.recentAdv, -1)
	}
	if t.frames < Window {
		return 0, false
	}
	best, worstLocal := 0.0, 0.0
	for i := range t.peers {
		p := &t.peers[i]
		a, ok := p.window.advantage()
		if t.lastOK[i] = ok; ok {
			t.lastPeer[i], best = a, max(best, a)
		}
		if l := &p.link; l.nLocal > 0 && l.nRemote > 0 {
			// The mean of the two directions: the advantage cancels out,
			// leaving the frames of lag the link itself causes.
			worstLocal = max(worstLocal, min(t.bound[i], (l.local/float64(l.nLocal)+l.remote/float64(l.nRemote))/2))
		}
		*p = lags{}
	}
	t.frames, t.last, t.lastLocal = 0, best, worstLocal
	return best, true
}

// LastLocalLag returns, for the most distant peer of the last complete
// window, the frames of lag the link causes: the mean of its mean
// localFrameLag and mean remoteFrameLag, in which any frame advantage
// cancels out (that is the stalls' business, not the input lag's). It
// feeds inputlag.Next.
func (t *Tracker) LastLocalLag() float64 { return t.lastLocal }

// Last returns the advantage computed at the end of the last window.
func (t *Tracker) Last() float64 { return t.last }

// Peer returns peer's input advantage over us in the window so far, and
// whether it has messages in both directions.
func (t *Tracker) Peer(peer int) (float64, bool) {
	if peer < 0 || peer >= len(t.peers) {
		return 0, false
	}
	return t.peers[peer].window.advantage()
}
