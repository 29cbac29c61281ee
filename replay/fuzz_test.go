package replay_test

import (
	"bytes"
	"testing"

	"github.com/rewindgg/rewind/internal/heap"
	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// FuzzRead: Read never panics and allocates at most 16 bytes a byte of
// the file plus 16 KiB; whatever it accepts is consistent, and
// re-simulates without panicking, handing the game the inputs Input
// returns. The seed corpus (testdata/fuzz/FuzzRead) holds the attacks on
// Read's memory: an idle 8-player replay, blocks claiming more values than
// a block holds.
func FuzzRead(f *testing.F) {
	file, _ := record(f, 130, 10, 1)
	f.Add(file)
	f.Add(file[:len(file)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var rp *replay.Replay
		var err error
		if n := heap.Allocated(func() { rp, err = replay.Read(bytes.NewReader(b)) }); n > uint64(k*len(b)+slack) {
			t.Fatalf("%d bytes of file: Read allocated %d bytes", len(b), n)
		}
		if rp == nil {
			if err == nil {
				t.Fatal("nil replay and nil error")
			}
			return
		}
		if rp.Frames() < 0 || len(rp.Left) != rp.Players {
			t.Fatalf("inconsistent replay: %d frames, %d players, %d left", rp.Frames(), rp.Players, len(rp.Left))
		}
		mask := rp.Layout.Mask()
		for f := range rollback.Frame(rp.Frames()) {
			for p := range rollback.PlayerID(rp.Players) {
				if in, ok := rp.Input(f, p); !ok || in&^mask != 0 {
					t.Fatalf("input %#x outside the layout", in)
				}
			}
		}
		a, aerr := savestate.New(64)
		if aerr != nil {
			t.Fatal(aerr)
		}
		_, _ = rp.Verify(a, rollback.GameFunc(func(f rollback.Frame, in []rollback.PlayerInput) {
			for p, pi := range in {
				if want, _ := rp.Input(f, rollback.PlayerID(p)); pi.Status == rollback.Confirmed && pi.Input != want {
					t.Fatalf("frame %d, player %d: Verify steps %#x, Input says %#x", f, p, pi.Input, want)
				}
			}
		}), func(b []byte) []byte { return b })
	})
}
