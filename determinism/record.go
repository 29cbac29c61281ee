package determinism

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// Kinds of [Recording].
const (
	// SyncTest: one machine plays every player in sync-test mode
	// (rollback.Config.SyncTest), rolling back and re-simulating every
	// frame and comparing checksums.
	SyncTest = "sync-test"
	// TwoMachines: two machines, a player each, over a simulated network
	// (rollback/netsim); machine 0's session records, rollbacks included.
	TwoMachines = "two-machines"
)

// Recording is one replay recorded on this machine, as "record" prints
// it (one JSON line).
type Recording struct {
	File        string `json:"file"` // the replay; File+".states" holds this machine's states
	Game        string `json:"game"`
	Kind        string `json:"kind"` // SyncTest or TwoMachines
	Seed        uint64 `json:"seed"`
	Frames      int    `json:"frames"`
	Checksums   int    `json:"checksums"`
	Final       string `json:"final"`       // xxhash of the final state, as Result.Final
	Rollbacks   int64  `json:"rollbacks"`   // the recording session's (rollback.Stats)
	Resimulated int64  `json:"resimulated"` // frames re-simulated by them
	Size        int    `json:"size"`        // bytes of the replay
	Error       string `json:"error,omitempty"`
}

// options are record's flags.
type options struct {
	out      string
	frames   int
	seeds    []uint64
	profile  netsim.Profile
	syncTest int
}

func parseRecord(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{}
	fs.StringVar(&o.out, "out", "", "directory for the replays (required)")
	fs.IntVar(&o.frames, "frames", 1200, "frames per match")
	seeds := fs.String("seeds", "1,2,3", "comma-separated seeds: each plays a sync-test match and a two-machine match")
	profile := fs.String("profile", "wifi", "the two-machine match's network (a rollback/netsim preset or spec)")
	fs.IntVar(&o.syncTest, "synctest", 7, "frames the sync-test match rolls back every frame")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.profile, err = netsim.ParseProfile(*profile); err != nil {
		return o, err
	}
	for s := range strings.SplitSeq(*seeds, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return o, fmt.Errorf("-seeds: %q is not a seed", s)
		}
		o.seeds = append(o.seeds, v)
	}
	switch {
	case o.out == "" || fs.NArg() > 0:
		return o, errors.New("usage: record -out DIR [-frames N] [-seeds LIST] [-profile P] [-synctest N]")
	case o.frames < 2 || o.frames > 1_000_000:
		return o, fmt.Errorf("-frames %d: want 2 to 1000000", o.frames)
	}
	return o, nil
}

// recordMain is the "record" command.
func recordMain(args []string, stdout, stderr io.Writer, games []Game) int {
	o, err := parseRecord(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "determinism record:", err)
		return 2
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		fmt.Fprintln(stderr, "determinism record:", err)
		return 2
	}
	status := 0
	for _, g := range games {
		for _, seed := range o.seeds {
			for _, kind := range []string{SyncTest, TwoMachines} {
				rec := recordOne(g, kind, seed, o, games)
				if rec.Error != "" {
					status = 1
				}
				line, _ := json.Marshal(rec) // strings and numbers: never fails
				if _, err := stdout.Write(append(line, '\n')); err != nil {
					return 1
				}
			}
		}
	}
	return status
}

// recordOne plays and records one match, and writes its replay and
// states.
func recordOne(g Game, kind string, seed uint64, o options, games []Game) Recording {
	name := fmt.Sprintf("%s-%s-%d.rwr", strings.NewReplacer("/", "_", "+", "_").Replace(g.Name()), kind, seed)
	rec := Recording{File: filepath.Join(o.out, name), Game: g.Name(), Kind: kind, Seed: seed}
	var file bytes.Buffer
	var st rollback.Stats
	var err error
	if kind == SyncTest {
		st, err = playSyncTest(g, seed, o, &file)
	} else {
		st, err = playTwoMachines(g, seed, o, &file)
	}
	rec.Rollbacks, rec.Resimulated = st.Rollbacks, st.ResimulatedFrames
	if err == nil {
		err = writeReplay(&rec, file.Bytes(), games)
	}
	if err != nil {
		rec.Error = err.Error()
	}
	return rec
}

// seedParams are the replay's parameters: the seed, 8 bytes little-endian.
func seedParams(seed uint64) []byte { return binary.LittleEndian.AppendUint64(nil, seed) }

// bots returns each player's input source.
func bots(g Game, players int, seed uint64) []func() rollback.Input {
	out := make([]func() rollback.Input, players)
	for p := range out {
		if b, ok := g.(Bots); ok {
			out[p] = b.Bot(rollback.PlayerID(p), seed)
			continue
		}
		rng := rand.New(rand.NewPCG(seed, uint64(p)+0xb07))
		mask := g.Layout().Mask()
		var held rollback.Input
		left := 0
		out[p] = func() rollback.Input {
			if left == 0 {
				held, left = rollback.Input(rng.Uint64())&mask, 1+rng.IntN(30)
			}
			left--
			return held
		}
	}
	return out
}

// newMatch makes a fresh arena and g's state in it.
func newMatch(g Game, players int, seed uint64) (*savestate.Arena, rollback.Game, error) {
	a, err := savestate.New(ArenaSize)
	if err != nil {
		return nil, nil, err
	}
	sim, err := g.New(a, players, seed)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: New: %w", g.Name(), err)
	}
	if sim == nil {
		return nil, nil, fmt.Errorf("%s: New returned no game", g.Name())
	}
	return a, sim, nil
}

// playSyncTest records a two-player match on one machine in sync-test mode.
func playSyncTest(g Game, seed uint64, o options, file io.Writer) (rollback.Stats, error) {
	a, sim, err := newMatch(g, 2, seed)
	if err != nil {
		return rollback.Stats{}, err
	}
	w := replay.NewWriter(file, g.Name(), seedParams(seed))
	s, err := rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{0, 1}, Layout: g.Layout(),
		State: a, Game: sim, Recorder: w, ChecksumEvery: 1, SyncTest: o.syncTest})
	if err != nil {
		return rollback.Stats{}, err
	}
	next := bots(g, 2, seed)
	for f := range o.frames + o.syncTest { // the recorder is syncTest frames behind
		for p, bot := range next {
			if _, err := s.AddLocalInput(rollback.PlayerID(p), bot()); err != nil {
				return s.Stats(), fmt.Errorf("frame %d: %w", f, err)
			}
		}
		if _, err := s.Advance(); err != nil {
			return s.Stats(), fmt.Errorf("the sync test failed at frame %d: %w", f, err)
		}
	}
	return s.Stats(), w.Close()
}

// tick is one 60 Hz frame of the two-machine match's network clock.
const tick = time.Second / 60

// playTwoMachines records a two-player match of two machines over a
// simulated network; machine 0 records.
func playTwoMachines(g Game, seed uint64, o options, file io.Writer) (rollback.Stats, error) {
	nw, err := netsim.New(2, seed, o.profile)
	if err != nil {
		return rollback.Stats{}, err
	}
	w := replay.NewWriter(file, g.Name(), seedParams(seed))
	sessions := make([]*rollback.Session, 2)
	for i := range sessions {
		a, sim, err := newMatch(g, 2, seed)
		if err != nil {
			return rollback.Stats{}, err
		}
		var key [32]byte
		binary.LittleEndian.PutUint64(key[:], seed)
		key[8] = byte(i)
		c := rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)}, Layout: g.Layout(),
			State: a, Game: sim, ChecksumEvery: 1, Clock: nw.Now, Transport: nw.Endpoint(i), SessionID: seed | 1,
			Rand: rand.NewChaCha8(key), Peers: []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}}}
		if i == 0 {
			c.Recorder = w
		}
		if sessions[i], err = rollback.NewSession(c); err != nil {
			return rollback.Stats{}, fmt.Errorf("machine %d: %w", i, err)
		}
	}
	if err := drive(sessions, nw, bots(g, 2, seed), o.frames); err != nil {
		return sessions[0].Stats(), err
	}
	st := sessions[0].Stats()
	for _, s := range sessions {
		s.Close()
	}
	return st, w.Close()
}

// drive runs the machines a tick at a time until both have confirmed
// frames frames.
func drive(sessions []*rollback.Session, nw *netsim.Network, next []func() rollback.Input, frames int) error {
	pending := make([]*rollback.Input, len(sessions))
	limit := 4*frames + 1200 // the handshake, stalls on a lossy link
	for t := 0; ; t++ {
		done := true
		for _, s := range sessions {
			done = done && s.ConfirmedFrame() >= rollback.Frame(frames)
		}
		if done {
			return nil
		}
		if t == limit {
			return fmt.Errorf("the two machines confirmed only frames %d and %d of %d in %d ticks", sessions[0].ConfirmedFrame(), sessions[1].ConfirmedFrame(), frames, limit)
		}
		for i, s := range sessions {
			if pending[i] == nil {
				in := next[i]()
				pending[i] = &in
			}
			queued, err := s.AddLocalInput(rollback.PlayerID(i), *pending[i])
			if err != nil {
				return fmt.Errorf("machine %d: %w", i, err)
			}
			if queued {
				pending[i] = nil
			}
			if _, err := s.Advance(); err != nil {
				return fmt.Errorf("machine %d, frame %d: %w", i, s.Frame(), err)
			}
		}
		nw.Advance(tick)
	}
}

// writeReplay writes a replay to rec.File, with its states (this
// machine's re-simulation of it, verified) beside it.
func writeReplay(rec *Recording, file []byte, games []Game) error {
	rec.Size = len(file)
	rp, err := replay.Read(bytes.NewReader(file))
	if err != nil {
		return err
	}
	if err := os.WriteFile(rec.File, file, 0o644); err != nil {
		return err
	}
	out, err := os.Create(rec.File + ".states")
	if err != nil {
		return err
	}
	defer out.Close()
	bw := bufio.NewWriter(out)
	rep, err := capture(rp, bw, games)
	if err != nil {
		return fmt.Errorf("%s does not verify on the machine that recorded it: %w", filepath.Base(rec.File), err)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	rec.Frames, rec.Checksums, rec.Final = rep.Frames, rep.Checksums, fmt.Sprintf("%016x", rep.Final)
	return out.Close()
}
