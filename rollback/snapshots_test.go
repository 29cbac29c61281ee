package rollback

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/savestate"
)

// snapState is the state the snapshot tests keep in the arena.
type snapState struct {
	Next int32 // the frame this is the start of
	Acc  int64 // Σ (f*f + 1) over the frames simulated
}

// stateAt is the state at the start of frame f, by hand.
func stateAt(f Frame) snapState {
	s := snapState{Next: int32(f)}
	for k := range int64(f) {
		s.Acc += k*k + 1
	}
	return s
}

// finalLog is a finalRunner that records the frames it runs and steps the
// state in the arena's current region, as a game does.
type finalLog struct {
	arena  *savestate.Arena
	h      savestate.Handle[snapState]
	frames []Frame
	bad    bool // a frame was run on a state that was not at its start
}

func (r *finalLog) runFinal(f Frame, _ bool) {
	r.frames = append(r.frames, f)
	s := r.h.Get(r.arena) // fetched each step: the region changes with Enter
	if s.Next != int32(f) {
		r.bad = true
	}
	s.Acc += int64(f)*int64(f) + 1
	s.Next = int32(f) + 1
}

func newSnapArena(t *testing.T) (*savestate.Arena, savestate.Handle[snapState]) {
	t.Helper()
	a, err := savestate.New(256)
	require.NoError(t, err)
	h, err := savestate.Alloc[snapState](a)
	require.NoError(t, err)
	return a, h
}

// savedSnapshots returns snapshots using slots slots, slot i saved at
// frame saved[i] (-1: none), and a finalLog on their arena, whose live
// state is a present about to be replaced.
func savedSnapshots(t *testing.T, slots int, saved []Frame) (*snapshots, *finalLog) {
	t.Helper()
	a, h := newSnapArena(t)
	sn := &snapshots{arena: a, backups: make([]backup, savestate.Slots), slots: slots, interval: 10, on: true}
	for i, f := range saved {
		if f >= 0 {
			*h.Get(a) = stateAt(f)
			require.NoError(t, sn.save(i, f))
		}
	}
	*h.Get(a) = snapState{Next: 99, Acc: -1}
	return sn, &finalLog{arena: a, h: h}
}

// slots2 is the slots of a session without statements: two, the last unused.
func slots2(b [2]backup) []backup {
	all := make([]backup, savestate.Slots)
	copy(all, b[:])
	return all
}

// slots3 is the slots of a session with statements: three, the others
// unused.
func slots3(b [settledSlots]backup) []backup {
	all := make([]backup, savestate.Slots)
	copy(all, b[:])
	return all
}

// TestSnapshotsSaveSlot: save when the newest snapshot is interval frames
// old, into a slot that is invalid or superseded, never over the anchor
// snapshot nor over a pending one the anchor has not reached.
func TestSnapshotsSaveSlot(t *testing.T) {
	v := func(f Frame) backup { return backup{frame: f, valid: true} }
	none := backup{}
	cases := []struct {
		name      string
		backups   [2]backup
		f, anchor Frame
		forced    int
		off       bool
		want      int
	}{
		{name: "nothing saved: the first at interval-1", backups: [2]backup{none, none}, f: 9, anchor: 0, want: 0},
		{name: "nothing saved, too early", backups: [2]backup{none, none}, f: 8, anchor: 0, want: -1},
		{name: "newest too young", backups: [2]backup{v(0), none}, f: 9, anchor: 0, want: -1},
		{name: "interval reached: the free slot", backups: [2]backup{v(0), none}, f: 10, anchor: 0, want: 1},
		{name: "the free slot is the first one", backups: [2]backup{none, v(0)}, f: 10, anchor: 0, want: 0},
		{name: "never over a pending one the anchor has not reached", backups: [2]backup{v(0), v(10)}, f: 20, anchor: 5, want: -1},
		{name: "the anchor reached the pending one: the old one is superseded", backups: [2]backup{v(0), v(10)}, f: 20, anchor: 12, want: 0},
		{name: "the anchor exactly at the pending one", backups: [2]backup{v(0), v(10)}, f: 20, anchor: 10, want: 0},
		{name: "never over the anchor snapshot", backups: [2]backup{v(30), v(20)}, f: 40, anchor: 25, want: -1},
		{name: "the anchor reached slot 0: slot 1 is superseded", backups: [2]backup{v(30), v(20)}, f: 40, anchor: 30, want: 1},
		{name: "no snapshot at or before the anchor: the free slot", backups: [2]backup{none, v(10)}, f: 20, anchor: 5, want: 0},
		{name: "interval counts from the newest", backups: [2]backup{v(0), v(10)}, f: 19, anchor: 15, want: -1},
		{name: "forced modes never save", backups: [2]backup{none, none}, f: 100, anchor: 50, forced: 3, want: -1},
		{name: "off never saves", backups: [2]backup{v(0), none}, f: 100, anchor: 50, off: true, want: -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sn := snapshots{backups: slots2(tc.backups), slots: 2, interval: 10, forced: tc.forced, on: !tc.off}
			assert.Equal(t, tc.want, sn.saveSlot(tc.f, tc.anchor, tc.anchor))
			assert.Equal(t, slots2(tc.backups), sn.backups, "the policy changes nothing")
		})
	}
}

// TestSnapshotsSave: a save copies the live state and records its frame.
func TestSnapshotsSave(t *testing.T) {
	a, h := newSnapArena(t)
	sn := snapshots{arena: a, backups: make([]backup, savestate.Slots), slots: 2, interval: 10, on: true}
	*h.Get(a) = stateAt(10)
	require.NoError(t, sn.save(1, 10))
	assert.Equal(t, slots2([2]backup{{}, {frame: 10, valid: true}}), sn.backups)
	assert.Equal(t, int64(1), sn.saves)
	*h.Get(a) = stateAt(11)
	require.NoError(t, a.Enter(1))
	assert.Equal(t, stateAt(10), *h.Get(a))
	a.Leave()

	assert.ErrorIs(t, sn.save(savestate.Slots, 10), savestate.ErrSlot)
	assert.Equal(t, int64(1), sn.saves, "a failed save counts nothing")
}

// TestSnapshotsRestore: drop the snapshots after mis, take the newest one
// not after it, step it in place to the anchor with the final inputs,
// restore it, and drop the older ones it supersedes.
func TestSnapshotsRestore(t *testing.T) {
	cases := []struct {
		name        string
		saved       [2]Frame // frames saved in slots 0 and 1; -1 for none
		mis, anchor Frame
		slot        int
		at, from    Frame
		runs        []Frame
		after       [2]backup
	}{
		{name: "the newest, moved to the anchor, supersedes the older",
			saved: [2]Frame{0, 10}, mis: 15, anchor: 12, slot: 1, at: 12, from: 10, runs: []Frame{10, 11},
			after: [2]backup{{frame: 0, valid: false}, {frame: 12, valid: true}}},
		{name: "the one after mis is dropped; the older moves to the anchor",
			saved: [2]Frame{0, 10}, mis: 8, anchor: 5, slot: 0, at: 5, from: 0, runs: []Frame{0, 1, 2, 3, 4},
			after: [2]backup{{frame: 5, valid: true}, {frame: 10, valid: false}}},
		{name: "the anchor moved past mis: the snapshot goes past it with final inputs",
			saved: [2]Frame{20, 10}, mis: 12, anchor: 15, slot: 1, at: 15, from: 10, runs: []Frame{10, 11, 12, 13, 14},
			after: [2]backup{{frame: 20, valid: false}, {frame: 15, valid: true}}},
		{name: "one frame after mis is dropped too",
			saved: [2]Frame{0, 9}, mis: 8, anchor: 0, slot: 0, at: 0, from: 0,
			after: [2]backup{{frame: 0, valid: true}, {frame: 9, valid: false}}},
		{name: "after the anchor: not moved, the older one kept",
			saved: [2]Frame{0, 10}, mis: 15, anchor: 8, slot: 1, at: 10, from: 10,
			after: [2]backup{{frame: 0, valid: true}, {frame: 10, valid: true}}},
		{name: "exactly at mis and the anchor",
			saved: [2]Frame{0, 10}, mis: 10, anchor: 10, slot: 1, at: 10, from: 10,
			after: [2]backup{{frame: 0, valid: false}, {frame: 10, valid: true}}},
		{name: "one snapshot",
			saved: [2]Frame{-1, 3}, mis: 7, anchor: 4, slot: 1, at: 4, from: 3, runs: []Frame{3},
			after: [2]backup{{}, {frame: 4, valid: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sn, run := savedSnapshots(t, 2, tc.saved[:])
			a, h := run.arena, run.h

			r, err := sn.restore(tc.mis, tc.anchor, tc.anchor, run)
			require.NoError(t, err)
			assert.Equal(t, restored{slot: tc.slot, at: tc.at, from: tc.from, saveAt: noFrame, saveSlot: -1}, r)
			assert.Equal(t, tc.runs, run.frames)
			assert.False(t, run.bad, "a frame was stepped from the wrong state")
			assert.Equal(t, slots2(tc.after), sn.backups)
			assert.Equal(t, int64(len(tc.runs)), sn.steps)
			assert.Equal(t, stateAt(tc.at), *h.Get(a), "the live state is the snapshot's")
			require.NoError(t, a.Enter(r.slot))
			assert.Equal(t, stateAt(tc.at), *h.Get(a), "the snapshot itself was moved, in place")
			a.Leave()
		})
	}
}

// TestSnapshotsSettled: with statements the newest snapshot at or before
// the settled frame is a third one, never saved over nor superseded, and a
// restore moves it no further than the settled frame — the rollback then
// saves the live state at the anchor as it passes it — while any later
// snapshot moves to the anchor as without statements.
func TestSnapshotsSettled(t *testing.T) {
	v := func(f Frame) backup { return backup{frame: f, valid: true} }
	none := backup{}
	saves := []struct {
		name               string
		backups            [settledSlots]backup
		f, anchor, settled Frame
		want               int
	}{
		{name: "the free slot", backups: [3]backup{v(10), v(30), none}, f: 50, anchor: 35, settled: 12, want: 2},
		{name: "a snapshot the anchor passed, not the settled one", backups: [3]backup{v(10), v(30), v(40)}, f: 50, anchor: 45, settled: 12, want: 1},
		{name: "never over the settled one nor a pending one", backups: [3]backup{v(10), v(30), v(40)}, f: 52, anchor: 35, settled: 12, want: -1},
		{name: "the settled one is also the anchor's", backups: [3]backup{v(10), v(30), v(40)}, f: 52, anchor: 20, settled: 12, want: -1},
	}
	for _, tc := range saves {
		t.Run(tc.name, func(t *testing.T) {
			sn := snapshots{backups: slots3(tc.backups), slots: settledSlots, interval: 10, on: true}
			assert.Equal(t, tc.want, sn.saveSlot(tc.f, tc.anchor, tc.settled))
		})
	}

	restores := []struct {
		name                 string
		saved                [settledSlots]Frame // -1 for none
		mis, anchor, settled Frame
		want                 restored
		runs                 []Frame
		after                [settledSlots]backup
	}{
		{name: "the settled one moves to the settled frame; the live state is saved at the anchor",
			saved: [3]Frame{0, -1, -1}, mis: 20, anchor: 15, settled: 5, runs: []Frame{0, 1, 2, 3, 4},
			want: restored{slot: 0, at: 5, from: 0, saveAt: 15, saveSlot: 1}, after: [3]backup{v(5), none, none}},
		{name: "a later one moves to the anchor; the settled one is kept",
			saved: [3]Frame{2, 10, -1}, mis: 20, anchor: 15, settled: 5, runs: []Frame{10, 11, 12, 13, 14},
			want: restored{slot: 1, at: 15, from: 10, saveAt: noFrame, saveSlot: -1}, after: [3]backup{v(2), v(15), none}},
		{name: "the cut of an equivocator before the anchor snapshot",
			saved: [3]Frame{2, 10, 16}, mis: 6, anchor: 15, settled: 6, runs: []Frame{2, 3, 4, 5},
			want: restored{slot: 0, at: 6, from: 2, saveAt: 15, saveSlot: 1}, after: [3]backup{v(6), {frame: 10}, {frame: 16}}},
		{name: "the older ones superseded but the settled one",
			saved: [3]Frame{2, 8, 10}, mis: 20, anchor: 15, settled: 5, runs: []Frame{10, 11, 12, 13, 14},
			want: restored{slot: 2, at: 15, from: 10, saveAt: noFrame, saveSlot: -1}, after: [3]backup{v(2), {frame: 8}, v(15)}},
	}
	for _, tc := range restores {
		t.Run(tc.name, func(t *testing.T) {
			sn, run := savedSnapshots(t, settledSlots, tc.saved[:])
			a, h := run.arena, run.h
			r, err := sn.restore(tc.mis, tc.anchor, tc.settled, run)
			require.NoError(t, err)
			assert.Equal(t, tc.want, r)
			assert.Equal(t, tc.runs, run.frames)
			assert.False(t, run.bad, "a frame was stepped from the wrong state")
			assert.Equal(t, slots3(tc.after), sn.backups)
			assert.Equal(t, stateAt(r.at), *h.Get(a), "the live state is the snapshot's")
		})
	}
}

// TestSnapshotsRestoreFails: no usable snapshot is an errSnapshot, never a
// panic, and leaves the live state alone.
func TestSnapshotsRestoreFails(t *testing.T) {
	cases := []struct {
		name    string
		backups [2]backup
		saved   [2]bool // really saved in the arena
		mis     Frame
		anchor  Frame
		after   [2]backup
	}{
		{name: "none valid", mis: 10, anchor: 10},
		{name: "every one is after mis", backups: [2]backup{{frame: 5, valid: true}, {frame: 8, valid: true}},
			saved: [2]bool{true, true}, mis: 4, anchor: 0, after: [2]backup{{frame: 5}, {frame: 8}}},
		{name: "cannot enter the slot to move it", backups: [2]backup{{frame: 0, valid: true}, {}},
			mis: 4, anchor: 2, after: [2]backup{{frame: 0, valid: true}, {}}},
		{name: "cannot restore the slot", backups: [2]backup{{}, {frame: 3, valid: true}},
			mis: 4, anchor: 2, after: [2]backup{{}, {frame: 3, valid: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, h := newSnapArena(t)
			for i, ok := range tc.saved {
				if ok {
					require.NoError(t, a.Save(i))
				}
			}
			*h.Get(a) = snapState{Next: 42, Acc: 42}
			sn := snapshots{arena: a, backups: slots2(tc.backups), slots: 2, interval: 10, on: true}
			run := &finalLog{arena: a, h: h}
			var err error
			require.NotPanics(t, func() { _, err = sn.restore(tc.mis, tc.anchor, tc.anchor, run) })
			require.Error(t, err)
			assert.True(t, errors.Is(err, errSnapshot), "%v", err)
			assert.Empty(t, run.frames)
			assert.Equal(t, slots2(tc.after), sn.backups)
			assert.Equal(t, snapState{Next: 42, Acc: 42}, *h.Get(a), "the live state is untouched")
		})
	}
}

// TestSnapshotsLow: the oldest valid snapshot's frame.
func TestSnapshotsLow(t *testing.T) {
	cases := []struct {
		backups [2]backup
		want    Frame
	}{
		{want: noFrame},
		{backups: [2]backup{{frame: 5, valid: true}, {frame: 3}}, want: 5},
		{backups: [2]backup{{frame: 5, valid: true}, {frame: 3, valid: true}}, want: 3},
		{backups: [2]backup{{frame: 0}, {frame: 30, valid: true}}, want: 30},
	}
	for _, tc := range cases {
		sn := snapshots{backups: slots2(tc.backups), slots: 2}
		assert.Equal(t, tc.want, sn.low(), "%+v", tc.backups)
	}
}

// TestSnapshotsForcedBound: in a forced mode the next forced rollback
// restores forced frames back; otherwise nothing bounds the anchor.
func TestSnapshotsForcedBound(t *testing.T) {
	cases := []struct {
		forced int
		next   Frame
		want   Frame
	}{
		{forced: 0, next: 50, want: noFrame},
		{forced: 1, next: 50, want: 49},
		{forced: 20, next: 50, want: 30},
		{forced: 20, next: 5, want: -15},
	}
	for _, tc := range cases {
		sn := snapshots{backups: make([]backup, savestate.Slots), forced: tc.forced}
		assert.Equal(t, tc.want, sn.forcedBound(tc.next), "forced %d next %d", tc.forced, tc.next)
	}
}
