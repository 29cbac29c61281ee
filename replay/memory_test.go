package replay_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/heap"
	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
)

// Read's documented bound: it allocates at most k bytes for each byte of
// the file, plus slack.
const k, slack = 16, 16 << 10

// idle writes a valid replay of frames frames in which no player of
// players presses anything: the fewest bytes per frame a file can take
// (about 37 bytes a block of 120 frames for 8 players, 7,680 bytes once
// the inputs are expanded one per frame and player, as Read did before).
func idle(t testing.TB, players, frames int) []byte {
	t.Helper()
	var file bytes.Buffer
	w := replay.NewWriter(&file, "idle", nil)
	w.Begin(rollback.MatchInfo{Players: players, Layout: rollback.Layout{1}})
	in := make([]rollback.PlayerInput, players)
	for p := range in {
		in[p].Status = rollback.Confirmed
	}
	for f := range rollback.Frame(frames) {
		w.Confirmed(f, in)
	}
	require.NoError(t, w.Close())
	return file.Bytes()
}

// checksummed writes a valid replay of frames frames of one idle player
// with a checksum of 0 (one byte) every frame: the most checksums a file
// of its size can hold, 16 bytes each once read.
func checksummed(t testing.TB, frames int) []byte {
	t.Helper()
	var file bytes.Buffer
	w := replay.NewWriter(&file, "sums", nil)
	w.Begin(rollback.MatchInfo{Players: 1, Layout: rollback.Layout{1}, ChecksumEvery: 1})
	in := []rollback.PlayerInput{{Status: rollback.Confirmed}}
	for f := range rollback.Frame(frames) {
		w.Checksum(f, 0)
		w.Confirmed(f, in)
	}
	require.NoError(t, w.Close())
	return file.Bytes()
}

// hugeBlock returns a file whose first block claims n input values, all
// there (zeros): more than any block holds.
func hugeBlock(t testing.TB, n uint32, present int) []byte {
	t.Helper()
	var file bytes.Buffer
	w := replay.NewWriter(&file, "huge", nil)
	w.Begin(rollback.MatchInfo{Players: 1, Layout: rollback.Layout{1}})
	b := append(file.Bytes(), 0x97, 0, 0, 0xdd) // [First 0, Count 0, Runs: an array32 of n
	b = binary.BigEndian.AppendUint32(b, n)
	b = append(b, make([]byte, present)...)
	return append(b, 0xc0, 0xc0, 0xc3, 0) // Left nil, Sums nil, End true, Hash 0]
}

// Read's memory is bounded by the file's size, not by the frames or list
// lengths the file claims. Before, the idle 200-block replay (7,251 bytes)
// made Read allocate 9,128,032 bytes, and the huge block (100,046 bytes)
// 8,098,072.
func TestReadMemoryBounded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		file   []byte
		frames int
		err    error // nil: a valid file
	}{
		{"header only", idle(t, rollback.MaxPlayers, 0), 0, nil},
		{"one frame", idle(t, rollback.MaxPlayers, 1), 1, nil},
		{"idle", idle(t, rollback.MaxPlayers, 200*replay.BlockFrames), 200 * replay.BlockFrames, nil},
		{"checksummed", checksummed(t, 20000), 20000, nil},
		{"huge block", hugeBlock(t, 100000, 100000), 0, replay.ErrFormat},
		{"claim of 4G values", hugeBlock(t, 1<<32-1, 10), 0, replay.ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rp *replay.Replay
			var err error
			n := heap.Allocated(func() { rp, err = replay.Read(bytes.NewReader(tc.file)) })
			t.Logf("%d bytes: Read allocated %d bytes (%.1f a byte)", len(tc.file), n, float64(n)/float64(len(tc.file)))
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.frames, rp.Frames())
				if tc.frames > 0 {
					assert.Zero(t, mustInput(t, rp, rollback.Frame(tc.frames-1), rollback.PlayerID(rp.Players-1)))
				}
			}
			require.LessOrEqual(t, n, uint64(k*len(tc.file)+slack))
		})
	}
}
