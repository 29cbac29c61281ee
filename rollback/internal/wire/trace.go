package wire

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"io"
)

// The trace section: the time machine's part of a State exchange's
// payload (docs/protocol.md, "The trace section"). After a desync each
// machine that traces (rollback's Config.Marks or Config.Bundle) sends
// the peer it disagrees with, behind its compressed state, its checksum
// of every frame it re-simulated from the last agreed state and the
// marks of each step; the peer compares them with its own and names the
// first divergent frame and the first system whose output differs.
//
// Before compression (DEFLATE), version 1 is
//
//	byte TraceVersion
//	uvarint Start
//	uvarint len(Sums) (1 to MaxTraceFrames+1), then each sum, 8 bytes little-endian
//	uvarint len(names) (at most MaxTraceNames), then each: uvarint len (at most MaxSystemName), the bytes
//	for each of the len(Sums)-1 steps: uvarint marks (at most MaxTraceMarks),
//	  then each: uvarint name index, the sum (8 bytes little-endian)
//
// and nothing after; Start+len(Sums)-1 is an int32. Everything in it is
// the sender's claim: it is read
// only to name the frame and the system in the report.

// TraceVersion is the version of the trace section this package writes
// and reads; a section of another version is refused (ErrTrace).
const TraceVersion = 1

// Bounds of a trace section.
const (
	MaxTraceFrames = 4096 // steps: desync/bundle.MaxFrames
	MaxTraceMarks  = 16   // marks a step: desync.MaxMarks
	MaxTraceNames  = 64   // distinct system names in a section
	MaxSystemName  = 64   // bytes of a system's name (longer ones are cut)
)

// MaxTraceRaw bounds a trace section's size before compression: a
// section that inflates past it is refused.
const MaxTraceRaw = 1 + binary.MaxVarintLen64 + binary.MaxVarintLen64 + (MaxTraceFrames+1)*8 +
	binary.MaxVarintLen64 + MaxTraceNames*(1+MaxSystemName) + MaxTraceFrames*(1+MaxTraceMarks*(1+8))

// MaxTraceSize bounds a trace section's size on the wire (DEFLATE's
// stored blocks add 5 bytes per 64 KiB).
const MaxTraceSize = MaxTraceRaw + MaxTraceRaw/1024 + 64

// ErrTrace is returned by ParseTrace for a section it cannot read.
var ErrTrace = errors.New("wire: malformed trace section")

// TraceMark is one system mark of a step: the system's name and the
// checksum of the state after it.
type TraceMark struct {
	System string
	Sum    uint64
}

// Trace is a trace section: the checksums of the states at the start of
// frames Start to Start+len(Sums)-1, and the marks of each step between,
// Steps[i] of frame Start+i's.
type Trace struct {
	Start int32
	Sums  []uint64
	Steps [][]TraceMark
}

// AppendTrace appends t, compressed, to b. What passes the bounds is cut:
// the frames past MaxTraceFrames steps, a name past MaxSystemName bytes,
// a step's marks past MaxTraceMarks, and the marks whose name would be
// the table's MaxTraceNames+1st.
func AppendTrace(b []byte, t *Trace) []byte {
	sums := t.Sums[:min(len(t.Sums), MaxTraceFrames+1)]
	steps := t.Steps[:min(len(t.Steps), max(len(sums)-1, 0))]
	var names []string
	index := func(s string) int {
		s = s[:min(len(s), MaxSystemName)]
		for i, n := range names {
			if n == s {
				return i
			}
		}
		if len(names) == MaxTraceNames {
			return -1
		}
		names = append(names, s)
		return len(names) - 1
	}
	idx := make([][]int, len(steps))
	for i, st := range steps {
		for _, m := range st[:min(len(st), MaxTraceMarks)] {
			n := index(m.System)
			if n < 0 {
				break
			}
			idx[i] = append(idx[i], n)
		}
	}
	raw := []byte{TraceVersion}
	raw = binary.AppendUvarint(raw, uint64(max(t.Start, 0)))
	raw = binary.AppendUvarint(raw, uint64(len(sums)))
	for _, s := range sums {
		raw = binary.LittleEndian.AppendUint64(raw, s)
	}
	raw = binary.AppendUvarint(raw, uint64(len(names)))
	for _, n := range names {
		raw = append(binary.AppendUvarint(raw, uint64(len(n))), n...)
	}
	for i := range max(len(sums)-1, 0) {
		var marks []int
		if i < len(idx) {
			marks = idx[i]
		}
		raw = binary.AppendUvarint(raw, uint64(len(marks)))
		for j, n := range marks {
			raw = binary.LittleEndian.AppendUint64(binary.AppendUvarint(raw, uint64(n)), steps[i][j].Sum)
		}
	}
	buf := bytes.NewBuffer(b)
	w, _ := flate.NewWriter(buf, flate.BestSpeed) // a valid level: no error
	_, _ = w.Write(raw)                           // into a bytes.Buffer: no error
	_ = w.Close()
	return buf.Bytes()
}

// ParseTrace reads a trace section (compressed, as AppendTrace wrote
// it). It allocates in proportion to what the section inflates to, at
// most MaxTraceRaw bytes, and never panics.
func ParseTrace(b []byte) (Trace, error) {
	if len(b) > MaxTraceSize {
		return Trace{}, ErrTrace
	}
	r := flate.NewReader(bytes.NewReader(b))
	raw, err := io.ReadAll(io.LimitReader(r, MaxTraceRaw+1))
	if err != nil || len(raw) > MaxTraceRaw {
		return Trace{}, ErrTrace
	}
	p := traceReader{b: raw}
	if p.byte() != TraceVersion {
		return Trace{}, ErrTrace
	}
	var t Trace
	start := p.uvarint(1<<31 - 1)
	n := p.uvarint(MaxTraceFrames + 1)
	if p.bad || n == 0 || n*8 > uint64(len(p.b)) || start+n-1 > 1<<31-1 {
		return Trace{}, ErrTrace
	}
	t.Start = int32(start)
	t.Sums = make([]uint64, n)
	for i := range t.Sums {
		t.Sums[i] = p.uint64()
	}
	names := make([]string, p.uvarint(MaxTraceNames))
	for i := range names {
		l := p.uvarint(MaxSystemName)
		names[i] = string(p.take(int(l)))
	}
	t.Steps = make([][]TraceMark, n-1)
	for i := range t.Steps {
		k := p.uvarint(MaxTraceMarks)
		if p.bad {
			break
		}
		if k > 0 {
			t.Steps[i] = make([]TraceMark, k)
		}
		for j := range t.Steps[i] {
			x := p.uvarint(uint64(len(names)) - 1)
			if p.bad {
				break
			}
			t.Steps[i][j] = TraceMark{System: names[x], Sum: p.uint64()}
		}
	}
	if p.bad || len(p.b) != 0 {
		return Trace{}, ErrTrace
	}
	return t, nil
}

// traceReader reads a trace section's fields; a field it cannot read
// sets bad, and every later one reads as zero.
type traceReader struct {
	b   []byte
	bad bool
}

func (p *traceReader) byte() byte {
	if p.bad || len(p.b) == 0 {
		p.bad = true
		return 0
	}
	c := p.b[0]
	p.b = p.b[1:]
	return c
}

// uvarint reads a uvarint of at most limit (a larger one is bad; with
// limit the maximum uint64, from an empty table, every one is).
func (p *traceReader) uvarint(limit uint64) uint64 {
	if p.bad {
		return 0
	}
	v, n := binary.Uvarint(p.b)
	if n <= 0 || v > limit || limit == 1<<64-1 {
		p.bad = true
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *traceReader) uint64() uint64 {
	b := p.take(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (p *traceReader) take(n int) []byte {
	if p.bad || n > len(p.b) {
		p.bad = true
		return nil
	}
	b := p.b[:n]
	p.b = p.b[n:]
	return b
}
