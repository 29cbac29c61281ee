package rollback

import (
	"log/slog"

	"github.com/rewindgg/rewind/netlog"
)

// The network log (Config.Log): what the session sent, received, saved,
// restored and simulated, written through a netlog.Writer, the same package
// that reads it back (cmd/netlog diffs two peers' logs);
// docs/architecture.md lists the records.

// recording is where what happened goes: the Recorder (final inputs and
// checksums, in order) and the network log.
type recording struct {
	rec      Recorder
	log      *netlog.Writer // nil: no log
	in       [MaxPlayers]PlayerInput
	recorded Frame // frames before this have been given to rec
}

func newRecording(rec Recorder, log slog.Handler) recording {
	return recording{rec: rec, log: netlog.NewWriter(log)}
}

// logStep logs the simulation of frame f with s.io.stepIn.
func (s *Session) logStep(f Frame, resim bool) {
	n := s.roster.players
	in := make([]uint64, n)
	st := make([]byte, n)
	for p := range n {
		in[p] = uint64(s.io.stepIn[p].Input)
		st[p] = "?CPD"[min(int(s.io.stepIn[p].Status), 3)]
	}
	s.out.log.Step(s.now, int(f), resim, in, string(st), s.snaps.sum())
}
