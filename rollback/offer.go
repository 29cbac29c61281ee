package rollback

import (
	"bytes"
	"compress/flate"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the state an audience offers joiners: one final snapshot,
// copied from the host once, deflated a slice a call, shared by every
// spectator (and machine coming back) that needs it.

// offered is an offer's frame and compressed size, kept once it is
// replaced.
type offered struct {
	frame Frame
	size  int
}

// offer is the state the audience serves joiners: copied from the host
// once, compressed a slice a call, shared by every joiner that needs it.
type offer struct {
	frame Frame
	raw   []byte
	sum   uint64
	out   bytes.Buffer
	zw    *flate.Writer
	pos   int  // raw bytes compressed so far
	on    bool // an offer is made
	done  bool // compressed: data holds it
	data  []byte
}

// offerFor makes sure an offer is being made, and reports whether it is
// ready to send.
func (a *audience) offerFor(now time.Duration, host stateSource) bool {
	o := &a.offer
	// With a stream delay, an offer is kept that much longer: spectators
	// get it only once it is that old.
	fresh := offerFresh + Frame(a.delay*60/time.Second)
	stale := o.on && (o.frame < a.feed.low || (o.done && a.feed.high-o.frame > fresh && !a.receiving()) ||
		(o.done && a.feed.high-o.frame >= newerAsked && a.askedNewer() && !a.receiving()))
	if !o.on || stale {
		if o.done {
			a.prev = offered{frame: o.frame, size: len(o.data)}
		}
		f, raw, ok := host.joinState(o.raw[:0])
		if !ok {
			return false
		}
		o.raw = raw
		if !(f >= a.feed.low && f <= a.feed.high) {
			return false
		}
		o.frame, o.sum, o.pos, o.on, o.done = f, xxhash.Sum64(raw), 0, true, false
		o.out.Reset()
		if o.zw == nil {
			o.zw, _ = flate.NewWriter(&o.out, flate.BestSpeed) // the level is valid
		} else {
			o.zw.Reset(&o.out)
		}
	}
	return o.done
}

// snapPieces is how many Snap pieces carry n compressed bytes.
func snapPieces(n int) int { return (n + wire.MaxSnapData - 1) / wire.MaxSnapData }

// askedNewer reports whether a guest claims every piece of the offer
// while it still asks for a state: a spectator's witness (witness.go)
// whose state must be at or after the frame the spectator plays.
func (a *audience) askedNewer() bool {
	pieces := snapPieces(len(a.offer.data))
	for k := range a.guests {
		if w := &a.guests[k].watch; w.Next < 0 && Frame(w.State) == a.offer.frame && int(w.Have) >= pieces {
			return true
		}
	}
	return false
}

// receiving reports whether a spectator holds pieces of the current offer.
func (a *audience) receiving() bool {
	for k := range a.guests {
		// A guest that claims every piece (a witness, witness.go) holds the
		// offer and receives nothing.
		if w := &a.guests[k].watch; w.Next < 0 && Frame(w.State) == a.offer.frame && (w.Have > 0 || w.Mask != 0) &&
			int(w.Have) < snapPieces(len(a.offer.data)) {
			return true
		}
	}
	return false
}

// compress compresses the next slice of the offer, so that making it
// never costs a frame more than compressPerTick bytes of deflate.
func (a *audience) compress() {
	o := &a.offer
	if !o.on || o.done {
		return
	}
	n := min(len(o.raw)-o.pos, compressPerTick)
	_, _ = o.zw.Write(o.raw[o.pos : o.pos+n]) // a bytes.Buffer never fails
	o.pos += n
	if o.pos == len(o.raw) {
		_ = o.zw.Close()
		o.data, o.done = o.out.Bytes(), true
	}
}

// offered returns the compressed size of the state of frame f that the
// audience offered (the offer, or the one before it).
func (a *audience) offered(f Frame) (int, bool) {
	switch {
	case a.offer.done && f == a.offer.frame:
		return len(a.offer.data), true
	case a.prev.size > 0 && f == a.prev.frame:
		return a.prev.size, true
	}
	return 0, false
}
