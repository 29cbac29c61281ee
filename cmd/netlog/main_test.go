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

func TestNetlogCommand(t *testing.T) {
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, b, 0o644))
		return path
	}
	r := match.Run(match.Config{Players: 2, Frames: 400, Seed: 9, Profile: p, ChecksumEvery: 50, InjectDesync: 120, Log: true})
	require.NotNil(t, r.Detected)
	a, b := write("a.jsonl", r.Logs[0]), write("b.jsonl", r.Logs[1])

	var out, errs bytes.Buffer
	assert.Equal(t, 1, run([]string{a, b}, &out, &errs), errs.String())
	assert.Contains(t, out.String(), "first divergence at frame 121: the state at its start differs")
	assert.Contains(t, out.String(), "desync detected at checksum frame 150")
	assert.Contains(t, out.String(), "121 earlier frames agree")

	out.Reset()
	assert.Equal(t, 0, run([]string{a, a}, &out, &errs))
	assert.Regexp(t, `no divergence: \d+ frames agree\n$`, out.String())

	bad := write("bad.jsonl", append(bytes.Clone(r.Logs[0][:200]), "\n{oops\n"...))
	assert.Equal(t, 1, run([]string{a, bad}, &out, &errs))
	assert.Contains(t, errs.String(), "bad.jsonl: netlog: bad log: line")
	assert.Equal(t, 2, run([]string{a}, &out, &errs))
}
