package rollback

import (
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the budget of a guest's state transfer (audience.go): one
// that has not taken the state within it is cut off, and a spectator cut
// off is not admitted again from its index for cutFor.

// Budget limits.
const (
	stateBudget = 4                // times the compressed state a guest may be sent before it takes it
	stateTime   = 10 * time.Second // the time budget's floor, before the transfer time at the pace
	cutFor      = time.Minute      // how long a spectator cut off is not admitted again
	// maxSpectatorDelay bounds Config.SpectatorDelay: the feed holds the
	// frames since the offered state's until they are sent (feedFrames).
	maxSpectatorDelay = 20 * time.Second
)

// cutGuest is a spectator cut off over its state budget: not admitted
// again from its transport index until then.
type cutGuest struct {
	idx   int
	until time.Duration
}

// overBudget reports whether g, still without the state, has had more of
// it than its budget: stateBudget times the offer's compressed size (and
// stateBudget pieces), or stateTime plus stateBudget times the offer's
// transfer time at the pace since it proved its handshake. One that never
// takes the state (it keeps asking) would cost the pace for ever.
func (a *audience) overBudget(g *guest, now time.Duration) bool {
	size := len(a.offer.data)
	pieces := snapPieces(size)
	pace := time.Duration((pieces+a.perTick-1)/a.perTick) * time.Second / 60
	wait := time.Duration(0)
	if g.idx >= a.peers {
		wait = a.delay // the offer is held back from spectators that long
	}
	return g.sentSnap > stateBudget*(size+wire.MaxSnapData) || now-g.since > stateTime+wait+stateBudget*pace
}

// isCut reports whether a spectator at transport index idx was cut off
// less than cutFor ago. The most recent maxGuests cuts are kept.
func (a *audience) isCut(idx int, now time.Duration) bool {
	for _, c := range a.cuts {
		if c.until > now && c.idx == idx {
			return true
		}
	}
	return false
}

// cutOff drops guest k, over its budget, and remembers a spectator's
// index until cutFor from now.
func (a *audience) cutOff(k int, now time.Duration, host guestSink) {
	g := &a.guests[k]
	a.sendControl(g, &wire.Disconnect{Frame: -1}, now)
	if g.idx >= a.peers {
		a.cuts[a.nextCut] = cutGuest{idx: g.idx, until: now + cutFor}
		a.nextCut = (a.nextCut + 1) % len(a.cuts)
	}
	a.drop(k, host)
	a.cut++
}

// dropAll tells every guest that we stop serving it, and drops it.
func (a *audience) dropAll(now time.Duration, host guestSink) {
	for k := len(a.guests) - 1; k >= 0; k-- {
		if g := &a.guests[k]; g.auth.verified {
			a.sendControl(g, &wire.Disconnect{Frame: -1}, now)
		}
		a.drop(k, host)
	}
}
