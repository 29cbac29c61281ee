package match_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/rollbacktest/offpath"
)

// handshakeRetryTicks is one handshake retry (100 ms) in 60 Hz ticks. An
// attacked match starts, on average over the matches, no more than this
// after the same match unattacked, and no single one more than five
// retries later: the answers to forged handshakes share the links' loss,
// so one real datagram more or less is lost either way (over 25 seeds of
// intercontinental-2, from 12 ticks earlier to 20 later, the same before
// and after issue 16's changes moved one seed from 0 to 12). The forger
// replays an earlier match's datagrams, so any change to what a match
// sends reshuffles it: when statements came to ride in the input packets,
// intercontinental-4 (seed 401) went from 7 ticks earlier to 27 later,
// while over seeds 401–420 (300 frames) the sum stayed put (−89 ticks
// before, −92 after; from 27 earlier to 7 later before, from 29 earlier
// to 4 later after). Four retries (24 ticks) left seed 401 out; five is
// the bound now.
const handshakeRetryTicks = 6

// TestForgery: an off-path attacker who knows every address and the
// session id sends, during whole matches of 2, 3 and 4 machines on a
// near and a far profile, forged datagrams of every kind (random bytes,
// bit-flipped, byte-changed and truncated copies of the match's own
// datagrams, replays of an earlier match with the same session id, and
// handshakes racing the real ones from before the start): at least 10^6
// in all without the race detector (make test), a sample
// under it. The matches start, on average, within one handshake retry
// of the same matches unattacked, nobody is disconnected, no forged
// datagram is taken (so no forged input is ever used), and every match
// verifies against the offline re-simulation.
func TestForgery(t *testing.T) {
	t.Parallel()
	const rate = 2400 // per machine: 40 a tick, under the session's 64 per peer per call
	frames := 1500
	profiles, machines := []string{"wifi", "intercontinental"}, []int{2, 3, 4}
	if match.RaceEnabled {
		// A sample: the race detector slowed the six matches to 47 s,
		// and a netsim match runs in one goroutine (make test plays them all in
		// full without it).
		frames, profiles, machines = 240, profiles[:1], machines[1:2]
	}
	total := make(chan int64, len(machines)*len(profiles))
	late := make(chan int, len(machines)*len(profiles))
	t.Run("matches", func(t *testing.T) {
		for _, players := range machines {
			for k, name := range profiles {
				t.Run(fmt.Sprintf("%s-%d", name, players), func(t *testing.T) {
					t.Parallel()
					p, err := netsim.ParseProfile(name)
					require.NoError(t, err)
					c := match.Config{Players: players, Frames: frames, Seed: uint64(100*players + k), Profile: p}
					calm := match.Run(c)
					require.NoError(t, calm.Err)
					require.True(t, calm.Completed && calm.Verified, calm.Desync)
					c.Forge = rate
					r := match.Run(c)
					total <- r.ForgedDatagrams
					require.NoError(t, r.Err, "a session failed, or disconnected a peer")
					assert.True(t, r.Completed)
					assert.True(t, r.Verified, r.Desync)
					assert.Zero(t, r.ForgedAccepted, "forged datagrams taken as valid")
					assert.LessOrEqual(t, r.StartTick, calm.StartTick+5*handshakeRetryTicks, "started %d ticks later than unattacked", r.StartTick-calm.StartTick)
					late <- r.StartTick - calm.StartTick
					assert.Positive(t, r.StartTick)
					for kind := range offpath.NumForgeKinds {
						assert.Positive(t, r.ForgedKinds[kind+1], "no %v sent", offpath.ForgeKind(kind+1))
					}
					assert.Positive(t, r.ForgedHandshakesBeforeStart, "no forged handshake raced the real ones")
					// All but those still in flight when the match ended.
					inFlight := int64(players*rate) * int64(p.Latency+2*match.Tick) / int64(time.Second)
					assert.GreaterOrEqual(t, r.ForgedReceived, r.ForgedDatagrams-inFlight, "the forgeries did not reach the sessions")
					assert.Positive(t, r.PacketsForged, "no sealed forgery reached a MAC check")
					t.Logf("start tick %d (unattacked %d); %d forged (%v), %d received, %d found forged by the MAC, %d handshakes before the start, %d taken",
						r.StartTick, calm.StartTick, r.ForgedDatagrams, r.ForgedKinds[1:], r.ForgedReceived, r.PacketsForged, r.ForgedHandshakesBeforeStart, r.ForgedAccepted)
				})
			}
		}
	})
	close(total)
	var sum int64
	for n := range total {
		sum += n
	}
	close(late)
	var ticks, n int
	for d := range late {
		ticks, n = ticks+d, n+1
	}
	if n > 0 {
		assert.LessOrEqual(t, float64(ticks)/float64(n), float64(handshakeRetryTicks), "the attacked matches started %d ticks later in all (%d matches)", ticks, n)
	}
	t.Logf("%d forged datagrams in all", sum)
	if !match.RaceEnabled {
		assert.GreaterOrEqual(t, sum, int64(1_000_000))
	}
}

// TestForgeryOverUDP is TestForgery over real sockets on loopback, for
// 2 and 3 machines: every other forged datagram comes from a stranger's
// socket (the transport drops it), the rest from the peers' own sockets,
// as a source-address spoofer would send them.
func TestForgeryOverUDP(t *testing.T) {
	t.Parallel()
	p, err := netsim.ParseProfile("lan")
	require.NoError(t, err)
	for _, players := range []int{2, 3} {
		t.Run(fmt.Sprint(players), func(t *testing.T) {
			t.Parallel()
			r := match.RunUDP(match.Config{Players: players, Frames: 180, Seed: uint64(40 + players), Profile: p, Forge: 300}, match.UDPOptions{})
			require.NoError(t, r.Err, "a session failed, or disconnected a peer")
			assert.True(t, r.Completed)
			assert.True(t, r.Verified, r.Desync)
			assert.Zero(t, r.ForgedAccepted, "forged datagrams taken as valid")
			assert.Positive(t, r.ForgedReceived, "no forged datagram from a peer's socket reached a session")
			assert.Less(t, r.ForgedReceived, r.ForgedDatagrams, "the stranger's datagrams reached the sessions")
			// All but those still waiting in the kernel when the match ended
			// (a few ticks' worth: on a loaded CI machine 4 of 966 were).
			waiting := int64(players*300)*int64(3*match.Tick)/int64(time.Second) + int64(players)
			assert.GreaterOrEqual(t, r.TransportDrops, r.ForgedDatagrams/2-waiting, "the transport did not drop the stranger's datagrams")
			assert.Positive(t, r.ForgedHandshakesBeforeStart, "no forged handshake raced the real ones")
			t.Logf("start tick %d; %d forged (%v), %d received, %d dropped by the transport, %d found forged by the MAC, %d taken",
				r.StartTick, r.ForgedDatagrams, r.ForgedKinds[1:], r.ForgedReceived, r.TransportDrops, r.PacketsForged, r.ForgedAccepted)
		})
	}
}

// TestForgeryAccountingCanFail: the accounting sees a datagram taken. A
// "forgery" that is a genuine datagram (here: every datagram counts as
// forged) is taken as valid, and ForgedAccepted says so.
func TestForgeryAccountingCanFail(t *testing.T) {
	t.Parallel()
	r := match.RunCountingEverything(match.Config{Players: 2, Frames: 120, Seed: 3, Forge: 60})
	require.NoError(t, r.Err)
	assert.Positive(t, r.ForgedAccepted)
}

// TestForgerySameSeedSameMatch: an attacked match is still a function of
// its seed.
func TestForgerySameSeedSameMatch(t *testing.T) {
	t.Parallel()
	c := match.Config{Players: 3, Frames: 120, Seed: 9, Forge: 600, Profile: netsim.Presets[1].Profile}
	a, b := match.Run(c), match.Run(c)
	require.NoError(t, a.Err)
	assert.Equal(t, a.Checksums, b.Checksums)
	assert.Equal(t, a.ForgedKinds, b.ForgedKinds)
	assert.Equal(t, a.PacketsForged, b.PacketsForged)
	assert.Equal(t, a.Ticks, b.Ticks)
}
