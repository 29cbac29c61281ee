package rollback_test

import (
	"testing"
	"time"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// BenchmarkCheckpoints measures what desync checkpoints cost with a state
// that fills a 1 MiB arena, checksumming every 10 frames (issue 21):
// against the same session without checksums in the same run.
//
// steady-*: two machines over netsim whose inputs never change (no
// rollback); one op is one peer-frame. On lan a checksum is confirmed by
// the peer's within a few frames; 150 ms away, only after several more
// checksum frames were simulated.
//
// rollbacks-*: the inputs change every third frame: each machine rolls
// back a few frames (50 ms away) or about ten (150 ms) every third frame,
// and a checksum frame is simulated several times before it is final;
// one op is one peer-frame.
//
// rollback20: BenchmarkAdvance's rollback20-1MiB (every frame corrects a
// 20-frame-deep misprediction: each checksum frame is simulated 20
// times), with a peer that sends no checksums.
func BenchmarkCheckpoints(b *testing.B) {
	rollback.NoLowFloorCheck(b)
	for _, every := range []int{10, -1} {
		name := "-every10"
		if every < 0 {
			name = "-no-checksums"
		}
		b.Run("steady-lan-1MiB"+name, benchFullPair(netsim.Profile{Latency: time.Millisecond}, every, false))
		b.Run("steady-150ms-1MiB"+name, benchFullPair(netsim.Profile{Latency: 150 * time.Millisecond}, every, false))
		b.Run("rollbacks-50ms-1MiB"+name, benchFullPair(netsim.Profile{Latency: 50 * time.Millisecond}, every, true))
		b.Run("rollbacks-150ms-1MiB"+name, benchFullPair(netsim.Profile{Latency: 150 * time.Millisecond}, every, true))
		b.Run("rollback20-1MiB"+name, benchRollback20[blob1MiB](1<<20, every))
	}
}

func benchFullPair(p netsim.Profile, every int, change bool) func(b *testing.B) {
	return func(b *testing.B) {
		x := newFullPair(b, p, every)
		input := func(i int) rollback.Input {
			if !change {
				return 5
			}
			return rollback.Input((x.tick/3 + i) % 16)
		}
		peerFrame := func(i int) {
			s := x.ss[i&1]
			if _, err := s.AddLocalInput(rollback.PlayerID(i&1), input(i&1)); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Advance(); err != nil {
				b.Fatal(err)
			}
			if i&1 == 1 {
				x.advance(match.Tick)
				x.tick++
			}
		}
		for i := range 1200 { // the handshake, the start, the first checksums
			peerFrame(i)
		}
		before := x.ss[0].Stats()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			peerFrame(i)
			i++
		}
		after := x.ss[0].Stats()
		frames := float64(after.Frame - before.Frame)
		if !change && after.Rollbacks != before.Rollbacks {
			b.Fatalf("steady state rolled back %d times", after.Rollbacks-before.Rollbacks)
		}
		if frames > 0 {
			b.ReportMetric(float64(after.ResimulatedFrames-before.ResimulatedFrames)/frames, "resim/frame")
		}
	}
}
