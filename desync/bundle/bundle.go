// Package bundle is the desync bundle: what one machine of a match keeps
// of a detected desync, for a developer to reproduce it offline — the
// last agreed state, the final inputs from there to the desync's frame,
// and this machine's own re-simulation of that span, a checksum per frame
// and each step's system marks (desync.Marks), with the report.
//
// A session makes one when rollback's Config.Bundle is set: on a detected
// desync it re-simulates the span from the agreed state with the marks
// traced ([Bundle.Resimulate]) and hands the bundle to Config.Bundle,
// which writes it somewhere ([Bundle.WriteTo]). Two machines' bundles of
// one desync, set side by side ([Compare]; the command cmd/desync), name
// the first frame whose state differs, the first system whose output
// differs in the step before it, and the differing fields. Each machine
// writes its own, and the bundle never crosses the network; the session
// sends the peer the re-simulation's checksums and marks (rollback's time
// machine, docs/protocol.md "The trace section"), so the machines' own
// reports name the frame and the system too, and the bundles, set side by
// side offline, add the fields and the states.
//
// # Format
//
// A bundle file is [Magic], then named sections, each
//
//	uvarint len(name), name, uvarint len(payload), payload, xxhash64(name, payload) (8 bytes, little-endian)
//
// in the order header, report, state, inputs, sums, traces, trail, end,
// and last a section "eof" whose payload is the xxhash64 of every byte
// before it: a file cut short or damaged anywhere is reported, with the
// offset of the section that could not be read ([FormatError]). A reader
// skips sections it does not know; [Version], in the header, changes when
// a known section's payload does. Integers are uvarints (signed: zigzag
// varints) unless named fixed; states are compressed with DEFLATE.
//
// # Size
//
// A bundle spans at most [MaxFrames] frames; a longer span is not
// re-simulated (the bundle then holds the report only, and says why in
// Note). Its size is then at most about two compressed states (the agreed
// one and the last), MaxFrames × (players × 11 + 8 + marks × 9) bytes of
// inputs, checksums and marks, and the trail: the states of the frames in
// between, each as its difference from the one before, compressed, of at
// most [MaxTrail] bytes before compression (the frames past it are left
// out of the trail: [Bundle.StateAt] says so). [Read] refuses files over
// 256 MiB, and allocates in proportion to the file's size, not to what it
// claims, but for its two states: each inflates to at most the arena size
// the file claims (1 GiB at most); [Bundle.StateAt] likewise.
//
// A bundle holds the whole game state and every player's inputs for the
// frames it spans: docs/security.md says what sharing one exposes.
package bundle

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"

	"github.com/rewindgg/rewind/desync"
)

// Magic starts every bundle file; Version is the format it describes.
const (
	Magic   = "rewind-desync-bundle\n"
	Version = 1
)

// MaxFrames is the most frames a bundle spans: 68 s at 60 Hz, more than
// twice the default checksum interval (desync.DefaultEvery).
const MaxFrames = 4096

// MaxTrail bounds the trail: the states it holds, before compression.
const MaxTrail = 32 << 20

// Mark is one system mark of a step: the system's name and the hash of the
// state after it.
type Mark struct {
	System string
	Sum    uint64
}

// Bundle is one machine's record of a desync. A session fills the fields
// up to Status and calls [Bundle.Resimulate], which fills the rest.
type Bundle struct {
	Players   int    // players in the match
	Local     int    // this machine's first local player
	SessionID uint64 // the match's
	Every     int    // the checksum interval, in frames
	ArenaSize int    // the size of the game's arena (savestate.New)
	// WholeArena: the session's checksums hash the whole arena, as
	// Sums do (no Config.ChecksumData), so Report.Local is comparable to
	// the checksum at Report.Frame.
	WholeArena bool
	// Report is the desync as this machine detected it. The exchange
	// that names the differing field comes after the bundle is made:
	// Field is empty here; [Compare] names the fields from two bundles.
	Report desync.Error
	// Start is the agreed frame: the latest checksum frame before the
	// desync's at which a peer's checksum matched this machine's and that
	// no outvoted peer disputes; State is the arena's
	// bytes at its start (nil: the bundle holds the report only, see
	// Note).
	Start int32
	State []byte
	// Inputs and Status are the final inputs of frames Start, Start+1, …
	// up to the report's frame, Players to a frame: each input, and its
	// rollback.InputStatus.
	Inputs []uint64
	Status []uint8

	// Sums are the checksums (xxhash64 of the arena's bytes) of this
	// machine's re-simulation from State, at the start of frames Start
	// to Start+Frames(); Traces the marks of each step, Traces[i] of frame
	// Start+i's (empty without marks).
	Sums   []uint64
	Traces [][]Mark
	// End is the re-simulated state at the start of frame Start+Frames().
	End []byte
	// Note says what the bundle lacks, and why; empty when complete.
	Note string

	trail  []byte // the states after each step, as differences, compressed
	trailN int    // how many frames' states it holds (from Start+1)
}

// Frames returns the number of frames (steps) the bundle spans.
func (b *Bundle) Frames() int {
	if b.Players <= 0 {
		return 0
	}
	return len(b.Inputs) / b.Players
}

// Input returns frame f's inputs and statuses (f from Start on).
func (b *Bundle) Input(f int32) (in []uint64, status []uint8) {
	i := int(f-b.Start) * b.Players
	return b.Inputs[i : i+b.Players], b.Status[i : i+b.Players]
}

// Sum returns this machine's checksum of the state at the start of frame
// f, if the bundle holds it.
func (b *Bundle) Sum(f int32) (uint64, bool) {
	i := int64(f) - int64(b.Start)
	if i < 0 || i >= int64(len(b.Sums)) {
		return 0, false
	}
	return b.Sums[i], true
}

// Reproduced reports whether the re-simulation reached the checksum this
// machine had at the report's frame: false means this machine's own game
// does not repeat itself (a non-determinism here, or state outside the
// arena), or that the checksums are not comparable (WholeArena false).
func (b *Bundle) Reproduced() bool {
	s, ok := b.Sum(b.Report.Frame)
	return ok && b.WholeArena && s == b.Report.Local
}

// ErrNoState is wrapped by [Bundle.StateAt] for a frame whose state the
// bundle does not hold.
var ErrNoState = errors.New("bundle: no state of that frame")

// StateAt returns the re-simulated state at the start of frame f: State
// for Start, End for the last frame, and from the trail in between.
func (b *Bundle) StateAt(f int32) ([]byte, error) {
	n := int32(b.Frames())
	switch {
	case b.State == nil || f < b.Start || f > b.Start+n:
		return nil, fmt.Errorf("%w: frame %d (the bundle spans %d to %d)", ErrNoState, f, b.Start, b.Start+n)
	case f == b.Start:
		return b.State, nil
	case f == b.Start+n && b.End != nil:
		return b.End, nil
	case f > b.Start+int32(b.trailN):
		return nil, fmt.Errorf("%w: frame %d is past the trail (%d frames: MaxTrail)", ErrNoState, f, b.trailN)
	}
	r := flate.NewReader(bytes.NewReader(b.trail))
	defer r.Close()
	state := bytes.Clone(b.State)
	for g := b.Start + 1; g <= f; g++ {
		if err := undiff(r, &state, b.ArenaSize); err != nil {
			return nil, fmt.Errorf("bundle: the trail at frame %d: %w", g, err)
		}
	}
	return state, nil
}

// diff appends the difference from prev to cur: uvarint len(cur), then
// cur XOR prev (prev read as zeros past its end).
func diff(dst, prev, cur []byte) []byte {
	dst = appendUvarint(dst, uint64(len(cur)))
	for i, c := range cur {
		if i < len(prev) {
			c ^= prev[i]
		}
		dst = append(dst, c)
	}
	return dst
}

// undiff reads one difference from r and applies it to *state.
func undiff(r io.Reader, state *[]byte, limit int) error {
	n, err := readUvarint(r)
	if err != nil {
		return err
	}
	if n > uint64(limit) {
		return fmt.Errorf("a state of %d bytes (the arena holds %d)", n, limit)
	}
	cur, err := io.ReadAll(io.LimitReader(r, int64(n))) // as the data comes: n is a claim
	if err != nil {
		return err
	}
	if uint64(len(cur)) != n {
		return io.ErrUnexpectedEOF
	}
	for i := range min(len(cur), len(*state)) {
		cur[i] ^= (*state)[i]
	}
	*state = cur
	return nil
}

func readUvarint(r io.Reader) (uint64, error) {
	var v uint64
	var b [1]byte
	for s := uint(0); s < 64; s += 7 {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, err
		}
		v |= uint64(b[0]&0x7f) << s
		if b[0] < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("a length overflows")
}
