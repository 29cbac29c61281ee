package netlog_test

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/netlog"
)

// TestWriterRoundTrip: what a Writer writes, Read reads back: the record
// kinds and keys live in one package.
func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := netlog.NewWriter(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	require.NotNil(t, w)
	w.Step(time.Millisecond, 0, false, []uint64{1, 2}, "CP", 0xaa)
	w.Send(time.Millisecond, 0, 0, 1, 0, 2, []uint64{1})
	w.Recv(time.Millisecond, 0, 0, 1, 1, []uint64{2})
	w.Save(2*time.Millisecond, 1, 1)
	w.Step(2*time.Millisecond, 1, false, []uint64{1, 3}, "CP", 0xbb)
	w.Restore(3*time.Millisecond, 1, 1, 1, 2)
	w.Step(3*time.Millisecond, 1, true, []uint64{1, 2}, "CC", 0xbb)
	w.Checksum(3*time.Millisecond, 1, 0xbb, -1)
	w.Checksum(3*time.Millisecond, 1, 0xbc, 0)
	w.Desync(4*time.Millisecond, 1, 0, 0xbb, 0xbc)
	w.Final(4*time.Millisecond, 2)
	l, err := netlog.Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, 11, l.Records)
	assert.Equal(t, 2, l.Final)
	require.Len(t, l.Steps, 2)
	assert.Equal(t, netlog.Step{Frame: 1, In: []uint64{1, 2}, Status: "CC", Sum: "00000000000000bb", Line: 7}, l.Steps[1], "the last step of a frame counts")
	assert.Contains(t, l.Desync, "frame 1 with peer 0 (00000000000000bb vs 00000000000000bc)")
}

func TestNewWriterOff(t *testing.T) {
	assert.Nil(t, netlog.NewWriter(nil))
	assert.Nil(t, netlog.NewWriter(slog.NewJSONHandler(&bytes.Buffer{}, nil)), "a handler above Debug logs nothing")
}
