// Package desync detects that two machines' game states have diverged and
// says where.
//
// A [Detector] holds the periodic checksums of frames that can no longer
// change — this machine's and the latest from each peer — and compares
// them whenever both sides have the same frame: no false positive is
// possible, because a frame is only checksummed once every input before it
// is final. [Compare] takes two copies of an arena region (this machine's
// state at the diverged frame and a peer's) and names the first differing
// field with both values, using the arena's allocation records.
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
type Error struct {
	Frame  int32  // the frame whose start state differs
	Peer   int    // the peer index that disagrees
	Local  uint64 // our checksum
	Remote uint64 // the peer's
	// Field names the first differing field and both values once the
	// states have been exchanged ("arena.World.Ships[1].X: 40960 vs
	// 40961"); empty until then.
	Field string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("desync: frame %d: checksum %016x here, %016x at peer %d", e.Frame, e.Local, e.Remote, e.Peer)
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s
}

// history is how many of our own checksums a Detector keeps, for peers
// whose latest is older than ours.
const history = 8

type sum struct {
	frame int32
	value uint64
	ok    bool
}

// Detector compares checksums of final frames with the peers'. The zero
// value is not usable; create one with [NewDetector].
type Detector struct {
	latest sum // the newest of local
	local  [history]sum
	remote []sum // the latest from each peer
	done   []int32
}

// NewDetector returns a detector for the given number of peers.
func NewDetector(peers int) *Detector {
	d := &Detector{remote: make([]sum, peers), done: make([]int32, peers)}
	for i := range d.done {
		d.done[i] = -1
	}
	return d
}

// Local records our checksum of frame f, which must be final.
func (d *Detector) Local(f int32, v uint64) {
	d.local[int(uint32(f)%history)] = sum{f, v, true}
	if !d.latest.ok || f >= d.latest.frame {
		d.latest = sum{f, v, true}
	}
}

// Latest returns our newest recorded checksum.
func (d *Detector) Latest() (f int32, v uint64, ok bool) {
	return d.latest.frame, d.latest.value, d.latest.ok
}

// Remote records peer's checksum of frame f, keeping only the newest.
func (d *Detector) Remote(peer int, f int32, v uint64) {
	if peer < 0 || peer >= len(d.remote) {
		return
	}
	if r := d.remote[peer]; !r.ok || f > r.frame {
		d.remote[peer] = sum{f, v, true}
	}
}

// Check compares every peer's latest checksum with ours of the same frame
// and returns the first mismatch, or nil.
func (d *Detector) Check() *Error {
	for p, r := range d.remote {
		if !r.ok || r.frame <= d.done[p] {
			continue
		}
		l := d.local[int(uint32(r.frame)%history)]
		if !l.ok || l.frame != r.frame {
			continue // not ours yet, or no longer held
		}
		d.done[p] = r.frame
		if l.value != r.value {
			return &Error{Frame: r.frame, Peer: p, Local: l.value, Remote: r.value}
		}
	}
	return nil
}

// Compare names the first byte at which remote, a peer's copy of an arena
// region, differs from local, ours, as "path: ours vs theirs", reading the
// allocation records in local. It returns "" when they are equal.
func Compare(a *savestate.Arena, local, remote []byte) string {
	for i := range min(len(local), len(remote)) {
		if local[i] == remote[i] {
			continue
		}
		f, ok := a.FieldIn(local, i)
		if !ok {
			return fmt.Sprintf("arena bookkeeping at byte %d: %#02x vs %#02x", i, local[i], remote[i])
		}
		return fmt.Sprintf("%s: %s vs %s", f.Path, value(f, local), value(f, remote))
	}
	if len(local) != len(remote) {
		return fmt.Sprintf("arena used size: %d vs %d bytes", len(local), len(remote))
	}
	return ""
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
