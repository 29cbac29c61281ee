// Package replay records a match's final inputs and desync checksums to a
// file and re-simulates it offline, verifying every checksum.
//
// A [Writer] is a rollback.Recorder: give it to the session as
// Config.Recorder and Close it after the match. Every machine of a match
// can record; each file verifies on its own, since it holds what every
// machine agreed on (a machine that stops early has a shorter file).
//
//	f, _ := os.Create("match.rwr")
//	w := replay.NewWriter(bufio.NewWriter(f), "mygame", params)
//	s, _ := rollback.NewSession(rollback.Config{..., Recorder: w})
//	... play ...
//	err := w.Close() // then flush and close f
//
// [Read] decodes a file and [Replay.Verify] runs it through the game.
//
// # File format
//
// A replay is a sequence of msgpack arrays: one header, then blocks of up
// to [BlockFrames] frames, the last marked as the end. Each record carries
// an xxhash of its own encoding, so a corrupt byte is reported as such,
// with its record's offset, rather than as a desync. Inputs are stored per
// player as runs of equal inputs (held buttons cost almost nothing): about
// 3.5 KB a minute for two players of the arena example. A writer that
// dies leaves every completed block readable; [Read] then returns what it
// decoded with an error wrapping [ErrTruncated].
//
// # Hostile files
//
// A replay may come from anyone (a shared file, a bug report), so [Read]
// trusts nothing in it: it never panics, rejects files over 256 MiB, and
// its memory is bounded by the file's size, not by what the file claims.
// A [Replay] keeps the inputs as the file stores them, runs of equal
// inputs (read them with [Replay.Input]), so an hour of held buttons costs
// as little in memory as on disk: Read allocates at most 16 times the
// file's size plus 16 KiB in all (a test holds it to that), and the Replay
// it returns keeps less than that. Only [Replay.Verify]'s time grows with
// the frames a file holds, as the game has to simulate each.
package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// Magic starts every replay's header; Version is the format it describes.
const (
	Magic   = "rewind-replay"
	Version = 1
)

// BlockFrames is how many frames a block holds: two seconds at 60 Hz, the
// most a writer that crashes can lose.
const BlockFrames = 120

// maxBlockSums is the most checksum values (two per checksum) a block
// holds.
const maxBlockSums = 2 * (BlockFrames + 1)

// maxFile bounds what [Read] accepts: an hour of 8 players is far below.
const maxFile = 256 << 20

// Errors.
var (
	// ErrFormat is wrapped by every *FormatError.
	ErrFormat = errors.New("replay: bad file")
	// ErrTruncated is wrapped by the *FormatError of a file that ends
	// before its end record.
	ErrTruncated = errors.New("replay: truncated")
	// ErrClosed is returned by a Writer used after Close.
	ErrClosed = errors.New("replay: writer closed")
)

// FormatError reports an unreadable replay: where, and what was wrong.
type FormatError struct {
	Offset int64  // byte offset of the record that could not be read
	Record string // "header" or "block N" (counting from 0)
	Reason string
	trunc  bool
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("replay: %s at offset %d: %s", e.Record, e.Offset, e.Reason)
}

// Is makes errors.Is match [ErrFormat], and [ErrTruncated] for a file that
// ends early.
func (e *FormatError) Is(target error) bool {
	return target == ErrFormat || (e.trunc && target == ErrTruncated)
}

// MismatchError reports a checksum that the re-simulation did not reach.
type MismatchError struct {
	Frame rollback.Frame // the state at the start of this frame differs
	Want  uint64         // the recorded checksum
	Got   uint64         // the re-simulation's
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("replay: checksum of frame %d is %016x, the recording says %016x", e.Frame, e.Got, e.Want)
}

// Header describes the recorded match.
type Header struct {
	Game      string // the game's name, as given to NewWriter
	Params    []byte // the game's parameters (seed, options), as given to NewWriter
	Players   int
	Layout    rollback.Layout
	SessionID uint64
	// ChecksumEvery is the checksum interval in frames (0: none recorded);
	// GameChecksum says the checksums hash the game's own data
	// (rollback.Config.ChecksumData), not the whole arena.
	ChecksumEvery int
	GameChecksum  bool
}

// Checksum is a recorded desync checksum: of the state at the start of Frame.
type Checksum struct {
	Frame rollback.Frame
	Sum   uint64
}

// Replay is a decoded replay. Its inputs are kept as runs of equal inputs,
// as in the file: [Replay.Input] reads them.
type Replay struct {
	Header
	// Left gives, per player, the frame from which the player was
	// disconnected (its input the zero input), or -1.
	Left      []rollback.Frame
	Checksums []Checksum

	frames int
	tracks []track // per player
}

// Frames returns the number of frames recorded.
func (r *Replay) Frames() int { return r.frames }

// Input returns player p's recorded input for frame f: the zero input from
// the frame the player was disconnected on (see Left). ok is false when f
// is not in [0, Frames()) or p not in [0, Players). A lookup costs a
// binary search over the player's runs of equal inputs.
func (r *Replay) Input(f rollback.Frame, p rollback.PlayerID) (in rollback.Input, ok bool) {
	if f < 0 || int(f) >= r.frames || p < 0 || int(p) >= r.Players {
		return 0, false
	}
	return r.tracks[p].at(f), true
}

// Report is what [Replay.Verify] found.
type Report struct {
	Frames    int    // frames simulated
	Checksums int    // checksums verified
	Final     uint64 // xxhash of the whole arena after the last frame
}

// Verify re-simulates the replay with game, whose state (freshly
// initialised, as at frame 0 of the match) lives in a, and compares every
// recorded checksum. sumData must be the session's Config.ChecksumData
// when the header says GameChecksum, and is ignored otherwise. A mismatch
// returns a *MismatchError naming the frame.
func (r *Replay) Verify(a *savestate.Arena, game rollback.Game, sumData func([]byte) []byte) (Report, error) {
	if r.GameChecksum && sumData == nil && len(r.Checksums) > 0 {
		return Report{}, errors.New("replay: the checksums hash the game's data; Verify needs its ChecksumData function")
	}
	in := make([]rollback.PlayerInput, r.Players)
	cur := make([]cursor, r.Players)
	for p := range cur {
		cur[p] = cursor{t: &r.tracks[p]}
	}
	var buf []byte
	rep := Report{Frames: r.Frames()}
	next := 0
	check := func(f rollback.Frame) error {
		for ; next < len(r.Checksums) && r.Checksums[next].Frame == f; next++ {
			var got uint64
			if r.GameChecksum {
				buf = sumData(buf[:0])
				got = xxhash.Sum64(buf)
			} else {
				got = xxhash.Sum64(a.Bytes())
			}
			if want := r.Checksums[next].Sum; got != want {
				return &MismatchError{Frame: f, Want: want, Got: got}
			}
			rep.Checksums++
		}
		return nil
	}
	for f := range rollback.Frame(rep.Frames) {
		if err := check(f); err != nil {
			return rep, err
		}
		for p := range in {
			in[p] = rollback.PlayerInput{Input: cur[p].input(f), Status: rollback.Confirmed}
			if l := r.Left[p]; l >= 0 && f >= l {
				in[p] = rollback.PlayerInput{Status: rollback.Disconnected}
			}
		}
		game.Step(f, in)
	}
	if err := check(rollback.Frame(rep.Frames)); err != nil {
		return rep, err
	}
	rep.Final = xxhash.Sum64(a.Bytes())
	return rep, nil
}

// header and block are the records on disk (msgpack arrays).
type header struct {
	Magic         string
	Version       int
	Game          string
	Params        []byte
	Players       int
	Layout        []uint8
	SessionID     uint64
	ChecksumEvery int
	GameChecksum  bool
	Hash          uint64 // of this record encoded with Hash 0
}

type block struct {
	First int32    // the first frame in the block
	Count int32    // frames in the block
	Runs  []uint64 // per player in turn: (run length, input) pairs covering Count frames
	Left  []int32  // (player, frame) pairs: disconnected from that frame on
	Sums  []uint64 // (frame, checksum) pairs
	End   bool     // the last block
	Hash  uint64   // of this record encoded with Hash 0
}

var mh = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.StructToArray = true
	h.MaxInitLen = 64
	return h
}()

// Writer records a replay; it implements rollback.Recorder. Errors are
// kept: [Writer.Close] and [Writer.Err] return the first one. A call out of
// order is ignored (the file stays readable); after a write error nothing
// more is written. A Writer is not safe for concurrent use.
type Writer struct {
	w      io.Writer
	seal   *sealer
	h      header
	b      block
	runs   [][]uint64 // per player, the open block's runs
	left   []bool
	err    error
	broken bool // the underlying writer failed: write nothing more
	begun  bool
	closed bool
}

var _ rollback.Recorder = (*Writer)(nil)

// NewWriter returns a Writer that writes to w. game names the game and
// params are its match parameters (what it needs besides the inputs to
// replay the match: a seed, a stage); both are stored in the header.
func NewWriter(w io.Writer, game string, params []byte) *Writer {
	x := &Writer{w: w, h: header{Magic: Magic, Version: Version, Game: game, Params: bytes.Clone(params)}}
	x.seal = newSealer()
	return x
}

// Begin writes the header; the session calls it.
func (w *Writer) Begin(m rollback.MatchInfo) {
	if w.begun || w.closed {
		return
	}
	w.begun = true
	w.h.Players, w.h.Layout, w.h.SessionID = m.Players, m.Layout, m.SessionID
	w.h.ChecksumEvery, w.h.GameChecksum = m.ChecksumEvery, m.GameChecksum
	w.runs = make([][]uint64, m.Players)
	w.left = make([]bool, m.Players)
	w.write(&w.h, &w.h.Hash)
}

// Confirmed records frame f's final inputs; the session calls it.
func (w *Writer) Confirmed(f rollback.Frame, in []rollback.PlayerInput) {
	if !w.begun || w.closed || len(in) != w.h.Players || int32(f) != w.b.First+w.b.Count {
		w.fail(fmt.Errorf("replay: frame %d out of order (Begin called: %v)", f, w.begun))
		return
	}
	for p, pi := range in {
		v := uint64(pi.Input)
		if pi.Status == rollback.Disconnected {
			v = 0
			if !w.left[p] {
				w.left[p] = true
				w.b.Left = append(w.b.Left, int32(p), int32(f))
			}
		}
		r := w.runs[p]
		if n := len(r); n > 0 && r[n-1] == v {
			r[n-2]++
		} else {
			r = append(r, 1, v)
		}
		w.runs[p] = r
	}
	w.b.Count++
	if w.b.Count == BlockFrames {
		w.flush(false)
	}
}

// Checksum records the checksum of the state at the start of frame f; the
// session calls it.
func (w *Writer) Checksum(f rollback.Frame, sum uint64) {
	if w.begun && !w.closed {
		// A networked session may give a frame's checksum some frames after
		// the frame (once its state is final): with a checksum every frame,
		// the late ones of a block and its own would exceed what a block
		// may hold, so the block ends early instead.
		if len(w.b.Sums) == maxBlockSums {
			w.flush(false)
		}
		w.b.Sums = append(w.b.Sums, uint64(f), sum)
	}
}

// Err returns the first error met while writing, if any.
func (w *Writer) Err() error { return w.err }

// Close writes the last block and the end of the replay. It does not close
// the underlying writer. The frames the session had not yet confirmed are
// not in the replay.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	if !w.begun {
		w.fail(errors.New("replay: closed before the session began"))
	} else {
		w.flush(true)
	}
	w.closed = true
	return w.err
}

func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// flush writes the open block.
func (w *Writer) flush(end bool) {
	w.b.Runs = w.b.Runs[:0]
	for p, r := range w.runs {
		w.b.Runs = append(w.b.Runs, r...)
		w.runs[p] = r[:0]
	}
	w.b.End = end
	w.write(&w.b, &w.b.Hash)
	w.b = block{First: w.b.First + w.b.Count, Runs: w.b.Runs[:0], Left: w.b.Left[:0], Sums: w.b.Sums[:0]}
}

// write encodes rec with its hash and writes it.
func (w *Writer) write(rec any, hash *uint64) {
	if w.broken {
		return
	}
	b, err := w.seal.seal(rec, hash)
	if err == nil {
		_, err = w.w.Write(b)
	}
	if err != nil {
		w.broken = true
		w.fail(err)
	}
}

// sealer encodes records with their hash: the xxhash of the record's
// encoding with Hash 0.
type sealer struct {
	enc *codec.Encoder
	buf []byte
}

func newSealer() *sealer {
	s := &sealer{}
	s.enc = codec.NewEncoderBytes(&s.buf, mh)
	return s
}

// seal sets *hash, which must be rec's Hash field, and returns rec's
// encoding; the bytes are valid until the next call.
func (s *sealer) seal(rec any, hash *uint64) ([]byte, error) {
	*hash = 0
	b, err := s.encode(rec)
	if err != nil {
		return nil, err
	}
	*hash = xxhash.Sum64(b)
	return s.encode(rec)
}

func (s *sealer) encode(rec any) ([]byte, error) {
	s.buf = s.buf[:0]
	s.enc.ResetBytes(&s.buf)
	err := s.enc.Encode(rec)
	return s.buf, err
}

// Read decodes a replay. A file that ends before its end record returns
// the frames it holds with an error wrapping [ErrTruncated]; any other
// damage returns a *FormatError naming the record and its offset (with the
// blocks before the damaged one, which are whole). A file over 256 MiB is
// refused unread. Read never panics, and allocates at most 16 times the
// file's size plus 16 KiB, however many frames the file holds.
func Read(r io.Reader) (*Replay, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFile {
		return nil, &FormatError{Offset: maxFile, Record: "file", Reason: fmt.Sprintf("larger than %d bytes", maxFile)}
	}
	d := decoder{data: data, seal: newSealer()}
	var h header
	if err := d.header(&h); err != nil {
		return nil, err
	}
	if h.Magic != Magic || h.Version != Version {
		return nil, d.errAt(0, "header", "not a Rewind replay of version %d (magic %q, version %d)", Version, h.Magic, h.Version)
	}
	layout := rollback.Layout(h.Layout)
	if h.Players < 1 || h.Players > rollback.MaxPlayers || layout.Check() != nil || h.ChecksumEvery < 0 {
		return nil, d.errAt(0, "header", "impossible match: %d players, layout %v, checksum every %d", h.Players, h.Layout, h.ChecksumEvery)
	}
	rp := &Replay{Header: Header{Game: h.Game, Params: h.Params, Players: h.Players, Layout: layout,
		SessionID: h.SessionID, ChecksumEvery: h.ChecksumEvery, GameChecksum: h.GameChecksum}}
	rp.Left = make([]rollback.Frame, h.Players)
	for p := range rp.Left {
		rp.Left[p] = -1
	}
	rp.tracks = make([]track, h.Players)
	mask := uint64(layout.Mask())
	// One block is decoded into again and again: its lists keep the
	// largest block's storage, rather than every block allocating its own.
	var b block
	for n := 0; ; n++ {
		if d.pos == len(data) {
			e := d.errAt(d.pos, recordName(n), "the file ends after frame %d without its end record", rp.Frames()-1)
			e.trunc = true
			return rp, e
		}
		start := d.pos
		if err := d.block(n, h.Players, &b); err != nil {
			return rp, err
		}
		if reason := rp.add(&b, mask, len(data)-d.pos); reason != "" {
			return rp, d.errAt(start, recordName(n), "%s", reason)
		}
		if b.End {
			if d.pos != len(data) {
				return rp, d.errAt(d.pos, "end", "%d bytes after the end record", len(data)-d.pos)
			}
			return rp, nil
		}
	}
}

// add appends a decoded block to rp, or says what is wrong with it and
// leaves rp as it was; rest bytes of the file follow the block.
func (rp *Replay) add(b *block, mask uint64, rest int) string {
	var tracks [rollback.MaxPlayers]track
	copy(tracks[:], rp.tracks)
	var left [rollback.MaxPlayers]rollback.Frame
	copy(left[:], rp.Left)
	sums := len(rp.Checksums)
	reason := rp.apply(b, mask, rest)
	if reason != "" {
		copy(rp.tracks, tracks[:]) // what apply appended is beyond their lengths
		copy(rp.Left, left[:])
		rp.Checksums = rp.Checksums[:sums]
	}
	return reason
}

// apply is add, leaving rp half changed when it fails. Memory grows only
// with what the block holds: a run costs what it cost in the file or less
// (nothing when it goes on with the player's last input), each checksum 16
// bytes.
func (rp *Replay) apply(b *block, mask uint64, rest int) string {
	frames := int64(rp.frames)
	if int64(b.First) != frames || b.Count < 0 || b.Count > BlockFrames || frames+int64(b.Count) > math.MaxInt32 {
		return fmt.Sprintf("frames %d+%d do not follow frame %d", b.First, b.Count, frames-1)
	}
	runs := b.Runs
	for p := range rp.Players {
		for f := int32(0); f < b.Count; {
			if len(runs) < 2 {
				return fmt.Sprintf("player %d's inputs end at frame %d", p, b.First+f)
			}
			n, v := runs[0], runs[1]
			runs = runs[2:]
			if n == 0 || n > uint64(b.Count-f) || v&^mask != 0 {
				return fmt.Sprintf("player %d: bad run of %d × %#x at frame %d", p, n, v, b.First+f)
			}
			rp.tracks[p].add(rollback.Frame(b.First+f), rollback.Input(v))
			f += int32(n)
		}
	}
	if len(runs) != 0 {
		return fmt.Sprintf("%d values after the inputs", len(runs))
	}
	if len(b.Left)%2 != 0 || len(b.Sums)%2 != 0 {
		return "odd disconnect or checksum list"
	}
	for i := 0; i < len(b.Left); i += 2 {
		p, f := b.Left[i], b.Left[i+1]
		if p < 0 || int(p) >= rp.Players || rp.Left[p] >= 0 || f < b.First || f >= b.First+b.Count {
			return fmt.Sprintf("bad disconnect of player %d at frame %d", p, f)
		}
		rp.Left[p] = rollback.Frame(f)
	}
	// A checksum takes 2 bytes of the file at least: the list never grows
	// beyond what the rest of the file could fill.
	rp.Checksums = growUpTo(rp.Checksums, len(b.Sums)/2, len(b.Sums)/2+rest/2)
	for i := 0; i < len(b.Sums); i += 2 {
		f := rollback.Frame(b.Sums[i])
		last := rollback.Frame(-1)
		if n := len(rp.Checksums); n > 0 {
			last = rp.Checksums[n-1].Frame
		}
		if b.Sums[i] > uint64(b.First+b.Count) || f <= last || rp.ChecksumEvery == 0 || int(f)%rp.ChecksumEvery != 0 {
			return fmt.Sprintf("checksum of frame %d out of place", b.Sums[i])
		}
		rp.Checksums = append(rp.Checksums, Checksum{Frame: f, Sum: b.Sums[i+1]})
	}
	rp.frames += int(b.Count)
	return ""
}

// decoder reads records from a replay in memory.
type decoder struct {
	data []byte
	pos  int // where the next record starts
	seal *sealer
}

func (d *decoder) errAt(off int, rec, format string, args ...any) *FormatError {
	return &FormatError{Offset: int64(off), Record: rec, Reason: fmt.Sprintf(format, args...)}
}

// recordName names record n: the header (-1) or block n.
func recordName(n int) string {
	if n < 0 {
		return "header"
	}
	return fmt.Sprintf("block %d", n)
}

// header decodes the header, through the codec: its lists are short (the
// codec allocates at most 64 elements of a list ahead of its bytes) and
// its strings take their bytes from the file.
func (d *decoder) header(h *header) error {
	dec := codec.NewDecoderBytes(d.data, mh)
	err := dec.Decode(h)
	return d.check(-1, dec.NumBytesRead(), err, h, &h.Hash)
}

// block decodes block n of a replay of players players into b (see
// unpacker.block).
func (d *decoder) block(n, players int, b *block) error {
	u := unpacker{b: d.data, off: d.pos}
	u.block(b, players)
	return d.check(n, u.off, u.err, b, &b.Hash)
}

// check ends the decoding of record n (see recordName) into rec, which
// ended at offset end with error err, and checks its hash.
func (d *decoder) check(n, end int, err error, rec any, hash *uint64) error {
	start := d.pos
	d.pos = end
	if err != nil {
		if errors.Is(err, errShort) || end >= len(d.data) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			e := d.errAt(start, recordName(n), "the file ends at offset %d inside this record", len(d.data))
			e.trunc = true
			return e
		}
		return d.errAt(start, recordName(n), "malformed: %v", err)
	}
	want := *hash
	b, err := d.seal.seal(rec, hash)
	switch {
	case err != nil:
		return d.errAt(start, recordName(n), "malformed: %v", err)
	case *hash != want:
		return d.errAt(start, recordName(n), "corrupt: its checksum does not match its contents")
	case !bytes.Equal(b, d.data[start:end]):
		// The writer's encoding is canonical: a record that decodes to the
		// right values from other bytes (a longer array swallowing the next
		// record, say) is damaged too.
		return d.errAt(start, recordName(n), "corrupt: not the encoding its writer produced")
	}
	return nil
}
