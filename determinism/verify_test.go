package determinism

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

type packed struct {
	A int32
	B int64
	C int32
	D float64
	E bool
}

// Fields are compared by path, whatever their offsets and integer widths.
func TestCompareFields(t *testing.T) {
	a, err := savestate.New(1024)
	require.NoError(t, err)
	h, err := savestate.Alloc[packed](a)
	require.NoError(t, err)
	*h.Get(a) = packed{A: -3, B: 1 << 40, C: 7, D: 0.1, E: true}
	local := describe(a)
	require.Len(t, local.Fields, 5)
	assert.Equal(t, scalar{Path: "determinism.packed.B", Off: local.Allocs[0].Offset + 8, Size: 8, Kind: "int"}, local.Fields[1])

	// The same values laid out as on 386 (B at 4, no padding), with A
	// stored in 8 bytes.
	host := stateLayout{Used: local.Used - 8, Allocs: []allocDesc{{Type: "determinism.packed", Offset: local.Allocs[0].Offset, Size: 28}}}
	base := local.Allocs[0].Offset
	host.Fields = []scalar{{"determinism.packed.A", base, 8, "int"}, {"determinism.packed.B", base + 8, 8, "int"},
		{"determinism.packed.C", base + 16, 4, "int"}, {"determinism.packed.D", base + 20, 8, "float"}, {"determinism.packed.E", base + 28, 1, "bool"}}
	ref := make([]byte, host.Used+8)
	copy(ref, a.Bytes()[:base])
	put := func(off int, b []byte) { copy(ref[off:], b) }
	put(base, []byte{0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) // -3 in 8 bytes
	put(base+8, a.Bytes()[local.Fields[1].Off:local.Fields[1].Off+8])
	put(base+16, a.Bytes()[local.Fields[2].Off:local.Fields[2].Off+4])
	put(base+20, a.Bytes()[local.Fields[3].Off:local.Fields[3].Off+8])
	ref[base+28] = 1

	assert.False(t, local.Same(host))
	assert.Equal(t, "determinism.packed is 40 bytes at offset 24 here, 28 bytes at 24 on the host", local.Differences(host))
	c := newFieldComparer(local, host)
	first, n := c.Compare(a.Bytes(), ref)
	assert.Equal(t, "", first)
	assert.Zero(t, n)

	ref[base+16] = 8 // C
	ref[base+28] = 0 // E
	first, n = c.Compare(a.Bytes(), ref)
	assert.Equal(t, "determinism.packed.C: 7 vs 8", first)
	assert.Equal(t, 2, n)
	first, n = c.Compare(a.Bytes(), ref[:base+10])
	assert.Equal(t, "determinism.packed.B: 1099511627776 vs ?", first)
	assert.Equal(t, 4, n)

	// A layout from a file is a claim: impossible sizes and offsets are
	// differences, never an index out of range.
	for _, bad := range []scalar{{"determinism.packed.A", -8, 8, "int"}, {"determinism.packed.A", base, -5, "int"},
		{"determinism.packed.A", base, 3, "int"}, {"determinism.packed.A", 1 << 62, 8, "int"}, {"determinism.packed.A", base, 1 << 62, "float"}} {
		host.Fields[0] = bad
		first, n = newFieldComparer(local, host).Compare(a.Bytes(), ref)
		assert.Equal(t, "determinism.packed.A: -3 vs ?", first, "%+v", bad)
		assert.Equal(t, 3, n)
	}
}

// A states file in another layout (every field 8 bytes further on, as if
// the host padded differently) verifies field by field: LayoutOnly; with a
// changed input, the field-by-field comparison names the diverged field.
func TestVerifyAcrossLayouts(t *testing.T) {
	dir := t.TempDir()
	file := recordTest(t, 120)
	rp, err := replay.Read(bytes.NewReader(file))
	require.NoError(t, err)
	var states bytes.Buffer
	rep, err := capture(rp, &states, testGames)
	require.NoError(t, err)
	require.Equal(t, 119, rep.Checksums)

	// Rewrite the states in the shifted layout.
	st := writeTemp(t, dir, "s.states", states.Bytes())
	in, err := openStates(st)
	require.NoError(t, err)
	defer in.Close()
	local := in.Layout
	host := local
	host.Used += 8
	host.Allocs = append([]allocDesc(nil), local.Allocs...)
	host.Fields = append([]scalar(nil), local.Fields...)
	for i := range host.Allocs {
		host.Allocs[i].Offset += 8
	}
	for i := range host.Fields {
		host.Fields[i].Off += 8
	}
	var shifted bytes.Buffer
	w, err := newStatesWriter(&shifted, host)
	require.NoError(t, err)
	sums := map[rollback.Frame]uint64{} // the checksums of the shifted states
	for f := rollback.Frame(1); f <= 120; f++ {
		s, err := in.At(f)
		require.NoError(t, err, "frame %d", f)
		out := make([]byte, host.Used)
		for i, fl := range local.Fields {
			copy(out[host.Fields[i].Off:], s[fl.Off:fl.Off+fl.Size])
		}
		require.NoError(t, w.Write(f, out))
		sums[f] = xxhash.Sum64(out)
	}
	require.NoError(t, w.Close())

	// The replay as the host would have recorded it, its checksums those
	// of its layout; then again with the pulse of player 0 flipped on
	// frame 50.
	replayFile := writeTemp(t, dir, "r.rwr", rewrite(t, rp, sums, -1))
	statesFile := writeTemp(t, dir, "r.rwr.states", shifted.Bytes())
	r := verify(replayFile, statesFile, testGames)
	assert.Equal(t, LayoutOnly, r.Status, "%+v", r)
	assert.Equal(t, 119, r.ByFields)
	assert.Zero(t, r.Checksums)
	assert.Equal(t, "determinism.testWorld is 48 bytes at offset 24 here, 48 bytes at 32 on the host", r.Layout)

	writeTemp(t, dir, "r.rwr", rewrite(t, rp, sums, 50))
	r = verify(replayFile, statesFile, testGames)
	assert.Equal(t, Diverged, r.Status, "%+v", r)
	assert.Equal(t, 51, r.Frame)
	assert.Equal(t, "determinism.testWorld.Wells[0].X: 17.5 vs 17.25", r.Field) // the mass changed on frame 50: X first
}

// rewrite writes rp again with the given checksums, player 0's input bit 0
// flipped on frame flip.
func rewrite(t *testing.T, rp *replay.Replay, sums map[rollback.Frame]uint64, flip rollback.Frame) []byte {
	t.Helper()
	var file bytes.Buffer
	w := replay.NewWriter(&file, rp.Game, rp.Params)
	w.Begin(rollback.MatchInfo{Players: rp.Players, Layout: rp.Layout, ChecksumEvery: rp.ChecksumEvery})
	in := make([]rollback.PlayerInput, rp.Players)
	for f := range rollback.Frame(rp.Frames()) {
		if sum, ok := sums[f]; ok {
			w.Checksum(f, sum)
		}
		for p := range in {
			v, _ := rp.Input(f, rollback.PlayerID(p))
			if f == flip && p == 0 {
				v ^= 1
			}
			in[p] = rollback.PlayerInput{Input: v, Status: rollback.Confirmed}
		}
		w.Confirmed(f, in)
	}
	require.NoError(t, w.Close())
	return file.Bytes()
}

// recordTest records frames of a two-player match of the test game.
func recordTest(t *testing.T, frames int) []byte {
	t.Helper()
	var file bytes.Buffer
	_, err := playSyncTest(testGame{}, 5, options{frames: frames}, &file)
	require.NoError(t, err)
	return file.Bytes()
}

func writeTemp(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// A damaged states file, or replay, is reported, never a panic.
func TestDamagedFilesNeverPanic(t *testing.T) {
	dir := t.TempDir()
	file := recordTest(t, 60)
	rp, err := replay.Read(bytes.NewReader(file))
	require.NoError(t, err)
	var states bytes.Buffer
	_, err = capture(rp, &states, testGames)
	require.NoError(t, err)
	changed := rewrite(t, rp, checksums(rp), 30) // diverges: the states are read
	replayFile := writeTemp(t, dir, "r.rwr", changed)
	bad := bytes.Clone(states.Bytes())
	for i := 0; i < len(bad); i += 1 + len(bad)/40 {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			copy(bad, states.Bytes())
			bad[i] ^= x
			statesFile := writeTemp(t, dir, "r.rwr.states", bad)
			r := verify(replayFile, statesFile, testGames)
			require.NotEqual(t, Verified, r.Status, "byte %d ^ %#x", i, x)
			require.NotEmpty(t, r.Field+r.Error, "byte %d ^ %#x", i, x)
		}
	}
	for i := 0; i < len(file); i += 1 + len(file)/40 {
		b := bytes.Clone(file)
		b[i] ^= 0x5a
		r := verify(writeTemp(t, dir, "r2.rwr", b), "", testGames)
		require.Equal(t, Failed, r.Status, "byte %d", i)
	}
}

func checksums(rp *replay.Replay) map[rollback.Frame]uint64 {
	m := map[rollback.Frame]uint64{}
	for _, c := range rp.Checksums {
		m[c.Frame] = c.Sum
	}
	return m
}

// A damaged states file is an error, never a panic, and a divergence
// without its states is still reported with its frame.
func TestStatesDamaged(t *testing.T) {
	dir := t.TempDir()
	file := recordTest(t, 60)
	rp, err := replay.Read(bytes.NewReader(file))
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = capture(rp, &buf, testGames)
	require.NoError(t, err)
	states := writeTemp(t, dir, "r.rwr.states", buf.Bytes())
	_, err = readState(states, 30)
	require.NoError(t, err)
	_, err = readState(states, 61)
	assert.ErrorContains(t, err, "no state of frame 61")
	for _, n := range []int{0, 10, buf.Len() / 2} {
		writeTemp(t, dir, "r.rwr.states", buf.Bytes()[:n])
		_, err = readState(states, 59)
		assert.Error(t, err, "cut at %d", n)
	}
	writeTemp(t, dir, "r.rwr.states", []byte("garbage"))
	replayFile := writeTemp(t, dir, "r.rwr", rewrite(t, rp, checksums(rp), 20))
	r := verify(replayFile, states, testGames)
	assert.Equal(t, Diverged, r.Status)
	assert.Equal(t, 21, r.Frame)
	assert.Contains(t, r.Field, "no reference state")
	r = verify(replayFile, "", testGames)
	assert.Equal(t, 21, r.Frame)
	assert.Equal(t, "(no reference states given)", r.Field)
}
