package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback/netsim"
)

func TestReplayCommand(t *testing.T) {
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	r := match.Run(match.Config{Players: 2, Frames: 600, Seed: 5, Profile: p, ChecksumEvery: 100, Record: true})
	require.True(t, r.Verified, r.Desync)
	require.NoError(t, r.ReplayErr)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.rwr")
	require.NoError(t, os.WriteFile(good, r.Replays[1], 0o644))
	cut := filepath.Join(dir, "cut.rwr")
	require.NoError(t, os.WriteFile(cut, r.Replays[0][:len(r.Replays[0])-3], 0o644))

	var out, errs bytes.Buffer
	require.Equal(t, 0, run([]string{good}, &out, &errs), errs.String())
	assert.Regexp(t, `good\.rwr: arena, 2 players, 600 frames, 5 checksums verified, final state [0-9a-f]{16}\n$`, out.String())

	out.Reset()
	require.Equal(t, 1, run([]string{good, cut}, &out, &errs))
	assert.Contains(t, out.String(), "good.rwr")
	assert.Regexp(t, `cut\.rwr: replay: block \d+ at offset \d+: the file ends at offset \d+ inside this record\n$`, errs.String())

	errs.Reset()
	assert.Equal(t, 1, run([]string{filepath.Join(dir, "missing.rwr")}, &out, &errs))
	assert.Contains(t, errs.String(), "no such file")
	assert.Equal(t, 2, run(nil, &out, &errs))
	assert.Equal(t, 2, run([]string{"-bogus"}, &out, &errs))
}
