package rollback_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// kindTally is a transport that counts, per peer, the sealed datagrams of
// each kind sent since the last reset.
type kindTally struct {
	rollback.Transport
	sent [][16]int
}

func (k *kindTally) Send(peer int, b []byte) error {
	if len(b) > 0 && b[0]>>4 != 0 { // sealed: the kind in the high four bits
		k.sent[peer][b[0]>>4]++
	}
	return k.Transport.Send(peer, b)
}

func (k *kindTally) reset() { clear(k.sent) }

// tallied returns a match of machines sessions over nw, one player each,
// each counting what it sends; cfg gives what they share beyond that.
func tallied(t *testing.T, nw *netsim.Network, machines int, cfg rollback.Config) ([]*rollback.Session, []*counterGame, []*kindTally) {
	t.Helper()
	ss, gs, tally := make([]*rollback.Session, machines), make([]*counterGame, machines), make([]*kindTally, machines)
	for i := range ss {
		c := cfg
		for j := range machines {
			if j != i {
				c.Peers = append(c.Peers, rollback.Peer{Players: []rollback.PlayerID{rollback.PlayerID(j)}})
			}
		}
		gs[i] = newCounterGame(t, 4096, false)
		tally[i] = &kindTally{Transport: nw.Endpoint(i), sent: make([][16]int, machines-1)}
		c.Players, c.Local, c.Layout = machines, []rollback.PlayerID{rollback.PlayerID(i)}, rollback.Layout{4}
		c.State, c.Game, c.Transport, c.Clock, c.Rand = gs[i].Arena, gs[i], tally[i], nw.Now, match.SeededRand(1, i)
		s, err := rollback.NewSession(c)
		require.NoError(t, err)
		ss[i] = s
	}
	return ss, gs, tally
}

// TestStatementsRideInputs: with three machines, statements and echoes
// (Attest) ride in the datagram of the input packet they go with, in front
// of its inputs: a tick that sends a peer an input packet sends it no
// Attest of its own but when two are due at once. It failed before they
// rode so: every statement and every echo went in a datagram of its own,
// one tick in three. The match ends in sync.
func TestStatementsRideInputs(t *testing.T) {
	const machines, frames = 3, 900
	nw, err := netsim.New(machines, 1, netsim.Profile{Latency: 5e6})
	require.NoError(t, err)
	// An input packet every tick for the Attests to ride in.
	ss, gs, tally := tallied(t, nw, machines, rollback.Config{SessionID: 78, SendEveryTick: true})
	var attests, alone, sends int
	for tick := 0; tick < frames+600; tick++ {
		for i, s := range ss {
			tally[i].reset()
			if s.Frame() < frames {
				_, err = s.AddLocalInput(rollback.PlayerID(i), rollback.Input((int(s.Frame())/7+i)%16))
				require.NoError(t, err)
				_, err = s.Advance()
			} else {
				_, err = s.Idle()
			}
			require.NoError(t, err)
			for _, k := range tally[i].sent {
				// An input packet goes alone (kind Input) or behind an
				// Attest (kind Attest); every further datagram of the two
				// kinds is an Attest that went alone.
				attests += k[wire.KindAttest]
				if n := k[wire.KindInput] + k[wire.KindAttest]; n > 0 {
					sends++
					alone += n - 1
				}
			}
		}
		nw.Advance(match.Tick)
	}
	for i, s := range ss {
		require.Equal(t, rollback.Frame(frames), s.Frame(), "machine %d", i)
		assert.True(t, bytes.Equal(gs[0].Arena.Bytes(), gs[i].Arena.Bytes()), "machine %d ends out of sync", i)
	}
	t.Logf("%d Attests, %d alone beside an input packet, %d sends of inputs", attests, alone, sends)
	require.Greater(t, sends, machines*(machines-1)*frames)
	// One statement per interval (64 frames: one player a machine, inputs
	// narrow enough) to each peer, and echoes.
	assert.Greater(t, attests, machines*(machines-1)*frames/64)
	assert.Less(t, alone, sends/100, "Attests that went in datagrams of their own beside an input packet")
}

// TestKeysBeforeStart: before the start each machine sends a peer its view
// of the signing keys when it learns a key, and again every 100 ms (the
// handshake's retry) while the peer may lack it, not every tick: on a link
// 300 ms each way the peer's agreement takes a round trip to come back.
// It failed when a machine sent every tick until the peer agreed: 46
// Keys to each peer here, against 14 now; the match starts on the same
// tick (138) either way.
func TestKeysBeforeStart(t *testing.T) {
	const machines = 3
	nw, err := netsim.New(machines, 1, netsim.Profile{Latency: 300e6})
	require.NoError(t, err)
	ss, _, tally := tallied(t, nw, machines, rollback.Config{SessionID: 79})
	ticks := 0
	for ; ticks < 600; ticks++ {
		started := 0
		for i, s := range ss {
			if s.Frame() > 0 {
				started++
			}
			_, err = s.AddLocalInput(rollback.PlayerID(i), 1)
			require.NoError(t, err)
			_, err = s.Advance()
			require.NoError(t, err)
		}
		if started == machines {
			break
		}
		nw.Advance(match.Tick)
	}
	require.Less(t, ticks, 600, "the match did not start")
	for i := range ss {
		for j, k := range tally[i].sent {
			keys := k[wire.KindKeys]
			assert.LessOrEqual(t, keys, 16, "machine %d sent peer %d Keys %d times", i, j, keys)
			assert.Positive(t, keys)
		}
	}
	t.Logf("started after %d ticks; machine 0 sent %d and %d Keys", ticks, tally[0].sent[0][wire.KindKeys], tally[0].sent[1][wire.KindKeys])
}

// TestControlsRideInputs: a ping, its reply and a desync checksum ride in
// the datagram of the input packet that goes to the peer in the same call,
// in front of its inputs, as an Attest does: two machines send one
// datagram a tick each. It failed when they went in datagrams of their
// own: 172 of them beside the input packets of 900 frames here (every
// second a ping and a reply each way, a checksum every 30 frames); now 4
// go alone (two due in one call). With lazy sending a quiet tick holds a
// ping and a checksum back for the next tick's packet (it failed before:
// 54 went alone on quiet ticks); a reply goes at once. They still do
// their work: the round trip is measured, and a game that diverges is
// caught by the carried checksums.
func TestControlsRideInputs(t *testing.T) {
	for _, tc := range []struct {
		name          string
		lazy, diverge bool
	}{{"every tick", false, false}, {"lazy", true, false}, {"diverged", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			const machines, frames = 2, 900
			nw, err := netsim.New(machines, 1, netsim.Profile{Latency: 5e6})
			require.NoError(t, err)
			ss, gs, tally := tallied(t, nw, machines, rollback.Config{SessionID: 80, SendEveryTick: !tc.lazy, ChecksumEvery: 30})
			gs[1].Leak = tc.diverge
			var alone, sends, carriers, held int
			var failed error
			for tick := 0; tick < frames+100 && ss[1].Frame() < frames && failed == nil; tick++ {
				for i, s := range ss {
					tally[i].reset()
					quiet := s.Stats().QuietTicks
					_, err = s.AddLocalInput(rollback.PlayerID(i), rollback.Input((int(s.Frame())/7+i)%16))
					require.NoError(t, err)
					if _, err = s.Advance(); err != nil {
						failed = err
						break
					}
					quiet = s.Stats().QuietTicks - quiet
					for _, k := range tally[i].sent {
						// An input packet goes alone (kind Input) or behind
						// the first message due (the message's kind); every
						// further datagram of these kinds went alone.
						n := k[wire.KindInput] + k[wire.KindQuality] + k[wire.KindQualityReply] + k[wire.KindChecksum]
						carriers += n - k[wire.KindInput]
						switch {
						case quiet > 0:
							held += k[wire.KindQuality] + k[wire.KindChecksum]
						case n > 0 && s.Frame() > 0:
							sends++
							alone += n - 1
						}
					}
				}
				nw.Advance(match.Tick)
			}
			if tc.diverge {
				var e *desync.Error
				require.ErrorAs(t, failed, &e)
				t.Logf("desync found at frame %d: %v", ss[0].Frame(), failed)
				return
			}
			require.NoError(t, failed)
			for i, s := range ss {
				require.Equal(t, rollback.Frame(frames), s.Frame(), "machine %d", i)
				assert.True(t, bytes.Equal(gs[0].Arena.Bytes(), gs[i].Arena.Bytes()), "machine %d ends out of sync", i)
				st, ok := s.PeerStats(0)
				require.True(t, ok)
				// 10 ms, seen at the ticks (16.7 ms apart) that take the replies.
				assert.InDelta(t, 2*float64(match.Tick), float64(st.RTT), float64(match.Tick), "machine %d's round trip", i)
				assert.Zero(t, s.Stats().PacketsInvalid, "machine %d", i)
				if tc.lazy {
					assert.Greater(t, s.Stats().QuietTicks, int64(frames/4), "machine %d", i)
				}
			}
			t.Logf("%d pings, replies and checksums; %d alone beside an input packet, %d sends of inputs; %d pings and checksums on quiet ticks", carriers, alone, sends, held)
			if !tc.lazy {
				require.Greater(t, sends, machines*(frames-100))
			}
			assert.Greater(t, carriers, machines*(2*frames/60+frames/30)*3/4)
			assert.Less(t, alone, sends/100, "messages that went in datagrams of their own beside an input packet")
			assert.Zero(t, held, "pings and checksums sent on quiet ticks")
		})
	}
}
