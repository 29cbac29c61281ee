package match

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/sound"
)

// TestSoundAgainstTheTruth plays whole matches with a sound ledger on every
// machine and extrapolated renders every tick, and holds the sounds each
// machine heard to the offline truth: every true Event sound heard exactly
// once, every phantom (a sound a misprediction started) faded out. The
// match must really have mispredicted sounds, or it proves nothing.
// Reference: issue 5, "Done when" (intercontinental, 4 players).
func TestSoundAgainstTheTruth(t *testing.T) {
	t.Parallel()
	cases := []struct {
		profile string
		players int
	}{{"wifi", 2}, {"intercontinental", 4}, {"hell", 8}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%dp-%s", c.players, c.profile), func(t *testing.T) {
			p, err := netsim.ParseProfile(c.profile)
			require.NoError(t, err)
			frames := 3600
			switch {
			case raceEnabled:
				frames = 600 // a sample: make test also runs it in full without the race detector
			case testing.Short():
				frames = 1200
			}
			r := Run(Config{Players: c.players, Frames: frames, Seed: 5, Profile: p, Extrapolate: true})
			require.NoError(t, r.Err)
			require.True(t, r.Verified, r.Desync)
			s := r.Sound
			t.Logf("%+v", s)
			assert.Zero(t, s.Duplicates)
			assert.Zero(t, s.Missed)
			assert.Equal(t, s.Phantoms, s.PhantomsFaded, "every phantom faded")
			assert.True(t, s.Clean())
			assert.Positive(t, s.True)
			assert.Positive(t, s.Phantoms, "mispredictions started sounds that never happened")
			assert.Positive(t, s.LateStarts, "corrections started sounds late")
			assert.Positive(t, s.StatefulLate, "corrections started engine loops part-way in")
			assert.Positive(t, s.StatefulStopped)
			assert.Zero(t, s.Evicted)
			assert.Positive(t, s.Suppressed, "extrapolated steps asked for sounds, and were not heard")
		})
	}
}

// TestScoreSound checks the scoring itself on a hand-written log, so that
// the soak's zeros mean something.
func TestScoreSound(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	k := func(id sound.ID, f rollback.Frame) soundKey { return soundKey{id, f} }
	truth := []soundKey{k(1, 1), k(2, 2), k(3, 3), k(4, 4), k(5, 5), k(9, 50)}
	index := map[soundKey]bool{}
	for _, t := range truth {
		index[t] = true
	}
	m := &machine{shown: make([]time.Duration, 60), voices: &voiceLog{}}
	m.ledger, _ = sound.NewLedger(sound.Config{Backend: m.voices})
	for f := range m.shown {
		m.shown[f] = ms(100 * f)
	}
	ev := func(key soundKey, start, end int) voiceRec {
		r := voiceRec{key: key, cat: sound.Event, start: ms(start), end: -1}
		if end >= 0 {
			r.end = ms(end)
		}
		return r
	}
	m.voices.voices = []voiceRec{
		ev(k(1, 1), 100, -1),  // on time
		ev(k(2, 2), 230, -1),  // 30 ms late
		ev(k(3, 3), 300, -1),  // heard twice at once: a duplicate
		ev(k(3, 3), 320, -1),  //
		ev(k(4, 4), 400, 420), // faded by one correction,
		ev(k(4, 4), 500, -1),  // restarted by the next (100 ms late)
		ev(k(5, 5), 500, 510), // faded and never restarted: missed
		ev(k(7, 7), 700, 750), // a phantom, faded after 50 ms
		ev(k(8, 8), 800, -1),  // a phantom never faded
		ev(k(9, 50), 5000, -1),
		{key: k(6, 6), cat: sound.Stateful, start: ms(600), end: -1}, // not an Event sound
	}
	r := scoreSound(m, truth, index, 10) // frame 50 is past the end
	assert.Equal(t, SoundReport{True: 5, Duplicates: 1, Missed: 1, Phantoms: 2, PhantomsFaded: 1, Restarts: 1,
		LateStarts: 2, LateSum: 130, LateMax: 100, PhantomSum: 50}, r)
	assert.False(t, r.Clean())
}
