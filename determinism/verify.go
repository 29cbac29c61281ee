// This file re-simulates replays and says, in one machine-readable line
// per replay, whether this build of the game reproduced them: verified, or
// diverged at which frame and in which field of the state.
//
// Beside each replay FILE, FILE.states holds the recording machine's arena
// (savestate bytes) at the start of every frame that has a checksum and
// after the last frame, with its layout of the arena (every scalar field's
// path, offset, size and kind). When a checksum mismatches, the
// re-simulation stops with its arena at the start of that frame, and
// desync.Compare names the first field that differs from the host's. When
// this platform lays the state out differently from the host (386 aligns
// 64-bit fields to 4 bytes, amd64 to 8), no checksum of the whole arena can
// match; the states are then compared field by field, by path, at every
// checksum, so that a layout difference is told apart from a simulation
// that diverged.

package determinism

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

	"github.com/rewindgg/rewind/desync"
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
	// Probe: the line "probe" prints, of the build only.
	Probe = "probe"
)

// Result is what re-simulating one replay found. It is printed as one JSON
// line (see [Result.Line]).
type Result struct {
	File      string `json:"file"`
	Game      string `json:"game,omitempty"` // Game.Name
	Build     string `json:"build"`          // the re-simulator's platform, such as "linux/amd64 GOAMD64=v3"
	Fuses     bool   `json:"fuses"`          // this build fuses x*y+z (Fuses)
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

// fuseProbe are operands whose x*x+z is 0 when rounded twice and
// 2⁻⁶⁰ when fused; a variable, so that the compiler cannot fold it.
var fuseProbe = struct{ x, z float64 }{1 + 0x1p-30, -(1 + 0x1p-29)}

// Fuses reports whether this build fuses a float64 x*y+z into one fused
// multiply-add, as the Go specification allows: arm64 does, amd64 built
// with GOAMD64=v3 does, amd64 v1, 386 and js/wasm do not. A game whose
// Step computes x*y+z on floats gets other results where it fuses.
func Fuses() bool { return fusedMadd(fuseProbe.x, fuseProbe.x, fuseProbe.z) != 0 }

//go:noinline
func fusedMadd(x, y, z float64) float64 { return x*y + z }

// open makes a fresh arena and the game a replay was recorded with, in
// its state at frame 0.
func open(rp *replay.Replay, games []Game) (*savestate.Arena, rollback.Game, error) {
	g, err := gameNamed(games, rp.Game)
	if err != nil {
		return nil, nil, err
	}
	if len(rp.Params) != 8 {
		return nil, nil, fmt.Errorf("%s: %d bytes of parameters, not a seed", rp.Game, len(rp.Params))
	}
	if rp.GameChecksum {
		return nil, nil, errors.New("the checksums hash game data, not the arena: the matrix re-simulates arena checksums only")
	}
	return newMatch(g, rp.Players, binary.LittleEndian.Uint64(rp.Params))
}

// reference is a replay's recorded states, compared with this build's.
type reference struct {
	st    *stateFile // nil without one
	noRef string     // why there is none
	a     *savestate.Arena
	same  bool           // the layouts are alike: compare bytes
	byPat *fieldComparer // otherwise, field by field
}

// openReference opens statesFile ("" for none) for a's states.
func openReference(a *savestate.Arena, statesFile string, res *Result) *reference {
	r := &reference{a: a, noRef: "(no reference states given)"}
	if statesFile == "" {
		return r
	}
	st, err := openStates(statesFile)
	if err != nil {
		r.noRef = fmt.Sprintf("(no reference state: %v)", err)
		return r
	}
	local := describe(a)
	r.st = st
	res.Layout = local.Differences(st.Layout)
	r.same = local.Same(st.Layout)
	if !r.same {
		r.byPat = newFieldComparer(local, st.Layout)
	}
	return r
}

// compare says how the state at the start of frame fr differs from the
// host's: the first field and how many differ (0 and "" when none does; 0
// and a reason in parentheses when it cannot tell).
func (r *reference) compare(fr rollback.Frame) (field string, fields int) {
	if r.st == nil {
		return r.noRef, 0
	}
	ref, err := r.st.At(fr)
	if err != nil {
		return fmt.Sprintf("(no reference state: %v)", err), 0
	}
	if r.same {
		return diffStates(r.a, r.a.Bytes(), ref)
	}
	return r.byPat.Compare(r.a.Bytes(), ref)
}

func (r *reference) close() {
	if r.st != nil {
		r.st.Close()
	}
}

// verify re-simulates the replay in file and compares every checksum it
// holds. statesFile ("" for none) holds the host's states: when a
// checksum differs, the state is compared with the host's to name the
// field; when this platform lays the state out differently (a 386 build's
// 64-bit fields are 4-byte aligned), the checksums cannot match, and the
// states are compared field by field at every checksum instead. verify
// never panics on a bad file: the Result says Failed and why.
func verify(file, statesFile string, games []Game) Result {
	res := Result{File: file, Build: Build(), Fuses: Fuses()}
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
	a, g, err := open(rp, games)
	if err != nil {
		return fail(err)
	}
	res.Game = rp.Game
	ref := openReference(a, statesFile, &res)
	defer ref.close()
	diverged, finalCompared := resimulate(rp, a, g, ref, &res)
	if diverged {
		return res
	}
	// The last frame is in no checksum: the host's final state is.
	if frames := rollback.Frame(rp.Frames()); ref.st != nil && !finalCompared {
		field, n := ref.compare(frames)
		if n > 0 { // (an old or damaged states file, n == 0: the checksums have spoken)
			res.Status, res.Frame, res.Field, res.Fields, res.Final = Diverged, int(frames), field, n, ""
		}
	}
	return res
}

// resimulate steps g through the replay, checking its checksums, and
// fills res; diverged reports a divergence found at a checksum,
// finalCompared that the state after the last frame was compared with the
// host's already.
func resimulate(rp *replay.Replay, a *savestate.Arena, g rollback.Game, ref *reference, res *Result) (diverged, finalCompared bool) {
	frames := rollback.Frame(rp.Frames())
	in := make([]rollback.PlayerInput, rp.Players)
	sums := rp.Checksums
	for fr := rollback.Frame(0); ; fr++ {
		for ; len(sums) > 0 && sums[0].Frame <= fr; sums = sums[1:] {
			if sums[0].Frame < fr {
				continue // Read keeps them in order: never
			}
			if xxhash.Sum64(a.Bytes()) == sums[0].Sum {
				res.Checksums++
				continue
			}
			field, n := ref.compare(fr)
			finalCompared = fr == frames
			if !ref.same && ref.st != nil && n == 0 && field == "" {
				res.ByFields++ // the layout differs, every value is the host's
				continue
			}
			if field == "" {
				field = "(the state equals the host's, yet its checksum differs: the states file is not of this replay)"
			}
			res.Status, res.Frame, res.Frames, res.Field, res.Fields = Diverged, int(fr), int(fr), field, n
			return true, finalCompared
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
	return false, finalCompared
}

// diffStates names the first field at which ref, the host's state, differs from
// local, this build's (desync.Compare: "path: ours vs theirs"), and counts
// the fields that differ. The two must share a layout.
func diffStates(a *savestate.Arena, local, ref []byte) (first string, fields int) {
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

// verifyMain is the "verify" command: it verifies each replay (with
// FILE.states as its reference when it exists) and prints one JSON line
// per file on stdout. Exit status: 0 when every file verified, 1 when one
// diverged or could not be read, 2 for bad usage.
func verifyMain(args []string, stdout, stderr io.Writer, games []Game) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprintln(stderr, "usage: verify FILE...   (FILE.states, when present, names a diverged field)")
		return 2
	}
	status := 0
	for _, file := range args {
		states := file + ".states"
		if _, err := os.Stat(states); err != nil {
			states = ""
		}
		r := verify(file, states, games)
		if r.Status != Verified {
			status = 1
		}
		if _, err := stdout.Write(r.Line()); err != nil {
			fmt.Fprintln(stderr, "verify:", err)
			return 1
		}
	}
	return status
}
