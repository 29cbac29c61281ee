package rollback

import "fmt"

// This file is how a joining machine judges the answers to its proposal
// (join.go): which machines must answer, what a refuted state does, and
// what a join that timed out waited for.

// livePeers notes which of the peers ps play at the take-over frame: those
// the machines' Readies say play there (one that takes over there too
// included), or before any came, those with a player the latest final
// inputs do not mark disconnected.
func (j *joiner) livePeers(ps peerSet) {
	w := j.watch
	// The Readies say it once they come: every frame before the take-over
	// frame is final where they come from.
	playing, ready := ^w.feed.mask(w.feed.high-1), false
	for i := range ps {
		if j.ready[i] {
			if !ready {
				playing, ready = 0, true
			}
			playing |= j.playing[i]
		}
	}
	for i := range ps {
		// One that answered our handshake is asked whatever they say of
		// it, unless it says itself that it joins too: the source's word
		// that a machine left is not enough to leave it unasked.
		j.live[i] = ps[i].auth.keyed() && !j.absent[i]
		for _, p := range ps[i].players {
			j.live[i] = j.live[i] || playing&(1<<p) != 0
		}
	}
}

// refute is a checksum of the take-over frame, peer i's, that differs
// from ours: the state the source sent is refuted, as one machine's word
// against another's. It watches through the next peer that plays and is
// not refuted (the take-over frame still proposed, as when a source
// fails), with a new catch-up time; with none left, the join fails with
// ErrJoinState.
func (j *joiner) refute(i int, peers peerSet) joinOutcome {
	w := j.watch
	err := fmt.Errorf("%w: peer %d's checksum of frame %d is %#x, ours %#x (the state came from peer %d at frame %d): not played",
		ErrJoinState, i, j.take, j.sums[i], j.mine, j.src, w.stats.StateFrame)
	j.refuted[j.src] = true
	j.stats.Refuted++
	for k := 1; k < len(peers); k++ {
		if n := (j.src + k) % len(peers); !j.refuted[n] && j.live[n] && peers[n].auth.keyed() {
			j.watch, j.summed, j.caughtUp, j.stats.StateFrame = nil, false, 0, -1
			j.watchFrom(n)
			return joinWait
		}
	}
	j.err = err
	return joinGiveUp
}

// hint says what a join that timed out waited for, of the peers ps.
func (j *joiner) hint(ps peerSet) string {
	for i := range ps {
		for k := range i {
			if j.ready[i] && j.ready[k] && j.playing[i] != j.playing[k] {
				return fmt.Sprintf("peers %d and %d disagree on who plays at frame %d (players %#b and %#b)", k, i, j.take, j.playing[k], j.playing[i])
			}
		}
	}
	for i := range ps {
		switch {
		case !j.live[i]:
		case !ps[i].auth.keyed():
			return fmt.Sprintf("peer %d never answered our handshake", i)
		case j.take > 0 && !j.acc[i]:
			return fmt.Sprintf("peer %d never accepted frame %d (its RejoinWindow may have passed)", i, j.take)
		}
	}
	return fmt.Sprintf("waiting for the checksums of frame %d", j.take)
}
