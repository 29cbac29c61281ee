package rollback

import (
	"context"
	"log/slog"
	"time"
)

// The network log (Config.Log) is one JSON object per line through a
// log/slog handler: what the session sent, received, saved, restored and
// simulated, each with the session clock ("us", microseconds; records
// carry no wall-clock time, so two runs of a seeded simulation log the
// same bytes). Package netlog reads two peers' logs and finds the first
// frame where they diverge; docs/architecture.md lists the records.
const (
	logStep     = "step"     // frame, resim, in (each player's input), st (statuses: C, P, D), sum (arena at the start)
	logSend     = "send"     // peer, first, n, ack, lag, in (the local inputs sent, frame-major)
	logRecv     = "recv"     // peer, first, n (new frames confirmed), ack, in
	logSave     = "save"     // slot, frame
	logRestore  = "restore"  // slot, frame, mis (first mispredicted frame), to (the present)
	logChecksum = "checksum" // frame, sum: a final desync checksum; peer when received
	logDesync   = "desync"   // frame, peer, local, remote
	logFinal    = "final"    // to: every frame before it is final (its last step record is the one that counts)
)

// recording is where what happened goes: the Recorder (final inputs and
// checksums, in order) and the network log.
type recording struct {
	rec      Recorder
	log      slog.Handler
	in       [MaxPlayers]PlayerInput
	recorded Frame // frames before this have been given to rec
}

// logf writes one record when the network log is on.
func (s *Session) logf(msg string, attrs ...slog.Attr) {
	r := slog.NewRecord(time.Time{}, slog.LevelDebug, msg, 0)
	r.AddAttrs(slog.Int64("us", int64(s.now/time.Microsecond)))
	r.AddAttrs(attrs...)
	_ = s.out.log.Handle(context.Background(), r) // a failing log must not stop the match
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
	s.logf(logStep, slog.Int("frame", int(f)), slog.Bool("resim", resim), slog.Any("in", in),
		slog.String("st", string(st)), slog.String("sum", hex64(s.arenaSum())))
}

func hex64(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := range b {
		b[15-i] = digits[v>>(4*i)&15]
	}
	return string(b[:])
}
