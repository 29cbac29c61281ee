package sound_test

import (
	"fmt"
	"time"

	"github.com/rewindgg/rewind/sound"
)

// printer is an audio backend that prints what it is asked to do.
type printer struct{}

func (printer) Play(v sound.Voice, s sound.Sound) {
	fmt.Printf("voice %d: play %s sound %d of frame %d\n", v, s.Category, s.ID, s.Frame)
}
func (printer) Stop(v sound.Voice) { fmt.Printf("voice %d: stop\n", v) }
func (printer) FadeOut(v sound.Voice, d time.Duration) {
	fmt.Printf("voice %d: fade out over %v\n", v, d)
}
func (printer) SetVolume(v sound.Voice, vol sound.Volume) {}

// A session calls Simulating before every Step (give it the ledger as
// Config.Observer); here the calls are written out. Frame 2 is simulated
// with a predicted input that makes a ship explode; the correction
// re-simulates it without the explosion and with the shot that the
// prediction missed.
func Example() {
	const shot, explosion sound.ID = 1, 2
	l, _ := sound.NewLedger(sound.Config{Backend: printer{}, FadeOut: 30 * time.Millisecond})
	l.Play(99, sound.FullVolume) // music: category 1

	l.Simulating(1)
	l.Trigger(shot, sound.FullVolume)
	l.Simulating(2)
	l.Trigger(explosion, sound.FullVolume) // predicted: it hits

	// The remote input arrives: roll back to frame 1 and re-simulate.
	l.Simulating(1)
	l.Trigger(shot, sound.FullVolume) // already playing: ignored
	l.Simulating(2)
	l.Trigger(shot+10, sound.FullVolume) // the remote player's shot, missed by the prediction
	l.Update(nil)                        // after Advance: frame 2 had no explosion after all

	// Output:
	// voice 1: play global sound 99 of frame 0
	// voice 2: play event sound 1 of frame 1
	// voice 3: play event sound 2 of frame 2
	// voice 4: play event sound 11 of frame 2
	// voice 3: fade out over 30ms
}

// ExampleScene keeps an engine loop in the game state: it starts, changes
// volume and stops from Step, and rolls back with the rest of the state.
// After each Advance, Update makes the backend follow it.
func ExampleScene() {
	l, _ := sound.NewLedger(sound.Config{Backend: printer{}})
	var sc sound.Scene // in the game's arena, in a real game
	const engine sound.ID = 7

	l.Simulating(10)
	loop := sc.Start(10, engine, sound.FullVolume, 0) // thrust pressed on frame 10
	l.Update(&sc)

	l.Simulating(11)
	sc.Stop(loop) // thrust released on frame 11
	l.Update(&sc)

	// Output:
	// voice 1: play stateful sound 7 of frame 10
	// voice 1: stop
}
