package match

import "github.com/rewindgg/rewind/rollback"

// TickWork is what one tick of one machine cost its game and its arena
// (Config.TickWork): the input of cmd/soak's tick-cost model. The session
// is not changed to measure it: the steps are counted by the machine's
// game wrapper (probedGame: every Game.Step call, whether it simulates a
// new frame, re-simulates one after a restore, or moves a snapshot
// forward in its own region; not the extrapolated render's
// StepPartial), the copies by diffing rollback.Stats around the tick
// (Saves: the live state copied into a snapshot; Rollbacks: a snapshot
// copied back over it), each copy moving the arena's used bytes
// (savestate.Arena.Used: what Save and Restore copy).
type TickWork struct {
	Steps     int32 // Game.Step calls
	Simulated int32 // new frames simulated (the session's frame moved this far)
	Saves     int32 // snapshots saved
	Restores  int32 // snapshots restored
	// SavedBytes and RestoredBytes are the bytes the saves and the
	// restores copied.
	SavedBytes    int64
	RestoredBytes int64
}

// workMeter records one machine's TickWork, tick by tick.
type workMeter struct {
	steps int64 // Game.Step calls so far (probedGame counts them)
	mark  int64 // steps at the start of the tick
	ticks []TickWork
}

// start marks the beginning of a tick.
func (w *workMeter) start() { w.mark = w.steps }

// end records the tick that began with the session's stats before and
// ended with after, its arena's used bytes being used.
func (w *workMeter) end(before, after rollback.Stats, used int) {
	t := TickWork{
		Steps:     int32(w.steps - w.mark),
		Simulated: int32(max(0, after.Frame-before.Frame)),
		Saves:     int32(after.Saves - before.Saves),
		Restores:  int32(after.Rollbacks - before.Rollbacks),
	}
	t.SavedBytes = int64(t.Saves) * int64(used)
	t.RestoredBytes = int64(t.Restores) * int64(used)
	w.ticks = append(w.ticks, t)
}
