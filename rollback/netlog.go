package rollback

import (
	"log/slog"
	"time"

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

// logStep logs the simulation of frame f with in; sum is the checksum of
// the state at its start.
func (r *recording) logStep(now time.Duration, f Frame, resim bool, in []PlayerInput, sum uint64) {
	ins := make([]uint64, len(in))
	st := make([]byte, len(in))
	for p := range in {
		ins[p] = uint64(in[p].Input)
		st[p] = "?CPD"[min(int(in[p].Status), 3)]
	}
	r.log.Step(now, int(f), resim, ins, string(st), sum)
}
