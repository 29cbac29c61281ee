package rollback

import (
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/rewindgg/rewind/advantage"
)

// peerSet is the remote machines, by peer index, as the session holds
// them (peer.go): the questions asked of all of them at once.
type peerSet []peer

// actedOn reports whether peer i's report of peer j's departure shows it
// acted on a proof of j's equivocation from frame from.
func (ps peerSet) actedOn(i, j int, from Frame) bool {
	l := &ps[j].leave
	return l.reported[i] && l.report[i] <= from
}

// joining reports whether peer i is coming back: re-keyed, not yet taken
// over.
func (ps peerSet) joining(i int) bool { return ps[i].leave.agreed && ps[i].join.keyed }

// anyJoining reports whether a peer is coming back (joining).
func (ps peerSet) anyJoining() bool {
	for i := range ps {
		if ps.joining(i) {
			return true
		}
	}
	return false
}

// pendingJoin returns the peer other than i whose join we accepted and
// that has not taken over yet, or -1.
func (ps peerSet) pendingJoin(i int) int {
	for k := range ps {
		if k != i && ps.joining(k) && ps[k].join.take != 0 {
			return k
		}
	}
	return -1
}

// departed reports whether a peer may come (back) into the match: a
// reserved slot, or a departure when machines may come back (rejoin: a
// RejoinWindow).
func (ps peerSet) departed(rejoin bool) bool {
	for i := range ps {
		if p := &ps[i]; p.leave.agreed && (p.late || rejoin) {
			return true
		}
	}
	return false
}

// firstInputs returns when the last remaining peer's first inputs arrived
// (start, the start of the match, with no peers), or -1 while some are
// missing.
func (ps peerSet) firstInputs(start time.Duration) time.Duration {
	first := start
	for i := range ps {
		p := &ps[i]
		if p.leave.disc {
			continue
		}
		if p.start.first < 0 {
			return -1
		}
		first = max(first, p.start.first)
	}
	return first
}

// handshakeHints says what the silent peers' addresses sent that did not
// count, for the timeout error; session is ours.
func (ps peerSet) handshakeHints(missing []int, session uint64) []string {
	var hints []string
	for _, i := range missing {
		a := &ps[i].auth
		switch {
		case a.otherSession != 0:
			hints = append(hints, fmt.Sprintf("peer %d sent handshakes for session %#x (ours is %#x)", i, a.otherSession, session))
		case a.authFailed:
			hints = append(hints, fmt.Sprintf("peer %d sent handshakes that failed the Secret's check: its Secret differs", i))
		case !a.heard:
			hints = append(hints, fmt.Sprintf("nothing arrived from peer %d", i))
		}
	}
	return hints
}

// lateMachine reports whether machine a has a reserved slot not yet filled.
func (ps peerSet) lateMachine(a int) bool {
	for i := range ps {
		if ps[i].machine == a {
			return ps[i].late
		}
	}
	return false
}

// rowReady reports whether we have a round-trip time to every peer.
func (ps peerSet) rowReady() bool {
	for i := range ps {
		if ps[i].link.rtt == 0 && !ps[i].late {
			return false
		}
	}
	return true
}

// startRTTLimit is the most a round trip reported for the start delay can
// be: twice the slowest round trip we measured ourselves, plus
// startRTTSlack. Any two machines reach each other through us, so an
// honest round trip between them is no longer than their two round trips
// to us (a lockstep match over a satellite link is slow for everyone);
// maxStartRTT until we know all of ours. With a fixed floor of a second
// instead, a peer reporting huge round trips still delayed a 3-machine
// wifi match's start by half a second (honest speed 0.948).
func (ps peerSet) startRTTLimit() uint32 {
	var slowest time.Duration
	for i := range ps {
		if ps[i].link.rtt == 0 {
			return uint32(maxStartRTT / time.Microsecond)
		}
		slowest = max(slowest, ps[i].link.rtt)
	}
	return uint32(min((2*slowest+startRTTSlack)/time.Microsecond, 1<<32-1))
}

// buildMesh builds the host's mesh once every peer's row has arrived (a
// reserved slot's machine has none: its row stays zero).
func (st *starter) buildMesh(ps peerSet) {
	n := len(ps) + 1
	for i := range ps {
		if len(ps[i].start.row) != n && !ps[i].late {
			return
		}
	}
	st.mesh = newMesh(n)
	for i := range ps {
		if ps[i].late {
			continue
		}
		a := ps[i].machine
		st.mesh[st.machine][a] = ps[i].link.rtt
		for b, us := range ps[i].start.row {
			st.mesh[a][b] = time.Duration(us) * time.Microsecond
		}
	}
	st.meshKnown = true
}

// startDelay is advantage.StartDelay over the machines that start the
// match: the mesh without the reserved slots (Peer.Late), whose rows and
// columns are zero.
func (st *starter) startDelay(host int, ps peerSet) time.Duration {
	var keep []int
	h, me := -1, -1
	for a := range st.mesh {
		if a != st.machine && ps.lateMachine(a) {
			continue
		}
		if a == host {
			h = len(keep)
		}
		if a == st.machine {
			me = len(keep)
		}
		keep = append(keep, a)
	}
	if len(keep) == len(st.mesh) {
		return advantage.StartDelay(st.mesh, host, st.machine)
	}
	m := newMesh(len(keep))
	for x, a := range keep {
		for y, b := range keep {
			m[x][y] = st.mesh[a][b]
		}
	}
	return advantage.StartDelay(m, h, me)
}

// noteJoinStates keeps, for each join accepted at frame f, our checksum of
// the state at its start (every simulation of f, the last of which is
// final once every input before f is).
func (ps peerSet) noteJoinStates(f Frame, state []byte) {
	for i := range ps {
		if j := &ps[i].join; j.take == f && ps.joining(i) {
			j.sum, j.summed = xxhash.Sum64(state), true
		}
	}
}
