package rollback_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// FuzzMatch plays a short match over a network whose every impairment, and
// the session's window and input delay, come from the fuzzer. Whatever the
// network does, every peer must end with the offline replay's state and no
// rollback may reach back further than MaxRollback. The seed corpus is in
// testdata/fuzz/FuzzMatch.
func FuzzMatch(f *testing.F) {
	f.Add(uint64(1), uint8(2), uint8(30), uint8(10), uint8(5), uint8(1), uint8(2), uint8(0), uint8(20), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, players, latencyMs, jitterMs, lossPct, dupPct, reorderPct, burstPct, maxRB, delay uint8) {
		p := netsim.Profile{
			Latency:   time.Duration(latencyMs) * time.Millisecond,
			Jitter:    time.Duration(jitterMs) * time.Millisecond,
			Loss:      float64(lossPct%60) / 100,
			Duplicate: float64(dupPct%50) / 100,
			Reorder:   float64(reorderPct%50) / 100,
			BurstLoss: float64(burstPct%10) / 100,
		}
		c := match.Config{Players: 2 + int(players)%3, Frames: 240, Seed: seed, Profile: p,
			MaxRollback: 1 + int(maxRB)%rollback.MaxRollbackLimit, InputLag: int(delay) % 6}
		r := match.Run(c)
		var hs *rollback.HandshakeError
		if errors.As(r.Err, &hs) {
			return // a network losing most packets may never finish the handshake: a clean refusal
		}
		if r.Err != nil {
			t.Fatalf("%+v: %v", c, r.Err)
		}
		if !r.Completed {
			// 60% loss with bursts can outlast the tick budget; that is not a desync.
			return
		}
		if !r.Verified {
			t.Fatalf("%+v: desync: %s", c, r.Desync)
		}
		if r.MaxRollbackFrames > c.MaxRollback {
			t.Fatalf("%+v: rolled back %d frames", c, r.MaxRollbackFrames)
		}
	})
}
