package replay_test

import (
	"bytes"
	"testing"

	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// FuzzRead: Read never panics; whatever it accepts is consistent and
// re-simulates without panicking.
func FuzzRead(f *testing.F) {
	file, _ := record(f, 130, 10, 1)
	f.Add(file)
	f.Add(file[:len(file)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		rp, err := replay.Read(bytes.NewReader(b))
		if rp == nil {
			if err == nil {
				t.Fatal("nil replay and nil error")
			}
			return
		}
		if len(rp.Inputs) != rp.Frames()*rp.Players || len(rp.Left) != rp.Players {
			t.Fatalf("inconsistent replay: %d inputs, %d frames, %d players, %d left", len(rp.Inputs), rp.Frames(), rp.Players, len(rp.Left))
		}
		mask := rp.Layout.Mask()
		for _, in := range rp.Inputs {
			if in&^mask != 0 {
				t.Fatalf("input %#x outside the layout", in)
			}
		}
		a, aerr := savestate.New(64)
		if aerr != nil {
			t.Fatal(aerr)
		}
		_, _ = rp.Verify(a, rollback.GameFunc(func(rollback.Frame, []rollback.PlayerInput) {}), func(b []byte) []byte { return b })
	})
}
