package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rewindgg/rewind/cmd/determinism/floatgame"
	"github.com/rewindgg/rewind/cmd/determinism/internal/check"
	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// game is one row group of the matrix: a game and its parameters.
type game struct {
	Name  string // as the table shows it
	File  string // the replay's file name
	Float bool   // the float game (else the arena example)
	Mode  floatgame.Mode
}

// games are the matrix's games: the fixed-point arena, which must verify
// everywhere, and the float game with each source of divergence alone,
// then all of them.
var games = []game{
	{Name: "arena", File: "arena.rwr"},
	{Name: "float fma", File: "float-fma.rwr", Float: true, Mode: floatgame.ModeFMA},
	{Name: "float sin", File: "float-sin.rwr", Float: true, Mode: floatgame.ModeSin},
	{Name: "float exp", File: "float-exp.rwr", Float: true, Mode: floatgame.ModeExp},
	{Name: "float all", File: "float-all.rwr", Float: true, Mode: floatgame.ModeAll},
}

// recordMatch plays a local two-player match of frames frames of g with
// seeded bots, recording it with a replay.Writer as the session's
// Recorder, a checksum every frame, and returns the replay.
func recordMatch(g game, frames int, seed uint64) ([]byte, error) {
	a, err := savestate.New(64 << 10)
	if err != nil {
		return nil, err
	}
	var (
		sim    rollback.Game
		name   string
		params []byte
		layout rollback.Layout
		next   [2]func() rollback.Input
	)
	if g.Float {
		sim, err = floatgame.New(a, 2, g.Mode, seed)
		name, params, layout = floatgame.ReplayName, floatgame.Params(g.Mode, seed), floatgame.Layout
		for p := range next {
			next[p] = floatgame.NewBot(seed + uint64(p)).Next
		}
	} else {
		sim, err = arena.New(a, 2, seed)
		name, params, layout = arena.ReplayName, arena.ReplayParams(seed), arena.Layout
		for p := range next {
			next[p] = arena.NewBot(seed + uint64(p)).Next
		}
	}
	if err != nil {
		return nil, err
	}
	var file bytes.Buffer
	w := replay.NewWriter(&file, name, params)
	s, err := rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{0, 1}, Layout: layout,
		State: a, Game: sim, Recorder: w, ChecksumEvery: 1})
	if err != nil {
		return nil, err
	}
	for f := range frames {
		for p, bot := range next {
			if _, err := s.AddLocalInput(rollback.PlayerID(p), bot()); err != nil {
				return nil, fmt.Errorf("frame %d: %w", f, err)
			}
		}
		if _, err := s.Advance(); err != nil {
			return nil, fmt.Errorf("frame %d: %w", f, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return file.Bytes(), nil
}

// recorded is a replay written to disk with its reference states.
type recorded struct {
	game
	Path      string // the replay
	Frames    int
	Checksums int
	Final     string // the host's final state hash
	Size      int64  // bytes of the replay
}

// writeReplay writes a replay to dir as g.File, with its states (the
// host's re-simulation of it, verified) as g.File+".states".
func writeReplay(dir string, g game, file []byte) (recorded, error) {
	rec := recorded{game: g, Path: filepath.Join(dir, g.File), Size: int64(len(file))}
	rp, err := replay.Read(bytes.NewReader(file))
	if err != nil {
		return rec, err
	}
	if err := os.WriteFile(rec.Path, file, 0o644); err != nil {
		return rec, err
	}
	out, err := os.Create(rec.Path + ".states")
	if err != nil {
		return rec, err
	}
	defer out.Close()
	bw := bufio.NewWriter(out)
	rep, err := check.Capture(rp, bw)
	if err != nil {
		return rec, fmt.Errorf("%s does not verify on the host that recorded it: %w", g.File, err)
	}
	if err := bw.Flush(); err != nil {
		return rec, err
	}
	rec.Frames, rec.Checksums, rec.Final = rep.Frames, rep.Checksums, fmt.Sprintf("%016x", rep.Final)
	return rec, out.Close()
}
