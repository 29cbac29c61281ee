package bundle

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/desync"
)

// maxFile bounds what [Read] accepts; maxArena the arena size a file may
// claim, which bounds each state it inflates.
const (
	maxFile  = 256 << 20
	maxArena = 1 << 30
)

// ErrFormat is wrapped by every *FormatError.
var ErrFormat = errors.New("bundle: bad file")

// FormatError reports an unreadable bundle: the section and its offset in
// the file, and what was wrong.
type FormatError struct {
	Section string // "" before the first section
	Offset  int64  // the byte offset of the section (or of the magic)
	Reason  string
}

func (e *FormatError) Error() string {
	if e.Section == "" {
		return fmt.Sprintf("bundle: at offset %d: %s", e.Offset, e.Reason)
	}
	return fmt.Sprintf("bundle: section %q at offset %d: %s", e.Section, e.Offset, e.Reason)
}

// Is makes a *FormatError match ErrFormat.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// Encode returns the bundle's file.
func (b *Bundle) Encode() []byte {
	out := []byte(Magic)
	sec := func(name string, p []byte) {
		out = appendUvarint(out, uint64(len(name)))
		out = append(out, name...)
		out = appendUvarint(out, uint64(len(p)))
		out = append(out, p...)
		h := xxhash.New()
		_, _ = h.WriteString(name)
		_, _ = h.Write(p)
		out = binary.LittleEndian.AppendUint64(out, h.Sum64())
	}
	var p []byte
	p = appendUvarint(p, Version)
	p = appendUvarints(p, uint64(b.Players), uint64(b.Local), b.SessionID, uint64(b.Every), uint64(b.ArenaSize), boolBit(b.WholeArena))
	p = binary.AppendVarint(p, int64(b.Start))
	p = appendString(p, b.Note)
	sec("header", p)
	sec("report", encodeReport(&b.Report))
	sec("state", deflate(b.State))
	p = appendUvarint(nil, uint64(b.Frames()))
	p = appendUvarints(p, b.Inputs...)
	p = append(p, b.Status...)
	sec("inputs", p)
	p = appendUvarint(nil, uint64(len(b.Sums)))
	for _, s := range b.Sums {
		p = binary.LittleEndian.AppendUint64(p, s)
	}
	sec("sums", p)
	sec("traces", encodeTraces(b.Traces))
	sec("trail", append(appendUvarint(nil, uint64(b.trailN)), b.trail...))
	sec("end", deflate(b.End))
	sec("eof", binary.LittleEndian.AppendUint64(nil, xxhash.Sum64(out)))
	return out
}

// WriteTo writes the bundle's file to w.
func (b *Bundle) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b.Encode())
	return int64(n), err
}

func boolBit(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

func appendUvarint(dst []byte, v uint64) []byte { return binary.AppendUvarint(dst, v) }

func appendUvarints(dst []byte, vs ...uint64) []byte {
	for _, v := range vs {
		dst = binary.AppendUvarint(dst, v)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	return append(appendUvarint(dst, uint64(len(s))), s...)
}

// deflate compresses a state (nil stays empty).
func deflate(state []byte) []byte {
	if state == nil {
		return nil
	}
	var buf bytes.Buffer
	buf.WriteByte(1) // present (an empty payload is no state)
	zw, _ := flate.NewWriter(&buf, flate.BestSpeed)
	_, _ = zw.Write(state)
	_ = zw.Close()
	return buf.Bytes()
}

func encodeReport(r *desync.Error) []byte {
	p := binary.AppendVarint(nil, int64(r.Frame))
	p = binary.AppendVarint(p, int64(r.Peer))
	p = binary.LittleEndian.AppendUint64(p, r.Local)
	p = binary.LittleEndian.AppendUint64(p, r.Remote)
	flags := boolBit(r.Outvoted) | boolBit(r.Majority)<<1 | boolBit(r.Recovered)<<2 | boolBit(r.Adopted)<<3
	p = appendUvarint(p, flags)
	p = appendString(p, r.System)
	return appendString(p, r.Field)
}

// encodeTraces writes the systems' names once, then each step's marks as
// a name's index and the sum.
func encodeTraces(ts [][]Mark) []byte {
	index := map[string]int{}
	var names []string
	for _, t := range ts {
		for _, m := range t {
			if _, ok := index[m.System]; !ok {
				index[m.System] = len(names)
				names = append(names, m.System)
			}
		}
	}
	p := appendUvarint(nil, uint64(len(names)))
	for _, n := range names {
		p = appendString(p, n)
	}
	p = appendUvarint(p, uint64(len(ts)))
	for _, t := range ts {
		p = appendUvarint(p, uint64(len(t)))
		for _, m := range t {
			p = appendUvarint(p, uint64(index[m.System]))
			p = binary.LittleEndian.AppendUint64(p, m.Sum)
		}
	}
	return p
}
