// Command replay re-simulates recorded replays of the arena example
// offline and verifies every checksum they hold.
//
//	replay [-size BYTES] FILE...
//
// A replay is what a session records with a replay.Writer as its
// Config.Recorder (cmd/soak -record DIR writes one per machine). For each
// file it prints the frames and checksums verified and the final state's
// hash: replays of one match recorded by different machines end in the
// same hash when they hold the same frames. Exit status: 0 when every file
// verified, 1 when one is unreadable or mismatches (the message names the
// offset or the frame), 2 for bad usage.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/replay"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	size := fs.Int("size", 64<<10, "arena size in bytes")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: replay [-size BYTES] FILE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	status := 0
	for _, name := range fs.Args() {
		if err := verify(name, *size, stdout); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			status = 1
		}
	}
	return status
}

func verify(name string, size int, stdout io.Writer) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	rp, err := replay.Read(f)
	if err != nil {
		return err
	}
	rep, err := arena.VerifyReplay(rp, size)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s, %d players, %d frames, %d checksums verified, final state %016x\n",
		name, rp.Game, rp.Players, rep.Frames, rep.Checksums, rep.Final)
	return nil
}
