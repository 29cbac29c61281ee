package sound_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/sound"
)

// tape is a Backend that writes down every call.
type tape struct{ calls []string }

func (t *tape) Play(v sound.Voice, s sound.Sound) {
	c := fmt.Sprintf("play %d %s id=%d frame=%d vol=%d", v, s.Category, s.ID, s.Frame, s.Volume)
	if s.Offset != 0 {
		c += fmt.Sprintf(" at=%v", s.Offset)
	}
	t.calls = append(t.calls, c)
}
func (t *tape) Stop(v sound.Voice) { t.calls = append(t.calls, fmt.Sprintf("stop %d", v)) }
func (t *tape) FadeOut(v sound.Voice, d time.Duration) {
	t.calls = append(t.calls, fmt.Sprintf("fade %d %v", v, d))
}
func (t *tape) SetVolume(v sound.Voice, vol sound.Volume) {
	t.calls = append(t.calls, fmt.Sprintf("volume %d %d", v, vol))
}

// take returns the calls since the last take.
func (t *tape) take() []string {
	c := t.calls
	t.calls = nil
	return c
}

func newLedger(t *testing.T, cfg sound.Config) (*sound.Ledger, *tape) {
	t.Helper()
	tp := &tape{}
	cfg.Backend = tp
	l, err := sound.NewLedger(cfg)
	require.NoError(t, err)
	return l, tp
}

// sim simulates frames from..to-1, triggering on each the sounds fire
// returns for it, as Game.Step would.
func sim(l *sound.Ledger, from, to rollback.Frame, fire func(f rollback.Frame) []sound.ID) {
	for f := from; f < to; f++ {
		l.Simulating(f)
		for _, id := range fire(f) {
			l.Trigger(id, sound.FullVolume)
		}
	}
}

func TestConfig(t *testing.T) {
	_, err := sound.NewLedger(sound.Config{})
	assert.ErrorIs(t, err, sound.ErrConfig)
	assert.ErrorContains(t, err, "Backend")
	cfg := sound.Config{Backend: &tape{}, FadeOut: -time.Millisecond}
	_, err = sound.NewLedger(cfg)
	assert.ErrorContains(t, err, "FadeOut")
	assert.Equal(t, -time.Millisecond, cfg.FadeOut, "validate does not change the caller's config")
	_, err = sound.NewLedger(sound.Config{Backend: &tape{}, FrameDuration: -1})
	assert.ErrorContains(t, err, "FrameDuration")

	assert.Equal(t, "global", sound.Global.String())
	assert.Equal(t, "event", sound.Event.String())
	assert.Equal(t, "stateful", sound.Stateful.String())
	assert.Equal(t, "Category(0)", sound.Category(0).String())
}

// TestGlobalPassesThrough: category 1 goes straight to the backend, whatever
// the simulation does, except while extrapolating.
// Reference: the INVERSUS article, "Audio Segregation".
func TestGlobalPassesThrough(t *testing.T) {
	l, tp := newLedger(t, sound.Config{})
	music := l.Play(7, 1000)
	assert.Equal(t, []string{"play 1 global id=7 frame=0 vol=1000"}, tp.take())
	l.SetVolume(music, 500)
	l.FadeOut(music, time.Second)
	l.Stop(music)
	l.Stop(0)
	assert.Equal(t, []string{"volume 1 500", "fade 1 1s", "stop 1"}, tp.take())

	sim(l, 0, 10, func(rollback.Frame) []sound.ID { return nil })
	sim(l, 5, 10, func(rollback.Frame) []sound.ID { return nil }) // a rollback
	l.Play(7, 1000)
	assert.Equal(t, []string{"play 2 global id=7 frame=0 vol=1000"}, tp.take(), "rollbacks do not touch it")

	l.Extrapolating(true)
	assert.Zero(t, l.Play(7, 1000))
	l.Extrapolating(false)
	assert.Empty(t, tp.take())
	assert.Equal(t, int64(2), l.Stats().Played)
	assert.Equal(t, int64(1), l.Stats().Suppressed)
}

// TestEventOncePerFrame: category 2 plays a sound once per (sound, frame),
// ignores a re-simulated frame asking again, and plays from its start a
// sound that a correction first asks for.
func TestEventOncePerFrame(t *testing.T) {
	l, tp := newLedger(t, sound.Config{})
	l.Simulating(0)
	assert.Equal(t, sound.Voice(1), l.Trigger(5, 100))
	assert.Zero(t, l.Trigger(5, 100), "the same sound on the same frame plays once")
	assert.Equal(t, sound.Voice(2), l.Trigger(6, 100), "another sound on the same frame plays")
	l.Simulating(1)
	assert.Equal(t, sound.Voice(3), l.Trigger(5, 100), "the same sound on the next frame plays")
	assert.Equal(t, []string{
		"play 1 event id=5 frame=0 vol=100", "play 2 event id=6 frame=0 vol=100", "play 3 event id=5 frame=1 vol=100",
	}, tp.take())

	// A rollback re-simulates frames 0 and 1: the same requests are ignored,
	// a new one (the remote player's shot the prediction missed) plays.
	l.Simulating(0)
	l.Trigger(5, 100)
	l.Trigger(6, 100)
	l.Simulating(1)
	l.Trigger(5, 100)
	l.Trigger(9, 100)
	l.Simulating(2)
	assert.Equal(t, []string{"play 4 event id=9 frame=1 vol=100"}, tp.take())
	st := l.Stats()
	assert.Equal(t, int64(4), st.Triggered)
	assert.Equal(t, int64(4), st.Repeats)
	assert.Zero(t, st.Faded)
}

// TestEventFadesWhatNeverHappened: when a re-simulation passes a frame
// without asking again for a sound it started, the sound fades out over
// the configured time; if a later correction brings it back, it plays again
// from its start. Sounds of frames not re-simulated are left alone.
func TestEventFadesWhatNeverHappened(t *testing.T) {
	l, tp := newLedger(t, sound.Config{FadeOut: 80 * time.Millisecond})
	explode := func(f rollback.Frame) []sound.ID {
		if f == 3 || f == 8 {
			return []sound.ID{42}
		}
		return nil
	}
	sim(l, 0, 10, explode)
	assert.Equal(t, []string{"play 1 event id=42 frame=3 vol=65535", "play 2 event id=42 frame=8 vol=65535"}, tp.take())

	// The correction: the shot at frame 8 missed.
	sim(l, 5, 10, func(f rollback.Frame) []sound.ID { return nil })
	assert.Empty(t, tp.take(), "not decided until the re-simulation ends")
	l.Simulating(10)
	assert.Equal(t, []string{"fade 2 80ms"}, tp.take())

	// Another correction: it hit after all. It plays again, from its start.
	sim(l, 6, 11, explode)
	l.Update(nil) // ends the re-simulation as well as the next frame would
	assert.Equal(t, []string{"play 3 event id=42 frame=8 vol=65535"}, tp.take())
	assert.Equal(t, int64(1), l.Stats().Faded)

	// A re-simulation cut short by a rollback further back still settles
	// the frames it passed, and no more.
	sim(l, 9, 11, func(rollback.Frame) []sound.ID { return nil })
	sim(l, 7, 9, func(rollback.Frame) []sound.ID { return nil })
	assert.Empty(t, tp.take())
	sim(l, 9, 12, func(rollback.Frame) []sound.ID { return nil })
	assert.Equal(t, []string{"fade 3 80ms"}, tp.take())
	assert.Equal(t, int64(2), l.Stats().Faded)
}

// TestHistoryWrapsAt128: the history holds the last 128 (sound, frame)
// pairs; the oldest is forgotten (and would play again), the rest are not.
func TestHistoryWrapsAt128(t *testing.T) {
	l, tp := newLedger(t, sound.Config{})
	one := func(f rollback.Frame) []sound.ID { return []sound.ID{sound.ID(f % 3)} }
	sim(l, 0, sound.HistorySize+1, one) // 129 sounds
	assert.Len(t, tp.take(), sound.HistorySize+1)

	sim(l, 1, sound.HistorySize+1, one) // frames 1…128 are the 128 remembered
	assert.Empty(t, tp.take(), "the last 128 are remembered")
	sim(l, 0, 1, one)
	assert.Equal(t, []string{"play 130 event id=0 frame=0 vol=65535"}, tp.take(), "the 129th-newest was forgotten")
	assert.Equal(t, int64(1), l.Stats().Evicted, "room for it pushed out frame 1's, during the re-simulation from 0")

	// Pushing out an entry while its frame is being re-simulated is counted:
	// that sound can no longer be faded or recognised.
	l2, _ := newLedger(t, sound.Config{})
	sim(l2, 0, 10, one)
	l2.Simulating(0) // re-simulates 0…9, marking their ten entries
	for k := range sound.HistorySize {
		l2.Trigger(sound.ID(100+k), 1)
	}
	assert.Equal(t, int64(10), l2.Stats().Evicted)
}

// TestSuppressedWhileExtrapolating: nothing plays from an extrapolated
// step, and nothing is remembered from it: the real frame still plays.
func TestSuppressedWhileExtrapolating(t *testing.T) {
	l, tp := newLedger(t, sound.Config{})
	sc := &sound.Scene{}
	sim(l, 0, 5, func(rollback.Frame) []sound.ID { return nil })
	l.Extrapolating(true)
	assert.Zero(t, l.Trigger(1, 1))
	sc.Start(5, 2, 1, 0)
	l.Update(sc)
	l.Extrapolating(false)
	assert.Empty(t, tp.take())
	sc.Stop(1 | 1<<8)
	l.Simulating(5)
	assert.NotZero(t, l.Trigger(1, 1), "the frame itself plays")
	assert.Equal(t, int64(1), l.Stats().Suppressed)

	var nilLedger *sound.Ledger
	assert.Zero(t, nilLedger.Trigger(1, 1), "a nil ledger is silent")
}

// TestStatefulFollowsTheState: category 3 sounds live in the scene; Update
// starts, stops and adjusts the backend's voices to match it, starting a
// sound that a correction added part-way through. Rolling the scene back
// and re-simulating the same start keeps the voice untouched.
func TestStatefulFollowsTheState(t *testing.T) {
	l, tp := newLedger(t, sound.Config{FrameDuration: 10 * time.Millisecond})
	var sc sound.Scene
	var thrust sound.Instance
	l.Simulating(0)
	thrust = sc.Start(0, 3, 1000, 0)
	require.NotZero(t, thrust)
	l.Update(&sc)
	assert.Equal(t, []string{"play 1 stateful id=3 frame=0 vol=1000"}, tp.take())

	saved := sc // a snapshot at the start of frame 1
	l.Simulating(1)
	sc.SetVolume(thrust, 2000)
	mispredicted := sc.Start(1, 4, 500, 3) // a three-frame charging sound
	require.NotZero(t, mispredicted)
	l.Update(&sc)
	assert.Equal(t, []string{"volume 1 2000", "play 2 stateful id=4 frame=1 vol=500"}, tp.take())

	// A rollback to frame 1: the corrected frames stop the thrust and start
	// the charge a frame later. The voice follows; no duplicates.
	sc = saved
	l.Simulating(1)
	sc.Stop(thrust)
	l.Simulating(2)
	charge := sc.Start(2, 4, 500, 3)
	l.Simulating(3)
	l.Update(&sc)
	assert.Equal(t, []string{"stop 1", "stop 2", "play 3 stateful id=4 frame=2 vol=500 at=10ms"}, tp.take(),
		"the thrust and the mispredicted charge stop; the true charge starts one frame in")
	assert.True(t, sc.Playing(charge, 4))
	assert.False(t, sc.Playing(charge, 5), "three frames: 2, 3 and 4")
	assert.False(t, sc.Playing(thrust, 3))

	// Re-simulating the same start keeps the voice; a natural end is not a stop.
	sc2 := sc
	l.Simulating(3)
	sc = sc2
	l.Update(&sc)
	assert.Empty(t, tp.take())
	sim(l, 4, 7, func(rollback.Frame) []sound.ID { return nil })
	l.Update(&sc)
	assert.Empty(t, tp.take(), "the charge ended by itself")
	st := l.Stats()
	assert.Equal(t, int64(3), st.StatefulStarted)
	assert.Equal(t, int64(1), st.StatefulLate)
	assert.Equal(t, int64(2), st.StatefulStopped)
}

func TestSceneInstances(t *testing.T) {
	var sc sound.Scene
	var ins []sound.Instance
	for range sound.SceneSize {
		in := sc.Start(10, 1, 1, 0)
		require.NotZero(t, in)
		ins = append(ins, in)
	}
	assert.Zero(t, sc.Start(10, 1, 1, 0), "a full scene starts nothing")
	sc.Stop(ins[3])
	again := sc.Start(11, 2, 1, 0)
	require.NotZero(t, again)
	assert.NotEqual(t, ins[3], again, "a reused slot gets a new instance")
	sc.Stop(ins[3]) // stale: must not stop the new sound
	sc.SetVolume(ins[3], 9)
	assert.True(t, sc.Playing(again, 11))
	assert.Equal(t, sound.Volume(1), sc.Slots[3].Volume)
	for _, bad := range []sound.Instance{0, 0xff, 17, 1 << 30} {
		sc.Stop(bad)
		sc.SetVolume(bad, 3)
		assert.False(t, sc.Playing(bad, 11))
	}
	// A one-shot frees its slot when it ends.
	var one sound.Scene
	for range sound.SceneSize {
		one.Start(0, 1, 1, 2)
	}
	assert.Zero(t, one.Start(1, 1, 1, 2))
	assert.NotZero(t, one.Start(2, 1, 1, 2))
}

// TestAgainstTheTruth drives a ledger the way a session does in a lossy
// match — frames simulated with guesses, rollbacks re-simulating from a
// random earlier frame with better guesses — for a game whose sounds on a
// frame depend on the guess, and checks the sounds heard against the truth
// (the sounds of the final simulation of every frame): every true sound
// started exactly once without overlapping itself, and every sound that
// never truly happened was faded.
func TestAgainstTheTruth(t *testing.T) {
	for seed := range uint64(50) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 9))
			faded := checkAgainstTruth(t, 600, r.IntN)
			assert.Positive(t, faded, "the test un-happened some sounds")
		})
	}
}

// FuzzLedger is TestAgainstTheTruth with the fuzzer choosing the guesses
// and the rollbacks.
func FuzzLedger(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1, 2, 0, 3, 1, 1, 2, 7, 0, 0, 5, 9, 2, 2, 2, 0, 1})
	f.Add([]byte("a rollback every frame, re-simulating everything"))
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func(n int) int {
			if len(data) == 0 {
				return 0
			}
			b := int(data[0])
			data = data[1:]
			return b % n
		}
		checkAgainstTruth(t, 200, next)
	})
}

// checkAgainstTruth plays frames frames with rollbacks chosen by next (a
// source of numbers in [0, n)) and checks what was heard; it returns how
// many sounds were faded.
func checkAgainstTruth(t *testing.T, frames int, next func(n int) int) int64 {
	tp := &tape{}
	l, err := sound.NewLedger(sound.Config{Backend: tp})
	require.NoError(t, err)
	// version[f] is how good the guess for frame f was when it was last
	// simulated; the sounds depend on it. The final version is the truth.
	version := make([]int, frames)
	sounds := func(f rollback.Frame, v int) []sound.ID {
		var ids []sound.ID
		h := uint64(f)*0x9e3779b97f4a7c15 ^ uint64(v)*0xbf58476d1ce4e5b9
		for k := range 3 {
			if (h>>(8*k))%5 == 0 {
				ids = append(ids, sound.ID(k))
			}
		}
		return ids
	}
	step := func(f rollback.Frame) {
		l.Simulating(f)
		for _, id := range sounds(f, version[f]) {
			l.Trigger(id, 1)
		}
	}
	confirmed := 0
	for f := range frames {
		version[f] = next(3)
		step(rollback.Frame(f))
		if next(3) == 0 && f > confirmed {
			// A correction arrives: re-simulate from a frame after the
			// confirmed one, with better guesses for some frames. (At most
			// 40 frames: HistorySize must cover a re-simulation's sounds.)
			from := max(confirmed, f-40) + next(min(f-confirmed, 40)+1)
			for g := from; g <= f; g++ {
				if next(2) == 0 {
					version[g] = next(3)
				}
			}
			for g := from; g <= f; g++ {
				step(rollback.Frame(g))
			}
			confirmed = min(f, confirmed+next(8))
		}
		if next(4) > 0 {
			l.Update(nil)
		}
	}
	// Finally every frame is confirmed: re-simulate the unconfirmed tail
	// once more, as the last rollback would.
	if confirmed < frames {
		for g := max(confirmed, frames-41); g < frames; g++ {
			step(rollback.Frame(g))
		}
	}
	l.Update(nil)

	truth := map[string]bool{}
	for f := range frames {
		for _, id := range sounds(rollback.Frame(f), version[f]) {
			truth[fmt.Sprintf("id=%d frame=%d", id, f)] = true
		}
	}
	type voice struct {
		key   string
		faded bool
	}
	var voices []voice
	for _, c := range tp.calls {
		switch {
		case strings.HasPrefix(c, "play"):
			var v int
			var cat string
			_, err := fmt.Sscanf(c, "play %d %s", &v, &cat)
			require.NoError(t, err)
			require.Equal(t, len(voices)+1, v)
			voices = append(voices, voice{key: c[strings.Index(c, "id="):strings.Index(c, " vol")]})
		case strings.HasPrefix(c, "fade"):
			var v int
			_, err := fmt.Sscanf(c, "fade %d", &v)
			require.NoError(t, err)
			voices[v-1].faded = true
		}
	}
	heard := map[string]int{} // un-faded starts
	for _, v := range voices {
		if !truth[v.key] {
			assert.True(t, v.faded, "phantom %s was faded", v.key)
			continue
		}
		if !v.faded {
			heard[v.key]++
		}
	}
	for k := range truth {
		assert.Equal(t, 1, heard[k], "true sound %s is heard exactly once", k)
	}
	assert.Zero(t, l.Stats().Evicted)
	return l.Stats().Faded
}
