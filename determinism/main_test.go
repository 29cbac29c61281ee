package determinism

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// record, then verify, through Main: each seed records a sync-test match
// and a two-machine match that rolled back, and each verifies here.
func TestRecordVerify(t *testing.T) {
	dir := t.TempDir()
	var out, errs bytes.Buffer
	code := Main([]string{"record", "-out", dir, "-frames", "300", "-seeds", "4,9"}, &out, &errs, testGame{})
	require.Equal(t, 0, code, errs.String()+out.String())
	var recs []Recording
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r Recording
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		recs = append(recs, r)
	}
	require.Len(t, recs, 4)
	var files []string
	for _, r := range recs {
		assert.Empty(t, r.Error)
		assert.GreaterOrEqual(t, r.Frames, 300, r.File)
		assert.Greater(t, r.Rollbacks, int64(0), "%s: no rollback", r.File)
		assert.Greater(t, r.Checksums, 290, r.File)
		files = append(files, r.File)
	}
	assert.Equal(t, []string{SyncTest, TwoMachines, SyncTest, TwoMachines}, []string{recs[0].Kind, recs[1].Kind, recs[2].Kind, recs[3].Kind})

	out.Reset()
	code = Main(append([]string{"verify"}, files...), &out, &errs, testGame{})
	require.Equal(t, 0, code, errs.String()+out.String())
	sc = bufio.NewScanner(&out)
	n := 0
	for sc.Scan() {
		r, ok := ParseLine(sc.Bytes())
		require.True(t, ok, sc.Text())
		assert.Equal(t, Verified, r.Status, "%+v", r)
		assert.Equal(t, "test", r.Game)
		n++
	}
	assert.Equal(t, 4, n)

	// A program that lacks the game cannot verify it.
	out.Reset()
	code = Main([]string{"verify", files[0]}, &out, &errs, testGame{hidden: true})
	assert.Equal(t, 1, code)
	r, ok := ParseLine(out.Bytes())
	require.True(t, ok)
	assert.Equal(t, Failed, r.Status)
	assert.Contains(t, r.Error, `game "test"`)
}

// A game whose state is partly outside the arena fails the sync test, and
// record says so and exits 1.
func TestRecordSyncTestFails(t *testing.T) {
	var out, errs bytes.Buffer
	code := Main([]string{"record", "-out", t.TempDir(), "-frames", "100", "-seeds", "1"}, &out, &errs, testGame{hidden: true})
	assert.Equal(t, 1, code)
	var r Recording
	require.NoError(t, json.Unmarshal(bytes.SplitN(out.Bytes(), []byte("\n"), 2)[0], &r))
	assert.Equal(t, SyncTest, r.Kind)
	assert.Contains(t, r.Error, "the sync test failed at frame")
}

// Main rejects bad games and commands with status 2.
func TestMainUsage(t *testing.T) {
	var out, errs bytes.Buffer
	assert.Equal(t, 2, Main([]string{"probe"}, &out, &errs))
	assert.Contains(t, errs.String(), "no games")
	errs.Reset()
	assert.Equal(t, 2, Main([]string{"probe"}, &out, &errs, testGame{}, testGame{}))
	assert.Contains(t, errs.String(), `two games are named "test"`)
	assert.Equal(t, 2, Main([]string{"play"}, &out, &errs, testGame{}))
	out.Reset()
	assert.Equal(t, 0, Main([]string{"probe"}, &out, &errs, testGame{}))
	r, ok := ParseLine(out.Bytes())
	require.True(t, ok)
	assert.Equal(t, Probe, r.Status)
	assert.Equal(t, Fuses(), r.Fuses)
}
