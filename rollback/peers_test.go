package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// three peers (indexes 0..2, machines 1..3, players 1..3) for the tables.
func threePeers() peerSet {
	ps := make(peerSet, 3)
	for i := range ps {
		ps[i].machine, ps[i].players = i+1, []PlayerID{PlayerID(i + 1)}
		ps[i].gossip.order = []int{(i + 1) % 3, (i + 2) % 3}
		ps[i].start.first = -1
	}
	return ps
}

func TestDepartures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sees      Frame // peer 0's count of peer 1's frames
		next      Frame // peer 0's own next input: its progress
		ours      Frame // our own count of peer 1's frames
		settled   Frame // the statements' settled frontier (0: none)
		lockstep  bool
		floor     Frame
		withholds bool
	}{
		{"its count, ahead of what it proves", 500, 400, 500, 0, false, 500, false},
		{"raised to what it proves", 10, 400, 400, 0, false, 400 - countSlack, true},
		// Peer 1 took its players back at frame 10: its inputs are needed
		// again at frames peer 0 had simulated, and we lack them as much.
		{"we lack them too", 10, 400, 11, 0, false, 400 - countSlack, false},
		{"lockstep: its count alone", 10, 400, 400, 0, true, 10, false},
		{"nothing to prove yet", 0, 5, 5, 0, false, 0, false},
		// Peer 0 echoed the statements of every machine up to frame 390,
		// as every live machine did: it holds peer 1's inputs before it,
		// whatever count it sends. The slack let a machine that withholds
		// its counts hold the anchor 102 frames behind its inputs, below a
		// joiner's take-over frame, where every machine waited for the
		// joiner: no join completed against it.
		{"raised to the settled frontier", 10, 400, 400, 390, false, 390, true},
		{"the settled frontier below what it proves", 10, 400, 400, 200, false, 400 - countSlack, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := threePeers()
			ps[0].gossip.sees[1], ps[0].gossip.sees[2] = tc.sees, 1000
			var in inputRing
			in.next[1], in.next[2] = tc.next, tc.ours
			d := departures{peers: ps, inputs: &in, lockstep: tc.lockstep, settled: tc.settled}
			assert.Equal(t, tc.floor, d.floor(0, 1))
			assert.Equal(t, tc.withholds, d.withholds(0))
			var scratch [MaxPlayers]Frame
			assert.Equal(t, tc.floor, d.floors(1, &scratch)[0])
		})
	}
	// An agreed departure's cut is its frame, whatever the counts.
	ps := threePeers()
	ps[1].leave.disc, ps[1].leave.agreed, ps[1].leave.frame = true, true, 77
	var scratch [MaxPlayers]Frame
	assert.Equal(t, Frame(77), departures{peers: ps, inputs: &inputRing{}}.cut(1, &scratch))
}

func TestLeaveJudge(t *testing.T) {
	const now = 10 * time.Second
	for _, tc := range []struct {
		name   string
		doubt  [MaxPlayers]time.Duration
		proven bool
		named  uint8
	}{
		{"no doubt", [MaxPlayers]time.Duration{}, false, 0},
		{"too recent", [MaxPlayers]time.Duration{now - doubtFor/2}, false, 0},
		{"expired: named", [MaxPlayers]time.Duration{0, now - doubtFor, now - 2*doubtFor}, false, 0b110},
		{"a proof came: nobody named", [MaxPlayers]time.Duration{now - doubtFor}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := leave{doubt: tc.doubt, proven: tc.proven}
			assert.Equal(t, tc.named, l.judge(3, now))
			for i := range 3 {
				if tc.doubt[i] != 0 && now-tc.doubt[i] >= doubtFor {
					assert.Zero(t, l.doubt[i], "peer %d's judged doubt is forgotten", i)
				}
			}
		})
	}
}

func TestPeerSet(t *testing.T) {
	ps := threePeers()
	assert.False(t, ps.rowReady(), "no round trips yet")
	assert.Equal(t, uint32(maxStartRTT/time.Microsecond), ps.startRTTLimit())
	for i := range ps {
		ps[i].link.rtt = time.Duration(i+1) * 10 * time.Millisecond
	}
	assert.True(t, ps.rowReady())
	assert.Equal(t, uint32((60*time.Millisecond+startRTTSlack)/time.Microsecond), ps.startRTTLimit())

	assert.Equal(t, time.Duration(-1), ps.firstInputs(time.Second), "first inputs missing")
	for i := range ps {
		ps[i].start.first = time.Duration(i+2) * time.Second
	}
	assert.Equal(t, 4*time.Second, ps.firstInputs(time.Second))
	ps[2].leave.disc = true
	assert.Equal(t, 3*time.Second, ps.firstInputs(time.Second), "a peer gone does not count")

	assert.False(t, ps.departed(true))
	ps[2].leave.agreed = true
	assert.True(t, ps.departed(true), "gone, and machines may come back")
	assert.False(t, ps.departed(false), "gone for good")
	ps[2].late = true
	assert.True(t, ps.departed(false), "a reserved slot")
	assert.True(t, ps.lateMachine(3))
	assert.False(t, ps.lateMachine(1))

	assert.Equal(t, -1, ps.pendingJoin(0))
	ps[2].join.keyed, ps[2].join.take = true, 120
	assert.True(t, ps.joining(2))
	assert.Equal(t, 2, ps.pendingJoin(0))
	assert.Equal(t, -1, ps.pendingJoin(2), "not itself")

	ps[1].leave.reported[0], ps[1].leave.report[0] = true, 50
	assert.True(t, ps.actedOn(0, 1, 60))
	assert.False(t, ps.actedOn(0, 1, 40), "its report is after the proof's frame")
}

func TestUnchangedSince(t *testing.T) {
	r := newInputRing(2, []PlayerID{0}, 0xff, nil, 0)
	for f := range Frame(10) {
		v := Input(1)
		if f >= 6 {
			v = 2
		}
		r.receive(0, f, v, 0)
	}
	assert.True(t, r.unchangedSince([]PlayerID{0}, 2, 6))
	assert.False(t, r.unchangedSince([]PlayerID{0}, 2, 7))
	assert.False(t, r.unchangedSince([]PlayerID{0}, 0, 3), "no frame before the first")
}

// TestStarterDue: the host (machine 0, lowest id) starts once every
// peer's row and Go have come and the start delay over the mesh has
// passed; a reserved slot is not waited for.
func TestStarterDue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rows, gos bool
		late      bool // peer 1 is a reserved slot: no row, no Go
		due       bool // once the delay has passed
	}{
		{"no rows yet", false, true, false, false},
		{"rows, no Go", true, false, false, false},
		{"rows and Go: machine 3 is far, the host waits", true, true, false, true},
		{"a reserved slot is not waited for", true, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := threePeers()
			for i := range ps {
				// Machine 3 (peer 2) is far from the others: the host waits
				// for it to hear of the start.
				ps[i].id, ps[i].link.rtt = PlayerID(i+1), 20*time.Millisecond
				if tc.rows {
					ps[i].start.row = []uint32{20000, 20000, 20000, 200000}
				}
				ps[i].start.goSeen = tc.gos
			}
			ps[2].link.rtt = 200 * time.Millisecond
			ps[2].start.row = []uint32{200000, 200000, 200000, 0}[:len(ps[2].start.row)]
			if tc.late {
				ps[1].late, ps[1].start.row, ps[1].start.goSeen = true, nil, false
			}
			st := newStarter(false, 0, ps)
			require.Equal(t, -1, st.host, "we are the host")
			const now = time.Second
			if !tc.due {
				assert.False(t, st.due(ps, now))
				assert.False(t, st.due(ps, 100*now))
				return
			}
			first := st.due(ps, now) // the delay starts now
			require.GreaterOrEqual(t, st.at, now)
			assert.Equal(t, st.at == now, first)
			if st.at > now {
				assert.False(t, st.due(ps, st.at-1))
			}
			assert.True(t, st.due(ps, st.at))
		})
	}
}
