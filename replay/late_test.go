package replay_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
)

// A networked session with a checksum every frame gives some checksums a
// few frames late (once the frame's state is final): a block then gets
// the late checksums of the block before it besides its own, more than a
// block may hold, and Read refused the file the Writer wrote ("248
// checksum values: a block holds at most 242"; found by the determinism
// matrix's two-machine matches). The Writer ends such a block early.
func TestLateChecksums(t *testing.T) {
	var file bytes.Buffer
	w := replay.NewWriter(&file, "test", nil)
	w.Begin(rollback.MatchInfo{Players: 1, Layout: rollback.Layout{4}, ChecksumEvery: 1})
	in := []rollback.PlayerInput{{Status: rollback.Confirmed}}
	const frames, late = 1000, 7
	next := rollback.Frame(1) // the next checksum to give
	for f := range rollback.Frame(frames) {
		in[0].Input = rollback.Input(f % 16)
		w.Confirmed(f, in)
		// The checksum of frame f+1 is due now: give it late by 7 frames
		// in even blocks, at once in odd ones, so that an odd block gets
		// the 7 late ones of the block before it and its own 121.
		lag := rollback.Frame(0)
		if f/replay.BlockFrames%2 == 0 {
			lag = late
		}
		for ; next <= f+1-lag; next++ {
			w.Checksum(next, uint64(next)*3)
		}
	}
	require.NoError(t, w.Close())
	rp, err := replay.Read(bytes.NewReader(file.Bytes()))
	require.NoError(t, err)
	require.Equal(t, frames, rp.Frames())
	require.Len(t, rp.Checksums, int(next-1))
	for i, c := range rp.Checksums {
		assert.Equal(t, replay.Checksum{Frame: rollback.Frame(i + 1), Sum: uint64(i+1) * 3}, c)
	}
	for f := range rollback.Frame(frames) {
		v, ok := rp.Input(f, 0)
		require.True(t, ok)
		require.Equal(t, rollback.Input(f%16), v, "frame %d", f)
	}
}
