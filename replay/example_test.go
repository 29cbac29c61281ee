package replay_test

import (
	"bytes"
	"fmt"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

// A session records its match with a Writer as Config.Recorder; Read and
// Verify play it back offline and check every desync checksum.
func Example() {
	a, _ := savestate.New(64 << 10)
	g, _ := arena.New(a, 2, 42)
	var file bytes.Buffer
	w := replay.NewWriter(&file, arena.ReplayName, arena.ReplayParams(42))
	s, _ := rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{0, 1},
		Layout: arena.Layout, State: a, Game: g, Recorder: w, ChecksumEvery: 60})
	bots := []*arena.Bot{arena.NewBot(1), arena.NewBot(2)}
	for range 600 {
		for p, b := range bots {
			if _, err := s.AddLocalInput(rollback.PlayerID(p), b.Next()); err != nil {
				panic(err)
			}
		}
		if _, err := s.Advance(); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}

	rp, err := replay.Read(&file)
	if err != nil {
		panic(err)
	}
	rep, err := arena.VerifyReplay(rp, 64<<10)
	fmt.Println(rp.Game, rp.Players, "players:", rep.Frames, "frames,", rep.Checksums, "checksums verified, error:", err)
	// Output: arena 2 players: 600 frames, 9 checksums verified, error: <nil>
}
