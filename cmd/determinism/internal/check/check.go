// Package check re-simulates the determinism matrix's replays and says,
// in one machine-readable line per replay, whether this build of the game
// reproduced them: verified, or diverged at which frame and in which field
// of the state.
//
// It is the whole of the re-simulator (cmd/determinism/resim, built once
// per platform) and is shared by the harness, which uses it on the host to
// write the reference states that name a diverged field: beside each
// replay FILE, FILE.states holds the host's arena (savestate bytes) at the
// start of every frame that has a checksum and after the last frame, with
// the host's layout of the arena (every scalar field's path, offset, size
// and kind). When a checksum mismatches, the re-simulation stops with its
// arena at the start of that frame, and desync.Compare names the first
// field that differs from the host's. When this platform lays the state
// out differently from the host (386 aligns 64-bit fields to 4 bytes,
// amd64 to 8), no checksum of the whole arena can match; the states are
// then compared field by field, by path, at every checksum, so that a
// layout difference is told apart from a simulation that diverged.
package check

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/cmd/determinism/floatgame"
	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// Statuses of a [Result].
const (
	// Verified: every checksum matched.
	Verified = "verified"
	// LayoutOnly: the checksums differ because this platform lays the
	// state out differently (Result.Layout says how), and every field of
	// the state equals the host's at every checksum and at the end.
	LayoutOnly = "layout"
	// Diverged: a field of the state differs from the host's.
	Diverged = "diverged"
	// Failed: the replay could not be read or re-simulated.
	Failed = "error"
)

// Result is what re-simulating one replay found. It is printed as one JSON
// line (see [Result.Line]).
type Result struct {
	File      string `json:"file"`
	Game      string `json:"game,omitempty"` // "arena", or "floatgame/" and its mode
	Build     string `json:"build"`          // the re-simulator's platform, such as "linux/amd64 GOAMD64=v3"
	Fuses     bool   `json:"fuses"`          // this build fuses the float game's x*y+z
	Status    string `json:"status"`         // Verified, Diverged or Failed
	Frames    int    `json:"frames"`         // frames re-simulated (up to the divergence)
	Checksums int    `json:"checksums"`      // checksums that matched
	Frame     int    `json:"frame"`          // Diverged: the first frame whose start state differs
	Field     string `json:"field,omitempty"`
	Fields    int    `json:"fields,omitempty"`    // Diverged: how many fields differ at Frame
	Final     string `json:"final,omitempty"`     // Verified: xxhash of the final state
	ByFields  int    `json:"by_fields,omitempty"` // LayoutOnly: checksums that differed and were verified field by field
	Layout    string `json:"layout,omitempty"`    // how this platform's state layout differs from the host's
	Error     string `json:"error,omitempty"`
}

// Line encodes r as one line of JSON, newline included.
func (r Result) Line() []byte {
	b, _ := json.Marshal(r) // a struct of strings, ints and a bool: never fails
	return append(b, '\n')
}

// ParseLine decodes a line written by [Result.Line]; ok is false for any
// other line.
func ParseLine(line []byte) (r Result, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &r) != nil || r.File == "" || r.Status == "" {
		return Result{}, false
	}
	return r, true
}

// Build describes the running binary's platform: GOOS/GOARCH and the
// architecture level it was built for.
func Build() string {
	s := runtime.GOOS + "/" + runtime.GOARCH
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "GOAMD64", "GO386", "GOARM64":
				s += " " + kv.Key + "=" + kv.Value
			}
		}
	}
	return s
}

// arenaSize is the live region of every game's arena (what the arena
// example's replay command uses).
const arenaSize = 64 << 10

// Open makes a fresh arena and the game a replay was recorded with, in its
// state at frame 0. label names the game and its parameters.
func Open(rp *replay.Replay) (a *savestate.Arena, g rollback.Game, label string, err error) {
	a, err = savestate.New(arenaSize)
	if err != nil {
		return nil, nil, "", err
	}
	switch rp.Game {
	case arena.ReplayName:
		if len(rp.Params) != 8 {
			return nil, nil, "", fmt.Errorf("arena: %d bytes of parameters, not a seed", len(rp.Params))
		}
		seed := binary.LittleEndian.Uint64(rp.Params)
		if !bytes.Equal(arena.ReplayParams(seed), rp.Params) {
			return nil, nil, "", errors.New("arena: the replay's parameters are not a seed as arena.ReplayParams encodes it")
		}
		g, err = arena.New(a, rp.Players, seed)
		label = arena.ReplayName
	case floatgame.ReplayName:
		var mode floatgame.Mode
		var seed uint64
		mode, seed, err = floatgame.ParseParams(rp.Params)
		if err == nil {
			g, err = floatgame.New(a, rp.Players, mode, seed)
		}
		label = floatgame.ReplayName + "/" + mode.String()
	default:
		err = fmt.Errorf("unknown game %q", rp.Game)
	}
	if err != nil {
		return nil, nil, "", err
	}
	if rp.GameChecksum {
		return nil, nil, "", errors.New("the checksums hash game data, not the arena: this tool re-simulates arena checksums only")
	}
	return a, g, label, nil
}

// Verify re-simulates the replay in file and compares every checksum it
// holds. statesFile ("" for none) holds the host's states: when a
// checksum differs, the state is compared with the host's to name the
// field; when this platform lays the state out differently (a 386 build's
// 64-bit fields are 4-byte aligned), the checksums cannot match, and the
// states are compared field by field at every checksum instead. Verify
// never panics on a bad file: the Result says Failed and why.
func Verify(file, statesFile string) Result {
	res := Result{File: file, Build: Build(), Fuses: floatgame.Fuses()}
	fail := func(err error) Result {
		res.Status, res.Error = Failed, err.Error()
		return res
	}
	f, err := os.Open(file)
	if err != nil {
		return fail(err)
	}
	rp, err := replay.Read(f)
	f.Close()
	if err != nil {
		return fail(err) // a truncated file too: a replay that verifies only in part is not verified
	}
	a, g, label, err := Open(rp)
	if err != nil {
		return fail(err)
	}
	res.Game = label

	local := Describe(a)
	var st *States
	noRef := "(no reference states given)"
	if statesFile != "" {
		if st, err = OpenStates(statesFile); err != nil {
			noRef = fmt.Sprintf("(no reference state: %v)", err)
		} else {
			defer st.Close()
			res.Layout = local.Differences(st.Layout)
		}
	}
	same := st != nil && local.Same(st.Layout)
	var byPath *FieldComparer
	if st != nil && !same {
		byPath = NewFieldComparer(local, st.Layout)
	}
	// compare says how the state at the start of frame fr differs from the
	// host's: the first field and how many differ (0 and "" when none
	// does; 0 and a reason in parentheses when it cannot tell).
	compare := func(fr rollback.Frame) (field string, fields int) {
		if st == nil {
			return noRef, 0
		}
		ref, err := st.At(fr)
		if err != nil {
			return fmt.Sprintf("(no reference state: %v)", err), 0
		}
		if same {
			return Diff(a, a.Bytes(), ref)
		}
		return byPath.Compare(a.Bytes(), ref)
	}

	frames := rollback.Frame(rp.Frames())
	in := make([]rollback.PlayerInput, rp.Players)
	sums := rp.Checksums
	finalCompared := false
	for fr := rollback.Frame(0); ; fr++ {
		for ; len(sums) > 0 && sums[0].Frame <= fr; sums = sums[1:] {
			if sums[0].Frame < fr {
				continue // Read keeps them in order: never
			}
			if xxhash.Sum64(a.Bytes()) == sums[0].Sum {
				res.Checksums++
				continue
			}
			field, n := compare(fr)
			finalCompared = fr == frames
			if !same && st != nil && n == 0 && field == "" {
				res.ByFields++ // the layout differs, every value is the host's
				continue
			}
			if field == "" {
				field = "(the state equals the host's, yet its checksum differs: the states file is not of this replay)"
			}
			res.Status, res.Frame, res.Frames, res.Field, res.Fields = Diverged, int(fr), int(fr), field, n
			return res
		}
		if fr == frames {
			break
		}
		for p := range in {
			v, _ := rp.Input(fr, rollback.PlayerID(p))
			in[p] = rollback.PlayerInput{Input: v, Status: rollback.Confirmed}
			if l := rp.Left[p]; l >= 0 && fr >= l {
				in[p] = rollback.PlayerInput{Status: rollback.Disconnected}
			}
		}
		g.Step(fr, in)
	}
	res.Frames, res.Final = int(frames), fmt.Sprintf("%016x", xxhash.Sum64(a.Bytes()))
	res.Status = Verified
	if res.ByFields > 0 {
		res.Status = LayoutOnly
	}
	// The last frame is in no checksum: the host's final state is.
	if st != nil && !finalCompared {
		field, n := compare(frames)
		if n > 0 { // (an old or damaged states file, n == 0: the checksums have spoken)
			res.Status, res.Frame, res.Field, res.Fields, res.Final = Diverged, int(frames), field, n, ""
		}
	}
	return res
}

// Diff names the first field at which ref, the host's state, differs from
// local, this build's (desync.Compare: "path: ours vs theirs"), and counts
// the fields that differ. The two must share a layout.
func Diff(a *savestate.Arena, local, ref []byte) (first string, fields int) {
	first = desync.Compare(a, local, ref)
	if first == "" {
		return "", 0
	}
	last := ""
	for i := 0; i < min(len(local), len(ref)); i++ {
		if local[i] == ref[i] {
			continue
		}
		p := fmt.Sprintf("byte %d", i)
		if f, ok := a.FieldIn(local, i); ok {
			p = f.Path
		}
		if p != last {
			fields++
			last = p
		}
	}
	return first, max(fields, 1)
}

// Main is the re-simulator's command line: resim FILE... verifies each
// replay (with FILE.states as its reference when it exists) and prints one
// JSON line per file on stdout. Exit status: 0 when every file verified,
// 1 when one diverged or could not be read, 2 for bad usage.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprintln(stderr, "usage: resim FILE...   (FILE.states, when present, names a diverged field)")
		return 2
	}
	status := 0
	for _, file := range args {
		states := file + ".states"
		if _, err := os.Stat(states); err != nil {
			states = ""
		}
		r := Verify(file, states)
		if r.Status != Verified {
			status = 1
		}
		if _, err := stdout.Write(r.Line()); err != nil {
			fmt.Fprintln(stderr, "resim:", err)
			return 1
		}
	}
	return status
}
