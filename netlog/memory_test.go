package netlog_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/heap"
	"github.com/rewindgg/rewind/netlog"
)

// attack is one step record naming the highest frame Read accepts.
const attack = `{"msg":"step","frame":4194303,"in":[0],"st":"C"}`

// Read's memory is bounded by the log's size, not by the frame numbers
// the log names.
func TestReadMemoryBounded(t *testing.T) {
	const k, slack = 16, 128 << 10
	var valid strings.Builder
	for f := range 2000 {
		fmt.Fprintf(&valid, `{"us":%d,"msg":"step","frame":%d,"resim":false,"in":[%d,3],"st":"CP","sum":"%016x"}`+"\n", f*16667, f, f%7, f*977)
		if f%10 == 9 { // a rollback re-simulates the last 3 frames
			for g := f - 2; g <= f; g++ {
				fmt.Fprintf(&valid, `{"us":%d,"msg":"step","frame":%d,"resim":true,"in":[%d,4],"st":"CC","sum":"%016x"}`+"\n", f*16667, g, g%7, g*977)
			}
		}
		fmt.Fprintf(&valid, `{"us":%d,"msg":"final","to":%d}`+"\n", f*16667, f)
	}
	for _, tc := range []struct {
		name, log string
		frames    int // frames simulated
	}{
		{"attack", attack + "\n", 1},
		{"attack-twice", attack + "\n" + strings.Replace(attack, "4194303", "4194302", 1) + "\n", 2},
		{"valid", valid.String(), 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l *netlog.Log
			var err error
			n := heap.Allocated(func() { l, err = netlog.Read(strings.NewReader(tc.log)) })
			require.NoError(t, err)
			t.Logf("%d bytes: Read allocated %d bytes", len(tc.log), n)
			assert.Equal(t, tc.frames, len(l.Steps))
			require.LessOrEqual(t, n, uint64(k*len(tc.log)+slack))
		})
	}
}
