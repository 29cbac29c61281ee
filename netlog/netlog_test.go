package netlog_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/netlog"
)

func read(t *testing.T, s string) *netlog.Log {
	t.Helper()
	l, err := netlog.Read(strings.NewReader(s))
	require.NoError(t, err)
	return l
}

const base = `{"msg":"step","frame":0,"in":[1,2],"st":"CC","sum":"aa"}
{"msg":"step","frame":1,"in":[1,2],"st":"CP","sum":"bb"}
{"msg":"send","peer":0,"first":0,"n":2,"in":[1,1]}
`

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		frame      int // -1: none
		state      bool
		player     int
		compared   int
	}{
		{"equal", base + `{"msg":"final","to":2}`, base + `{"msg":"final","to":2}`, -1, false, 0, 2},
		// A predicted frame that was never re-simulated still counts once final.
		{"predicted-right", base + `{"msg":"step","frame":1,"in":[1,2],"st":"CC","sum":"bb"}` + "\n" + `{"msg":"final","to":2}`,
			base + `{"msg":"final","to":2}`, -1, false, 0, 2},
		{"state", base + `{"msg":"step","frame":2,"in":[0,0],"st":"CC","sum":"c1"}` + "\n" + `{"msg":"final","to":3}`,
			base + `{"msg":"step","frame":2,"in":[0,0],"st":"CC","sum":"c2"}` + "\n" + `{"msg":"final","to":3}`, 2, true, 0, 2},
		// The last record of a frame is the one that counts.
		{"input", base + `{"msg":"step","frame":1,"in":[1,3],"st":"CC","sum":"bb"}` + "\n" + `{"msg":"final","to":2}`,
			base + `{"msg":"final","to":2}`, 1, false, 1, 1},
		// Frames not yet final are not compared.
		{"not-final", base + `{"msg":"step","frame":1,"in":[1,3],"st":"CC","sum":"zz"}` + "\n" + `{"msg":"final","to":1}`,
			base + `{"msg":"final","to":2}`, -1, false, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, n := netlog.Diff(read(t, tc.a), read(t, tc.b))
			if tc.frame < 0 {
				assert.Nil(t, d)
				assert.Equal(t, tc.compared, n)
				return
			}
			require.NotNil(t, d)
			assert.Equal(t, tc.frame, d.Frame)
			assert.Equal(t, tc.state, d.State)
			assert.Equal(t, tc.compared, d.Compared)
			if !tc.state {
				assert.Equal(t, tc.player, d.Player)
				assert.Contains(t, d.String(), "player 1's input differs (0x3 vs 0x2")
			} else {
				assert.Contains(t, d.String(), "simulating frame 1 with the same state and inputs [1 2]")
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	for _, bad := range []string{
		"{not json\n",
		`{"msg":"step","in":[1],"st":"C"}`,
		`{"msg":"step","frame":-1,"in":[1],"st":"C"}`,
		`{"msg":"step","frame":99999999,"in":[1],"st":"C"}`,
		`{"msg":"step","frame":1,"in":[1,2],"st":"C"}`,
	} {
		_, err := netlog.Read(strings.NewReader(base + bad))
		require.ErrorIs(t, err, netlog.ErrFormat, bad)
		assert.Contains(t, err.Error(), "line 4", bad)
	}
	l := read(t, base+`{"msg":"desync","frame":100,"peer":0,"local":"01","remote":"02"}`+"\n"+`{"msg":"something-new"}`+"\n\n")
	assert.Equal(t, 5, l.Records)
	assert.Equal(t, "line 4: desync detected at checksum frame 100 with peer 0 (01 vs 02)", l.Desync)
}
