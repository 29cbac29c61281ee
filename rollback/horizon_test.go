package rollback

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// horizonRunner is a horizonHost for the tables: a finalLog that runs the
// frames a snapshot moves up over, and a roster whose statements need
// nothing.
type horizonRunner struct{ *finalLog }

func (horizonRunner) stmtNeed(int, int32) (stmtNeed, int) { return needNone, 0 }
func (horizonRunner) stmtLive(int, int32) bool            { return false }

// horizonFixture is a machine of players 0 (ours) and 1..n (one a peer,
// peer i playing player i+1), every input here up to frame next, each peer
// having acknowledged our frames up to next, simulating frame frame, with
// no snapshot.
func horizonFixture(t *testing.T, peers int, frame, next Frame) *horizon {
	t.Helper()
	in := newInputRing(peers+1, []PlayerID{0}, 0xff, nil, 0)
	for p := range PlayerID(peers + 1) {
		in.next[p] = next
	}
	ps := make(peerSet, peers)
	r := &roster{players: peers + 1}
	for i := range ps {
		ps[i].players = []PlayerID{PlayerID(i + 1)}
		ps[i].progress.ack = next
		r.owner[i+1] = i
		for m := range ps {
			ps[i].gossip.sees[m] = next
		}
	}
	sn, log := savedSnapshots(t, 2, nil)
	sn.reach = 8
	return &horizon{frame: frame, roster: r, inputs: in, peers: ps, snaps: sn, out: &recording{},
		lockstep: true, host: horizonRunner{log}}
}

func TestHorizonAnchors(t *testing.T) {
	for _, tc := range []struct {
		name            string
		peers           int
		edit            func(h *horizon)
		next            Frame // the next frame to simulate, for the forced bound
		anchor, settled Frame
	}{
		{"two machines: the confirmed frame", 1, func(h *horizon) { h.inputs.next[1] = 40 }, 50, 40, 40},
		{"a third machine's count bounds it", 2, func(h *horizon) { h.peers[1].gossip.sees[0] = 30 }, 50, 30, 30},
		{"not the count of a departure agreed", 2, func(h *horizon) {
			h.peers[1].gossip.sees[0] = 30
			h.peers[0].leave.disc, h.peers[0].leave.agreed = true, true
		}, 50, 60, 60},
		{"nor the count of a machine disconnected", 2, func(h *horizon) {
			h.peers[1].gossip.sees[0] = 30
			h.peers[1].leave.disc = true
		}, 50, 60, 60},
		{"a forced mode's next rollback bounds it", 1, func(h *horizon) { h.snaps.forced = 5 }, 50, 45, 45},
		{"the statements bound the settled frame", 2, func(h *horizon) {
			h.stmts = &statements{settled: 2, partial: 3, every: stmtFrames} // frame 35
		}, 50, 60, 2*stmtFrames + 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := horizonFixture(t, tc.peers, 50, 60)
			tc.edit(h)
			anchor, settled := h.anchors(tc.next)
			assert.Equal(t, tc.anchor, anchor, "anchor")
			assert.Equal(t, tc.settled, settled, "settled")
			assert.Equal(t, tc.settled, h.anchor(tc.next))
		})
	}
}

func TestHorizonRingLow(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(h *horizon)
		low  Frame
	}{
		{"the next frame to simulate", func(*horizon) {}, 50},
		{"the anchor", func(h *horizon) { h.inputs.next[1] = 42 }, 42},
		{"the oldest snapshot", func(h *horizon) { require.NoError(t, h.snaps.save(1, 33)) }, 33},
		{"an acknowledgement", func(h *horizon) { h.peers[0].progress.ack = 20 }, 20},
		{"not a disconnected peer's", func(h *horizon) {
			h.peers[0].progress.ack = 20
			h.peers[0].leave.disc = true
		}, 50},
		{"the frames not yet recorded, with a Recorder", func(h *horizon) {
			h.out.rec, h.out.recorded = &finalRecorder{}, 12
		}, 12},
		{"with spectators", func(h *horizon) { h.aud, h.out.recorded = &audience{}, 12 }, 12},
		{"with neither, what is recorded does not count", func(h *horizon) { h.out.recorded = 12 }, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := horizonFixture(t, 1, 50, 60)
			tc.edit(h)
			assert.Equal(t, tc.low, h.ringLow())
			assert.Equal(t, tc.low, h.inputs.lowFloor, "kept as the floor")
		})
	}
}

func TestHorizonRingRoom(t *testing.T) {
	defer func(c func(floor, low Frame)) { lowFloorCheck = c }(lowFloorCheck)
	var checked []Frame
	lowFloorCheck = func(floor, low Frame) { checked = append(checked, floor, low) }
	for _, tc := range []struct {
		name    string
		end     Frame
		room    bool
		checked []Frame // the floor and ringLow computed again
	}{
		{"within the ring from the floor", 10 + ringSize, true, []Frame{10, 50}},
		{"beyond it", 11 + ringSize, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checked = nil
			h := horizonFixture(t, 1, 50, 60)
			h.inputs.lowFloor = 10
			assert.Equal(t, tc.room, h.ringRoom(tc.end))
			assert.Equal(t, tc.checked, checked)
		})
	}
}

func TestHorizonMustStall(t *testing.T) {
	const frame = 300
	for _, tc := range []struct {
		name  string
		edit  func(h *horizon)
		stall bool
		peer  int
		ran   int // frames a snapshot moved up over
	}{
		{"every bound far", func(*horizon) {}, false, 0, 0},
		{"a player's input MaxRollback behind", func(h *horizon) { h.inputs.next[2] = frame - 8 }, true, 1, 0},
		{"not a disconnected player's", func(h *horizon) {
			h.inputs.next[2] = frame - 8
			h.inputs.disconnect(2, frame-8)
		}, false, 0, 0},
		{"a peer that stopped acknowledging holds the ring", func(h *horizon) {
			h.peers[1].progress.ack = frame + 1 - ringSize
		}, true, 1, 0},
		{"the ring full from the floor, not from ringLow", func(h *horizon) {
			h.inputs.lowFloor = frame - ringSize
		}, false, 0, 0},
		{"our Recorder holds the ring: no peer to blame", func(h *horizon) {
			h.out.rec, h.out.recorded = &finalRecorder{}, frame+1-ringSize
		}, true, -1, 0},
		{"our own snapshot holds the ring: it moves up to the anchor", func(h *horizon) {
			require.NoError(t, h.snaps.save(0, frame+1-ringSize))
			h.inputs.next[1], h.inputs.next[2] = frame-5, frame-5
		}, false, 0, ringSize - 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := horizonFixture(t, 2, frame, frame+2)
			h.inputs.lowFloor = -ringSize // no bound yet
			tc.edit(h)
			peer, stall := h.mustStall()
			assert.Equal(t, tc.stall, stall)
			if stall {
				assert.Equal(t, tc.peer, peer)
			}
			assert.Len(t, h.host.(horizonRunner).frames, tc.ran)
		})
	}
}

func TestHorizonBlameRing(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(h *horizon)
		peer int
	}{
		{"the peer that has not acknowledged it", func(h *horizon) { h.peers[1].progress.ack = 40 }, 1},
		{"the owner of an input missing there", func(h *horizon) { h.inputs.next[1] = 40 }, 0},
		{"the peer whose count of a third machine holds it", func(h *horizon) { h.peers[1].gossip.sees[0] = 40 }, 1},
		{"not a count of a departure agreed", func(h *horizon) {
			h.peers[1].gossip.sees[0] = 40
			h.peers[0].leave.disc, h.peers[0].leave.agreed = true, true
		}, -1},
		{"nobody: our own snapshots or Recorder", func(*horizon) {}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := horizonFixture(t, 2, 50, 60)
			tc.edit(h)
			assert.Equal(t, tc.peer, h.blameRing(40))
		})
	}
}

// TestHorizonInputsClear: the bound Session.mustStallTick keeps is the
// first frame mustStall stalls at for a remote input, never later.
func TestHorizonInputsClear(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(h *horizon)
		want Frame
	}{
		{"every remote input here to 60, reach 8", func(*horizon) {}, 68},
		{"the least remote player's", func(h *horizon) { h.inputs.next[2] = 55 }, 63},
		{"not one absent for good", func(h *horizon) {
			h.inputs.next[2] = 40
			h.inputs.disconnect(2, 40)
		}, 68},
		{"no remote player: never", func(h *horizon) {
			h.inputs.disconnect(1, 60)
			h.inputs.disconnect(2, 60)
		}, noFrame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := horizonFixture(t, 2, 50, 60)
			h.delay = 0
			h.inputs.lowFloor = 0
			tc.edit(h)
			c := h.inputsClear()
			require.Equal(t, tc.want, c)
			if c == noFrame {
				return
			}
			h.frame = c - 1
			_, stall := h.mustStall()
			assert.False(t, stall, "the frame before the bound")
			h.frame = c
			_, stall = h.mustStall()
			assert.True(t, stall, "the bound")
		})
	}
	in := newInputRing(2, []PlayerID{0}, 0xff, nil, 0)
	in.disconnect(1, 10)
	in.clear = 99
	require.True(t, in.rejoin(1, 20))
	assert.Zero(t, in.clear, "a player taken back counts again: computed again")
}
