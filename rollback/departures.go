package rollback

import "time"

// departures is the peers as the agreement on a departure sees them: the
// count each claims of the others' frames (gossip), raised in rollback
// mode to what its own progress proves and to the statements' settled
// frontier, and the cut they agree on.
type departures struct {
	peers    peerSet
	inputs   *inputRing
	lockstep bool
	settled  Frame // the statements' settled frontier (statements.end); 0 without statements
}

// newDepartures is the peers ps as the agreement sees them, with the
// input ring in, the session's mode (lockstep) and its statements (nil:
// fewer than three machines, or lockstep).
func newDepartures(ps peerSet, in *inputRing, lockstep bool, st *statements) departures {
	d := departures{peers: ps, inputs: in, lockstep: lockstep}
	if st != nil {
		d.settled = st.end()
	}
	return d
}

// floor returns the fewest frames of machine x that peer m can have: the
// count it claimed (gossip), or, in rollback mode, what its own progress
// proves: it cannot have simulated a frame maxRollbackLimit past x's
// inputs, nor have inputs more than maxInputLag ahead of its simulation,
// so a count further behind its inputs than countSlack is not honest.
// Nor can its count be before the statements' settled frontier: every
// live machine, m too, echoed our digest of every machine's statements
// before it, so m holds x's inputs there (a machine that echoes what it
// lacks can only fail itself). The anchor and the disconnect frame use
// it, so a peer that withholds or lowers its counts cannot hold back our
// snapshots, nor a joiner's take-over: the slack alone held the anchor
// countSlack behind the inputs of a machine that withheld its counts,
// below the take-over frame where every machine waited for the joiner.
func (d departures) floor(m, x int) Frame {
	f := d.peers[m].gossip.sees[x]
	if !d.lockstep {
		f = max(f, d.inputs.next[d.peers[m].players[0]]-countSlack, d.settled)
	}
	return f
}

// floors returns every peer's floor for machine x (floor), in dst.
func (d departures) floors(x int, dst *[MaxPlayers]Frame) *[MaxPlayers]Frame {
	for m := range d.peers {
		if m != x {
			dst[m] = d.floor(m, x)
		}
	}
	return dst
}

// cut returns the disconnect frame of machine x as we know it: the agreed
// frame once agreed, else the least of our own count and every report not
// below its reporter's floor (computed in scratch).
func (d departures) cut(x int, scratch *[MaxPlayers]Frame) Frame {
	l := &d.peers[x].leave
	if l.agreed {
		return l.frame
	}
	return l.least(d.floors(x, scratch))
}

// leftAfter reports whether a machine other than joiner i that plays at
// frame t is disconnected here, and from which frame at the earliest (its
// cut, computed in scratch).
func (d departures) leftAfter(i int, t Frame, scratch *[MaxPlayers]Frame) (Frame, bool) {
	for x := range d.peers {
		if px := &d.peers[x]; x != i && px.leave.disc && !d.inputs.absent(px.players[0], t) && !d.peers.joining(x) {
			return d.cut(x, scratch), true
		}
	}
	return 0, false
}

// withholds reports whether one of peer m's counts of the other machines
// is below what its own progress proves (floor), and below what we have
// of that machine less countSlack: it withholds them. Only in rollback
// mode. The second bound is for a machine x that took its players back:
// its take-over frame made its inputs from there needed again at frames m
// had already simulated, so m's count of x can honestly stay far behind
// m's own inputs until x's come, as ours does (127 suspicions of honest
// machines in one match of 4 on hell with a late join).
func (d departures) withholds(m int) bool {
	if d.lockstep {
		return false
	}
	for _, x := range d.peers[m].gossip.order {
		ours := d.inputs.next[d.peers[x].players[0]] - countSlack
		if !d.peers[x].leave.disc && d.peers[m].gossip.sees[x] < min(d.floor(m, x), ours) {
			return true
		}
	}
	return false
}

// judge returns, as a bit mask of peer indexes, the peers of n whose
// report that this machine left doubtFor ago, while we heard from it, is
// still not backed by a proof that it equivocated: they are to be named.
// It forgets the doubts it judged.
func (l *leave) judge(n int, now time.Duration) (named uint8) {
	for from, at := range l.doubt[:n] { // by peer index
		if at == 0 || now-at < doubtFor {
			continue
		}
		l.doubt[from] = 0
		if !l.proven && !l.disc {
			named |= 1 << from
		}
	}
	return named
}
