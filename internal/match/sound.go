package match

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/sound"
)

// SoundReport compares the Event sounds each machine played with the ground
// truth: the Event sounds of an offline run of the match with every input
// known. A sound is an (ID, frame) pair; every machine should hear each true
// sound once.
type SoundReport struct {
	True          int // true sounds × machines: what should have been heard
	Duplicates    int // a start while an earlier start of the same sound still played
	Missed        int // a true sound with no start left playing
	Phantoms      int // starts of sounds that did not happen
	PhantomsFaded int // of those, the ones faded out
	Restarts      int // true sounds faded by one correction and started again by a later one
	LateStarts    int // true sounds that started after their frame was first shown
	// LateSum and LateMax (ms) measure how late true sounds started: the
	// start time minus the time the machine first simulated their frame.
	LateSum, LateMax float64
	// PhantomSum (ms) is how long phantoms played before their fade began.
	PhantomSum float64
	Suppressed int64 // sound requests ignored while extrapolating
	Evicted    int64 // history entries pushed out during a re-simulation
	// Stateful sounds, from the ledgers.
	StatefulStarted, StatefulLate, StatefulStopped int64
}

// Add accumulates o into r.
func (r *SoundReport) Add(o SoundReport) {
	r.True += o.True
	r.Duplicates += o.Duplicates
	r.Missed += o.Missed
	r.Phantoms += o.Phantoms
	r.PhantomsFaded += o.PhantomsFaded
	r.Restarts += o.Restarts
	r.LateStarts += o.LateStarts
	r.LateSum += o.LateSum
	r.LateMax = max(r.LateMax, o.LateMax)
	r.PhantomSum += o.PhantomSum
	r.Suppressed += o.Suppressed
	r.Evicted += o.Evicted
	r.StatefulStarted += o.StatefulStarted
	r.StatefulLate += o.StatefulLate
	r.StatefulStopped += o.StatefulStopped
}

// Clean reports whether every true sound was heard exactly once and every
// phantom was faded.
func (r *SoundReport) Clean() bool {
	return r.Duplicates == 0 && r.Missed == 0 && r.PhantomsFaded == r.Phantoms
}

// soundKey is one Event sound: its ID and frame.
type soundKey struct {
	id    sound.ID
	frame rollback.Frame
}

// voiceLog is a sound.Backend that records every voice with the machine's
// clock: what the machine's player heard.
type voiceLog struct {
	now    func() time.Duration
	voices []voiceRec // voice v is voices[v-1]
}

type voiceRec struct {
	key   soundKey
	cat   sound.Category
	start time.Duration
	end   time.Duration // when a fade or stop began; -1 while it plays on
}

func (v *voiceLog) Play(voice sound.Voice, s sound.Sound) {
	for len(v.voices) < int(voice) { // voices are numbered 1, 2, … in order
		v.voices = append(v.voices, voiceRec{end: -1})
	}
	v.voices[voice-1] = voiceRec{key: soundKey{s.ID, s.Frame}, cat: s.Category, start: v.now(), end: -1}
}

func (v *voiceLog) end(voice sound.Voice) {
	if i := int(voice) - 1; i >= 0 && i < len(v.voices) && v.voices[i].end < 0 {
		v.voices[i].end = v.now()
	}
}

func (v *voiceLog) Stop(voice sound.Voice)                     { v.end(voice) }
func (v *voiceLog) FadeOut(voice sound.Voice, _ time.Duration) { v.end(voice) }
func (v *voiceLog) SetVolume(sound.Voice, sound.Volume)        {}

// truthSet lists the Event sounds of an offline run, in order.
type truthSet struct{ keys []soundKey }

func (t *truthSet) Play(_ sound.Voice, s sound.Sound) {
	if s.Category == sound.Event {
		t.keys = append(t.keys, soundKey{s.ID, s.Frame})
	}
}
func (t *truthSet) Stop(sound.Voice)                    {}
func (t *truthSet) FadeOut(sound.Voice, time.Duration)  {}
func (t *truthSet) SetVolume(sound.Voice, sound.Volume) {}

// newMachineSound gives machine m a ledger that records what it plays.
func newMachineSound(m *machine, now func() time.Duration) error {
	m.voices = &voiceLog{now: now}
	l, err := sound.NewLedger(sound.Config{Backend: m.voices})
	if err != nil {
		return err
	}
	m.ledger = l
	m.g.SetLedger(l)
	return nil
}

// afterTick does what a game does with sound after Advance or Idle: brings
// the Stateful sounds in line, starts the music once the match runs, and
// notes when each frame was first shown.
func (m *machine) afterTick(from rollback.Frame, events []rollback.Event) {
	for _, e := range events {
		if e.Kind == rollback.EventRunning && m.music == 0 {
			m.music = m.ledger.Play(arena.SoundMusic, sound.FullVolume/2)
		}
	}
	m.ledger.Update(m.g.Scene())
	now := m.voices.now()
	for f := from; f < m.s.Frame(); f++ {
		if int(f) < len(m.shown) {
			m.shown[f] = now
		}
	}
}

// scoreSound compares what machine m heard of frames before end with the
// truth.
func scoreSound(m *machine, truth []soundKey, index map[soundKey]bool, end rollback.Frame) SoundReport {
	var r SoundReport
	st := m.ledger.Stats()
	r.Suppressed, r.Evicted = st.Suppressed, st.Evicted
	r.StatefulStarted, r.StatefulLate, r.StatefulStopped = st.StatefulStarted, st.StatefulLate, st.StatefulStopped
	byKey := map[soundKey][]voiceRec{}
	for _, v := range m.voices.voices {
		if v.cat != sound.Event || v.key.frame >= end {
			continue
		}
		byKey[v.key] = append(byKey[v.key], v)
		if !index[v.key] {
			r.Phantoms++
			if v.end >= 0 {
				r.PhantomsFaded++
				r.PhantomSum += ms(v.end - v.start)
			}
		}
	}
	for _, k := range truth {
		if k.frame >= end {
			continue
		}
		r.True++
		vs := byKey[k] // in start order: voices are logged as they start
		heard := false
		for i, v := range vs {
			if i > 0 {
				prev := vs[i-1]
				if prev.end < 0 || prev.end > v.start {
					r.Duplicates++
				} else {
					r.Restarts++
				}
			}
			if v.end >= 0 || heard {
				continue
			}
			heard = true
			late := ms(v.start - m.shown[k.frame])
			if late > 0 {
				r.LateStarts++
				r.LateSum += late
				r.LateMax = max(r.LateMax, late)
			}
		}
		if !heard {
			r.Missed++
		}
	}
	return r
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }

// ErrExtrapolationLeaked reports an extrapolated render that changed the
// live state.
var ErrExtrapolationLeaked = errors.New("match: extrapolation changed the live state")

// extrapolate renders a fraction of a frame ahead, as a 240 Hz display
// would, and checks that the live state is unchanged.
func (m *machine) extrapolate() error {
	before := xxhash.Sum64(m.a.Bytes())
	if err := m.s.Extrapolate(float64(m.ticks%4)/4, m.render); err != nil {
		return err
	}
	if xxhash.Sum64(m.a.Bytes()) != before {
		return fmt.Errorf("%w at frame %d", ErrExtrapolationLeaked, m.s.Frame())
	}
	return nil
}
