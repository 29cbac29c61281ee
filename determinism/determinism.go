// Package determinism is the entry point of the determinism matrix for a
// game: a game implements [Game] (how to build its state in an arena, step
// it, and what its inputs are), and the matrix (cmd/determinism) records
// replays of it on this machine, with rollbacks, then re-simulates them on
// other platforms (amd64 v1 and v3, amd64 without FMA, 386, arm64,
// js/wasm) and names, per platform, "verified" or the first frame and the
// first field of the state that differs.
//
// A game's package exports a function named Determinism that returns its
// games:
//
//	func Determinism() []determinism.Game { return []determinism.Game{matrixGame{}} }
//
// and the matrix runs it with
//
//	go run github.com/rewindgg/rewind/cmd/determinism -game ./path/to/yourgame
//
// from the game's module (docs/integration.md, "The matrix for your own
// game"). The command writes a small program beside the game that calls
// [Main] with those games, cross-compiles it for every platform and runs
// it there: "record" on this machine, "verify" on the others.
//
// Recording plays, for each seed, a sync-test match (Config.SyncTest: every
// frame rolled back and re-simulated on one machine) and a two-machine
// match over a simulated network (rollback/netsim) whose mispredictions
// roll back, each with a checksum of the arena every frame. The fields
// are named as a desync report names them ([desync.Compare]): by the
// paths of the arena's allocations ("mygame.World.Ships[1].X"), so a game
// names its fields by putting its whole state in a [savestate.Arena].
//
// Nothing here reads the clock, iterates a map or starts a goroutine while
// a game is simulated.
package determinism

import (
	"fmt"
	"io"
	"strings"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// Game is a game the determinism matrix records and re-simulates.
type Game interface {
	// Name names the game in its replays and in the matrix's table:
	// letters, digits and "-_./+", unique among the games of a run.
	Name() string
	// Layout is the game's input layout (rollback.Config.Layout).
	Layout() rollback.Layout
	// New allocates the game's whole state in a, a fresh arena, for a
	// match of players players set up from seed, and returns the
	// simulation that rollback.Config.Game would be. It must be a function
	// of its arguments only: the matrix calls it on every platform and
	// compares the states that Step makes of it.
	New(a *savestate.Arena, players int, seed uint64) (rollback.Game, error)
}

// Bots is implemented by a [Game] that plays its own inputs in the
// matrix's matches; without it, each player's input is random bits of the
// layout, held for a random 1 to 30 frames.
type Bots interface {
	// Bot returns player p's input source for a match set up from seed:
	// each call gives the next frame's input.
	Bot(p rollback.PlayerID, seed uint64) func() rollback.Input
}

// ArenaSize is the size of the arena the matrix gives [Game.New].
const ArenaSize = savestate.DefaultSize

// Main is the matrix's program for games, given the command line after
// the program's name. The command cmd/determinism generates a main
// package that calls it:
//
//	os.Exit(determinism.Main(os.Args[1:], os.Stdout, os.Stderr, yourgame.Determinism()...))
//
// Its commands:
//
//	record -out DIR [-frames N] [-seeds 1,2,3] [-profile wifi] [-synctest 7]
//	verify FILE...
//	probe
//
// record plays and records the matches on this machine and writes, for
// each, DIR/NAME.rwr (the replay) and DIR/NAME.rwr.states (this machine's
// state at every checksum, naming a diverged field elsewhere), printing a
// [Recording] as a JSON line. verify re-simulates replays and prints a
// [Result] as a JSON line for each. probe prints this build's [Result]
// fields Build and Fuses. Exit status: 0 when everything recorded or
// verified, 1 when something did not, 2 for bad usage.
func Main(args []string, stdout, stderr io.Writer, games ...Game) int {
	if err := checkGames(games); err != nil {
		fmt.Fprintln(stderr, "determinism:", err)
		return 2
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: determinism record -out DIR [-frames N] [-seeds LIST] [-profile P] [-synctest N] | verify FILE... | probe")
		return 2
	}
	switch args[0] {
	case "record":
		return recordMain(args[1:], stdout, stderr, games)
	case "verify":
		return verifyMain(args[1:], stdout, stderr, games)
	case "probe":
		_, err := stdout.Write(Result{File: "-", Status: Probe, Build: Build(), Fuses: Fuses()}.Line())
		if err != nil {
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "determinism: unknown command %q (want record, verify or probe)\n", args[0])
	return 2
}

// checkGames reports a run's games that have no name, a name that is not
// a file name, or the name of another.
func checkGames(games []Game) error {
	if len(games) == 0 {
		return fmt.Errorf("no games: the package's Determinism function returned none")
	}
	seen := map[string]bool{}
	for i, g := range games {
		if g == nil {
			return fmt.Errorf("game %d is nil", i)
		}
		n := g.Name()
		if n == "" || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+") != "" || strings.Contains(n, "..") {
			return fmt.Errorf("game %d is named %q: a name is letters, digits and -_./+", i, n)
		}
		if seen[n] {
			return fmt.Errorf("two games are named %q", n)
		}
		seen[n] = true
	}
	return nil
}

// gameNamed returns the game of games named name.
func gameNamed(games []Game, name string) (Game, error) {
	for _, g := range games {
		if g.Name() == name {
			return g, nil
		}
	}
	return nil, fmt.Errorf("the replay is of game %q, which this program does not have", name)
}
