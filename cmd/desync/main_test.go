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

// bundles plays a two-machine arena match on wifi whose second machine
// flips a bit inside its "shots" system at frame 1000, and writes each
// machine's first desync bundle into dir.
func bundles(t *testing.T, dir string) (honest, odd string) {
	t.Helper()
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	r := match.Run(match.Config{Players: 2, Frames: 1600, Seed: 11, Profile: p, InjectDesync: 1000, InjectSystem: "shots", Recover: true, Bundle: true})
	require.NoError(t, r.Err)
	require.Len(t, r.Bundles, 2)
	var names [2]string
	for i, bs := range r.Bundles {
		require.NotEmpty(t, bs, "machine %d", i)
		names[i] = filepath.Join(dir, []string{"a.bundle", "b.bundle"}[i])
		require.NoError(t, os.WriteFile(names[i], bs[0].Encode(), 0o644))
	}
	return names[0], names[1]
}

// TestShow: two machines' bundles side by side name the first divergent
// frame, the system and the field, as text and as a page.
func TestShow(t *testing.T) {
	dir := t.TempDir()
	a, b := bundles(t, dir)
	page := filepath.Join(dir, "desync.html")
	var out, errs bytes.Buffer
	require.Equal(t, 0, run([]string{"-html", page, a, b}, &out, &errs), errs.String())
	assert.Contains(t, out.String(), "first divergent frame: 1001 ")
	assert.Contains(t, out.String(), "first system whose output differs: shots (in frame 1000's step)")
	assert.Regexp(t, `arena\.World\.Ships\[0\]\.Score +\d+ \| \d+`, out.String())
	assert.Contains(t, out.String(), "re-simulation reproduced: yes")
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Contains(t, string(html), `<td class="fail">1001</td>`)
	assert.Contains(t, string(html), "shots (frame 1000's step)")
	assert.Contains(t, string(html), "<code>arena.World.Ships[0].Score</code>")
}

// TestReplay: the honest machine's bundle, replayed with the arena game,
// reproduces every checksum; the corrupted machine's does not (its fault
// is not in the game's code), and the replay names where it parts from
// the bundle: the frame after the fault, in "shots".
func TestReplay(t *testing.T) {
	dir := t.TempDir()
	a, b := bundles(t, dir)
	var out, errs bytes.Buffer
	require.Equal(t, 0, run([]string{"replay", a}, &out, &errs), "%s%s", out.String(), errs.String())
	assert.Contains(t, out.String(), "reproduced: the 501 checksums of frames 1000 to 1500")
	out.Reset()
	require.Equal(t, 1, run([]string{"replay", b}, &out, &errs))
	assert.Contains(t, out.String(), `not reproduced: the replay differs from the bundle from frame 1001, first in system "shots" of frame 1000's step`)
}

// TestDamaged: a bundle with a flipped byte is refused, naming the offset.
func TestDamaged(t *testing.T) {
	dir := t.TempDir()
	a, b := bundles(t, dir)
	data, err := os.ReadFile(b)
	require.NoError(t, err)
	data[len(data)/2] ^= 1
	require.NoError(t, os.WriteFile(b, data, 0o644))
	var out, errs bytes.Buffer
	assert.Equal(t, 1, run([]string{a, b}, &out, &errs))
	assert.Regexp(t, `b\.bundle: bundle: section "\w+" at offset \d+: corrupt`, errs.String())
	assert.Equal(t, 2, run([]string{a}, &out, &errs), "usage")
}
