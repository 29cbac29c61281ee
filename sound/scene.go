package sound

import (
	"time"

	"github.com/rewindgg/rewind/rollback"
)

// SceneSize is how many Stateful sounds a [Scene] holds at once.
const SceneSize = 16

// Scene holds a game's Stateful sounds. Allocate it in the game's arena
// (savestate.Alloc, or as a field of the game's state) and change it only
// from [rollback.Game.Step]: it is game state, it rolls back with the rest,
// and every peer computes the same one. The zero Scene is empty.
type Scene struct {
	Slots [SceneSize]Slot
}

// Slot is one Stateful sound in a [Scene].
type Slot struct {
	ID     ID
	Start  rollback.Frame // the frame it started on
	Length int32          // in frames; 0 loops until stopped
	Volume Volume
	Gen    uint16 // bumped by every Start in this slot, so stale Instances miss
	Live   bool
}

// Instance refers to a sound started in a [Scene]; it can be stored in the
// game state. The zero Instance refers to nothing.
type Instance uint32

func (s *Slot) playing(f rollback.Frame) bool {
	return s.Live && (s.Length == 0 || f < s.Start+rollback.Frame(s.Length))
}

// Start starts sound id on frame f at volume vol, for length frames (0:
// loop until stopped). It returns 0, and starts nothing, when the scene is
// full.
func (sc *Scene) Start(f rollback.Frame, id ID, vol Volume, length int32) Instance {
	for i := range sc.Slots {
		s := &sc.Slots[i]
		if s.playing(f) {
			continue
		}
		*s = Slot{ID: id, Start: f, Length: max(length, 0), Volume: vol, Gen: s.Gen + 1, Live: true}
		return Instance(i+1) | Instance(s.Gen)<<8
	}
	return 0
}

func (sc *Scene) slot(in Instance) *Slot {
	i := int(in&0xff) - 1
	if i < 0 || i >= SceneSize {
		return nil
	}
	s := &sc.Slots[i]
	if !s.Live || s.Gen != uint16(in>>8) {
		return nil
	}
	return s
}

// Stop ends sound in. Stopping a sound that has ended does nothing.
func (sc *Scene) Stop(in Instance) {
	if s := sc.slot(in); s != nil {
		s.Live = false
	}
}

// SetVolume changes sound in's volume.
func (sc *Scene) SetVolume(in Instance, vol Volume) {
	if s := sc.slot(in); s != nil {
		s.Volume = vol
	}
}

// Playing reports whether sound in is still playing on frame f.
func (sc *Scene) Playing(in Instance, f rollback.Frame) bool {
	s := sc.slot(in)
	return s != nil && s.playing(f)
}

// tracked is a Stateful sound the backend is playing.
type tracked struct {
	id     ID
	start  rollback.Frame
	length int32
	vol    Volume
	voice  Voice
}

// Update brings the backend in line with the game state after a frame has
// been simulated (call it after every Session.Advance or Idle, with the
// live state's scene; nil when the game has no Stateful sounds):
//
//   - a sound that the scene holds and the backend is not playing starts,
//     part-way through when its start frame has passed (a correction added
//     it);
//   - a sound that the backend plays and the scene no longer holds stops
//     (a correction removed it, or the game stopped it);
//   - a changed volume is applied.
//
// Sounds are matched by sound and start frame, so a re-simulation that
// starts the same sound on the same frame keeps it playing untouched. Update
// also fades out any Event sound that a finished re-simulation did not ask
// for again. It never changes the scene. While extrapolating it does
// nothing.
func (l *Ledger) Update(sc *Scene) {
	if l.suppressed {
		return
	}
	l.settle(l.cur + 1)
	if sc == nil || l.cur < 0 {
		return
	}
	now := l.cur // the frame just simulated
	var matched [SceneSize]bool
	n := 0
	for _, t := range l.tracked[:l.ntracked] {
		j := -1
		for i := range sc.Slots {
			if s := &sc.Slots[i]; !matched[i] && s.playing(now) && s.ID == t.id && s.Start == t.start {
				j = i
				break
			}
		}
		switch {
		case j >= 0:
			matched[j] = true
			if v := sc.Slots[j].Volume; v != t.vol {
				t.vol = v
				l.b.SetVolume(t.voice, v)
			}
			l.tracked[n] = t
			n++
		case t.length > 0 && now >= t.start+rollback.Frame(t.length):
			// It ended by itself.
		default:
			l.stats.StatefulStopped++
			l.b.Stop(t.voice)
		}
	}
	for i := range sc.Slots {
		s := &sc.Slots[i]
		if matched[i] || !s.playing(now) || now < s.Start {
			continue
		}
		v := l.nextVoice()
		late := now - s.Start
		l.stats.StatefulStarted++
		if late > 0 {
			l.stats.StatefulLate++
		}
		l.tracked[n] = tracked{id: s.ID, start: s.Start, length: s.Length, vol: s.Volume, voice: v}
		n++
		l.b.Play(v, Sound{ID: s.ID, Category: Stateful, Frame: s.Start, Offset: time.Duration(late) * l.frameDur, Volume: s.Volume})
	}
	l.ntracked = n
}
