package determinism

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
)

// A states file is a gzip stream: statesMagic; the host's [stateLayout] as
// JSON, preceded by its length (a uvarint); then one record per state, in
// frame order: the frame and the state's length as uvarints, then the
// arena's bytes.
const statesMagic = "rewind-determinism-states 2\n"

// maxLayout bounds the layout a states file may claim.
const maxLayout = 16 << 20

// statesWriter writes a states file.
type statesWriter struct {
	z   *gzip.Writer
	buf []byte
}

// newStatesWriter starts a states file of states in layout l on w; Close
// ends it.
func newStatesWriter(w io.Writer, l stateLayout) (*statesWriter, error) {
	z, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	s := &statesWriter{z: z}
	s.buf = binary.AppendUvarint(append(s.buf, statesMagic...), uint64(len(js)))
	if _, err := z.Write(append(s.buf, js...)); err != nil {
		return nil, err
	}
	return s, nil
}

// Write adds the state at the start of frame f. Frames come in order.
func (s *statesWriter) Write(f rollback.Frame, state []byte) error {
	s.buf = binary.AppendUvarint(s.buf[:0], uint64(f))
	s.buf = binary.AppendUvarint(s.buf, uint64(len(state)))
	if _, err := s.z.Write(s.buf); err != nil {
		return err
	}
	_, err := s.z.Write(state)
	return err
}

// Close ends the file (not the writer under it).
func (s *statesWriter) Close() error { return s.z.Close() }

// capture re-simulates a replay on this machine, verifying its checksums,
// and writes its states file to w: the arena at the start of every frame
// that has a checksum, and after the last frame (at frame Frames).
func capture(rp *replay.Replay, w io.Writer, games []Game) (replay.Report, error) {
	a, g, err := open(rp, games)
	if err != nil {
		return replay.Report{}, err
	}
	l := describe(a)
	sw, err := newStatesWriter(w, l)
	if err != nil {
		return replay.Report{}, err
	}
	save := func(f rollback.Frame) error {
		if a.Used() != l.Used {
			return fmt.Errorf("frame %d: the game allocated in its arena during the match (%d bytes used, %d at the start): this tool compares fixed layouts only", f, a.Used(), l.Used)
		}
		return sw.Write(f, a.Bytes())
	}
	sums := rp.Checksums
	var saveErr error
	wrapped := rollback.GameFunc(func(f rollback.Frame, in []rollback.PlayerInput) {
		for ; len(sums) > 0 && sums[0].Frame <= f; sums = sums[1:] {
			if sums[0].Frame == f && saveErr == nil {
				saveErr = save(f) // what Verify has just hashed for frame f
			}
		}
		g.Step(f, in)
	})
	rep, err := rp.Verify(a, wrapped, nil)
	if err == nil {
		err = saveErr
	}
	if err == nil {
		err = save(rollback.Frame(rep.Frames))
	}
	if err == nil {
		err = sw.Close()
	}
	return rep, err
}

// stateFile reads a states file, forward.
type stateFile struct {
	Layout stateLayout // the host's
	file   *os.File
	r      *bufio.Reader
	asked  int64 // the last frame asked, or -1
	// The next record's header, read ahead when a frame was asked that
	// the file lacks.
	pending    bool
	pendFrame  int64
	pendLength int
	last       int64 // the frame of the last record header read, or -1
}

// openStates opens a states file and reads its layout.
func openStates(name string) (*stateFile, error) {
	file, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	s := &stateFile{file: file, asked: -1, last: -1}
	if err := s.start(); err != nil {
		file.Close()
		return nil, err
	}
	return s, nil
}

func (s *stateFile) start() error {
	z, err := gzip.NewReader(s.file)
	if err != nil {
		return fmt.Errorf("not a states file: %w", err)
	}
	s.r = bufio.NewReader(z)
	magic := make([]byte, len(statesMagic))
	if _, err := io.ReadFull(s.r, magic); err != nil || string(magic) != statesMagic {
		return errors.New("not a states file (or not of this version)")
	}
	n, err := binary.ReadUvarint(s.r)
	if err != nil || n > maxLayout {
		return fmt.Errorf("states file: damaged layout (%d bytes, %v)", n, err)
	}
	js := make([]byte, n)
	if _, err := io.ReadFull(s.r, js); err != nil {
		return fmt.Errorf("states file: damaged layout: %w", noEOF(err))
	}
	if err := json.Unmarshal(js, &s.Layout); err != nil {
		return fmt.Errorf("states file: damaged layout: %w", err)
	}
	return nil
}

// Close closes the file.
func (s *stateFile) Close() error { return s.file.Close() }

// At returns the state at the start of frame f. Frames must be asked in
// increasing order; a file that lacks f, or is damaged, is an error.
func (s *stateFile) At(f rollback.Frame) ([]byte, error) {
	if int64(f) <= s.asked {
		return nil, fmt.Errorf("states file: frame %d asked after frame %d", f, s.asked)
	}
	s.asked = int64(f)
	for {
		if !s.pending {
			frame, err := binary.ReadUvarint(s.r)
			if err == io.EOF {
				return nil, fmt.Errorf("states file: no state of frame %d", f)
			}
			if err != nil {
				return nil, fmt.Errorf("states file: damaged: %w", err)
			}
			n, err := binary.ReadUvarint(s.r)
			if err != nil {
				return nil, fmt.Errorf("states file: damaged: %w", noEOF(err))
			}
			if n > ArenaSize || frame > math32 || int64(frame) <= s.last {
				return nil, fmt.Errorf("states file: damaged: a state of frame %d, %d bytes", frame, n)
			}
			s.pending, s.pendFrame, s.pendLength, s.last = true, int64(frame), int(n), int64(frame)
		}
		switch {
		case s.pendFrame > int64(f):
			return nil, fmt.Errorf("states file: no state of frame %d", f)
		case s.pendFrame < int64(f):
			s.pending = false
			if _, err := s.r.Discard(s.pendLength); err != nil {
				return nil, fmt.Errorf("states file: damaged: %w", noEOF(err))
			}
			continue
		}
		s.pending = false
		state := make([]byte, s.pendLength)
		if _, err := io.ReadFull(s.r, state); err != nil {
			return nil, fmt.Errorf("states file: damaged: %w", noEOF(err))
		}
		return state, nil
	}
}

const math32 = 1<<31 - 1

// readState returns the state of frame f from a states file.
func readState(name string, f rollback.Frame) ([]byte, error) {
	s, err := openStates(name)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.At(f)
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
