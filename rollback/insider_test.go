package rollback_test

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/pacer"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/udp"
)

// insider is a transport in front of a real one with one stranger at
// transport index peers (a spectator's address): the test delivers the
// stranger's datagrams, and datagrams "from" a peer's address (spoofed),
// before the real ones, and reads what the session sent the stranger.
type insider struct {
	inner rollback.Transport
	peers int
	queue []spoofed
	toHim [][]byte // what the session sent the stranger
}

type spoofed struct {
	b    []byte
	from int
}

func (t *insider) Send(peer int, b []byte) error {
	if peer == t.peers {
		t.toHim = append(t.toHim, append([]byte(nil), b...))
		return nil
	}
	return t.inner.Send(peer, b)
}

func (t *insider) Receive(buf []byte) (int, int, bool) {
	if len(t.queue) > 0 {
		d := t.queue[0]
		t.queue = t.queue[1:]
		return copy(buf, d.b), d.from, true
	}
	return t.inner.Receive(buf)
}

func (t *insider) deliver(from int, b []byte) { t.queue = append(t.queue, spoofed{b, from}) }

// answer is the last handshake the session sent the stranger.
func (t *insider) answer(tb testing.TB) wire.Handshake {
	tb.Helper()
	for k := len(t.toHim) - 1; k >= 0; k-- {
		var h wire.Handshake
		if b := t.toHim[k]; len(b) > 0 && wire.Kind(b[0]) == wire.KindHandshake && wire.ParseHandshake(b, &h, nil) == nil {
			return h
		}
	}
	tb.Fatal("the session never answered the stranger's hello")
	return wire.Handshake{}
}

// hello is a spectator's handshake for session 77's terms as h (an
// answer of the session) gives them.
func hello(tb testing.TB, nonce, echo uint64, terms wire.Terms, local []uint8) []byte {
	tb.Helper()
	share, err := wire.NewKeyShare(match.SeededRand(99, int(nonce%1000)))
	require.NoError(tb, err)
	b, err := wire.AppendHandshake(nil, &wire.Handshake{Version: wire.Version, SessionID: 77, Nonce: nonce, Echo: echo,
		Key: share.Public(), Terms: terms, Local: local}, nil)
	require.NoError(tb, err)
	return b
}

// spectatorTerms are the terms a spectator of the pair's match sends:
// Players and Layout (it learns the rest from the answer).
var spectatorTerms = wire.Terms{Players: 2, Owners: []uint8{0, 1}, Layout: []uint8{4}, Mode: 1, TickRate: 60, ChecksumEvery: 500, StartDelay: true}

// TestSpectatorCannotDisconnectAPeer: a stranger who may watch (no Secret,
// spectators on) learns from the answer to its hello the nonce a player
// sends; it spoofs one handshake from the other player's address echoing
// that nonce, under a new nonce, as a machine that restarted would. The
// player must not take it for its peer coming back: the peer stays
// connected. (Before, one nonce served every link, the echo proved
// nothing about the peer's address, and the peer was disconnected at
// once.)
func TestSpectatorCannotDisconnectAPeer(t *testing.T) {
	var tr *insider
	ss, _, nw := connectedPair(t, func(i int, c *rollback.Config) {
		if i == 0 {
			c.MaxSpectators = 1
			tr = &insider{inner: c.Transport, peers: 1}
			c.Transport = tr
		}
	})
	tr.deliver(1, hello(t, 4242, 0, spectatorTerms, nil))
	_, err := ss[0].Idle()
	require.NoError(t, err)
	leaked := tr.answer(t)
	tr.deliver(0, hello(t, 5151, leaked.Nonce, leaked.Terms, []uint8{1}))
	for range 30 {
		for i, s := range ss {
			r, err := s.Idle()
			require.NoError(t, err)
			for _, e := range r.Events {
				assert.NotEqual(t, rollback.EventDisconnected, e.Kind, "machine %d: %v", i, e)
			}
		}
		nw.Advance(match.Tick)
	}
	st, _ := ss[0].PeerStats(0)
	assert.False(t, st.Disconnected, "the spoofed handshake disconnected the peer")
	assert.True(t, st.Verified)
}

// TestSpectatorCannotTakeAPeersPlaceAtTheStart: before the match starts,
// the same stranger pins its own key for the other player's address (a
// handshake spoofed from there echoing the nonce it learned). The real
// peer's handshake must still complete. (Before, "the first nonce to echo
// ours stays": the real peer's handshakes were dropped and the handshake
// timed out.)
func TestSpectatorCannotTakeAPeersPlaceAtTheStart(t *testing.T) {
	nw, err := netsim.New(2, 1, netsim.Profile{})
	require.NoError(t, err)
	c0, c1 := pairConfig(t, nw, 0), pairConfig(t, nw, 1)
	c0.MaxSpectators = 1
	tr := &insider{inner: c0.Transport, peers: 1}
	c0.Transport = tr
	s0, err := rollback.NewSession(c0)
	require.NoError(t, err)
	tr.deliver(1, hello(t, 4242, 0, spectatorTerms, nil))
	_, err = s0.Idle()
	require.NoError(t, err)
	leaked := tr.answer(t)
	tr.deliver(0, hello(t, 5151, leaked.Nonce, leaked.Terms, []uint8{1}))
	_, err = s0.Idle()
	require.NoError(t, err)

	s1, err := rollback.NewSession(c1)
	require.NoError(t, err)
	errs, _ := handshake(t, nw, []*rollback.Session{s0, s1}, int(2*time.Second/match.Tick))
	assert.Equal(t, []error{nil, nil}, errs, "the real peer connects")
}

// TestJunkCannotKeepASpectatorOut: over real UDP, a stranger sends one
// junk byte to a player every 2 s from an address of its own, which takes
// the player's only guest slot first. A spectator must still connect:
// the transport gives the spectator the slot nobody vouched for, and the
// session vouches for the spectator once its handshake echoed the
// answer (udp.Transport.Admit), so the junk cannot take it back. (Before,
// a slot went to a new address only after 10 s of silence: the junk kept
// every spectator out for the whole match.)
func TestJunkCannotKeepASpectatorOut(t *testing.T) {
	listen := func() (*net.UDPConn, netip.AddrPort) {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c, c.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	c0, a0 := listen()
	c1, a1 := listen()
	cs, _ := listen()
	junk, _ := listen()
	tr0, err := udp.New(c0, []netip.AddrPort{a1})
	require.NoError(t, err)
	require.NoError(t, tr0.AcceptGuests(1))
	tr1, err := udp.New(c1, []netip.AddrPort{a0})
	require.NoError(t, err)
	trs, err := udp.New(cs, []netip.AddrPort{a0})
	require.NoError(t, err)
	for _, tr := range []*udp.Transport{tr0, tr1, trs} {
		t.Cleanup(func() { tr.Close() })
	}
	clock := rollback.RealClock()
	var ss []*rollback.Session
	for i, tr := range []rollback.Transport{tr0, tr1} {
		g := newCounterGame(t, 4096, false)
		s, err := rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
			Layout: rollback.Layout{4}, State: g.Arena, Game: g, Transport: tr, Clock: clock,
			Rand: match.SeededRand(1, i), SessionID: 77, MaxSpectators: 1 - i})
		require.NoError(t, err)
		ss = append(ss, s)
	}
	sg := newCounterGame(t, 4096, false)
	sp, err := rollback.NewSpectator(rollback.SpectatorConfig{Players: 2, Layout: rollback.Layout{4}, State: sg.Arena,
		Game: sg, Transport: trs, Source: 0, SessionID: 77, Clock: clock, Rand: match.SeededRand(9, 9)})
	require.NoError(t, err)

	p := pacer.New(match.Tick)
	deadline := time.Now().Add(5 * time.Second)
	var lastJunk time.Time
	for connected := false; !connected; {
		require.True(t, time.Now().Before(deadline), "the spectator did not connect within 5 s (udp stats %+v)", tr0.Stats())
		if time.Since(lastJunk) >= 2*time.Second {
			_, err := junk.WriteToUDPAddrPort([]byte{0x5a}, a0)
			require.NoError(t, err)
			lastJunk = time.Now()
		}
		for _, s := range ss {
			_, err := s.Idle()
			require.NoError(t, err)
		}
		r, err := sp.Advance()
		require.NoError(t, err)
		for _, e := range r.Events {
			connected = connected || e.Kind == rollback.EventConnected
		}
		p.Wait()
	}
}
