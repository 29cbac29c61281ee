package netlog_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rewindgg/rewind/internal/heap"
	"github.com/rewindgg/rewind/netlog"
)

// FuzzRead: Read never panics, allocates at most 16 times the log's size
// plus 64 KiB, and returns a log whose steps are in frame order, one a
// frame, consistent, with Diff and Step agreeing with them; or an error
// wrapping ErrFormat. The seed corpus (testdata/fuzz/FuzzRead) holds
// valid logs and the attacks.
func FuzzRead(f *testing.F) {
	f.Add([]byte(base + `{"msg":"final","to":2}`))
	f.Add([]byte(attack))
	f.Fuzz(func(t *testing.T, b []byte) {
		var l *netlog.Log
		var err error
		n := heap.Allocated(func() { l, err = netlog.Read(bytes.NewReader(b)) })
		if n > uint64(16*len(b)+64<<10) {
			t.Fatalf("%d bytes of log: Read allocated %d bytes", len(b), n)
		}
		if l == nil {
			t.Fatalf("nil log (error %v)", err)
		}
		if err != nil && !errors.Is(err, netlog.ErrFormat) {
			t.Fatalf("error not wrapping ErrFormat: %v", err)
		}
		for i, s := range l.Steps {
			if s.Frame < 0 || (i > 0 && s.Frame <= l.Steps[i-1].Frame) {
				t.Fatalf("step %d: frame %d out of order", i, s.Frame)
			}
			if len(s.In) != len(s.Status) || s.Status == "" || s.Line < 1 {
				t.Fatalf("step %d: %d inputs, statuses %q, line %d", i, len(s.In), s.Status, s.Line)
			}
			if p := l.Step(s.Frame); p != &l.Steps[i] {
				t.Fatalf("Step(%d) is not step %d", s.Frame, i)
			}
		}
		if d, n := netlog.Diff(l, l); d != nil || n > len(l.Steps) {
			t.Fatalf("a log differs from itself: %v (%d compared)", d, n)
		}
	})
}
