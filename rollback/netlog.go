package rollback

import (
	"log/slog"
	"time"

	"github.com/rewindgg/rewind/netlog"
)

// The network log (Config.Log): what the session sent, received, saved,
// restored and simulated, written through a netlog.Writer, the same package
// that reads it back (cmd/netlog diffs two peers' logs);
// docs/architecture.md lists the records. And the frames that became
// final, given to the Recorder and the spectators' feed (record).

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

// feeding reports whether anything takes the frames that become final: a
// Recorder, the log, or spectators (aud). The session asks it before it
// builds a horizon for record: without any, a tick costs no more.
func (r *recording) feeding(aud *audience) bool { return r.rec != nil || r.log != nil || aud != nil }

// record gives the Recorder, the log and the spectators' feed every frame
// that has become final: simulated, and before h's final frame, so that no
// rollback can change its inputs.
func (r *recording) record(now time.Duration, h *horizon) {
	if !r.feeding(h.aud) || r.recorded >= h.frame {
		return
	}
	end := min(h.final(), h.frame)
	if r.log != nil && end > r.recorded {
		r.log.Final(now, int(end))
	}
	if r.rec == nil && h.aud == nil {
		r.recorded = max(r.recorded, end)
		return
	}
	for ; r.recorded < end; r.recorded++ {
		f, in := r.recorded, r.in[:h.roster.players]
		h.inputs.finalInputs(f, in)
		if r.rec != nil {
			r.rec.Confirmed(f, in)
		}
		if h.aud != nil {
			h.aud.feed.add(in, now)
		}
	}
}
