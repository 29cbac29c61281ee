package bundle

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cespare/xxhash/v2"
)

// Read decodes a bundle file. It trusts nothing in it: a damaged or cut
// file gives a *FormatError naming the offset of the section that could
// not be read; it never panics, and allocates in proportion to len(data).
func Read(data []byte) (*Bundle, error) {
	if len(data) > maxFile {
		return nil, &FormatError{Reason: fmt.Sprintf("%d bytes: over the %d a bundle may have", len(data), maxFile)}
	}
	if !bytes.HasPrefix(data, []byte(Magic)) {
		return nil, &FormatError{Reason: "not a desync bundle (no magic)"}
	}
	b := &Bundle{}
	off, seen := len(Magic), map[string]bool{}
	for {
		start := off
		name, payload, next, err := section(data, off)
		if err != nil {
			return nil, &FormatError{Section: name, Offset: int64(start), Reason: err.Error()}
		}
		if name == "eof" {
			if len(payload) != 8 || binary.LittleEndian.Uint64(payload) != xxhash.Sum64(data[:start]) {
				return nil, &FormatError{Section: name, Offset: int64(start), Reason: "the file's checksum does not match its contents"}
			}
			if next != len(data) {
				return nil, &FormatError{Section: name, Offset: int64(next), Reason: "bytes after the end"}
			}
			break
		}
		if seen[name] {
			return nil, &FormatError{Section: name, Offset: int64(start), Reason: "a second copy of the section"}
		}
		seen[name] = true
		if err := b.decode(name, payload); err != nil {
			return nil, &FormatError{Section: name, Offset: int64(start), Reason: err.Error()}
		}
		off = next
	}
	for _, s := range []string{"header", "report", "inputs", "sums", "traces"} {
		if !seen[s] {
			return nil, &FormatError{Section: s, Offset: int64(off), Reason: "missing"}
		}
	}
	if len(b.Sums) != 0 && len(b.Sums) != b.Frames()+1 || len(b.Traces) > b.Frames() {
		return nil, &FormatError{Section: "sums", Offset: int64(off), Reason: fmt.Sprintf("%d checksums and %d traces for %d frames", len(b.Sums), len(b.Traces), b.Frames())}
	}
	return b, nil
}

// section reads the section at off: its name, payload and the offset
// after it, checking its hash.
func section(data []byte, off int) (name string, payload []byte, next int, err error) {
	d := &dec{p: data[off:]}
	nl := d.uint(64)
	name = string(d.bytes(int(nl)))
	pl := d.uint(uint64(len(data)))
	payload = d.bytes(int(pl))
	sum := d.bytes(8)
	if d.err != nil {
		return name, nil, 0, fmt.Errorf("the file ends inside it (at offset %d)", len(data))
	}
	h := xxhash.New()
	_, _ = h.WriteString(name)
	_, _ = h.Write(payload)
	if binary.LittleEndian.Uint64(sum) != h.Sum64() {
		return name, nil, 0, fmt.Errorf("corrupt: its checksum does not match its contents")
	}
	return name, payload, off + d.off, nil
}

// decode reads one section's payload into b; unknown sections are
// skipped.
func (b *Bundle) decode(name string, p []byte) error {
	d := &dec{p: p}
	switch name {
	case "header":
		if v := d.uint(1 << 16); v != Version && d.err == nil {
			return fmt.Errorf("version %d (this reader knows %d)", v, Version)
		}
		b.Players, b.Local = int(d.uint(256)), int(d.uint(256))
		b.SessionID, b.Every = d.uint(1<<64-1), int(d.uint(1<<31))
		b.ArenaSize, b.WholeArena = int(d.uint(maxArena)), d.uint(1) == 1
		b.Start, b.Note = int32(d.int(1<<31)), d.string()
	case "report":
		r := &b.Report
		r.Frame, r.Peer = int32(d.int(1<<31)), int(d.int(1<<16))
		r.Local, r.Remote = d.u64(), d.u64()
		f := d.uint(15)
		r.Outvoted, r.Majority, r.Recovered, r.Adopted = f&1 != 0, f&2 != 0, f&4 != 0, f&8 != 0
		r.System, r.Field = d.string(), d.string()
	case "state", "end":
		s, err := inflate(p, b.ArenaSize)
		if err != nil {
			return err
		}
		if name == "state" {
			b.State = s
		} else {
			b.End = s
		}
		return nil
	case "inputs":
		n := int(d.uint(MaxFrames)) * b.Players
		if n > len(p) {
			return fmt.Errorf("%d inputs in %d bytes", n, len(p))
		}
		b.Inputs = make([]uint64, n)
		for i := range b.Inputs {
			b.Inputs[i] = d.uint(1<<64 - 1)
		}
		b.Status = bytes.Clone(d.bytes(n))
	case "sums":
		n := int(d.uint(MaxFrames + 1))
		if 8*n > len(p) {
			return fmt.Errorf("%d checksums in %d bytes", n, len(p))
		}
		b.Sums = make([]uint64, n)
		for i := range b.Sums {
			b.Sums[i] = d.u64()
		}
	case "traces":
		b.Traces = d.traces()
	case "trail":
		b.trailN, b.trail = int(d.uint(MaxFrames)), bytes.Clone(d.rest())
	}
	if d.err == nil && d.off != len(p) {
		return fmt.Errorf("%d bytes left over at its byte %d", len(p)-d.off, d.off)
	}
	return d.err
}

// inflate decompresses a state of at most limit bytes.
func inflate(p []byte, limit int) ([]byte, error) {
	if len(p) == 0 {
		return nil, nil
	}
	if p[0] != 1 {
		return nil, fmt.Errorf("byte %#02x at its byte 0: not a state", p[0])
	}
	s, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(p[1:])), int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("the state does not decompress: %v", err)
	}
	if len(s) > limit {
		return nil, fmt.Errorf("a state over the arena's %d bytes", limit)
	}
	return s, nil
}

// dec reads a payload; the first error sticks, with its byte offset.
type dec struct {
	p   []byte
	off int
	err error
}

func (d *dec) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, a...)
	}
}

func (d *dec) uint(limit uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p[d.off:])
	if n <= 0 {
		d.fail("no integer at its byte %d", d.off)
		return 0
	}
	if v > limit {
		d.fail("%d at its byte %d: over %d", v, d.off, limit)
		return 0
	}
	d.off += n
	return v
}

func (d *dec) int(limit int64) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.p[d.off:])
	if n <= 0 || v >= limit || v < -limit {
		d.fail("no integer in range at its byte %d", d.off)
		return 0
	}
	d.off += n
	return v
}

func (d *dec) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.p)-d.off {
		d.fail("%d bytes past its end at its byte %d", n, d.off)
		return nil
	}
	d.off += n
	return d.p[d.off-n : d.off]
}

func (d *dec) u64() uint64 {
	if b := d.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (d *dec) string() string { return string(d.bytes(int(d.uint(uint64(len(d.p)))))) }

func (d *dec) rest() []byte { return d.bytes(len(d.p) - d.off) }

func (d *dec) traces() [][]Mark {
	names := make([]string, d.uint(uint64(len(d.p))))
	for i := range names {
		names[i] = d.string()
	}
	ts := make([][]Mark, d.uint(MaxFrames))
	for i := range ts {
		n := d.uint(uint64(len(d.p)) / 9)
		if n == 0 {
			continue
		}
		ts[i] = make([]Mark, n)
		for j := range ts[i] {
			k := d.uint(uint64(len(names)))
			if k >= uint64(len(names)) {
				d.fail("a mark names system %d of %d", k, len(names))
			}
			if d.err != nil {
				return nil
			}
			ts[i][j] = Mark{names[k], d.u64()}
		}
	}
	return ts
}
