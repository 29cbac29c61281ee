package fakepeer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/internal/fakepeer"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// session returns a session of two players with local player me.
func session(t *testing.T, me rollback.PlayerID, tr rollback.Transport, clock func() time.Duration) *rollback.Session {
	t.Helper()
	a, err := savestate.New(1024)
	require.NoError(t, err)
	s, err := rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{me}, Peers: []rollback.Peer{{Players: []rollback.PlayerID{1 - me}}},
		Layout: rollback.Layout{4}, State: a, Game: rollback.GameFunc(func(rollback.Frame, []rollback.PlayerInput) {}),
		Transport: tr, Clock: clock, SessionID: 9, NoStartDelay: true, FixedInputLag: true})
	require.NoError(t, err)
	return s
}

// TestHandshakeAndInputs: the fake peer completes the handshake like an
// honest one, and the inputs it is scripted to send are taken.
func TestHandshakeAndInputs(t *testing.T) {
	fp := fakepeer.New(42)
	s := session(t, 0, fp, fp.Now)
	assert.False(t, fp.Keyed(0), "no keys before the session said hello")
	for range 2 {
		_, err := s.Idle()
		require.NoError(t, err)
		fp.Advance(16)
	}
	st, _ := s.PeerStats(0)
	require.True(t, st.Verified)
	assert.True(t, fp.Keyed(0))
	for f := range 3 {
		_, err := s.AddLocalInput(0, rollback.Input(f))
		require.NoError(t, err)
		r, err := s.Advance()
		require.NoError(t, err)
		require.False(t, r.Stalled)
	}
	b, err := fp.Input(0, wire.InputPacket{Ack: 0, First: 0, Count: 3, Players: 1, Inputs: []uint64{1, 2, 3}}, wire.Layout{4})
	require.NoError(t, err)
	fp.Deliver(0, b, []byte{9, 9}) // a good packet and a bad one
	_, err = s.Idle()
	require.NoError(t, err)
	assert.Equal(t, rollback.Frame(3), s.ConfirmedFrame(), "the scripted inputs were taken")
	assert.Equal(t, int64(1), s.Stats().Rollbacks, "and they were not what was predicted")
	assert.Equal(t, int64(1), s.Stats().PacketsInvalid, "the bad one is dropped")
	assert.Positive(t, fp.Sent[0])
	assert.ErrorIs(t, fp.Send(3, nil), fakepeer.ErrPeer)
}

// TestWrap: in front of a real transport the wrapper's scripted
// datagrams come before the real ones; it has no keys, so what it scripts
// is a stranger's: a copy of a real datagram with one bit changed is
// dropped and counted as forged, and the match goes on.
func TestWrap(t *testing.T) {
	nw, err := netsim.New(2, 1, netsim.Profile{})
	require.NoError(t, err)
	w := fakepeer.Wrap(nw.Endpoint(0), 1)
	tap := &fakepeer.Tap{Transport: nw.Endpoint(1), Keep: fakepeer.Sealed(wire.KindQuality)}
	ss := []*rollback.Session{session(t, 0, w, nw.Now), session(t, 1, tap, nw.Now)}
	for range 10 {
		for _, s := range ss {
			_, err := s.Idle()
			require.NoError(t, err)
		}
		nw.Advance(16e6)
	}
	st, _ := ss[0].PeerStats(0)
	require.True(t, st.Verified)
	require.NotEmpty(t, tap.Last, "a sealed ping went by")
	assert.False(t, w.Keyed(0))
	forged := append([]byte{}, tap.Last...)
	forged[len(forged)-1] ^= 1
	w.Deliver(0, forged)
	_, err = ss[0].Idle()
	require.NoError(t, err)
	ps, _ := ss[0].PeerStats(0)
	assert.Equal(t, int64(1), ps.PacketsForged)
	assert.Equal(t, int64(1), ps.PacketsDropped)
}
