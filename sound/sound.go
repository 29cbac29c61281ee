// Package sound plays a rollback game's sounds so that a correction neither
// repeats them nor drops them.
//
// A [Ledger] sits between the game and its audio library (the [Backend],
// which the game implements: play, stop, fade out, set volume; the package
// contains no mixer). Sounds come in three [Category] values, as in
// INVERSUS:
//
//   - [Global] sounds are not gameplay (music, menus): [Ledger.Play] passes
//     them straight to the backend.
//   - [Event] sounds are fire-and-forget gameplay sounds (shots,
//     explosions), started from [rollback.Game.Step] with [Ledger.Trigger].
//     The ledger keeps the last [HistorySize] (sound, frame) pairs it
//     started: a request that matches one is a re-simulated frame asking
//     again and is ignored, so the sound plays once and is never cut; a
//     request that does not match plays from its start, even when a
//     correction first asked for it (the remote player's shot that the
//     prediction missed). The same sound on the same frame plays once.
//   - [Stateful] sounds (loops, charging sounds) live in a [Scene] inside
//     the game's arena, so they roll back with the state; game logic starts,
//     adjusts and stops them. During a re-simulation nothing is output: their
//     play position is the frames elapsed since their start, so it moves on
//     by itself. After each Advance, [Ledger.Update] makes the backend play
//     what the scene holds: sounds a correction added start part-way
//     through, sounds it removed stop.
//
// Beyond the article, when a rollback re-simulates past a frame and an
// Event sound started on that frame is not asked for again, the ledger
// fades it out over Config.FadeOut: the explosion that never happened is
// silenced within a few frames instead of playing to its end. If a later
// correction brings it back, it plays again from its start.
//
// The ledger is a [rollback.Observer]: give it to the session as
// Config.Observer, and it learns which frames are first simulations and
// which are re-simulations, and is told to suppress every sound while
// [rollback.Session.Extrapolate] steps and renders a throwaway state.
//
// A Ledger is not safe for concurrent use; like the session, it is driven
// from the game loop.
package sound

import (
	"errors"
	"fmt"
	"time"

	"github.com/rewindgg/rewind/rollback"
)

// Category says how a sound relates to the game state.
type Category uint8

// The three categories of sound.
const (
	// Global sounds are unrelated to networked gameplay: music, menus,
	// announcements. They pass straight through.
	Global Category = 1 + iota
	// Event sounds are fire-and-forget gameplay sounds, started at most
	// once per sound and frame.
	Event
	// Stateful sounds live in the game state (a Scene) and roll back
	// with it.
	Stateful
)

func (c Category) String() string {
	switch c {
	case Global:
		return "global"
	case Event:
		return "event"
	case Stateful:
		return "stateful"
	}
	return fmt.Sprintf("Category(%d)", uint8(c))
}

// ID names a sound: an asset, or an asset and an instance key of the game's
// choosing (two ships' shots can have different IDs to play twice on one
// frame).
type ID uint32

// Voice identifies one playing sound for the [Backend]. The ledger numbers
// voices from 1 in the order it starts them; 0 is no voice.
type Voice uint32

// Volume is a linear gain from 0 (silent) to [FullVolume].
type Volume uint16

// FullVolume is the loudest Volume.
const FullVolume Volume = 0xffff

// Sound describes a sound for the [Backend] to start.
type Sound struct {
	ID       ID
	Category Category
	// Frame is the simulation frame that started the sound (Event and
	// Stateful sounds); 0 for Global ones.
	Frame rollback.Frame
	// Offset is how far into the sound to begin: non-zero for a Stateful
	// sound that a correction started in the past. For a loop it may exceed
	// the sound's length; wrap it.
	Offset time.Duration
	Volume Volume
}

// Backend is the game's audio library, as the ledger drives it. Calls on a
// voice that has already finished must be harmless.
type Backend interface {
	// Play starts s on voice v.
	Play(v Voice, s Sound)
	// Stop silences v at once.
	Stop(v Voice)
	// FadeOut fades v to silence over d, then stops it.
	FadeOut(v Voice, d time.Duration)
	// SetVolume changes v's volume.
	SetVolume(v Voice, vol Volume)
}

// HistorySize is how many (sound, frame) pairs the ledger remembers, as in
// INVERSUS. It must cover the Event sounds of the longest re-simulation: a
// pair pushed out of the history and asked for again plays twice.
const HistorySize = 128

// Defaults for [Config].
const (
	DefaultFadeOut       = 50 * time.Millisecond
	DefaultFrameDuration = time.Second / 60
)

// ErrConfig reports an unusable [Config]; the message names the field.
var ErrConfig = errors.New("sound: invalid config")

// Config configures a [Ledger]. The zero value of each optional field means
// its documented default.
type Config struct {
	// Backend plays the sounds. Required.
	Backend Backend
	// FadeOut is how quickly an Event sound that a rollback un-happened
	// fades to silence; 0 means DefaultFadeOut (50 ms).
	FadeOut time.Duration
	// FrameDuration is the simulation period, used to start Stateful
	// sounds part-way through; 0 means DefaultFrameDuration (1/60 s).
	FrameDuration time.Duration
}

func (c *Config) validate() error {
	switch {
	case c.Backend == nil:
		return fmt.Errorf("%w: Backend is nil", ErrConfig)
	case c.FadeOut < 0:
		return fmt.Errorf("%w: FadeOut %v is negative", ErrConfig, c.FadeOut)
	case c.FrameDuration < 0:
		return fmt.Errorf("%w: FrameDuration %v is negative", ErrConfig, c.FrameDuration)
	}
	return nil
}

// Stats counts what a ledger did.
type Stats struct {
	Played          int64 // Global sounds started
	Triggered       int64 // Event sounds started
	Repeats         int64 // Event requests ignored: already started for that frame
	Faded           int64 // Event sounds faded out because a rollback un-happened them
	Evicted         int64 // history entries pushed out while their frame was being re-simulated
	Suppressed      int64 // requests ignored while extrapolating
	StatefulStarted int64 // Stateful sounds started by Update
	StatefulLate    int64 // of those, started part-way through (a correction added them)
	StatefulStopped int64 // Stateful sounds stopped early (a correction removed them)
}

type entry struct {
	id      ID
	frame   rollback.Frame
	voice   Voice
	valid   bool
	pending bool // its frame is being re-simulated and has not asked for it again
}

// Ledger keeps a game's sounds consistent across rollbacks. Create one with
// [NewLedger].
type Ledger struct {
	b        Backend
	fade     time.Duration
	frameDur time.Duration

	hist    [HistorySize]entry
	head    int            // the next history slot to write
	pending int            // entries marked pending
	cur     rollback.Frame // the frame being (or last) simulated; -1 before the first
	high    rollback.Frame // the newest frame simulated

	suppressed bool
	voice      Voice // the last voice handed out

	tracked  [SceneSize]tracked
	ntracked int

	stats Stats
}

var _ rollback.Observer = (*Ledger)(nil)

// NewLedger returns a ledger that plays through cfg.Backend.
func NewLedger(cfg Config) (*Ledger, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := &Ledger{b: cfg.Backend, fade: cfg.FadeOut, frameDur: cfg.FrameDuration, cur: -1, high: -1}
	if l.fade == 0 {
		l.fade = DefaultFadeOut
	}
	if l.frameDur == 0 {
		l.frameDur = DefaultFrameDuration
	}
	return l, nil
}

// Stats returns the ledger's counters.
func (l *Ledger) Stats() Stats { return l.stats }

// Simulating implements [rollback.Observer]: the session is about to
// simulate frame f. A frame not after the current one starts a
// re-simulation from f: every Event sound started on frame f or later
// must be asked for again before the re-simulation passes its frame, or it
// is faded out.
func (l *Ledger) Simulating(f rollback.Frame) {
	switch {
	case f <= l.cur:
		l.settle(f) // a re-simulation cut short by a new one: it did pass these frames
		for i := range l.hist {
			if e := &l.hist[i]; e.valid && !e.pending && e.frame >= f {
				e.pending = true
				l.pending++
			}
		}
	case f > l.high:
		l.settle(f) // a re-simulation has caught up
	}
	l.cur = f
	l.high = max(l.high, f)
}

// Extrapolating implements [rollback.Observer]: while on, every request is
// ignored, so nothing from a throwaway state is heard.
func (l *Ledger) Extrapolating(on bool) { l.suppressed = on }

// Trigger starts Event sound id for the frame being simulated, at volume
// vol, unless it was already started for that frame. Call it from
// [rollback.Game.Step]. It returns the voice it started, or 0. A nil
// Ledger ignores every request, so a game can run without sound.
func (l *Ledger) Trigger(id ID, vol Volume) Voice {
	if l == nil {
		return 0
	}
	if l.suppressed {
		l.stats.Suppressed++
		return 0
	}
	f := max(l.cur, 0)
	for i := range l.hist {
		if e := &l.hist[i]; e.valid && e.id == id && e.frame == f {
			if e.pending {
				e.pending = false
				l.pending--
			}
			l.stats.Repeats++
			return 0
		}
	}
	v := l.nextVoice()
	if e := &l.hist[l.head]; e.valid && e.pending {
		l.pending--
		l.stats.Evicted++
	}
	l.hist[l.head] = entry{id: id, frame: f, voice: v, valid: true}
	l.head = (l.head + 1) % HistorySize
	l.stats.Triggered++
	l.b.Play(v, Sound{ID: id, Category: Event, Frame: f, Volume: vol})
	return v
}

// Play starts Global sound id at volume vol and returns its voice, or 0
// while extrapolating. Control it with [Ledger.Stop], [Ledger.FadeOut] and
// [Ledger.SetVolume].
func (l *Ledger) Play(id ID, vol Volume) Voice {
	if l.suppressed {
		l.stats.Suppressed++
		return 0
	}
	v := l.nextVoice()
	l.stats.Played++
	l.b.Play(v, Sound{ID: id, Category: Global, Volume: vol})
	return v
}

// Stop stops voice v (0 is ignored).
func (l *Ledger) Stop(v Voice) {
	if v != 0 {
		l.b.Stop(v)
	}
}

// FadeOut fades voice v out over d (0 is ignored).
func (l *Ledger) FadeOut(v Voice, d time.Duration) {
	if v != 0 {
		l.b.FadeOut(v, d)
	}
}

// SetVolume sets voice v's volume (0 is ignored).
func (l *Ledger) SetVolume(v Voice, vol Volume) {
	if v != 0 {
		l.b.SetVolume(v, vol)
	}
}

// settle fades out every pending Event sound of a frame before f: the
// re-simulation passed its frame without asking for it.
func (l *Ledger) settle(f rollback.Frame) {
	if l.pending == 0 {
		return
	}
	for i := range l.hist {
		e := &l.hist[i]
		if !e.valid || !e.pending || e.frame >= f {
			continue
		}
		l.pending--
		v := e.voice
		*e = entry{} // forgotten: if a later correction brings it back, it plays again
		l.stats.Faded++
		l.b.FadeOut(v, l.fade)
	}
}

func (l *Ledger) nextVoice() Voice {
	l.voice++
	if l.voice == 0 {
		l.voice++
	}
	return l.voice
}
