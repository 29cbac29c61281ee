package rollback

import "fmt"

// This file is how a joining machine judges the answers to its proposal
// (join.go): which machines must answer, what a refuted state does, and
// what a join that timed out waited for.

// livePeers notes which of the peers ps play at the take-over frame, and
// so must accept it and confirm the state there. Once Readies have come
// (every frame before the take-over frame is final where they come from),
// a machine plays when more of them say so than not (one that takes over
// there too included); on a tie, or before a majority of the machines that
// answered our handshake sent one, when the latest
// final inputs do not mark its players disconnected, or it answered our
// handshake and does not say it joins too: the source's word that a
// machine left is not enough to leave it unasked, and a machine's word
// that it plays is not enough against the others' that it left (one the
// honest machines disconnected, for a proven lie say, plays on alone).
func (j *joiner) livePeers(ps peerSet) {
	fed := ^j.watch.feed.mask(j.watch.feed.high - 1)
	// The Readies decide only once a majority of the machines that
	// answered our handshake sent one: a single Ready, a cut-off liar's
	// that says nobody else plays, left the honest machines unasked, and
	// the joiner took over with the liar alone.
	answered, readies := 0, 0
	for k := range ps {
		if ps[k].auth.keyed() && !j.absent[k] {
			answered++
		}
		if j.ready[k] {
			readies++
		}
	}
	decide := 2*readies > answered
	for i := range ps {
		bit := uint8(1) << ps[i].players[0] // a machine's players come and go together
		in, out := 0, 0
		for k := range ps {
			switch {
			case !j.ready[k]:
			case j.playing[k]&bit != 0:
				in++
			default:
				out++
			}
		}
		j.live[i] = (decide && in > out) || ((!decide || in == out) && (fed&bit != 0 || (ps[i].auth.keyed() && !j.absent[i])))
	}
}

// pastState proposes past the watch's state (signed: the match's
// statements, nil when it signs nothing) when the state is at or past the take-over frame, and reports
// whether it did. Past it, the new source did not accept the frame. At
// it, the source accepted it and holds its final frames there, and its
// state lacks the final inputs of the frame before, the base of the first
// packets each way: taken over from it, the joiner read a machine's
// packets against a zero base and named it for equivocation. At once:
// waiting for its final frames to move deadlocked that case.
func (j *joiner) pastState(signed *statements) bool {
	w := j.watch
	if j.take == 0 || w.stats.StateFrame < j.take {
		return false
	}
	j.retake(roundTake(max(w.feed.high, w.stats.StateFrame+1)+joinLead, signed))
	return true
}

// refute is a checksum of the take-over frame, peer i's, that differs
// from ours, when no majority of the machines that play there confirmed
// ours: the state the source sent is refuted, as one machine's word
// against another's. (Confirmed by a majority, it is taken over, and each
// machine whose checksum differs is suspected of SuspectDesync: with four
// machines or more, one liar's checksum would otherwise refute every
// honest source in turn and end the join in ErrJoinState.) It watches
// through the next peer that plays and is not refuted (the take-over
// frame still proposed, as when a source fails), with a new catch-up
// time; with none left, the join fails with ErrJoinState.
func (j *joiner) refute(i int, peers peerSet) joinOutcome {
	w := j.watch
	err := fmt.Errorf("%w: peer %d's checksum of frame %d is %#x, ours %#x (the state came from peer %d at frame %d): not played",
		ErrJoinState, i, j.take, j.sums[i], j.mine, j.src, w.stats.StateFrame)
	j.refuted[j.src] = true
	j.stats.Refuted++
	if n, ok := j.nextSource(peers, true); ok {
		j.caughtUp = 0
		j.watchFrom(n)
		return joinWait
	}
	j.err = err
	return joinGiveUp
}

// nextSource returns the first of the peers after the source, in index
// order, whose state no checksum refuted (and, with playing, that plays
// at the take-over frame and answered our handshake); ok is false when
// there is none.
func (j *joiner) nextSource(peers peerSet, playing bool) (int, bool) {
	for k := 1; k < len(peers); k++ {
		n := (j.src + k) % len(peers)
		if !j.refuted[n] && (!playing || (j.live[n] && peers[n].auth.keyed())) {
			return n, true
		}
	}
	return 0, false
}

// hint says what a join that timed out waited for, of the peers ps.
func (j *joiner) hint(ps peerSet) string {
	for i := range ps {
		for k := range i {
			if j.live[i] && j.live[k] && j.ready[i] && j.ready[k] && j.playing[i] != j.playing[k] {
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
	var waiting []int
	for i := range ps {
		if j.live[i] && !j.ready[i] {
			waiting = append(waiting, i)
		}
	}
	if !j.summed {
		return fmt.Sprintf("waiting to simulate frame %d (peers %v not ready)", j.take, waiting)
	}
	return fmt.Sprintf("waiting for the checksums of frame %d from peers %v", j.take, waiting)
}
