// Package netlog reads the detailed network logs that rollback sessions
// write (rollback.Config.Log, JSON lines through log/slog) and finds the
// first frame where two peers' logs diverge.
//
// Every simulated frame is logged as a "step" record with the inputs used,
// their statuses (C confirmed, P predicted, D disconnected) and a checksum
// of the arena at the start of the frame. A frame may be simulated many
// times (rollbacks); once a "final" record says it is final, its last step
// record is the one that counts (a frame whose prediction came true is
// never simulated again, so that record may say P). [Diff] walks the
// frames final in both logs, in order, and reports the first whose state
// or inputs differ: a state that differs while every earlier input agreed
// means the simulation of the frame before diverged (non-determinism, or
// state kept outside the arena).
//
// # Hostile logs
//
// A log may come from anyone (a bug report from a player, say), so [Read]
// trusts nothing in it: it never panics, and its memory is bounded by the
// log's size, not by the frame numbers the log names. It keeps one [Step]
// per frame the log simulates (a frame named once costs one Step, however
// high its number), refuses a line over 4 MiB, a frame number from 2^22
// (about 19 hours at 60 Hz) and a step record of more than 64 players, and
// allocates at most 16 times the log's size plus 64 KiB in all (a test and
// the fuzzer hold it to that).
package netlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// Step is the final simulation of one frame, as one peer logged it.
type Step struct {
	Frame  int
	In     []uint64 // each player's input
	Status string   // each player's input status: C, P or D
	Sum    string   // checksum of the arena at the start of the frame
	Line   int      // the record's line in the log
}

// Log is one peer's network log.
type Log struct {
	// Steps holds one Step per frame the log simulates, in frame order:
	// a frame the log never simulates (one before the log starts, say)
	// has none, so Steps[i] is not frame i's (see [Log.Step]).
	Steps   []Step
	Final   int    // every frame before this one is final
	Records int    // records read
	Desync  string // the desync record, if the session detected one
}

// Step returns the step of frame f, or nil when the log has none.
func (l *Log) Step(f int) *Step {
	i := sort.Search(len(l.Steps), func(i int) bool { return l.Steps[i].Frame >= f })
	if i < len(l.Steps) && l.Steps[i].Frame == f {
		return &l.Steps[i]
	}
	return nil
}

// ErrFormat is wrapped by the errors of [Read].
var ErrFormat = errors.New("netlog: bad log")

const (
	// maxFrame bounds a frame number a log may name (about 19 hours at
	// 60 Hz).
	maxFrame = 1 << 22
	// maxLine bounds a line.
	maxLine = 4 << 20
	// maxInputs bounds the inputs of a step record, one per player: far
	// more players than a session has.
	maxInputs = 64
)

// Read reads a log. Lines that are not JSON objects are an error naming
// the line, wrapping [ErrFormat], as are step records without a frame
// number from 0 to 2^22-1, or without as many inputs (at most 64) as
// statuses; records of kinds it does not know are counted and skipped.
// When a frame has several step records, the last one counts. Read never
// panics, and allocates at most 16 times the log's size plus 64 KiB.
func Read(r io.Reader) (*Log, error) {
	l, sorted, err := read(r)
	if !sorted { // with what was read before an error too
		slices.SortFunc(l.Steps, func(a, b Step) int { return a.Frame - b.Frame })
	}
	return l, err
}

// read is Read, but for the sorting of the steps when sorted is false.
func read(r io.Reader) (l *Log, sorted bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxLine) // grown as lines come, to the longest
	l = &Log{}
	// at finds a frame's step: Steps holds frames in the order their first
	// step records came (rollbacks step a frame again and again), sorted
	// at the end if they came out of order.
	at := map[int32]int32{}
	sorted = true
	var rec record
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if !json.Valid(b) {
			var v any
			why := json.Unmarshal(b, &v) // for its description of the error
			return l, sorted, fmt.Errorf("%w: line %d: %v", ErrFormat, line, why)
		}
		if !rec.parse(b) {
			return l, sorted, fmt.Errorf("%w: line %d: not a JSON object", ErrFormat, line)
		}
		if rec.err != nil {
			return l, sorted, fmt.Errorf("%w: line %d: %v", ErrFormat, line, rec.err)
		}
		l.Records++
		switch msg(rec.msg) {
		case KindStep:
			f, status, ok := rec.step()
			if !ok {
				return l, sorted, fmt.Errorf("%w: line %d: a step record without a valid frame, inputs and statuses", ErrFormat, line)
			}
			st := Step{Frame: f, In: rec.inputs(), Status: status, Sum: text(rec.sum), Line: line}
			if i, ok := at[int32(f)]; ok {
				l.Steps[i] = st
				break
			}
			if n := len(l.Steps); n > 0 && l.Steps[n-1].Frame > f {
				sorted = false
			}
			at[int32(f)] = int32(len(l.Steps))
			if len(l.Steps) == cap(l.Steps) {
				// Doubling: append would grow by a quarter at a time,
				// allocating five times the final size on the way.
				l.Steps = slices.Grow(l.Steps, len(l.Steps)+1)
			}
			l.Steps = append(l.Steps, st)
		case KindFinal:
			to, _, _ := integer(rec.to)
			l.Final = max(l.Final, min(to, maxFrame))
		case KindDesync:
			frame, hasFrame, _ := integer(rec.frame)
			peer, hasPeer, _ := integer(rec.peer)
			if hasFrame && hasPeer {
				l.Desync = fmt.Sprintf("line %d: desync detected at checksum frame %d with peer %d (%s vs %s)", line, frame, peer, text(rec.local), text(rec.remote))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return l, sorted, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return l, sorted, nil
}

// msg returns the kind of a record: its msg, unescaped, but without
// allocating for a kind Read does not know.
func msg(v []byte) string {
	if v == nil || isNull(v) {
		return ""
	}
	s := v[1 : len(v)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		switch string(s) {
		case KindStep, KindFinal, KindDesync:
			return string(s)
		}
		return "?"
	}
	return text(v)
}

// step checks a step record: a frame from 0 to maxFrame-1, and as many
// inputs (at most maxInputs) as statuses (at least one). It returns the
// frame and the statuses.
func (r *record) step() (int, string, bool) {
	f, ok, _ := integer(r.frame)
	if !ok || f < 0 || f >= maxFrame || r.st == nil || len(r.st) > 6*maxInputs+2 || r.in == nil {
		return 0, "", false
	}
	st := text(r.st) // unescaped, as Unmarshal would
	if st == "" || len(st) > maxInputs || eachUint(r.in, func(uint64) {}) != len(st) {
		return 0, "", false
	}
	return f, st, true
}

// inputs returns a step record's inputs (step has checked them).
func (r *record) inputs() []uint64 {
	in := make([]uint64, 0, eachUint(r.in, func(uint64) {}))
	eachUint(r.in, func(u uint64) { in = append(in, u) })
	return in
}

// Divergence is the first frame where two logs differ.
type Divergence struct {
	Frame    int
	State    bool // the state at the start of Frame differs (else an input does)
	Player   int  // the input that differs (when !State)
	A, B     Step // each log's final step of Frame
	Prev     *Step
	Compared int // frames compared before it
}

func (d *Divergence) String() string {
	var b strings.Builder
	if d.State {
		fmt.Fprintf(&b, "first divergence at frame %d: the state at its start differs (checksum %s vs %s; lines %d and %d)\n",
			d.Frame, d.A.Sum, d.B.Sum, d.A.Line, d.B.Line)
		if d.Prev != nil {
			fmt.Fprintf(&b, "  every input up to frame %d agrees, so simulating frame %d with the same state and inputs %v gave different states:\n"+
				"  the game is not deterministic there, or keeps state outside the arena\n", d.Frame-1, d.Frame-1, d.Prev.In)
		} else {
			b.WriteString("  the two peers started from different states (different game parameters?)\n")
		}
	} else {
		fmt.Fprintf(&b, "first divergence at frame %d: player %d's input differs (%s vs %s; statuses %s and %s; lines %d and %d)\n"+
			"  both peers took it as final: a protocol fault, not the game's\n",
			d.Frame, d.Player, input(d.A.In, d.Player), input(d.B.In, d.Player), d.A.Status, d.B.Status, d.A.Line, d.B.Line)
	}
	fmt.Fprintf(&b, "  %d earlier frames agree", d.Compared)
	return b.String()
}

// Diff compares two peers' logs frame by frame and returns the first
// divergence, or nil when every frame final in both agrees. It also
// returns how many frames it compared. Frames only one log simulated (a
// log that starts late) are not compared. Its time is linear in the logs'
// steps.
func Diff(a, b *Log) (*Divergence, int) {
	n := 0
	var prev *Step // the step of the frame compared last, in a
	end := min(a.Final, b.Final)
	for i, j := 0, 0; i < len(a.Steps) && j < len(b.Steps); {
		sa, sb := &a.Steps[i], &b.Steps[j]
		f := sa.Frame
		switch {
		case f >= end || sb.Frame >= end:
			return nil, n
		case f < sb.Frame:
			i++
			continue
		case sb.Frame < f:
			j++
			continue
		}
		i, j = i+1, j+1
		if prev != nil && prev.Frame != f-1 {
			prev = nil // frame f-1 was not compared
		}
		if sa.Sum != sb.Sum {
			return &Divergence{Frame: f, State: true, A: *sa, B: *sb, Prev: prev, Compared: n}, n
		}
		if len(sa.In) != len(sb.In) {
			return &Divergence{Frame: f, Player: min(len(sa.In), len(sb.In)), A: *sa, B: *sb, Compared: n}, n
		}
		for p := range sa.In {
			if sa.In[p] != sb.In[p] || (sa.Status[p] == 'D') != (sb.Status[p] == 'D') {
				return &Divergence{Frame: f, Player: p, A: *sa, B: *sb, Compared: n}, n
			}
		}
		prev = sa
		n++
	}
	return nil, n
}

func input(in []uint64, p int) string {
	if p >= len(in) {
		return "none"
	}
	return fmt.Sprintf("%#x", in[p])
}
