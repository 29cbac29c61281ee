package rollback

import (
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/rewindgg/rewind/netlog"
	"github.com/rewindgg/rewind/savestate"
)

// backup is one snapshot slot of the arena.
type backup struct {
	frame Frame // the frame whose start state the slot holds
	valid bool
}

// finalRunner simulates frame f with its final inputs in the arena's
// current region: the snapshots use it to move a snapshot forward in place.
// news says whether f is simulated with other inputs than before (at or
// after a rollback's mispredicted frame), or again with the same ones.
type finalRunner interface {
	runFinal(f Frame, news bool)
}

// snapshots owns the arena's snapshot slots and the snapshot policy: when
// to save the present, which snapshot a rollback restores, moving that
// snapshot up to the anchor frame in its own region, and which snapshots a
// restore supersedes.
//
// The anchor frame is the first frame a rollback may still need to restore
// (horizon.anchors): a snapshot at or before it is always usable. While
// predictions keep coming true nothing moves a snapshot, so, as in
// INVERSUS, when the newest snapshot is interval frames old the present is
// saved over another slot — only if that slot is invalid or superseded,
// never over the anchor snapshot nor over a pending one the anchor has not
// reached yet.
//
// The adaptive policy (adapt.go) varies interval and the slots saves may
// use (room): a ring saved every interval frames.
//
// With statements (three or more machines) there is a second, earlier
// anchor: the settled frame, before which not even the cut of a proven
// equivocator reaches. The newest snapshot at or before it is kept in a
// third slot and moved no further than it, so that ordinary rollbacks
// restore at the anchor as without statements while a cut can still be
// undone.
type snapshots struct {
	arena    *savestate.Arena
	backups  []backup // savestate.Slots of them (newSnapshots): apart, they keep Session under ten pages
	slots    int      // slots the loops look at: 2, settledSlots with statements, more for a ring
	base     int      // the slots of two backups: 2, or settledSlots with statements
	room     int      // the slots saves may use (0: slots); the ring's size (setInterval)
	interval Frame    // save the present when the newest snapshot is this old
	cad      cadence
	reach    Frame // MaxRollback: the live state never runs further past a player's last input (0 in lockstep)
	forced   int   // depth of the rollback forced every frame (sync test, constant cost); 0 for none
	on       bool  // false: no snapshots at all (lockstep with two machines)

	saves int64 // snapshots copied from the live state
	steps int64 // frames simulated inside a snapshot to move it forward
}

// restored is what a restore did, for the rollback that follows it.
type restored struct {
	slot     int   // the slot restored
	at, from Frame // the frame the live state is now at; the snapshot's frame before it was moved
	saveAt   Frame // re-simulating, save the live state at this frame (noFrame: never)
	saveSlot int   // into this slot
}

// newest returns the newest valid slot at or before frame f, or -1.
func (sn *snapshots) newest(f Frame) int {
	slot := -1
	for i, b := range sn.backups[:sn.slots] {
		if b.valid && b.frame <= f && (slot < 0 || b.frame > sn.backups[slot].frame) {
			slot = i
		}
	}
	return slot
}

// forcedBound returns, in a forced mode, the frame the next forced
// rollback restores when next is the next frame to be simulated; noFrame
// otherwise.
func (sn *snapshots) forcedBound(next Frame) Frame {
	if sn.forced == 0 {
		return noFrame
	}
	return next - Frame(sn.forced)
}

// save copies the live state into slot as the start of frame f (timed,
// when the adaptive policy measures its costs).
func (sn *snapshots) save(slot int, f Frame) error {
	var t time.Duration
	if sn.cad.measuring() {
		t = sn.cad.clock()
	}
	if err := sn.arena.Save(slot); err != nil {
		return err
	}
	if sn.cad.measuring() {
		sn.cad.noteSave(sn.cad.clock() - t)
	}
	sn.backups[slot] = backup{frame: f, valid: true}
	sn.saves++
	return nil
}

// saveLogged is save, written to the network log (nil: none) at now once
// it is done.
func (sn *snapshots) saveLogged(slot int, f Frame, log *netlog.Writer, now time.Duration) error {
	if err := sn.save(slot, f); err != nil {
		return err
	}
	if log != nil {
		log.Save(now, slot, int(f))
	}
	return nil
}

// saveDue reports whether the policy may save the present before frame f
// is simulated during play: the newest snapshot is interval frames old
// (saveSlot then picks the slot, if any).
func (sn *snapshots) saveDue(f Frame) bool {
	if sn.forced > 0 || !sn.on {
		return false // forced modes roll back every frame and never need it
	}
	newest := Frame(-1)
	for i := range sn.slots {
		if b := &sn.backups[i]; b.valid {
			newest = max(newest, b.frame)
		}
	}
	return f-newest >= sn.interval
}

// saveSlot applies the policy before frame f is simulated during play: it
// returns the slot to save the present in, or -1. anchor and settled are
// the anchor and settled frames (equal without statements).
func (sn *snapshots) saveSlot(f, anchor, settled Frame) int {
	if !sn.saveDue(f) {
		return -1
	}
	keep, keepSettled := sn.newest(anchor), sn.newest(settled)
	room := sn.room
	if room == 0 {
		room = sn.slots
	}
	for i, b := range sn.backups[:room] {
		// Never over a snapshot the anchor frame has not reached yet: it is
		// the next anchor, and replacing it again and again (a short
		// interval, an anchor held back by the others' counts) would keep
		// the anchor, and the input ring, pinned forever.
		if i != keep && i != keepSettled && (!b.valid || b.frame <= anchor) {
			return i
		}
	}
	return -1
}

// restore prepares a rollback to frame mis: it drops the snapshots after
// mis, moves the newest remaining one forward to the anchor frame in its
// own region (run simulates each frame there; every input before the
// anchor is final), restores it into the live state and drops the older
// ones it supersedes. The newest snapshot at or before the settled frame
// moves no further than it: the rollback then saves the live state at the
// anchor as it passes it, into a free slot.
func (sn *snapshots) restore(mis, anchor, settled Frame, run finalRunner) (restored, error) {
	for i, b := range sn.backups[:sn.slots] {
		if b.valid && b.frame > mis {
			sn.backups[i].valid = false
		}
	}
	r := restored{slot: sn.newest(mis), saveAt: noFrame, saveSlot: -1}
	if r.slot < 0 {
		// Unreachable while the invariants hold; never panic on it.
		return r, fmt.Errorf("%w: mispredicted frame %d (snapshots %+v)", errSnapshot, mis, sn.backups)
	}
	keepSettled := sn.newest(settled)
	r.from = sn.backups[r.slot].frame
	to := anchor
	if r.slot == keepSettled && settled < anchor {
		to = settled
		for i, b := range sn.backups[:sn.slots] {
			if i != r.slot && (!b.valid || b.frame < r.from) {
				r.saveAt, r.saveSlot = anchor, i
				break
			}
		}
	}
	if to > r.from {
		if err := sn.advance(r.slot, to, mis, run); err != nil {
			return r, err
		}
	}
	if err := sn.arena.Restore(r.slot); err != nil {
		return r, fmt.Errorf("%w: %v", errSnapshot, err)
	}
	r.at = sn.backups[r.slot].frame
	if r.at <= anchor {
		for i, b := range sn.backups[:sn.slots] {
			if i != r.slot && i != keepSettled && b.frame < r.at {
				sn.backups[i].valid = false // superseded: no rollback can need it
			}
		}
	}
	return r, nil
}

// advance steps the snapshot in slot forward to frame to, inside the
// snapshot's own region, without a second copy of the arena; the frames
// from mis on are news (noFrame: none).
func (sn *snapshots) advance(slot int, to, mis Frame, run finalRunner) error {
	if err := sn.arena.Enter(slot); err != nil {
		return fmt.Errorf("%w: %v", errSnapshot, err)
	}
	for f := sn.backups[slot].frame; f < to; f++ {
		run.runFinal(f, f >= mis)
	}
	sn.arena.Leave()
	sn.steps += int64(to - sn.backups[slot].frame)
	sn.backups[slot].frame = to
	return nil
}

// catchUp drops the snapshots the newest one at or before the anchor
// supersedes, and moves that one forward to the anchor in its own region
// (run simulates each frame there), so that the oldest snapshot no longer
// holds back the input ring.
func (sn *snapshots) catchUp(anchor Frame, run finalRunner) error {
	keep := sn.newest(anchor)
	if keep < 0 {
		return nil
	}
	for i, b := range sn.backups[:sn.slots] {
		if i != keep && b.valid && b.frame < sn.backups[keep].frame {
			sn.backups[i].valid = false
		}
	}
	if sn.backups[keep].frame < anchor {
		return sn.advance(keep, anchor, noFrame, run)
	}
	return nil
}

// reset forgets every snapshot and the counts (a machine taking its
// players over starts again from its state at the take-over frame); the
// policy and its watch stay.
func (sn *snapshots) reset() {
	clear(sn.backups)
	sn.saves, sn.steps = 0, 0
}

// low returns the oldest frame a valid snapshot holds (noFrame for none):
// the inputs from there on may be read again.
func (sn *snapshots) low() Frame {
	low := noFrame
	for i := range sn.slots {
		if b := &sn.backups[i]; b.valid {
			low = min(low, b.frame)
		}
	}
	return low
}

// adopt makes the live state, replaced by another machine's (recover.go),
// the only snapshot, as the start of frame f: a rollback to f re-simulates
// from it.
func (sn *snapshots) adopt(f Frame) error {
	for i := range sn.backups {
		sn.backups[i].valid = false
	}
	return sn.save(0, f)
}

// sum is the checksum of the live state (sync-test mode, the network log).
func (sn *snapshots) sum() uint64 { return xxhash.Sum64(sn.arena.Bytes()) }
