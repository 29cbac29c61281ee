package match

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
)

func TestRelayMatch(t *testing.T) {
	for _, tc := range []struct {
		profile string
		players int
	}{{"wifi", 4}, {"hell", 3}} {
		t.Run(tc.profile, func(t *testing.T) {
			p, err := netsim.ParseProfile(tc.profile)
			require.NoError(t, err)
			r := Run(Config{Players: tc.players, Frames: 900, Seed: 5, Profile: p, Relay: true})
			require.NoError(t, r.Err)
			require.True(t, r.Completed)
			require.True(t, r.Verified, r.Desync)
			// One envelope a tick each way: a machine's loop ticks about
			// r.Ticks times (more when it catches up after a stall).
			perMachine := float64(r.Ticks) * float64(tc.players)
			require.LessOrEqual(t, float64(r.UpPackets), 1.05*perMachine)
			require.LessOrEqual(t, float64(r.DownPackets), 1.05*perMachine)
			require.Greater(t, r.PacketsSent, r.UpPackets, "the sessions' datagrams are merged")
			require.Zero(t, r.PacketsForged)
		})
	}
}

// TestRelaySendsInputsOnce: a machine sends the relay what it sends
// every peer alike once (cast input bodies, its relay client's reseal and
// copy records), so with four machines it sends the relay under 70% of what
// the relay sends it (the other three's datagrams, each whole); the match
// verifies.
func TestRelaySendsInputsOnce(t *testing.T) {
	p, err := netsim.ParseProfile("far")
	require.NoError(t, err)
	r := Run(Config{Players: 4, Frames: 900, Seed: 3, Profile: p, Relay: true})
	require.NoError(t, r.Err)
	require.True(t, r.Verified, r.Desync)
	t.Logf("up %d bytes, down %d", r.UpBytes, r.DownBytes)
	require.Less(t, float64(r.UpBytes), 0.7*float64(r.DownBytes))
}

// TestRelayTopologyHidesAddresses: in the relay topology every datagram a
// machine receives was sent by the relay's node, and every datagram a
// machine sends goes to it; each session's transport is a relay.Client,
// which names its peers by slot only.
func TestRelayTopologyHidesAddresses(t *testing.T) {
	const machines = 4
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	var toMachines, fromMachines int
	tap := func(from, to int, b []byte) {
		switch {
		case to < machines:
			toMachines++
			if from != machines {
				t.Errorf("machine %d was sent a datagram by node %d", to, from)
			}
		case from < machines:
			fromMachines++
			if to != machines {
				t.Errorf("machine %d sent a datagram to node %d", from, to)
			}
		}
	}
	var transports []rollback.Transport
	c := Config{Players: machines, Frames: 600, Seed: 9, Profile: p, Relay: true,
		inspect: func(i int, tr rollback.Transport, _ testHooks) { transports = append(transports, tr) }}
	r := runNetsim(c, tap)
	require.NoError(t, r.Err)
	require.True(t, r.Verified, r.Desync)
	require.Positive(t, toMachines)
	require.Positive(t, fromMachines)
	require.Len(t, transports, machines)
	for i, tr := range transports {
		_, ok := tr.(*relay.Client)
		require.True(t, ok, "machine %d's transport is a %T", i, tr)
	}
	// And the mesh, for contrast: the same tap sees machines talk.
	c.Relay, c.inspect = false, nil
	direct := 0
	r = runNetsim(c, func(from, to int, b []byte) { direct++ })
	require.True(t, r.Verified, r.Desync)
	require.Positive(t, direct)
}

// tamperer is a relay's link that alters what it forwards to node victim
// from slot source between from and until (network time): it flips a bit
// of the body of each input datagram (kind 1), or, with reslot, names
// slot reslot as the sender instead.
type tamperer struct {
	relay.Link
	nw          *netsim.Network
	victim      int
	source      int
	reslot      int // -1: flip a body bit
	from, until time.Duration
	altered     int
	buf         []byte
}

func (tm *tamperer) Send(peer int, b []byte) error {
	now := tm.nw.Now()
	if peer != tm.victim || now < tm.from || now >= tm.until {
		return tm.Link.Send(peer, b)
	}
	tm.buf = append(tm.buf[:0], b...)
	for i := 1; i < len(tm.buf); {
		slot := int(tm.buf[i])
		n, w := binary.Uvarint(tm.buf[i+1:])
		body := tm.buf[i+1+w : i+1+w+int(n)]
		if slot == tm.source && body[0]>>4 == 1 {
			tm.altered++
			if tm.reslot >= 0 {
				tm.buf[i] = byte(tm.reslot)
			} else {
				body[2] ^= 0x10 // the first byte of the input packet: the base frame
			}
		}
		i += 1 + w + int(n)
	}
	return tm.Link.Send(peer, tm.buf)
}

// TestRelayCannotAlterAnInput: a relay that changes a byte of the inputs
// it forwards, or names another machine as their sender, cannot make a
// session take them: each fails the MAC of the pair's link key, which the
// relay does not hold, is counted as forged from the peer it claims to
// come from, and raises EventForgery naming it; the match plays on (the
// sessions resend) and verifies.
func TestRelayCannotAlterAnInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reslot int
		named  int // machine 0's peer the forgeries are counted against
	}{{"flipped bit", -1, 0}, {"another sender", 2, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			var tm *tamperer
			forgery := -1 // the peer machine 0's first EventForgery named
			var forged [2]int64
			c := Config{Players: 3, Frames: 900, Seed: 11, Profile: netsim.Profile{Latency: 10 * time.Millisecond}, Relay: true,
				relayLink: func(nw *netsim.Network, l relay.Link) relay.Link {
					tm = &tamperer{Link: l, nw: nw, victim: 0, source: 1, reslot: tc.reslot, from: 5 * time.Second, until: 8 * time.Second}
					return tm
				},
				watch: func(i int, s *rollback.Session, events []rollback.Event) {
					if i != 0 {
						return
					}
					for _, e := range events {
						if e.Kind == rollback.EventForgery && forgery < 0 {
							forgery = e.Peer
						}
					}
					for p := range forged {
						ps, _ := s.PeerStats(p)
						forged[p] = ps.PacketsForged
					}
				}}
			r := Run(c)
			require.NoError(t, r.Err)
			require.True(t, r.Verified, r.Desync)
			t.Logf("%d datagrams altered, forged counts %v, EventForgery named peer %d", tm.altered, forged, forgery)
			require.Greater(t, tm.altered, 100)
			require.Equal(t, tc.named, forgery, "EventForgery names the claimed sender")
			require.Equal(t, int64(tm.altered), forged[tc.named], "every altered datagram caught")
			require.Zero(t, forged[1-tc.named])
			require.Equal(t, int64(tm.altered), r.PacketsForged, "and nothing else")
		})
	}
}

// TestRelayOverUDP: a relayed match over real sockets on loopback, the
// relay a udp.Transport of its own polled in its goroutine, each hop
// shaped with half of wifi: it verifies, one envelope a tick each way.
func TestRelayOverUDP(t *testing.T) {
	t.Parallel()
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	r := RunUDP(Config{Players: 3, Frames: 240, Seed: 13, Profile: p, Relay: true}, UDPOptions{})
	require.NoError(t, r.Err)
	require.True(t, r.Completed)
	require.True(t, r.Verified, r.Desync)
	require.Positive(t, r.UpPackets)
	require.Greater(t, r.PacketsSent, r.UpPackets, "merged")
	require.LessOrEqual(t, float64(r.UpPackets), 1.1*float64(3*r.Ticks))
	require.Zero(t, r.PacketsForged)
	t.Logf("%d ticks; up %d envelopes, %d bytes; down %d, %d; the sessions' %d datagrams", r.Ticks, r.UpPackets, r.UpBytes, r.DownPackets, r.DownBytes, r.PacketsSent)
}

// TestRelayDiesMidMatch: the relay stops at 8 s and the machines move to
// another one a second later (relay.Client.Move), as a lobby would move
// the match: the sessions see a second of loss, stall, and play on; the
// match verifies, nobody is disconnected, and the second relay carried the
// rest.
func TestRelayDiesMidMatch(t *testing.T) {
	for _, tc := range []struct {
		profile string
		after   time.Duration
	}{{"wifi", time.Second}, {"hell", 3 * time.Second}} {
		t.Run(tc.profile, func(t *testing.T) {
			p, err := netsim.ParseProfile(tc.profile)
			require.NoError(t, err)
			var up [2]int
			c := Config{Players: 4, Frames: 1200, Seed: 17, Profile: p, Relay: true, RelayDiesAt: 8 * time.Second, RelayMoveAfter: tc.after}
			r := runNetsim(c, func(from, to int, b []byte) {
				if from < 4 {
					up[to-4]++ // to the first relay (node 4) or the second (node 5)
				}
			})
			require.NoError(t, r.Err)
			require.True(t, r.Completed)
			require.True(t, r.Verified, r.Desync)
			require.Positive(t, r.StallFrames, "a relay's death is felt")
			require.Positive(t, up[0])
			require.Positive(t, up[1])
			t.Logf("up to the first relay %d envelopes, to the second %d; %d stall frames", up[0], up[1], r.StallFrames)
		})
	}
}

// TestRelayMatchIsDeterministic: a relayed match over netsim is a function
// of its seed, relay included: the same seed plays the same match, bit for
// bit, and another seed another.
func TestRelayMatchIsDeterministic(t *testing.T) {
	p, err := netsim.ParseProfile("hell")
	require.NoError(t, err)
	play := func(seed uint64) Result {
		r := Run(Config{Players: 3, Frames: 600, Seed: seed, Profile: p, Relay: true, RelayDiesAt: 4 * time.Second, RelayMoveAfter: time.Second})
		require.True(t, r.Verified, r.Desync)
		return r
	}
	a, b, c := play(23), play(23), play(24)
	same := func(x, y Result) bool {
		return x.Ticks == y.Ticks && x.UpBytes == y.UpBytes && x.DownBytes == y.DownBytes && x.UpPackets == y.UpPackets &&
			x.PacketsSent == y.PacketsSent && x.BytesSent == y.BytesSent && x.Rollbacks == y.Rollbacks && x.StallFrames == y.StallFrames &&
			x.ResimulatedFrames == y.ResimulatedFrames
	}
	require.True(t, same(a, b), "seed 23 twice: %+v\n%+v", a, b)
	require.False(t, same(a, c), "seeds 23 and 24 played alike")
}

// TestRelayTopologyForgery: an off-path attacker who spoofs the relay's
// address sends every machine forged envelopes, each carrying one forged
// datagram of every kind (random, mangled copies of the match's own,
// replays of an earlier match, handshakes) as if forwarded from another
// machine: the clients hand them to the sessions, which take none; the
// match verifies. With every datagram counted as forged, the genuine ones
// are counted as taken: the accounting sees through the client.
func TestRelayTopologyForgery(t *testing.T) {
	p, err := netsim.ParseProfile("wifi")
	require.NoError(t, err)
	c := Config{Players: 3, Frames: 900, Seed: 27, Profile: p, Relay: true, Forge: 1200}
	r := Run(c)
	require.NoError(t, r.Err)
	require.True(t, r.Completed)
	require.True(t, r.Verified, r.Desync)
	require.Greater(t, r.ForgedReceived, int64(10000))
	require.Zero(t, r.ForgedAccepted)
	require.Positive(t, r.PacketsForged)
	t.Logf("%d forged sent, %d received by the sessions, %d caught by the MAC, %d taken", r.ForgedDatagrams, r.ForgedReceived, r.PacketsForged, r.ForgedAccepted)

	c.forgeCountAll = true
	r = Run(c)
	require.Positive(t, r.ForgedAccepted)
}
