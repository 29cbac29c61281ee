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
package netlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	Steps   []Step // indexed by frame; a zero Step (Status "") was never simulated
	Final   int    // every frame before this one is final
	Records int    // records read
	Desync  string // the desync record, if the session detected one
}

// ErrFormat is wrapped by the errors of [Read].
var ErrFormat = errors.New("netlog: bad log")

// maxFrame bounds a frame number a log may name (about 19 hours at 60 Hz).
const maxFrame = 1 << 22

type record struct {
	Msg    string   `json:"msg"`
	Frame  *int     `json:"frame"`
	In     []uint64 `json:"in"`
	St     string   `json:"st"`
	Sum    string   `json:"sum"`
	Peer   *int     `json:"peer"`
	Local  string   `json:"local"`
	Remote string   `json:"remote"`
	To     int      `json:"to"`
}

// Read reads a log. Lines that are not JSON objects are an error naming
// the line; records of kinds it does not know are counted and skipped.
func Read(r io.Reader) (*Log, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	l := &Log{}
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			return l, fmt.Errorf("%w: line %d: %v", ErrFormat, line, err)
		}
		l.Records++
		switch rec.Msg {
		case KindStep:
			if rec.Frame == nil || *rec.Frame < 0 || *rec.Frame >= maxFrame || len(rec.In) != len(rec.St) || rec.St == "" {
				return l, fmt.Errorf("%w: line %d: a step record without a valid frame, inputs and statuses", ErrFormat, line)
			}
			f := *rec.Frame
			for len(l.Steps) <= f {
				l.Steps = append(l.Steps, Step{Frame: len(l.Steps)})
			}
			l.Steps[f] = Step{Frame: f, In: rec.In, Status: rec.St, Sum: rec.Sum, Line: line}
		case KindFinal:
			l.Final = max(l.Final, min(rec.To, maxFrame))
		case KindDesync:
			if rec.Frame != nil && rec.Peer != nil {
				l.Desync = fmt.Sprintf("line %d: desync detected at checksum frame %d with peer %d (%s vs %s)", line, *rec.Frame, *rec.Peer, rec.Local, rec.Remote)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return l, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return l, nil
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
// returns how many frames it compared.
func Diff(a, b *Log) (*Divergence, int) {
	n := 0
	var prev *Step
	for f := range min(len(a.Steps), len(b.Steps), a.Final, b.Final) {
		sa, sb := &a.Steps[f], &b.Steps[f]
		if sa.Status == "" || sb.Status == "" {
			prev = nil // not simulated: a log that starts late
			continue
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
