// Package desync detects that two machines' game states have diverged and
// says where.
//
// A [Detector] holds the periodic checksums of frames that can no longer
// change — the latest few of this machine's and of each peer's — and compares
// them whenever both sides have the same frame: no false positive is
// possible, because a frame is only checksummed once every input before it
// is final. With three or more machines it waits for a third opinion and
// marks a peer that disagrees with the majority [Error.Outvoted]: the odd
// one out is the peer, not this machine. [Compare] takes two copies of an
// arena region (this machine's state at the diverged frame and a peer's)
// and names the first differing field with both values, using the arena's
// allocation records.
package desync

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"

	"github.com/rewindgg/rewind/savestate"
)

// DefaultEvery is the default checksum interval, in frames.
const DefaultEvery = 500

// Error reports a desync: a peer's checksum of a frame differs from ours.
// Remote and Field are the peer's claims: an honest peer's checksum and
// state, a lying peer's whatever it sent. A sync test (rollback's
// Config.SyncTest) reports with Peer -1 a frame whose re-simulation
// differs from its first simulation: the game is not deterministic, or
// keeps state outside the arena.
type Error struct {
	Frame  int32  // the frame whose start state differs
	Peer   int    // the peer index that disagrees; -1: a sync test's re-simulation
	Local  uint64 // our checksum (a sync test's: of the first simulation)
	Remote uint64 // the checksum the peer claims (a sync test's: of the re-simulation)
	// Outvoted: with three or more machines, the peer's checksum disagrees
	// with ours and with more of the other peers' than agree with it: the
	// peer is the odd one out, not us (a session names it and plays on).
	Outvoted bool
	// Majority: with three or more machines, more of the other peers'
	// checksums agree with the peer's than with ours: we are the odd one
	// out (with rollback's Config.Recover we load the kept state).
	Majority bool
	// FirstFrame is the first frame at whose start this machine's state
	// and the peer's differ, from the two machines' re-simulations of the
	// span since the last state they agreed on (rollback's time machine:
	// Config.Marks or Config.Bundle; the peer's checksums are its claim);
	// 0 when unknown. It is at most Frame.
	FirstFrame int32
	// System names the first system of the game's (its [Marks]) whose
	// output differs in the step before FirstFrame (a sync test's: before
	// Frame), from the two traces of that step; empty when unknown.
	System string
	// Recovered: rollback's Config.Recover played the match on past this
	// desync; Adopted says whether this machine loaded the kept state
	// (the peer's) at Frame, or kept its own.
	Recovered, Adopted bool
	// Field names the first differing field and both values, ours first,
	// once the states have been exchanged ("arena.World.Ships[1].X: 40960
	// vs 40961"); empty until then. The peer's value is read from the
	// state it sent.
	Field string
}

func (e *Error) Error() string {
	if e.Peer < 0 {
		s := fmt.Sprintf("desync: sync test: the state at the start of frame %d re-simulated to checksum %016x, first simulated to %016x: the game is not deterministic, or keeps state outside the arena", e.Frame, e.Remote, e.Local)
		if e.System != "" {
			s += fmt.Sprintf("; the first system whose output differs in frame %d's step: %s", e.Frame-1, e.System)
		}
		return s
	}
	s := fmt.Sprintf("desync: frame %d: checksum %016x here, peer %d claims %016x", e.Frame, e.Local, e.Peer, e.Remote)
	if e.Outvoted {
		s += " (outvoted: the other peers agree with us)"
	}
	if e.FirstFrame > 0 {
		s += fmt.Sprintf("; the states first differ at frame %d", e.FirstFrame)
		if e.System != "" {
			s += fmt.Sprintf(", after system %s of frame %d's step", e.System, e.FirstFrame-1)
		}
	}
	if e.Field != "" {
		s += "; by the state it sent: " + e.Field
	}
	return s
}

// history is how many of our own checksums, and of each peer's, a
// Detector keeps, for peers whose latest is older than ours.
const history = 8

// decideAfter is how many newer checksums of ours a mismatch waits, at
// most, for a third machine's checksum of its frame: a peer that sends
// none cannot hold detection off.
const decideAfter = 2

type sum struct { // 16 bytes: a session's Detector is part of its memory budget (issue 21)
	value uint64
	frame int32
	ok    bool
}

// sums holds the latest history checksums of one machine, in the order
// they came (not by frame: checksum frames are multiples of an interval,
// which would leave most slots of a ring by frame unused).
type sums struct {
	s    [history]sum
	next int
}

// put adds the checksum of frame f, which is newer than every one held
// (Local takes final checksums only, Remote only a peer's newer ones).
func (h *sums) put(f int32, v uint64) {
	h.s[h.next] = sum{value: v, frame: f, ok: true}
	h.next = (h.next + 1) % history
}

func (h *sums) at(f int32) (uint64, bool) {
	for _, s := range h.s {
		if s.ok && s.frame == f {
			return s.value, true
		}
	}
	return 0, false
}

// Detector compares checksums of final frames with the peers'. The zero
// value is not usable; create one with [NewDetector].
//
// With three or more machines a mismatch with one peer waits (for
// decideAfter more checksums of ours at most) for the other peers'
// checksums of the same frame, and is reported Outvoted when more of them
// agree with us than with it.
type Detector struct {
	latest sum // the newest of local
	local  sums
	remote []sum  // the latest from each peer
	hist   []sums // the latest few from each peer, for the votes (nil with one peer: no votes)
	gone   []bool // peers no longer compared
	done   []int32
	agreed int32 // the newest frame a peer's checksum matched ours at; -1: none
}

// NewDetector returns a detector for the given number of peers.
func NewDetector(peers int) *Detector {
	d := &Detector{remote: make([]sum, peers), gone: make([]bool, peers), done: make([]int32, peers), agreed: -1}
	if peers > 1 {
		d.hist = make([]sums, peers)
	}
	for i := range d.done {
		d.done[i] = -1
	}
	return d
}

// Local records our checksum of frame f, which must be final.
func (d *Detector) Local(f int32, v uint64) {
	d.local.put(f, v)
	if !d.latest.ok || f >= d.latest.frame {
		d.latest = sum{value: v, frame: f, ok: true}
	}
}

// Latest returns our newest recorded checksum.
func (d *Detector) Latest() (f int32, v uint64, ok bool) {
	return d.latest.frame, d.latest.value, d.latest.ok
}

// Remote records peer's checksum of frame f, keeping only the newest.
func (d *Detector) Remote(peer int, f int32, v uint64) {
	if peer < 0 || peer >= len(d.remote) || d.gone[peer] {
		return
	}
	if r := d.remote[peer]; !r.ok || f > r.frame {
		d.remote[peer] = sum{value: v, frame: f, ok: true}
		if d.hist != nil {
			d.hist[peer].put(f, v)
		}
	}
}

// Rewind replaces our checksums with v, ours of frame f: the state was
// replaced there (rollback's Config.Recover), so no earlier frame is
// compared any more, and the later ones are simulated again (their
// checksums come again through [Detector.Local]).
func (d *Detector) Rewind(f int32, v uint64) {
	d.local, d.latest = sums{}, sum{}
	d.Local(f, v)
	d.agreed = f // the state kept: the majority's
}

// Agreed returns the newest frame at which some peer's checksum was found
// equal to ours by [Detector.Check] (or the frame of [Detector.Rewind]),
// or -1. Unlike [Detector.Settled], it is a frame that was compared: a
// peer's checksum lost on the way leaves its frame settled unseen, and a
// desync already there (found at a later frame) would be taken for
// agreement.
func (d *Detector) Agreed() int32 { return d.agreed }

// Forget stops comparing with peer (it left): no mismatch waits for it.
func (d *Detector) Forget(peer int) {
	if peer >= 0 && peer < len(d.gone) {
		d.gone[peer] = true
	}
}

// Resume compares with peer again (it came back), from its next
// checksum on.
func (d *Detector) Resume(peer int) {
	if peer >= 0 && peer < len(d.gone) {
		d.gone[peer], d.remote[peer] = false, sum{}
		if d.hist != nil {
			d.hist[peer] = sums{}
		}
	}
}

// Check compares every peer's latest checksum with ours of the same frame
// and returns the first mismatch that is decided, or nil.
func (d *Detector) Check() *Error {
	for p, r := range d.remote {
		if !r.ok || r.frame <= d.done[p] || d.gone[p] {
			continue
		}
		l, ok := d.local.at(r.frame)
		if !ok {
			continue // not ours yet, or no longer held
		}
		if l == r.value {
			d.done[p], d.agreed = r.frame, max(d.agreed, r.frame)
			continue
		}
		us, them, waiting := d.votes(p, r.frame, l, r.value)
		if us == them && waiting && d.newer(r.frame) < decideAfter {
			continue // a third machine's checksum may still decide it
		}
		d.done[p] = r.frame
		return &Error{Frame: r.frame, Peer: p, Local: l, Remote: r.value, Outvoted: us > them, Majority: them > us}
	}
	return nil
}

// Settled returns the newest frame at or before which no checksum of ours
// can be reported by [Detector.Check] any more, or -1: for every peer still
// compared, its newest checksum is of a later frame (Check compares only a
// peer's newest, and [Detector.Remote] ignores older ones) or of that frame
// and was compared already; or the frame is older than every checksum of
// ours the detector keeps. A machine that keeps its states at checksum
// frames, for the exchange that names the differing field after a desync,
// needs them only until then. It costs a pass over the peers and the
// history: call it when a checksum came, not on every frame.
func (d *Detector) Settled() int32 {
	s := int32(math.MaxInt32)
	for p, r := range d.remote {
		switch {
		case d.gone[p]:
		case !r.ok:
			s = -1 // it may still send any frame
		case d.done[p] >= r.frame:
			s = min(s, r.frame)
		default:
			s = min(s, r.frame-1)
		}
	}
	oldest, full := int32(math.MaxInt32), true
	for _, l := range d.local.s {
		full = full && l.ok
		oldest = min(oldest, l.frame)
	}
	if full {
		s = max(s, oldest-1) // older ones are no longer compared
	}
	return s
}

// votes counts the other peers (not p) whose checksum of frame f agrees
// with ours (mine) and with p's (its), and reports whether any has not
// reached f yet.
func (d *Detector) votes(p int, f int32, mine, its uint64) (us, them int, waiting bool) {
	for q := range d.remote {
		if q == p || d.gone[q] {
			continue
		}
		v, ok := d.hist[q].at(f)
		switch {
		case ok && v == mine:
			us++
		case ok && v == its:
			them++
		case !d.remote[q].ok || d.remote[q].frame < f:
			waiting = true
		}
	}
	return us, them, waiting
}

// newer counts our checksums of frames after f.
func (d *Detector) newer(f int32) int {
	n := 0
	for _, s := range d.local.s {
		if s.ok && s.frame > f {
			n++
		}
	}
	return n
}

// Compare names the first byte at which remote, a peer's copy of an arena
// region, differs from local, ours, as "path: ours vs theirs", reading the
// allocation records in local. It returns "" when they are equal.
func Compare(a *savestate.Arena, local, remote []byte) string {
	d := Diff(a, local, remote, 1)
	if len(d) == 0 {
		return ""
	}
	return d[0].String()
}

// FieldDiff is one field that differs between two copies of an arena
// region: its path and both values, formatted by its type.
type FieldDiff struct {
	Path          string // "arena.World.Ships[1].X"; the arena's bookkeeping or used size otherwise
	Local, Remote string
}

// String returns "path: local vs remote".
func (d FieldDiff) String() string { return d.Path + ": " + d.Local + " vs " + d.Remote }

// Diff names up to n fields (n ≤ 0: all) that differ between local and
// remote, two copies of an arena region, in the order they are laid out,
// reading the allocation records in local ([Compare] is its first). A
// region of another size is reported last, as "arena used size".
func Diff(a *savestate.Arena, local, remote []byte, n int) []FieldDiff {
	var out []FieldDiff
	for i := 0; i < min(len(local), len(remote)) && (n <= 0 || len(out) < n); i++ {
		if local[i] == remote[i] {
			continue
		}
		f, ok := a.FieldIn(local, i)
		if !ok {
			out = append(out, FieldDiff{fmt.Sprintf("arena bookkeeping at byte %d", i), fmt.Sprintf("%#02x", local[i]), fmt.Sprintf("%#02x", remote[i])})
			continue
		}
		out = append(out, FieldDiff{f.Path, value(f, local), value(f, remote)})
		if f.Type != nil {
			i = max(i, f.Offset+int(f.Type.Size())-1) // the field's other bytes
		}
	}
	if len(local) != len(remote) && (n <= 0 || len(out) < n) {
		out = append(out, FieldDiff{"arena used size", fmt.Sprintf("%d", len(local)), fmt.Sprintf("%d bytes", len(remote))})
	}
	return out
}

// value formats field f as stored in region.
func value(f savestate.Field, region []byte) string {
	if f.Type == nil {
		return fmt.Sprintf("%#02x", region[f.Offset])
	}
	n := int(f.Type.Size())
	if f.Offset+n > len(region) {
		return "?"
	}
	var u uint64 // the arena is native memory
	switch b := region[f.Offset : f.Offset+n]; n {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(binary.NativeEndian.Uint16(b))
	case 4:
		u = uint64(binary.NativeEndian.Uint32(b))
	case 8:
		u = binary.NativeEndian.Uint64(b)
	default:
		return fmt.Sprintf("%x", b)
	}
	switch f.Type.Kind() {
	case reflect.Bool:
		return fmt.Sprint(u != 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		shift := 64 - 8*uint(n)
		return fmt.Sprint(int64(u<<shift) >> shift)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprint(u)
	case reflect.Float32:
		return fmt.Sprint(math.Float32frombits(uint32(u)))
	case reflect.Float64:
		return fmt.Sprint(math.Float64frombits(u))
	}
	return fmt.Sprintf("%#x", u)
}
