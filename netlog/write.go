package netlog

import (
	"context"
	"log/slog"
	"time"
)

// The record kinds (each record's "msg"). A session writes them through a
// [Writer]; [Read] reads them back: both ends of the format live here.
const (
	KindStep     = "step"     // frame, resim, in (each player's input), st (statuses: C, P, D), sum (arena at the start)
	KindSend     = "send"     // peer, first, n, ack, lag, in (the local inputs sent, frame-major)
	KindRecv     = "recv"     // peer, first, n (new frames confirmed), ack, in
	KindSave     = "save"     // slot, frame
	KindRestore  = "restore"  // slot, frame, mis (first mispredicted frame), to (the present)
	KindChecksum = "checksum" // frame, sum: a final desync checksum; peer when received
	KindDesync   = "desync"   // frame, peer, local, remote
	KindFinal    = "final"    // to: every frame before it is final (its last step record is the one that counts)
)

// Writer writes one session's network log through a log/slog handler: one
// JSON object per line with a slog.JSONHandler. Every record carries the
// session clock ("us", microseconds), never wall-clock time, so two runs of
// a seeded simulation log the same bytes. A failing handler is ignored: a
// log must not stop a match.
type Writer struct {
	h slog.Handler
}

// NewWriter returns a Writer through h, or nil when h is nil or does not
// take Debug records (a nil *Writer is not to be used: test for it).
func NewWriter(h slog.Handler) *Writer {
	if h == nil || !h.Enabled(context.Background(), slog.LevelDebug) {
		return nil
	}
	return &Writer{h: h}
}

func (w *Writer) write(now time.Duration, msg string, attrs ...slog.Attr) {
	r := slog.NewRecord(time.Time{}, slog.LevelDebug, msg, 0)
	r.AddAttrs(slog.Int64("us", int64(now/time.Microsecond)))
	r.AddAttrs(attrs...)
	_ = w.h.Handle(context.Background(), r)
}

// Step logs a simulation of frame (resim: a re-simulation) with each
// player's input and status (C, P or D) and the checksum of the state at
// its start.
func (w *Writer) Step(now time.Duration, frame int, resim bool, in []uint64, st string, sum uint64) {
	w.write(now, KindStep, slog.Int("frame", frame), slog.Bool("resim", resim), slog.Any("in", in),
		slog.String("st", st), slog.String("sum", Hex(sum)))
}

// Send logs an input packet sent to peer: n frames from first, the ack of
// its frames, our input lag, and the inputs.
func (w *Writer) Send(now time.Duration, peer, first, n, ack, lag int, in []uint64) {
	w.write(now, KindSend, slog.Int("peer", peer), slog.Int("first", first), slog.Int("n", n),
		slog.Int("ack", ack), slog.Int("lag", lag), slog.Any("in", in))
}

// Recv logs the n new frames of peer's inputs from first that a packet
// confirmed, with the ack it carried.
func (w *Writer) Recv(now time.Duration, peer, first, n, ack int, in []uint64) {
	w.write(now, KindRecv, slog.Int("peer", peer), slog.Int("first", first), slog.Int("n", n), slog.Int("ack", ack), slog.Any("in", in))
}

// Save logs a snapshot of the start of frame into slot.
func (w *Writer) Save(now time.Duration, slot, frame int) {
	w.write(now, KindSave, slog.Int("slot", slot), slog.Int("frame", frame))
}

// Restore logs a rollback: slot (at frame) restored for a misprediction at
// mis, to re-simulate up to to.
func (w *Writer) Restore(now time.Duration, slot, frame, mis, to int) {
	w.write(now, KindRestore, slog.Int("slot", slot), slog.Int("frame", frame), slog.Int("mis", mis), slog.Int("to", to))
}

// Checksum logs a final desync checksum of frame: ours when peer < 0, else
// the one peer sent.
func (w *Writer) Checksum(now time.Duration, frame int, sum uint64, peer int) {
	if peer < 0 {
		w.write(now, KindChecksum, slog.Int("frame", frame), slog.String("sum", Hex(sum)))
		return
	}
	w.write(now, KindChecksum, slog.Int("frame", frame), slog.String("sum", Hex(sum)), slog.Int("peer", peer))
}

// Desync logs a detected desync at frame with peer.
func (w *Writer) Desync(now time.Duration, frame, peer int, local, remote uint64) {
	w.write(now, KindDesync, slog.Int("frame", frame), slog.Int("peer", peer), slog.String("local", Hex(local)), slog.String("remote", Hex(remote)))
}

// Final logs that every frame before to is final.
func (w *Writer) Final(now time.Duration, to int) {
	w.write(now, KindFinal, slog.Int("to", to))
}

// Hex formats a checksum as the log writes it: 16 lowercase hex digits.
func Hex(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := range b {
		b[15-i] = digits[v>>(4*i)&15]
	}
	return string(b[:])
}
