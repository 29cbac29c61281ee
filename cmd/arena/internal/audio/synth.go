package audio

import (
	"sync"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/sound"
)

// SampleRate is the rate of every sound in the bank and of the Mixer's
// output, in frames per second.
const SampleRate = 48000

// Lookup returns the samples of the arena's sound id (mono, from -1 to 1, at
// SampleRate) and whether it loops; ok is false for an ID the arena does not
// use. The slice is shared by every caller: do not modify it.
//
// A ship's shot, explosion and thrust are its base ID plus its index
// (arena.SoundShot+3 is ship 3's shot). Shots rise in pitch with the ship's
// index, so players can tell whose gun it was.
func Lookup(id sound.ID) (samples []float32, loop bool, ok bool) {
	b := theBank()
	ship := func(base sound.ID) bool { return id >= base && id < base+arena.MaxShips }
	switch {
	case id == arena.SoundMusic:
		return b.music, true, true
	case ship(arena.SoundShot):
		return b.shot[id&7], false, true
	case ship(arena.SoundExplosion):
		return b.explosion, false, true
	case ship(arena.SoundThrust):
		return b.thrust, true, true
	}
	return nil, false, false
}

// bank holds every sound, synthesised once.
type bank struct {
	shot      [arena.MaxShips][]float32
	explosion []float32 // one for every ship
	thrust    []float32 // a loop, one for every ship
	music     []float32 // a loop
}

var (
	bankOnce   sync.Once
	sharedBank *bank
)

// theBank builds the bank on first use (about 25 ms) and returns it.
func theBank() *bank {
	bankOnce.Do(func() { sharedBank = newBank() })
	return sharedBank
}

func newBank() *bank {
	b := &bank{explosion: explosion(), thrust: thrust(), music: music()}
	for i := range b.shot {
		b.shot[i] = shot(i)
	}
	return b
}

// Levels: the peak of each sound at full volume. Several sounds at once
// may still add up past 1; the Mixer's limiter squeezes those peaks.
const (
	shotPeak      = one * 35 / 100
	explosionPeak = one * 70 / 100
	thrustPeak    = one * 30 / 100
	musicPeak     = one * 50 / 100 // the demo plays it at a quarter volume
)

// shot is ship's shot: a 120 ms square-wave chirp that falls an octave and a
// half, with a fast decay. The first ship's starts at 1100 Hz, each next
// one's 80 Hz higher.
func shot(ship int) []float32 {
	const n = SampleRate * 120 / 1000
	out := make([]int64, n)
	step := int64(hz(1100 + 80*ship))
	env := newDecay(SampleRate * 30 / 1000)
	fall := newDecay(n * 10 / 11) // the pitch falls by a factor 3 (e^1.1) over the sound
	var ph uint32
	for i := range out {
		out[i] = mul(mul(square(ph), env.next()), edges(i, n, 96, 240))
		ph += uint32(step * fall.next() >> 16)
	}
	return finish(out, shotPeak)
}

// explosion is a 700 ms burst of low-passed noise whose filter closes as it
// decays, over a thump: a sine that falls from 70 Hz.
func explosion() []float32 {
	const n = SampleRate * 700 / 1000
	out := make([]int64, n)
	rng := noise(0x2545f491)
	closed := newLowpass(300).a
	open := newLowpass(2400).a - closed // how much further the filter is open at the start
	lp := lowpass{a: closed}
	env := newDecay(SampleRate * 160 / 1000)
	thumpEnv := newDecay(SampleRate * 120 / 1000)
	fall := newDecay(n)
	step := int64(hz(70))
	var ph uint32
	for i := range out {
		e := env.next()
		lp.a = closed + mul(open, e)
		rumble := mul(lp.next(rng.next()), e)
		thump := mul(sine(ph), thumpEnv.next())
		ph += uint32(step * fall.next() >> 16)
		out[i] = mul(3*rumble+thump, edges(i, n, 48, 480))
	}
	return finish(out, explosionPeak)
}

// thrust is a 500 ms loop of engine rumble: noise and a 50 Hz saw through a
// two-pole low-pass, wobbling at 12 Hz.
//
// It loops without a click: the saw and the wobble repeat a whole number of
// times in the loop (25 and 6), and the noise, which never repeats, is
// rendered past the loop's end and crossfaded into its start, so the last
// sample flows into the first.
func thrust() []float32 {
	const (
		n    = SampleRate / 2  // the loop
		fade = SampleRate / 20 // the crossfade at its start
		warm = SampleRate / 10 // rendered first and dropped: the filters settle
	)
	x := make([]int64, warm+n+fade)
	rng := noise(0x6b8b4567)
	lp1, lp2 := newLowpass(500), newLowpass(500)
	for k := range x {
		x[k] = lp2.next(lp1.next(rng.next() + saw(phaseAt(k, SampleRate/50))))
	}
	x = x[warm:]
	out := make([]int64, n)
	for i := range out {
		v := x[i]
		if i < fade { // the start fades in over the sound that follows the end
			v = (x[i]*int64(i) + x[n+i]*int64(fade-i)) / fade
		}
		wobble := one*3/4 + triangle(phaseAt(i, SampleRate/12))/4
		out[i] = mul(v, wobble)
	}
	return finish(out, thrustPeak)
}

// music is an 8 s loop at 120 BPM in A minor: four bars (Am, F, G, E) of a
// triangle bass in eighth notes under a square-wave arpeggio in sixteenths.
// Every note fades in and out, so the loop point (the last bar's E leads
// back to Am) does not click.
func music() []float32 {
	const (
		beat = SampleRate / 2 // 120 beats a minute
		bar  = 4 * beat
		ms   = SampleRate / 1000
	)
	chords := [4][4]int{ // MIDI notes: root, third, fifth, octave
		{57, 60, 64, 69}, // A minor
		{53, 57, 60, 65}, // F major
		{55, 59, 62, 67}, // G major
		{52, 56, 59, 64}, // E major
	}
	bass := [8]int{0, 0, 12, 0, 0, 7, 12, 0}                       // semitones above the root, an octave down
	arp := [16]int{0, 1, 2, 3, 2, 1, 2, 3, 0, 1, 2, 3, 2, 3, 2, 1} // chord tones, an octave up
	out := make([]int64, len(chords)*bar)
	for b, ch := range chords {
		at := out[b*bar:]
		for j, st := range bass {
			note(at[j*beat/2:][:beat/2], noteStep(ch[0]-12+st), triangle, one/2, 5*ms, 250*ms, 20*ms)
		}
		for j, t := range arp {
			note(at[j*beat/4:][:beat/4], noteStep(ch[t]+12), square, one/8, 2*ms, 60*ms, 5*ms)
		}
	}
	return finish(out, musicPeak)
}

// note adds one note to the whole of out: a wave at phase step step and
// amplitude amp, fading in over attack samples, decaying exponentially
// (time constant tau samples) and fading to silence over the last release
// samples.
func note(out []int64, step uint32, wave func(uint32) int64, amp int64, attack, tau, release int) {
	env := newDecay(tau)
	var ph uint32
	for i := range out {
		out[i] += mul(mul(wave(ph), amp), mul(env.next(), edges(i, len(out), attack, release)))
		ph += step
	}
}

// The synthesiser works in integers, as the arena game itself does, so that
// every machine makes the same samples bit for bit: floating-point code
// may be compiled to fused multiply-adds on some processors and not on
// others. A sample is 16.16 fixed point, one being full scale; only finish
// turns samples into floats, exactly (a power-of-two division).
const one = 1 << 16

// mul multiplies two 16.16 numbers.
func mul(a, b int64) int64 { return a * b >> 16 }

// hz is the phase step of a frequency: an oscillator's phase is a uint32
// that wraps once a period.
func hz(f int) uint32 { return uint32(int64(f) << 32 / SampleRate) }

// phaseAt is the phase of an oscillator of period samples at sample k,
// computed exactly so that a loop holding a whole number of periods joins
// up.
func phaseAt(k, period int) uint32 { return uint32(uint64(k%period) << 32 / uint64(period)) }

// semitones holds 2^(k/12) in 16.16 fixed point: the equal-tempered steps
// above A.
var semitones = [12]int64{65536, 69433, 73562, 77936, 82570, 87480, 92682, 98193, 104032, 110218, 116772, 123715}

// noteStep is the phase step of MIDI note m (69 is A4, 440 Hz).
func noteStep(m int) uint32 {
	k := m - 69 + 120 // +10 octaves keeps k positive
	step := int64(hz(440)) * semitones[k%12] >> 16
	if oct := k/12 - 10; oct >= 0 {
		step <<= oct
	} else {
		step >>= -oct
	}
	return uint32(step)
}

// Waveforms, from -one to one, of a phase that wraps at 1<<32.

func saw(ph uint32) int64 { return int64(int32(ph)) >> 15 }

func square(ph uint32) int64 {
	if ph < 1<<31 {
		return one
	}
	return -one
}

func triangle(ph uint32) int64 { return 2*abs(saw(ph)) - one }

// sine is a parabola close to a sine: 4x(1-|x|) over each half period.
func sine(ph uint32) int64 {
	x := saw(ph)
	return 4 * x * (one - abs(x)) / one
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// noise is a xorshift32 generator: from a fixed seed, the same "random"
// samples every time.
type noise uint32

func (n *noise) next() int64 {
	x := uint32(*n)
	x ^= x << 13
	x ^= x >> 17
	x ^= x << 5
	*n = noise(x)
	return int64(int32(x)) >> 15
}

// decay is an exponential envelope (2.30 fixed point inside) from one to
// silence, falling by a factor e every tau samples. Its next value is
// 16.16.
type decay struct{ env, k int64 }

func newDecay(tau int) decay { return decay{1 << 30, 1<<30 - 1<<30/int64(tau)} } // e^(-1/tau) ≈ 1 - 1/tau

func (d *decay) next() int64 {
	e := d.env
	d.env = d.env * d.k >> 30
	return e >> 14
}

// lowpass is a one-pole low-pass filter: its output moves a fraction a (of
// one) of the way to each input. That fraction is 2π × cutoff / rate,
// close to the exact figure for cutoffs well below the rate.
type lowpass struct{ y, a int64 }

func newLowpass(cutoff int) lowpass {
	const twoPi = 411775 // 16.16
	return lowpass{a: min(twoPi*int64(cutoff)/SampleRate, one)}
}

func (f *lowpass) next(x int64) int64 {
	f.y += mul(x-f.y, f.a)
	return f.y
}

// edges is the gain (0 to one) of sample i of n: a linear fade-in over the
// first in samples and a fade-out to silence over the last out samples, so
// that a sound neither starts nor ends with a click.
func edges(i, n, in, out int) int64 {
	g := int64(one)
	if i < in {
		g = min(g, int64(i)*one/int64(in))
	}
	if r := n - 1 - i; r < out {
		g = min(g, int64(r)*one/int64(out))
	}
	return g
}

// finish scales a sound so that its loudest sample is peak (16.16, at most
// one) and turns it into floats.
func finish(buf []int64, peak int64) []float32 {
	top := int64(1)
	for _, v := range buf {
		top = max(top, abs(v))
	}
	out := make([]float32, len(buf))
	for i, v := range buf {
		out[i] = float32(v*peak/top) / one
	}
	return out
}
