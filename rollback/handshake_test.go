package rollback_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/internal/fakepeer"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// pairConfig is machine i of a two-player match over nw (player i local).
func pairConfig(t *testing.T, nw *netsim.Network, i int) rollback.Config {
	g := newCounterGame(t, 4096, false)
	return rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
		Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
		Layout: rollback.Layout{4}, State: g.Arena, Game: g, Transport: nw.Endpoint(i),
		Clock: nw.Now, Rand: match.SeededRand(1, i), SessionID: 77, Timeouts: rollback.Timeouts{Handshake: time.Second}}
}

// handshake runs sessions over nw (Idle on every tick) until each has
// returned an error or every one is verified, for at most limit ticks. It
// returns each session's first error and the tick at which the last one
// ended.
func handshake(t *testing.T, nw *netsim.Network, ss []*rollback.Session, limit int) ([]error, int) {
	t.Helper()
	errs := make([]error, len(ss))
	for tick := 1; tick <= limit; tick++ {
		done := true
		for i, s := range ss {
			if errs[i] != nil {
				continue
			}
			_, errs[i] = s.Idle()
			st, _ := s.PeerStats(0)
			done = done && (errs[i] != nil || st.Verified)
		}
		nw.Advance(match.Tick)
		if done {
			return errs, tick
		}
	}
	return errs, limit
}

// TestTermsMismatch: machines configured differently in something they
// must agree on both fail the handshake at once, each with a HandshakeError naming the field
// naming the field and both values (before, different Players stalled for
// ever, a different Layout surfaced minutes later as a desync, and two
// machines claiming one player only timed out).
func TestTermsMismatch(t *testing.T) {
	lockstep := func(c *rollback.Config) { c.Lockstep, c.MaxRollback = true, 0 }
	for _, tc := range []struct {
		field        string
		nodes        int
		edit0, edit1 func(c *rollback.Config)
		ours, theirs string // as machine 0 sees them; machine 1 sees them swapped
	}{
		{"Players", 3, nil, func(c *rollback.Config) {
			c.Players, c.Peers = 3, []rollback.Peer{{Players: []rollback.PlayerID{0}}, {Players: []rollback.PlayerID{2}}}
		}, "2", "3"},
		{"Local", 2, nil, func(c *rollback.Config) {
			c.Local, c.Peers = []rollback.PlayerID{0}, []rollback.Peer{{Players: []rollback.PlayerID{1}}}
		}, "[1]", "[0]"},
		{"Layout", 2, nil, func(c *rollback.Config) { c.Layout = rollback.Layout{4, 4} }, "[4]", "[4 4]"},
		{"Lockstep", 2, nil, lockstep, "false", "true"},
		{"TickRate", 2, lockstep, func(c *rollback.Config) { lockstep(c); c.TickRate = 30 }, "60", "30"},
		{"ChecksumEvery", 2, nil, func(c *rollback.Config) { c.ChecksumEvery = -1 }, "500", "off"},
		{"NoStartDelay", 2, nil, func(c *rollback.Config) { c.NoStartDelay = true }, "false", "true"},
		// One machine's transport reaches its peers through a relay (its input
		// packets' body is the cast one), the other's does not.
		// (Three machines: with one peer a relayed session sends the per-pair body.)
		{"relayed Transport", 3, func(c *rollback.Config) { thirdPeer(c) }, func(c *rollback.Config) {
			thirdPeer(c)
			c.Transport = relayedTransport{c.Transport}
		}, "false", "true"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			nw, err := netsim.New(tc.nodes, 1, netsim.Profile{})
			require.NoError(t, err)
			var ss []*rollback.Session
			for i, edit := range []func(c *rollback.Config){tc.edit0, tc.edit1} {
				c := pairConfig(t, nw, i)
				if edit != nil {
					edit(&c)
				}
				s, err := rollback.NewSession(c)
				require.NoError(t, err)
				ss = append(ss, s)
			}
			errs, ticks := handshake(t, nw, ss, 30)
			for i, err := range errs {
				var te *rollback.HandshakeError
				require.ErrorAs(t, err, &te, "machine %d", i)
				assert.Equal(t, tc.field, te.Field)
				assert.Equal(t, []int{0}, te.Peers)
				ours, theirs := tc.ours, tc.theirs
				if i == 1 && tc.field != "Local" { // both expect the other to play player 1, both say they play 0
					ours, theirs = theirs, ours
				}
				assert.Equal(t, ours, te.Ours, "machine %d", i)
				assert.Equal(t, theirs, te.Theirs, "machine %d", i)
				assert.Contains(t, err.Error(), fmt.Sprintf("%s is %s here and %s there", tc.field, ours, theirs))
			}
			assert.LessOrEqual(t, ticks, 6, "both fail within the handshake, not at its timeout")
		})
	}
}

// relayedTransport is a Transport that says it reaches its peers through
// a relay, as relay.Client does.
type relayedTransport struct{ rollback.Transport }

func (relayedTransport) Relayed() bool { return true }

// thirdPeer adds a third machine, playing player 2, to a pairConfig.
func thirdPeer(c *rollback.Config) {
	c.Players, c.Peers = 3, append(c.Peers, rollback.Peer{Players: []rollback.PlayerID{2}})
}

// TestSecret: machines with the same Config.Secret connect; a machine with
// another Secret, or none, cannot, and the timeout says why.
func TestSecret(t *testing.T) {
	secret := []byte("sixteen bytes or more, from the lobby")
	for _, tc := range []struct {
		name    string
		s0, s1  []byte
		connect bool
	}{
		{"same", secret, secret, true},
		{"another", secret, []byte("another lobby's secret, 16+ bytes"), false},
		{"only one", secret, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nw, err := netsim.New(2, 1, netsim.Profile{})
			require.NoError(t, err)
			var ss []*rollback.Session
			for i, sec := range [][]byte{tc.s0, tc.s1} {
				c := pairConfig(t, nw, i)
				c.Secret = sec
				s, err := rollback.NewSession(c)
				require.NoError(t, err)
				ss = append(ss, s)
			}
			errs, _ := handshake(t, nw, ss, 120)
			if tc.connect {
				assert.Equal(t, []error{nil, nil}, errs)
				return
			}
			var he *rollback.HandshakeError
			require.ErrorAs(t, errs[0], &he)
			assert.Contains(t, he.Error(), "Secret")
			require.NotEmpty(t, he.Hints)
			assert.Contains(t, he.Hints[0], "its Secret differs")
		})
	}
	c := pairConfig(t, must(netsim.New(2, 1, netsim.Profile{})), 0)
	c.Secret = []byte("short")
	_, err := rollback.NewSession(c)
	var ce *rollback.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Secret", ce.Field)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestHandshakeTimeoutSaysWhy: a timed-out handshake says what to check,
// and what arrived from the silent peer's address: handshakes of another
// session, or nothing at all.
func TestHandshakeTimeoutSaysWhy(t *testing.T) {
	nw, err := netsim.New(2, 1, netsim.Profile{})
	require.NoError(t, err)
	c0, c1 := pairConfig(t, nw, 0), pairConfig(t, nw, 1)
	c1.SessionID = 78
	s0, err := rollback.NewSession(c0)
	require.NoError(t, err)
	s1, err := rollback.NewSession(c1)
	require.NoError(t, err)
	errs, _ := handshake(t, nw, []*rollback.Session{s0, s1}, 120)
	var he *rollback.HandshakeError
	require.ErrorAs(t, errs[0], &he)
	assert.Equal(t, []int{0}, he.Peers)
	assert.Contains(t, he.Error(), "SessionID")
	assert.Contains(t, he.Error(), "firewall")
	assert.Equal(t, []string{"peer 0 sent handshakes for session 0x4e (ours is 0x4d)"}, he.Hints)

	nw2 := must(netsim.New(2, 1, netsim.Profile{}))
	alone, err := rollback.NewSession(pairConfig(t, nw2, 0))
	require.NoError(t, err)
	errs, _ = handshake(t, nw2, []*rollback.Session{alone}, 120)
	require.ErrorAs(t, errs[0], &he)
	assert.Equal(t, []string{"nothing arrived from peer 0"}, he.Hints)
}

// TestForgedHandshakesCannotDelayTheRealOne: handshakes with the right
// session id but not echoing the session's nonce — what an attacker who
// knows the session id can send, spoofing the peer's address, before the
// real one arrives — pin nothing, so the real handshake completes on the
// same tick as without them. (Before, the first handshake with the right
// session id pinned the peer's nonce: the real peer's were dropped and the
// handshake timed out.)
func TestForgedHandshakesCannotDelayTheRealOne(t *testing.T) {
	run := func(forge bool) int {
		nw, err := netsim.New(2, 1, netsim.Profile{})
		require.NoError(t, err)
		c0, c1 := pairConfig(t, nw, 0), pairConfig(t, nw, 1)
		inj := fakepeer.Wrap(c0.Transport, 1)
		c0.Transport = inj
		if forge {
			share, err := wire.NewKeyShare(match.SeededRand(9, 9))
			require.NoError(t, err)
			for n := range uint64(20) {
				b, err := wire.AppendHandshake(nil, &wire.Handshake{Version: wire.Version, SessionID: 77, Nonce: 1000 + n, Echo: n * 7919,
					Key: share.Public(), Local: []uint8{1},
					Terms: wire.Terms{Players: 2, Owners: []uint8{0, 1}, Layout: []uint8{4}, Mode: 1, TickRate: 60, ChecksumEvery: 500, StartDelay: true}}, nil)
				require.NoError(t, err)
				inj.Deliver(0, b)
			}
		}
		s0, err := rollback.NewSession(c0)
		require.NoError(t, err)
		s1, err := rollback.NewSession(c1)
		require.NoError(t, err)
		errs, ticks := handshake(t, nw, []*rollback.Session{s0, s1}, 120)
		require.Equal(t, []error{nil, nil}, errs)
		return ticks
	}
	clean, forged := run(false), run(true)
	assert.Equal(t, clean, forged, "the forged handshakes did not delay the real one")
}

// TestReplayedHandshakeIsNotASignOfLife: once a peer is pinned, its
// handshakes prove nothing more (they are not sealed; anyone on the path
// can replay one): a peer that went silent is reported interrupted however
// many copies of its handshake keep arriving. (Before, a handshake with
// the pinned nonce echoing ours counted as hearing from the peer, so an
// on-path replay kept a dead link looking alive.)
func TestReplayedHandshakeIsNotASignOfLife(t *testing.T) {
	tap := &fakepeer.Tap{Keep: func(b []byte) bool {
		var h wire.Handshake
		return len(b) > 0 && b[0] == byte(wire.KindHandshake) && wire.ParseHandshake(b, &h, nil) == nil && h.Echo != 0
	}}
	ss, nw, inj := tappedPair(t, tap)
	require.NotEmpty(t, tap.Last, "peer 1 sent a handshake echoing peer 0's nonce")
	var interrupted bool
	for range 120 { // peer 1 is silent for 2 s; its handshake is replayed every tick
		inj.Deliver(0, tap.Last)
		r, err := ss[0].Idle()
		require.NoError(t, err)
		for _, e := range r.Events {
			interrupted = interrupted || e.Kind == rollback.EventNetworkInterrupted
		}
		nw.Advance(match.Tick)
	}
	assert.True(t, interrupted, "the silent peer was reported interrupted")
	st, _ := ss[0].PeerStats(0)
	assert.True(t, st.Interrupted)
}

// TestForgeryEvent: forgeryAlarm datagrams failing the MAC within a second
// raise one EventForgery naming the peer whose address they came from; a
// few do not.
func TestForgeryEvent(t *testing.T) {
	tap := &fakepeer.Tap{Keep: fakepeer.Sealed(wire.KindInput)}
	ss, nw, inj := tappedPair(t, tap)
	forgeries := func(n int) {
		for k := range n {
			f := bytes.Clone(tap.Last)
			f[len(f)-1-k%4] ^= 0x80 // a changed MAC byte
			inj.Deliver(0, f)
		}
	}
	count := func() (n int) {
		for range 70 { // more than a second: the rate window rolls over
			for _, s := range ss {
				r, err := s.Idle()
				require.NoError(t, err)
				for _, e := range r.Events {
					if e.Kind == rollback.EventForgery {
						assert.Equal(t, 0, e.Peer)
						n++
					}
				}
			}
			nw.Advance(match.Tick)
		}
		return n
	}
	require.NotEmpty(t, tap.Last)
	forgeries(rollback.ForgeryAlarm - 1)
	assert.Zero(t, count(), "fewer than forgeryAlarm in a second")
	forgeries(rollback.ForgeryAlarm)
	assert.Equal(t, 1, count(), "exactly forgeryAlarm in a second")
	forgeries(2 * rollback.ForgeryAlarm) // all judged in one call: the budget is 64
	assert.Equal(t, 1, count(), "one event for the second's flood")
	st, _ := ss[0].PeerStats(0)
	assert.Equal(t, int64(4*rollback.ForgeryAlarm-1), st.PacketsForged)
}

// tappedPair is connectedPair with a stranger in front of machine 0 (it
// delivers scripted datagrams "from" peer 0's address) and tap on machine
// 1's sends.
func tappedPair(t *testing.T, tap *fakepeer.Tap) ([2]*rollback.Session, *netsim.Network, *fakepeer.Peers) {
	var inj *fakepeer.Peers
	ss, _, nw := connectedPair(t, func(i int, c *rollback.Config) {
		if i == 0 {
			inj = fakepeer.Wrap(c.Transport, 1)
			c.Transport = inj
		} else {
			tap.Transport = c.Transport
			c.Transport = tap
		}
	})
	return ss, nw, inj
}
