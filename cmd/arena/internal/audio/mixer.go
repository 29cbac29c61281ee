// Package audio is the arena demo's sound: a bank of sounds synthesised in
// code (no asset files) and a Mixer that plays them.
//
// The Mixer sits between the game's rollback-safe sound.Ledger and the
// audio device. The ledger drives it as its sound.Backend (Play, Stop,
// FadeOut, SetVolume, from the game loop); the audio library pulls the mix
// from it as an io.Reader, from a goroutine of its own, in the format of
// Ebitengine's audio.Context.NewPlayerF32: 32-bit float little-endian
// samples, two channels interleaved, at SampleRate:
//
//	mixer := audio.NewMixer()
//	ledger, _ := sound.NewLedger(sound.Config{Backend: mixer})
//	player, _ := ebitenaudio.NewContext(audio.SampleRate).NewPlayerF32(mixer)
//	player.Play() // the mixer never ends: silence while nothing plays
//
// The player reads ahead of what is heard, so its buffer is latency added
// to every sound (Ebitengine's Player.SetBufferSize shortens it).
//
// The package imports no audio library, so it works, and is tested, with
// no display and no audio device.
package audio

import (
	"encoding/binary"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/rewindgg/rewind/sound"
)

// frameSize is the size of one stereo frame in Read's output: two float32s.
const frameSize = 8

// volumeRamp is how long SetVolume takes to reach its new volume, and a
// sound started part-way through to fade in: an instant jump in gain would
// click.
const volumeRamp = SampleRate * 5 / 1000

// knee is where the output limiter starts to bend. A mix quieter than it
// passes untouched; a louder one (a few explosions at once) is squeezed
// smoothly towards ±1 instead of clipping hard.
const knee = 0.75

// Mixer plays the bank's sounds: a sound.Backend for the ledger and an
// io.Reader for the audio library. It is safe for concurrent use. Create
// one with NewMixer.
type Mixer struct {
	mu     sync.Mutex
	voices []voice
	stats  MixerStats
}

// MixerStats counts what a Mixer did.
type MixerStats struct {
	Voices  int   // voices playing now, fading ones included
	Started int64 // Play calls that started a voice
	Unknown int64 // Play calls with a sound ID the bank does not have (ignored)
	Frames  int64 // stereo frames produced by Read
	Audible int64 // of those, frames that were not silent
	Limited int64 // of those, frames the limiter squeezed (louder than 0.75)
}

var (
	_ sound.Backend = (*Mixer)(nil)
	_ io.Reader     = (*Mixer)(nil)
)

// NewMixer returns a silent mixer. The first call synthesises the sound
// bank (a few tens of milliseconds).
func NewMixer() *Mixer {
	theBank()
	return &Mixer{voices: make([]voice, 0, 32)}
}

// voice is one playing sound.
type voice struct {
	v       sound.Voice
	samples []float32
	pos     int // the next sample
	loop    bool
	gain    float32
	// A ramp takes gain from from to to over n frames; left frames remain.
	from, to float32
	n, left  int
	fading   bool // FadeOut: the voice ends when the ramp does
	done     bool // ended: removed at the end of Read
}

// Play implements sound.Backend: it starts s on voice v, replacing
// whatever v was playing. It starts s.Offset into the sound (a Stateful
// sound that a correction started in the past), fading in over a few
// milliseconds: a loop wraps an offset past its end, a one-shot does not
// play at all. An ID the bank does not have is ignored (and counted).
func (m *Mixer) Play(v sound.Voice, s sound.Sound) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.remove(v)
	samples, loop, ok := Lookup(s.ID)
	if !ok {
		m.stats.Unknown++
		return
	}
	pos := frames(max(s.Offset, 0))
	if loop {
		pos %= len(samples)
	} else if pos >= len(samples) {
		return // it would already be over
	}
	gain := float32(s.Volume) / float32(sound.FullVolume)
	p := voice{v: v, samples: samples, pos: pos, loop: loop, gain: gain}
	if pos > 0 { // it starts mid-wave: fade in, or it would click
		p.gain = 0
		p.ramp(gain, volumeRamp)
	}
	m.voices = append(m.voices, p)
	m.stats.Started++
}

// Stop implements sound.Backend: it silences v at once.
func (m *Mixer) Stop(v sound.Voice) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.remove(v)
}

// FadeOut implements sound.Backend: v's volume falls linearly to silence
// over d, then v ends. A later SetVolume does not interrupt the fade.
func (m *Mixer) FadeOut(v sound.Voice, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := frames(d)
	if n < 1 {
		m.remove(v)
		return
	}
	if p := m.find(v); p != nil {
		p.ramp(0, n)
		p.fading = true
	}
}

// FadeAll fades every voice out over d, as FadeOut does one: the match
// they belong to ended (the title screen has no sound).
func (m *Mixer) FadeAll(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := frames(d)
	if n < 1 {
		m.voices = m.voices[:0]
		return
	}
	for i := range m.voices {
		if p := &m.voices[i]; !p.done && !p.fading {
			p.ramp(0, n)
			p.fading = true
		}
	}
}

// SetVolume implements sound.Backend: v's volume moves to vol over a few
// milliseconds.
func (m *Mixer) SetVolume(v sound.Voice, vol sound.Volume) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.find(v); p != nil && !p.fading {
		p.ramp(float32(vol)/float32(sound.FullVolume), volumeRamp)
	}
}

// Read implements io.Reader: it fills p with as many whole stereo frames
// of the mix as fit (float32 little-endian, left then right) and moves
// every voice on by as much. It never blocks and never fails: while
// nothing plays, it reads silence.
func (m *Mixer) Read(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(p) / frameSize
	for f := range n {
		var mix float32
		for i := range m.voices {
			mix += m.voices[i].next()
		}
		if mix > knee || mix < -knee {
			mix = limit(mix)
			m.stats.Limited++
		}
		if mix != 0 {
			m.stats.Audible++
		}
		bits := math.Float32bits(mix)
		binary.LittleEndian.PutUint32(p[f*frameSize:], bits)   // left
		binary.LittleEndian.PutUint32(p[f*frameSize+4:], bits) // right: the sounds are mono
	}
	m.stats.Frames += int64(n)
	m.voices = slices.DeleteFunc(m.voices, func(v voice) bool { return v.done })
	return n * frameSize, nil
}

// Stats returns the mixer's counters.
func (m *Mixer) Stats() MixerStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.Voices = len(m.voices)
	return s
}

// find returns voice v, or nil when it is not playing.
func (m *Mixer) find(v sound.Voice) *voice {
	for i := range m.voices {
		if p := &m.voices[i]; p.v == v && !p.done {
			return p
		}
	}
	return nil
}

func (m *Mixer) remove(v sound.Voice) {
	m.voices = slices.DeleteFunc(m.voices, func(p voice) bool { return p.v == v })
}

// ramp starts moving the voice's gain to to over n frames.
func (v *voice) ramp(to float32, n int) {
	v.from, v.to, v.n, v.left = v.gain, to, n, n
}

// next returns the voice's next sample, at its gain, and moves it on.
func (v *voice) next() float32 {
	if v.done {
		return 0
	}
	if v.left > 0 {
		v.left--
		v.gain = v.to + (v.from-v.to)*float32(v.left)/float32(v.n)
	}
	s := v.samples[v.pos] * v.gain
	v.pos++
	if v.pos == len(v.samples) {
		if v.loop {
			v.pos = 0
		} else {
			v.done = true
		}
	}
	if v.fading && v.left == 0 {
		v.done = true
	}
	return s
}

// limit squeezes a sample louder than knee smoothly towards ±1: the curve
// leaves the knee at a slope of 1 and never reaches 1.
func limit(x float32) float32 {
	t := (abs32(x) - knee) / (1 - knee)
	y := knee + (1-knee)*t/(1+t)
	if x < 0 {
		return -y
	}
	return y
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// frames converts a duration to frames at SampleRate, without overflowing
// for any duration.
func frames(d time.Duration) int {
	return int(d/time.Second)*SampleRate + int(d%time.Second*SampleRate/time.Second)
}
