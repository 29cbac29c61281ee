package wire_test

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/hex"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// inflate returns a trace section's bytes before compression.
func inflate(t *testing.T, b []byte) []byte {
	t.Helper()
	raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(b)))
	require.NoError(t, err)
	return raw
}

// deflated compresses raw as a trace section is.
func deflated(raw []byte) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	_, _ = w.Write(raw)
	_ = w.Close()
	return buf.Bytes()
}

// TestTraceGolden pins the trace section of docs/protocol.md ("The trace
// section") before compression, and that it reads back.
func TestTraceGolden(t *testing.T) {
	tr := wire.Trace{Start: 500, Sums: []uint64{1, 2, 0x0102030405060708},
		Steps: [][]wire.TraceMark{{{System: "move", Sum: 3}, {System: "hit", Sum: 4}}, {{System: "hit", Sum: 5}}}}
	b := wire.AppendTrace([]byte("x"), &tr)
	require.Equal(t, byte('x'), b[0])
	assert.Equal(t, "01"+"f403"+"03"+"0100000000000000"+"0200000000000000"+"0807060504030201"+
		"02"+"04"+hex.EncodeToString([]byte("move"))+"03"+hex.EncodeToString([]byte("hit"))+
		"02"+"00"+"0300000000000000"+"01"+"0400000000000000"+
		"01"+"01"+"0500000000000000", hex.EncodeToString(inflate(t, b[1:])))
	got, err := wire.ParseTrace(b[1:])
	require.NoError(t, err)
	assert.Equal(t, tr, got)
}

// TestTraceBounds: a trace past the bounds is cut as AppendTrace says,
// and what it writes reads back.
func TestTraceBounds(t *testing.T) {
	long := strings.Repeat("s", wire.MaxSystemName+10)
	tr := wire.Trace{Start: 7, Sums: make([]uint64, wire.MaxTraceFrames+3), Steps: make([][]wire.TraceMark, wire.MaxTraceFrames+2)}
	for i := range tr.Steps {
		for j := range wire.MaxTraceMarks + 2 {
			tr.Steps[i] = append(tr.Steps[i], wire.TraceMark{System: long, Sum: uint64(i*100 + j)})
		}
	}
	tr.Steps[1] = nil
	for j := range wire.MaxTraceNames + 5 { // names past the table's bound: the step's marks stop there
		tr.Steps[2] = append(tr.Steps[2], wire.TraceMark{System: string(rune('A' + j))})
	}
	b := wire.AppendTrace(nil, &tr)
	assert.LessOrEqual(t, len(inflate(t, b)), wire.MaxTraceRaw)
	got, err := wire.ParseTrace(b)
	require.NoError(t, err)
	assert.Len(t, got.Sums, wire.MaxTraceFrames+1)
	require.Len(t, got.Steps, wire.MaxTraceFrames)
	assert.Len(t, got.Steps[0], wire.MaxTraceMarks)
	assert.Equal(t, long[:wire.MaxSystemName], got.Steps[0][0].System)
	assert.Empty(t, got.Steps[1])
	assert.Len(t, got.Steps[2], wire.MaxTraceMarks, "16 marks at most, every name fits")
}

// TestTraceMalformed: a section a peer could forge is refused with
// ErrTrace, never a panic, and never read as another trace.
func TestTraceMalformed(t *testing.T) {
	good := []byte{1, 10, 2}
	good = binary.LittleEndian.AppendUint64(good, 1)
	good = binary.LittleEndian.AppendUint64(good, 2)
	good = append(good, 1, 2, 'a', 'b', 1, 0)
	good = binary.LittleEndian.AppendUint64(good, 3)
	_, err := wire.ParseTrace(deflated(good))
	require.NoError(t, err, "the base case reads")
	sums := func(n int) []byte { return make([]byte, 8*n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for name, raw := range map[string][]byte{
		"empty":                   {},
		"another version":         cat([]byte{2}, good[1:]),
		"cut short":               good[:len(good)-1],
		"a byte too many":         cat(good, []byte{0}),
		"no sums":                 {1, 10, 0, 0},
		"too many sums":           cat([]byte{1, 10}, binary.AppendUvarint(nil, wire.MaxTraceFrames+2), sums(wire.MaxTraceFrames+2), []byte{0}),
		"sums claimed, not sent":  cat([]byte{1, 10}, binary.AppendUvarint(nil, wire.MaxTraceFrames)),
		"a start past int32":      cat([]byte{1}, binary.AppendUvarint(nil, 1<<31), []byte{1}, sums(1), []byte{0}),
		"a span past int32":       cat([]byte{1}, binary.AppendUvarint(nil, 1<<31-2), []byte{3}, sums(3), []byte{0, 0, 0}),
		"too many names":          cat([]byte{1, 10, 1}, sums(1), binary.AppendUvarint(nil, wire.MaxTraceNames+1)),
		"a name too long":         cat([]byte{1, 10, 1}, sums(1), []byte{1, wire.MaxSystemName + 1}, make([]byte, wire.MaxSystemName+1)),
		"too many marks":          cat([]byte{1, 10, 2}, sums(2), []byte{1, 1, 'a', wire.MaxTraceMarks + 1}, bytes.Repeat(cat([]byte{0}, sums(1)), wire.MaxTraceMarks+1)),
		"a name index past":       cat([]byte{1, 10, 2}, sums(2), []byte{1, 1, 'a', 1, 1}, sums(1)),
		"a mark without names":    cat([]byte{1, 10, 2}, sums(2), []byte{0, 1, 0}, sums(1)),
		"a step missing":          cat([]byte{1, 10, 3}, sums(3), []byte{0, 0}),
		"an overlong uvarint":     cat([]byte{1}, bytes.Repeat([]byte{0xff}, 11)),
		"more than MaxTraceRaw":   cat(good, make([]byte, wire.MaxTraceRaw)),
		"not compressed at all":   nil,
		"compressed, then others": nil,
	} {
		t.Run(name, func(t *testing.T) {
			b := deflated(raw)
			switch name {
			case "not compressed at all":
				b = good
			case "compressed, then others":
				b = append(deflated(good)[:4:4], 0xff, 0xff)
			}
			require.NotPanics(t, func() { _, err = wire.ParseTrace(b) })
			assert.ErrorIs(t, err, wire.ErrTrace)
		})
	}
	_, err = wire.ParseTrace(make([]byte, wire.MaxTraceSize+1))
	assert.ErrorIs(t, err, wire.ErrTrace, "too big on the wire")
}

// FuzzTrace: any bytes parse or are refused without a panic, and what
// parses writes back to a section that parses to the same trace.
func FuzzTrace(f *testing.F) {
	f.Add(wire.AppendTrace(nil, &wire.Trace{Start: 500, Sums: []uint64{1, 2}, Steps: [][]wire.TraceMark{{{System: "ai", Sum: 9}}}}))
	f.Add(deflated([]byte{1, 10, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := wire.ParseTrace(b)
		if err != nil {
			return
		}
		again, err := wire.ParseTrace(wire.AppendTrace(nil, &tr))
		require.NoError(t, err)
		for i := range tr.Steps {
			if len(tr.Steps[i]) == 0 {
				tr.Steps[i] = nil
			}
		}
		for i := range again.Steps {
			if len(again.Steps[i]) == 0 {
				again.Steps[i] = nil
			}
		}
		assert.Equal(t, tr, again)
	})
}
