package rollback

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is desync recovery (Config.Recover; docs/architecture.md,
// "Desync recovery"). When a desync is detected the machines keep the
// state a majority of their checksums of the frame vouch for; with two
// machines, or a tie, the lower machine's. The odd machine gets the kept
// state through the exchange that names the differing field (exchange.go),
// checks it against the checksum the majority (or the lower machine) sent,
// loads it at that frame, simulates again to the present and plays on.
// Every machine that found the odd one out stops comparing its checksums
// for recoverGrace frames after the desync's (those it sent before it
// loaded the kept state differ); a second desync within recoverWindow
// frames of a recovered one ends the match.

const (
	recoverWindow = 600      // frames: a desync this soon after a recovered one ends the match
	recoverGrace  = ringSize // frames after a recovered desync whose checksums from the odd machine are not compared
)

// errRecover is why the odd machine could not load the kept state: the
// match then ends on the desync, as without Config.Recover.
var errRecover = errors.New("rollback: the kept state could not be loaded")

// recovery is the checksums' recovery from desyncs (nil without
// Config.Recover).
type recovery struct {
	pending bool          // a desync is being recovered from
	adopt   bool          // we load the peer's state; else we keep ours
	frame   Frame         // its frame
	peer    int           // the peer we exchange states with
	want    uint64        // the kept state's checksum (the peer's), when we adopt it
	at      time.Duration // when it was detected
	last    Frame         // the frame of the last recovered desync (noFrame: none)
	grace   []Frame       // per peer: its checksums of frames up to this one are not compared
	lower   []bool        // per peer: we are the lower machine (our state is kept on a tie)
	report  *desync.Error // the report of the latest desync recovered from (or being)
	done    int
	took    time.Duration
}

// newRecovery returns the recovery of a session with peers peers, lower
// saying for each whether we are the lower machine (by lowest PlayerID).
func newRecovery(lower []bool) *recovery {
	r := &recovery{last: noFrame, grace: make([]Frame, len(lower)), lower: lower}
	for i := range r.grace {
		r.grace[i] = -1
	}
	return r
}

// take takes desync e, detected at now, and reports whether it is
// recovered from: not while another is, nor within recoverWindow frames
// of the last one.
func (r *recovery) take(e *desync.Error, now time.Duration) bool {
	f := Frame(e.Frame)
	if r == nil || r.pending || (r.last != noFrame && f < r.last+recoverWindow) || e.Peer < 0 || e.Peer >= len(r.lower) {
		return false
	}
	r.pending, r.frame, r.peer, r.want, r.at = true, f, e.Peer, e.Remote, now
	r.adopt = e.Majority || (!e.Outvoted && !r.lower[e.Peer])
	rep := *e
	rep.Recovered, rep.Adopted = true, r.adopt
	r.report = &rep
	if !r.adopt {
		r.ignore(e.Peer, f) // it loads ours: what it sent before does not count
	}
	return true
}

// ignore stops comparing peer i's checksums of the recoverGrace frames
// after f: it is the odd one out at f, and loads the kept state.
func (r *recovery) ignore(i int, f Frame) {
	if r != nil && i >= 0 && i < len(r.grace) {
		r.grace[i] = max(r.grace[i], f+recoverGrace)
	}
}

// ignored reports whether peer i's checksum of frame f is not compared.
func (r *recovery) ignored(i int, f Frame) bool {
	return r != nil && i >= 0 && i < len(r.grace) && f <= r.grace[i]
}

// adopting reports whether we wait for the kept state: our checksums from
// the desync's frame on are of a state that goes, and none is handed on.
func (r *recovery) adopting() bool { return r != nil && r.pending && r.adopt }

// finish ends the recovery at now.
func (r *recovery) finish(now time.Duration) {
	r.pending, r.last, r.took = false, r.frame, now-r.at
	r.done++
}

// tick ends a recovery whose exchange has not finished within limit (the
// kept state never came: the match ends on the desync; ours never went: the
// report names no field), and drops an exchange that is over.
func (r *recovery) tick(c *checksums, now, limit time.Duration) {
	if r == nil {
		return
	}
	if r.pending && now-r.at > limit {
		c.ex = nil
		if r.adopt {
			e := *r.report
			e.Recovered = false
			if e.Field == "" {
				e.Field = "the kept state did not come"
			}
			r.pending, c.err = false, &e
			return
		}
		r.finish(now)
	}
	if !r.pending && c.err == nil && c.ex != nil && (c.ex.over() || now-c.ex.at > limit) {
		c.ex = nil // over, or the peer never took it all
	}
}

// recovered takes the end of the state exchange of a desync recovered
// from, and returns the first frame to simulate again (frame, the present:
// none): keeping our state, the report is complete; adopting the peer's,
// it is the only snapshot of sn, at the desync's frame, and the rollback
// that follows the call simulates the present again from it. A kept state
// that cannot be loaded ends the match on the desync.
func (c *checksums) recovered(sn *snapshots, frame Frame, now time.Duration) Frame {
	r := c.rec
	if r == nil || !r.pending {
		return frame
	}
	r.finish(now)
	if !r.adopt {
		return frame
	}
	if err := c.adopt(sn, frame, r.frame, c.ex.theirs[c.ex.head:c.ex.tail], r.want); err != nil {
		e := *r.report
		e.Recovered, e.Field = false, fmt.Sprintf("%s (%v)", e.Field, err)
		r.done--
		c.err = &e
		return frame
	}
	return r.frame
}

// adopt loads the kept state, compressed, at frame f, where its checksum
// must be want, as the only snapshot of sn, frame being the present: the
// caller rolls back to f.
func (c *checksums) adopt(sn *snapshots, frame, f Frame, compressed []byte, want uint64) error {
	if frame-f >= ringSize-2*wire.MaxStatementFrames {
		return fmt.Errorf("%w: frame %d is %d frames back, no longer in the input ring", errRecover, f, frame-f)
	}
	state, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(compressed)), int64(sn.arena.Size())+1))
	if err != nil || xxhash.Sum64(state) != want {
		return fmt.Errorf("%w: it is not the state whose checksum the peer sent", errRecover)
	}
	if err := sn.arena.Load(state); err != nil {
		return fmt.Errorf("%w: %v", errRecover, err)
	}
	c.rewind(f, want)
	c.bun.adopted(f, state)
	return sn.adopt(f)
}
