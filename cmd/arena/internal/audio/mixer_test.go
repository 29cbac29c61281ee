package audio

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/sound"
)

// read reads n frames from m and returns the left channel, after checking
// that Read filled them all and that the right channel is the same.
func read(t *testing.T, m *Mixer, n int) []float32 {
	t.Helper()
	p := make([]byte, n*frameSize)
	got, err := m.Read(p)
	if got != len(p) || err != nil {
		t.Fatalf("Read(%d bytes) = %d, %v", len(p), got, err)
	}
	out := make([]float32, n)
	for i := range out {
		l := math.Float32frombits(binary.LittleEndian.Uint32(p[i*frameSize:]))
		r := math.Float32frombits(binary.LittleEndian.Uint32(p[i*frameSize+4:]))
		if l != r {
			t.Fatalf("frame %d: left %v, right %v", i, l, r)
		}
		out[i] = l
	}
	return out
}

func samples(t *testing.T, id sound.ID) []float32 {
	t.Helper()
	s, _, ok := Lookup(id)
	if !ok {
		t.Fatalf("no sound %#x", id)
	}
	return s
}

func gain(v sound.Volume) float32 { return float32(v) / float32(sound.FullVolume) }

// match checks that got is want[from:] (wrapping) times g, within float
// rounding.
func match(t *testing.T, what string, got, want []float32, from int, g float32) {
	t.Helper()
	for i, v := range got {
		w := want[(from+i)%len(want)] * g
		if math.Abs(float64(v-w)) > 1e-6 {
			t.Fatalf("%s: frame %d is %v, want %v", what, i, v, w)
		}
	}
}

func silent(out []float32) bool {
	for _, v := range out {
		if v != 0 {
			return false
		}
	}
	return true
}

func TestPlayPlaysTheSoundAtItsVolume(t *testing.T) {
	m := NewMixer()
	const vol = sound.FullVolume / 2
	s := samples(t, arena.SoundShot+3)
	m.Play(7, sound.Sound{ID: arena.SoundShot + 3, Category: sound.Event, Volume: vol})
	out := read(t, m, len(s))
	if silent(out) {
		t.Fatal("silent")
	}
	match(t, "shot", out, s, 0, gain(vol))
	// It has ended: removed, and the mixer is silent again.
	if st := m.Stats(); st.Voices != 0 || st.Started != 1 {
		t.Errorf("after the shot: %+v, want no voice and 1 started", st)
	}
	if out := read(t, m, 100); !silent(out) {
		t.Error("not silent after the shot ended")
	}
}

func TestStop(t *testing.T) {
	m := NewMixer()
	m.Play(1, sound.Sound{ID: arena.SoundThrust, Volume: sound.FullVolume})
	if out := read(t, m, 1000); silent(out) {
		t.Fatal("silent before Stop")
	}
	m.Stop(1)
	if out := read(t, m, 1000); !silent(out) {
		t.Error("not silent after Stop")
	}
	if v := m.Stats().Voices; v != 0 {
		t.Errorf("%d voices after Stop", v)
	}
}

func TestFadeOut(t *testing.T) {
	m := NewMixer()
	s := samples(t, arena.SoundMusic)
	m.Play(1, sound.Sound{ID: arena.SoundMusic, Volume: sound.FullVolume})
	const start = 3000 // into the first note
	read(t, m, start)
	m.FadeOut(1, 10*time.Millisecond)
	const n = SampleRate / 100
	out := read(t, m, n)
	for i, v := range out {
		g := float32(n-1-i) / n // linear, to exactly 0 on the last frame
		if w := s[start+i] * g; math.Abs(float64(v-w)) > 1e-6 {
			t.Fatalf("frame %d of the fade: %v, want %v", i, v, w)
		}
	}
	if silent(out[:n/2]) {
		t.Error("the fade's first half is silent")
	}
	if st := m.Stats(); st.Voices != 0 {
		t.Errorf("%d voices after the fade", st.Voices)
	}
	if out := read(t, m, 100); !silent(out) {
		t.Error("not silent after the fade")
	}
}

// TestFadeAll: every voice, a loop among them, fades out and ends (the
// match they belonged to was left for the title screen).
func TestFadeAll(t *testing.T) {
	m := NewMixer()
	m.Play(1, sound.Sound{ID: arena.SoundMusic, Volume: sound.FullVolume})
	m.Play(2, sound.Sound{ID: arena.SoundThrust, Volume: sound.FullVolume})
	read(t, m, 3000)
	m.FadeAll(10 * time.Millisecond)
	if out := read(t, m, SampleRate/100); silent(out[:SampleRate/200]) {
		t.Error("the fade's first half is silent")
	}
	if out := read(t, m, 100); !silent(out) || m.Stats().Voices != 0 {
		t.Errorf("not silent after the fade: %d voices", m.Stats().Voices)
	}
}

func TestFadeOutOfNothingIsInstant(t *testing.T) {
	m := NewMixer()
	m.Play(1, sound.Sound{ID: arena.SoundThrust, Volume: sound.FullVolume})
	m.FadeOut(1, 0)
	if out := read(t, m, 100); !silent(out) || m.Stats().Voices != 0 {
		t.Error("FadeOut over 0 did not stop the voice")
	}
}

func TestSetVolume(t *testing.T) {
	m := NewMixer()
	s := samples(t, arena.SoundThrust)
	m.Play(1, sound.Sound{ID: arena.SoundThrust, Volume: sound.FullVolume})
	read(t, m, 1000)
	const vol = sound.FullVolume / 4
	m.SetVolume(1, vol)
	ramp := read(t, m, volumeRamp) // a few ms to get there, without a click
	for i, v := range ramp {
		lo, hi := s[1000+i]*gain(vol), s[1000+i]
		if lo > hi {
			lo, hi = hi, lo
		}
		if v < lo-1e-6 || v > hi+1e-6 {
			t.Fatalf("ramp frame %d: %v, not between %v and %v", i, v, lo, hi)
		}
	}
	out := read(t, m, 30000) // past the loop point too
	match(t, "after SetVolume", out, s, 1000+volumeRamp, gain(vol))
}

// A SetVolume does not cancel a fade: the ledger's fades always end.
func TestSetVolumeDuringFadeOut(t *testing.T) {
	m := NewMixer()
	m.Play(1, sound.Sound{ID: arena.SoundThrust, Volume: sound.FullVolume})
	m.FadeOut(1, 10*time.Millisecond)
	m.SetVolume(1, sound.FullVolume)
	read(t, m, SampleRate/100)
	if v := m.Stats().Voices; v != 0 {
		t.Errorf("%d voices after the fade", v)
	}
}

func TestOffsetStartsPartWay(t *testing.T) {
	m := NewMixer()
	s := samples(t, arena.SoundExplosion+1)
	m.Play(1, sound.Sound{ID: arena.SoundExplosion + 1, Offset: 50 * time.Millisecond, Volume: sound.FullVolume})
	const at = SampleRate / 20
	fadeIn(t, read(t, m, volumeRamp), s, at)
	match(t, "offset 50 ms", read(t, m, 1000), s, at+volumeRamp, 1)
}

// fadeIn checks that a sound started part-way, at sample at, fades in
// from silence instead of jumping in with a click.
func fadeIn(t *testing.T, out, s []float32, at int) {
	t.Helper()
	if first := abs32(s[at%len(s)]) / volumeRamp; abs32(out[0]) > first+1e-6 {
		t.Errorf("a sound started part-way begins at %v, not near silence", out[0])
	}
	for i, v := range out {
		if w := s[(at+i)%len(s)]; abs32(v) > abs32(w)+1e-6 || (v < 0) != (w < 0) && v != 0 {
			t.Fatalf("fade-in frame %d: %v, louder than or opposite to %v", i, v, w)
		}
	}
}

// A Stateful loop that a correction started long ago: its offset is past
// its length, and it wraps.
func TestLoopOffsetWraps(t *testing.T) {
	m := NewMixer()
	s := samples(t, arena.SoundThrust) // 0.5 s
	m.Play(1, sound.Sound{ID: arena.SoundThrust, Category: sound.Stateful, Offset: 1250 * time.Millisecond, Volume: sound.FullVolume})
	const at = SampleRate / 4
	fadeIn(t, read(t, m, volumeRamp), s, at)
	out := read(t, m, len(s)) // through the loop point
	match(t, "offset 1.25 s", out, s, at+volumeRamp, 1)
	if v := m.Stats().Voices; v != 1 {
		t.Errorf("%d voices: the loop should still play", v)
	}
}

func TestOneShotOffsetPastItsEndDoesNotPlay(t *testing.T) {
	m := NewMixer()
	m.Play(1, sound.Sound{ID: arena.SoundShot, Offset: time.Second, Volume: sound.FullVolume})
	if st := m.Stats(); st.Voices != 0 || st.Started != 0 {
		t.Errorf("%+v: want nothing started", st)
	}
	if out := read(t, m, 100); !silent(out) {
		t.Error("not silent")
	}
}

func TestUnknownSoundIsIgnored(t *testing.T) {
	m := NewMixer()
	m.Play(1, sound.Sound{ID: 0x999, Volume: sound.FullVolume})
	if st := m.Stats(); st.Unknown != 1 || st.Voices != 0 || st.Started != 0 {
		t.Errorf("%+v: want 1 unknown and nothing started", st)
	}
	if out := read(t, m, 100); !silent(out) {
		t.Error("not silent")
	}
}

func TestPlayReplacesTheVoice(t *testing.T) {
	m := NewMixer()
	s := samples(t, arena.SoundExplosion)
	m.Play(1, sound.Sound{ID: arena.SoundThrust, Volume: sound.FullVolume})
	m.Play(1, sound.Sound{ID: arena.SoundExplosion, Volume: sound.FullVolume})
	if v := m.Stats().Voices; v != 1 {
		t.Errorf("%d voices, want 1", v)
	}
	match(t, "replaced", read(t, m, 2000), s, 0, 1)
}

func TestVoicesSum(t *testing.T) {
	m := NewMixer()
	a, b := samples(t, arena.SoundShot), samples(t, arena.SoundExplosion+1)
	const va, vb = sound.FullVolume / 2, sound.FullVolume / 3
	m.Play(1, sound.Sound{ID: arena.SoundShot, Volume: va})
	m.Play(2, sound.Sound{ID: arena.SoundExplosion + 1, Volume: vb})
	out := read(t, m, len(b))
	for i, v := range out {
		w := b[i] * gain(vb)
		if i < len(a) {
			w += a[i] * gain(va)
		}
		if math.Abs(float64(v-w)) > 1e-6 {
			t.Fatalf("frame %d: %v, want %v", i, v, w)
		}
	}
	if v := m.Stats().Voices; v != 0 {
		t.Errorf("%d voices after both ended", v)
	}
}

// Eight explosions at once add up far past 1: the limiter keeps the output
// within [-1, 1], and it is still loud.
func TestOutputIsLimited(t *testing.T) {
	m := NewMixer()
	for i := range sound.Voice(8) {
		m.Play(i+1, sound.Sound{ID: arena.SoundExplosion, Volume: sound.FullVolume})
	}
	loudest := float32(0)
	for _, v := range read(t, m, SampleRate/2) {
		if v < -1 || v > 1 {
			t.Fatalf("sample %v outside [-1, 1]", v)
		}
		loudest = max(loudest, abs32(v))
	}
	if loudest < 0.95 {
		t.Errorf("loudest sample %v: the limiter squeezed too hard", loudest)
	}
	if m.Stats().Limited == 0 {
		t.Error("no frame counted as limited")
	}
	if y := limit(1000); y >= 1 {
		t.Errorf("limit(1000) = %v", y)
	}
}

func TestReadWholeFramesOnly(t *testing.T) {
	m := NewMixer()
	m.Play(1, sound.Sound{ID: arena.SoundMusic, Volume: sound.FullVolume})
	read(t, m, 2000) // into the first note
	for _, size := range []int{8, 9, 15, 85, 4095} {
		p := make([]byte, size)
		for i := range p {
			p[i] = 0xaa
		}
		n, err := m.Read(p)
		if want := size / 8 * 8; n != want || err != nil {
			t.Errorf("Read(%d bytes) = %d, %v; want %d, nil", size, n, err, want)
		}
		for _, b := range p[n:] {
			if b != 0xaa {
				t.Errorf("Read(%d bytes) wrote past its whole frames", size)
				break
			}
		}
	}
	if n, err := m.Read(make([]byte, 7)); n != 0 || err != nil {
		t.Errorf("Read(7 bytes) = %d, %v; want 0, nil", n, err)
	}
}

func TestReadSilence(t *testing.T) {
	m := NewMixer()
	p := make([]byte, 100)
	for i := range p {
		p[i] = 0xff
	}
	n, err := m.Read(p)
	if n != 96 || err != nil {
		t.Fatalf("Read(100 bytes) = %d, %v; want 96, nil", n, err)
	}
	for i, b := range p[:n] {
		if b != 0 {
			t.Fatalf("byte %d is %#x, want 0", i, b)
		}
	}
	if st := m.Stats(); st.Frames != 12 || st.Audible != 0 {
		t.Errorf("%+v: want 12 frames, none audible", st)
	}
}

func TestStats(t *testing.T) {
	m := NewMixer()
	m.Play(1, sound.Sound{ID: arena.SoundMusic, Volume: sound.FullVolume})
	m.Play(2, sound.Sound{ID: arena.SoundThrust + 4, Volume: sound.FullVolume})
	read(t, m, 500)
	m.Stop(2)
	read(t, m, 500)
	st := m.Stats()
	if st.Voices != 1 || st.Started != 2 || st.Frames != 1000 || st.Audible < 900 || st.Audible > 1000 {
		t.Errorf("%+v: want 1 voice, 2 started, 1000 frames, nearly all audible", st)
	}
}

// The ledger's calls on voices that have ended, or never were, do nothing.
func TestCallsOnAnEndedVoiceAreHarmless(t *testing.T) {
	m := NewMixer()
	m.Play(1, sound.Sound{ID: arena.SoundShot, Volume: sound.FullVolume})
	read(t, m, SampleRate) // the shot ends
	m.Play(2, sound.Sound{ID: arena.SoundThrust, Volume: sound.FullVolume})
	for _, v := range []sound.Voice{0, 1, 42} {
		m.SetVolume(v, sound.FullVolume)
		m.FadeOut(v, time.Second)
		m.Stop(v)
	}
	if v := m.Stats().Voices; v != 1 {
		t.Fatalf("%d voices, want the thrust's alone", v)
	}
	match(t, "thrust", read(t, m, 1000), samples(t, arena.SoundThrust), 0, 1)
}

// The mixer as the ledger's backend: Global music, an Event shot, a
// Stateful thrust started late by a correction.
func TestWithLedger(t *testing.T) {
	m := NewMixer()
	l, err := sound.NewLedger(sound.Config{Backend: m})
	if err != nil {
		t.Fatal(err)
	}
	l.Play(arena.SoundMusic, sound.FullVolume/4)
	l.Simulating(10)
	l.Trigger(arena.SoundShot+1, sound.FullVolume)
	var sc sound.Scene
	sc.Start(4, arena.SoundThrust+1, sound.FullVolume, 0) // six frames ago
	l.Update(&sc)
	if st := m.Stats(); st.Voices != 3 || st.Started != 3 || st.Unknown != 0 {
		t.Fatalf("%+v: want 3 voices", st)
	}
	if out := read(t, m, 1000); silent(out) {
		t.Error("silent")
	}
}

// The audio library reads from its goroutine while the game loop plays,
// stops, fades and turns sounds up and down (run with -race).
func TestConcurrentUse(t *testing.T) {
	m := NewMixer()
	reading, done := make(chan struct{}), make(chan struct{})
	read := make(chan struct{}, 1) // a token after each Read
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p := make([]byte, 1024)
		m.Read(p)
		close(reading)
		for {
			select {
			case <-done:
				return
			default:
				if n, _ := m.Read(p); n != len(p) {
					t.Errorf("Read = %d", n)
					return
				}
				select {
				case read <- struct{}{}:
				default:
				}
			}
		}
	}()
	<-reading
	ids := []sound.ID{arena.SoundMusic, arena.SoundShot + 2, arena.SoundExplosion + 5, arena.SoundThrust + 7, 0x999}
	for i := range 2000 {
		if i%100 == 0 {
			// Let the reader in: wait for a Read that ends after this point.
			select {
			case <-read:
			default:
			}
			select {
			case <-read:
			case <-time.After(5 * time.Second):
				t.Fatal("the reader stopped reading")
			}
		}
		v := sound.Voice(i%13 + 1)
		switch i % 5 {
		case 0:
			m.Play(v, sound.Sound{ID: ids[i%len(ids)], Offset: time.Duration(i) * time.Millisecond, Volume: sound.FullVolume})
		case 1:
			m.SetVolume(v, sound.Volume(i*31))
		case 2:
			m.FadeOut(v, time.Duration(i%50)*time.Millisecond)
		case 3:
			m.Stop(v)
		default:
			m.Stats()
		}
	}
	close(done)
	wg.Wait()
	if f := m.Stats().Frames; f <= 128 {
		t.Errorf("%d frames read: the reader did not run alongside", f)
	}
}

// eightVoices is the benchmark's mix: music and seven engines, all loops.
func eightVoices() *Mixer {
	m := NewMixer()
	m.Play(1, sound.Sound{ID: arena.SoundMusic, Volume: sound.FullVolume / 4})
	for i := range sound.ID(7) {
		m.Play(sound.Voice(i+2), sound.Sound{ID: arena.SoundThrust + i, Offset: time.Duration(i) * 30 * time.Millisecond, Volume: sound.FullVolume / 2})
	}
	return m
}

func TestReadDoesNotAllocate(t *testing.T) {
	m := eightVoices()
	p := make([]byte, 4096)
	m.Read(p)
	if a := testing.AllocsPerRun(100, func() { m.Read(p) }); a != 0 {
		t.Errorf("Read allocates %v times", a)
	}
}

func BenchmarkRead(b *testing.B) {
	m := eightVoices()
	p := make([]byte, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		m.Read(p)
	}
}

func Example() {
	m := NewMixer()
	ledger, _ := sound.NewLedger(sound.Config{Backend: m})
	ledger.Play(arena.SoundMusic, sound.FullVolume/4)

	// The audio library's side, as Ebitengine's NewPlayerF32 would read.
	p := make([]byte, 4096)
	for range SampleRate * 8 / 512 { // eight seconds
		m.Read(p)
	}
	st := m.Stats()
	fmt.Printf("%d frames, %d voice, audible: %v\n", st.Frames, st.Voices, st.Audible > st.Frames/2)
	// Output: 384000 frames, 1 voice, audible: true
}
