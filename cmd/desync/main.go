// Command desync shows a desync from two machines' desync bundles
// (rollback.Config.Bundle; package desync/bundle), and replays a bundle
// against the game.
//
//	desync [-html page.html] [-fields N] A.bundle B.bundle
//	desync replay A.bundle
//
// The first form sets the two bundles side by side: each one's span and
// report, the first frame at whose start the two machines'
// re-simulations differ (from their per-frame checksums), the first
// system whose output differs in the step before it (from their marks),
// and the fields that differ there, machine A's value first (named with
// the game's arena, as desync.Diff does); -html also writes it as a page
// in the style of the soak's report. The second re-simulates the bundle
// from its agreed state with its inputs, on this machine, and checks
// that it reproduces the bundle's checksum at every frame: a bundle from
// the machine that diverged reproduces the divergence here when the cause
// is in the game's code; one that does not points at something outside
// it (a corrupted byte, state outside the arena).
//
// The game is the arena example (examples/arena), linked in: a bundle of
// another game needs a command of its own built the same way (a
// determinism.Game gives what it needs: New and the marks).
//
// Exit status: 0 when the bundles were read (and a replay reproduced
// every checksum), 1 when one is unreadable or a replay differs, 2 for bad
// usage.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/desync/bundle"
	"github.com/rewindgg/rewind/determinism"
	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "replay" {
		return replayCmd(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("desync", flag.ContinueOnError)
	fs.SetOutput(stderr)
	page := fs.String("html", "", "also write the comparison as an HTML page to this file")
	fields := fs.Int("fields", 20, "the most differing fields to show (0: all)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 2 {
		fmt.Fprintln(stderr, "usage: desync [-html page.html] [-fields N] A.bundle B.bundle\n       desync replay A.bundle")
		return 2
	}
	var bs [2]*bundle.Bundle
	for i, name := range fs.Args() {
		b, err := load(name)
		if err != nil {
			fmt.Fprintf(stderr, "desync: %s: %v\n", name, err)
			return 1
		}
		bs[i] = b
	}
	a, _, err := newGame(bs[0])
	if err != nil {
		fmt.Fprintf(stderr, "desync: %v (the fields are not named)\n", err)
		a = nil
	}
	r := newReport(fs.Args(), bs, bundle.Compare(bs[0], bs[1], a, *fields))
	r.text(stdout)
	if *page != "" {
		f, err := os.Create(*page)
		if err == nil {
			err = r.html(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "desync: %v\n", err)
			return 1
		}
	}
	return 0
}

// load reads a bundle file.
func load(name string) (*bundle.Bundle, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return bundle.Read(data)
}

// game is the game this command links.
func game() determinism.Game { return arena.Determinism()[0] }

// newGame returns an arena of the bundle's size holding the game's state,
// and the game (its marks set when it has any).
func newGame(b *bundle.Bundle) (*savestate.Arena, rollback.Game, error) {
	a, err := savestate.New(b.ArenaSize)
	if err != nil {
		return nil, nil, err
	}
	g, err := game().New(a, b.Players, 0) // the seed is the state's: the bundle's replaces it
	if err != nil {
		return nil, nil, fmt.Errorf("the %s game: %w", game().Name(), err)
	}
	return a, g, nil
}

// replayCmd re-simulates one bundle and compares it with itself.
func replayCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: desync replay A.bundle")
		return 2
	}
	b, err := load(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "desync: %s: %v\n", args[0], err)
		return 1
	}
	if b.State == nil {
		fmt.Fprintf(stderr, "desync: %s: no state to replay from: %s\n", args[0], b.Note)
		return 1
	}
	a, g, err := newGame(b)
	if err != nil {
		fmt.Fprintf(stderr, "desync: %v\n", err)
		return 1
	}
	var m *desync.Marks
	if mg, ok := g.(interface{ SetMarks(*desync.Marks) }); ok {
		m = &desync.Marks{}
		mg.SetMarks(m)
	}
	r := *b
	var in []rollback.PlayerInput
	err = r.Resimulate(a, func(f int32, inputs []uint64, st []uint8) {
		in = in[:0]
		for j := range inputs {
			in = append(in, rollback.PlayerInput{Input: rollback.Input(inputs[j]), Status: rollback.InputStatus(st[j])})
		}
		g.Step(rollback.Frame(f), in)
	}, m)
	if err != nil {
		fmt.Fprintf(stderr, "desync: %s: %v\n", args[0], err)
		return 1
	}
	d := bundle.Compare(b, &r, a, 20)
	if d.Frame < 0 {
		fmt.Fprintf(stdout, "%s: reproduced: the %d checksums of frames %d to %d, and their marks\n", args[0], len(r.Sums), r.Start, r.Start+int32(r.Frames()))
		return 0
	}
	fmt.Fprintf(stdout, "%s: not reproduced: the replay differs from the bundle from frame %d", args[0], d.Frame)
	if d.System != "" {
		fmt.Fprintf(stdout, ", first in system %q of frame %d's step", d.System, d.Frame-1)
	}
	fmt.Fprintln(stdout)
	for _, f := range d.Fields {
		fmt.Fprintf(stdout, "  %s: bundle %s, replay %s\n", f.Path, f.Local, f.Remote)
	}
	return 1
}
