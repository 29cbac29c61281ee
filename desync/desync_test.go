package desync_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/savestate"
)

type pos struct{ X, Y int32 }

type ship struct {
	Pos   pos
	Alive bool
	Speed float32
	Score int16
}

type world struct {
	Frame uint32
	Ships [4]ship
}

func TestCompareNamesTheField(t *testing.T) {
	a, err := savestate.New(4096)
	require.NoError(t, err)
	h, err := savestate.Alloc[world](a)
	require.NoError(t, err)
	w := h.Get(a)
	w.Frame = 1200
	w.Ships[1].Pos.X = 40960
	w.Ships[2].Speed = 1.5
	w.Ships[3].Score = -3
	local := append([]byte(nil), a.Bytes()...)

	cases := []struct {
		edit func(w *world)
		want string
	}{
		{func(w *world) { w.Ships[1].Pos.X = 40961 }, "desync_test.world.Ships[1].Pos.X: 40960 vs 40961"},
		{func(w *world) { w.Ships[2].Speed = 1.5000001 }, "desync_test.world.Ships[2].Speed: 1.5 vs 1.5000001"},
		{func(w *world) { w.Ships[3].Score = 7 }, "desync_test.world.Ships[3].Score: -3 vs 7"},
		{func(w *world) { w.Ships[0].Alive = true }, "desync_test.world.Ships[0].Alive: false vs true"},
		{func(w *world) { w.Frame = 1300 }, "desync_test.world.Frame: 1200 vs 1300"},
		{func(w *world) {}, ""},
	}
	for _, tc := range cases {
		require.NoError(t, a.Save(0))
		tc.edit(h.Get(a))
		remote := append([]byte(nil), a.Bytes()...)
		require.NoError(t, a.Restore(0))
		assert.Equal(t, tc.want, desync.Compare(a, local, remote))
	}
	assert.Contains(t, desync.Compare(a, local, local[:len(local)-8]), "used size")
	bad := append([]byte(nil), local...)
	bad[5]++ // the header
	assert.Contains(t, desync.Compare(a, local, bad), "bookkeeping at byte 5")
}

func TestDetector(t *testing.T) {
	d := desync.NewDetector(2)
	assert.Nil(t, d.Check())
	d.Remote(0, 500, 0xaa) // the peer is ahead of us: nothing to compare yet
	assert.Nil(t, d.Check())
	d.Local(500, 0xaa)
	assert.Nil(t, d.Check(), "equal")
	d.Local(1000, 0xbb)
	d.Remote(1, 500, 0xaa) // a slower peer: compared with our older one
	assert.Nil(t, d.Check())
	d.Remote(1, 400, 0xcc) // older than its latest: ignored
	assert.Nil(t, d.Check())
	d.Remote(0, 1000, 0xbc)
	assert.Nil(t, d.Check(), "waits for peer 1's checksum of frame 1000")
	d.Remote(1, 1000, 0xbb)
	err := d.Check()
	require.NotNil(t, err)
	assert.Equal(t, desync.Error{Frame: 1000, Peer: 0, Local: 0xbb, Remote: 0xbc, Outvoted: true}, *err)
	assert.Nil(t, d.Check(), "reported once")
	assert.Contains(t, err.Error(), "frame 1000")
	assert.Contains(t, err.Error(), "peer 0 claims 00000000000000bc")
	assert.Contains(t, err.Error(), "outvoted")
	f, v, ok := d.Latest()
	assert.Equal(t, []any{int32(1000), uint64(0xbb), true}, []any{f, v, ok})
	d.Remote(5, 1, 1) // no such peer: ignored
	d.Remote(-1, 1, 1)

	// Our checksum of a frame long gone cannot be compared: no report.
	for f := int32(1100); f < 2000; f += 100 {
		d.Local(f, uint64(f))
	}
	d.Remote(1, 1000, 0xdead)
	assert.Nil(t, d.Check())
}

// TestDetectorMajority: with three or more machines a mismatch waits for a
// third opinion, and names the odd one out. Before, the first mismatch
// was the match's desync whoever disagreed with the others: one lying
// peer ended a three-machine match with one forged checksum (issue 16).
func TestDetectorMajority(t *testing.T) {
	t.Run("we are the odd one out", func(t *testing.T) {
		d := desync.NewDetector(2)
		d.Local(500, 1)
		d.Remote(0, 500, 2)
		assert.Nil(t, d.Check())
		d.Remote(1, 500, 2)
		err := d.Check()
		require.NotNil(t, err)
		assert.False(t, err.Outvoted)
		assert.Equal(t, 0, err.Peer)
	})
	t.Run("no third opinion comes", func(t *testing.T) {
		d := desync.NewDetector(2)
		d.Local(500, 1)
		d.Remote(0, 500, 2)
		d.Remote(1, 400, 1) // peer 1 stays behind
		d.Local(1000, 3)
		assert.Nil(t, d.Check(), "one newer checksum of ours: still waiting")
		d.Local(1500, 4)
		err := d.Check()
		require.NotNil(t, err, "decided after decideAfter newer checksums")
		assert.False(t, err.Outvoted)
	})
	t.Run("a peer that left is not waited for", func(t *testing.T) {
		d := desync.NewDetector(2)
		d.Local(500, 1)
		d.Remote(0, 500, 2)
		assert.Nil(t, d.Check())
		d.Forget(1)
		err := d.Check()
		require.NotNil(t, err)
		assert.False(t, err.Outvoted)
		d.Remote(1, 1000, 9) // ignored
		assert.Nil(t, d.Check())
	})
	t.Run("three against one", func(t *testing.T) {
		d := desync.NewDetector(3)
		d.Local(500, 1)
		d.Remote(0, 500, 1)
		d.Remote(1, 500, 7)
		d.Remote(2, 500, 1)
		err := d.Check()
		require.NotNil(t, err)
		assert.Equal(t, 1, err.Peer)
		assert.True(t, err.Outvoted)
		assert.Nil(t, d.Check())
	})
}

// TestDetectorResume: a peer forgotten (it left) and resumed (it came
// back) is compared again, from its next checksum on, not with the one it
// sent before it left.
func TestDetectorResume(t *testing.T) {
	d := desync.NewDetector(1)
	d.Local(10, 1)
	d.Remote(0, 10, 2)
	d.Forget(0)
	assert.Nil(t, d.Check(), "a forgotten peer is not compared")
	d.Resume(0)
	assert.Nil(t, d.Check(), "its checksum from before it left is gone")
	d.Local(20, 5)
	d.Remote(0, 20, 6)
	e := d.Check()
	if assert.NotNil(t, e, "a resumed peer is compared again") {
		assert.Equal(t, int32(20), e.Frame)
	}
}

// TestDetectorSettled: a frame is settled once no peer still compared can
// have it reported: each one's newest checksum is past it or was compared
// at it, or it is older than every checksum of ours kept.
func TestDetectorSettled(t *testing.T) {
	d := desync.NewDetector(2)
	assert.Equal(t, int32(-1), d.Settled(), "no peer has sent anything")
	d.Local(10, 1)
	d.Local(20, 2)
	d.Remote(0, 10, 1)
	assert.Equal(t, int32(-1), d.Settled(), "peer 1 may still send frame 10")
	d.Remote(1, 20, 2)
	assert.Equal(t, int32(9), d.Settled(), "peer 0's newest, 10, is not compared yet")
	assert.Nil(t, d.Check())
	assert.Equal(t, int32(10), d.Settled(), "compared with peer 0 at 10, and peer 1 is at 20")
	d.Remote(0, 30, 3) // ahead of us: 20 can no longer be compared with peer 0
	assert.Equal(t, int32(20), d.Settled())

	// A mismatch waiting for a third opinion is not settled.
	d = desync.NewDetector(2)
	d.Local(10, 1)
	d.Remote(0, 10, 9)
	d.Remote(1, 5, 1)
	assert.Nil(t, d.Check())
	assert.Equal(t, int32(4), d.Settled())
	d.Forget(1)
	assert.Equal(t, int32(9), d.Settled(), "a peer that left holds nothing back")
	require.NotNil(t, d.Check())
	assert.Equal(t, int32(10), d.Settled(), "reported: never again")
	d.Resume(1)
	assert.Equal(t, int32(-1), d.Settled(), "a peer that came back may send any frame")

	// Ours older than every one kept can no longer be compared.
	d = desync.NewDetector(1)
	for f := int32(10); f <= 80; f += 10 {
		d.Local(f, uint64(f))
	}
	assert.Equal(t, int32(9), d.Settled())
	d.Local(90, 90)
	assert.Equal(t, int32(19), d.Settled())

	d = desync.NewDetector(0)
	assert.Equal(t, int32(math.MaxInt32), d.Settled(), "no peers: every frame")
}

// TestDetectorAgreed: Agreed is the newest frame a peer's checksum was
// found equal to ours at; a frame whose checksum from the peer was lost
// settles (the peer's newer one came) without being agreed.
func TestDetectorAgreed(t *testing.T) {
	d := desync.NewDetector(1)
	assert.Equal(t, int32(-1), d.Agreed())
	d.Local(500, 1)
	d.Remote(0, 500, 1)
	assert.Nil(t, d.Check())
	assert.Equal(t, int32(500), d.Agreed())
	d.Local(1000, 2) // the peer's checksum of 1000 is lost
	d.Local(1500, 3)
	d.Remote(0, 1500, 4)
	e := d.Check()
	require.NotNil(t, e)
	assert.Equal(t, int32(1500), e.Frame)
	assert.GreaterOrEqual(t, d.Settled(), int32(1000), "1000 settled unseen")
	assert.Equal(t, int32(500), d.Agreed(), "but was never agreed")
	d.Rewind(1500, 4)
	assert.Equal(t, int32(1500), d.Agreed(), "the state kept is the agreed one")
}
