// Package replaytest records a replay again with its inputs changed, for
// the tests of the packages that read replays (a changed input is a
// divergence they must find).
package replaytest

import (
	"bytes"
	"fmt"

	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
)

// Rewrite records rp again through a replay.Writer, with its checksums and
// departures, each input passed through change.
func Rewrite(rp *replay.Replay, change func(rollback.Frame, rollback.PlayerID, rollback.Input) rollback.Input) ([]byte, error) {
	var file bytes.Buffer
	w := replay.NewWriter(&file, rp.Game, rp.Params)
	w.Begin(rollback.MatchInfo{Players: rp.Players, Layout: rp.Layout, SessionID: rp.SessionID,
		ChecksumEvery: rp.ChecksumEvery, GameChecksum: rp.GameChecksum})
	in := make([]rollback.PlayerInput, rp.Players)
	sums := rp.Checksums
	for f := range rollback.Frame(rp.Frames()) {
		for ; len(sums) > 0 && sums[0].Frame == f; sums = sums[1:] {
			w.Checksum(f, sums[0].Sum)
		}
		for p := range in {
			v, ok := rp.Input(f, rollback.PlayerID(p))
			if !ok {
				return nil, fmt.Errorf("frame %d, player %d out of range", f, p)
			}
			in[p] = rollback.PlayerInput{Input: change(f, rollback.PlayerID(p), v), Status: rollback.Confirmed}
			if l := rp.Left[p]; l >= 0 && f >= l {
				in[p] = rollback.PlayerInput{Status: rollback.Disconnected}
			}
		}
		w.Confirmed(f, in)
	}
	for _, s := range sums {
		w.Checksum(s.Frame, s.Sum)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return file.Bytes(), nil
}
