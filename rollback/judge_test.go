package rollback

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// TestJudge: the one judgement of every handshake, on a link not pinned
// and on a pinned one, for each thing a handshake can be.
func TestJudge(t *testing.T) {
	const session, ours, pinned = 77, 0xa1, 0xb2
	secret := []byte("sixteen bytes or more of secret")
	k, err := newKeyring(fakeRand{}, secret, wire.Terms{Players: 2, Owners: []uint8{0, 1}, Layout: []uint8{4}})
	require.NoError(t, err)
	other, err := wire.NewHandshakeAuth([]byte("another secret, sixteen bytes+"))
	require.NoError(t, err)
	hs := func(sid, nonce, echo uint64, auth *wire.HandshakeAuth) []byte {
		b, err := wire.AppendHandshake(nil, &wire.Handshake{Version: wire.Version, SessionID: sid, Nonce: nonce, Echo: echo,
			Terms: k.terms}, auth)
		require.NoError(t, err)
		return b
	}
	for _, tc := range []struct {
		name       string
		b          []byte
		pinned     bool
		want       hsVerdict
		authFailed bool
		otherSess  uint64
	}{
		{"garbage", []byte{byte(wire.KindHandshake), 0x93}, false, hsDrop, false, 0},
		{"another Secret", hs(session, 5, ours, other), false, hsDrop, true, 0},
		{"no Secret", hs(session, 5, ours, nil), false, hsDrop, true, 0},
		{"another session", hs(78, 5, ours, k.auth), false, hsDrop, false, 78},
		{"nonce 0", hs(session, 0, ours, k.auth), false, hsDrop, false, 0},
		{"hello", hs(session, 5, 0, k.auth), false, hsAnswer, false, 0},
		{"echo of another link's nonce", hs(session, 5, ours+1, k.auth), false, hsAnswer, false, 0},
		{"echo of ours", hs(session, 5, ours, k.auth), false, hsPin, false, 0},
		{"pinned, replayed", hs(session, pinned, ours, k.auth), true, hsReplay, false, 0},
		{"pinned, without our echo", hs(session, pinned, 0, k.auth), true, hsRemind, false, 0},
		{"pinned, a new nonce echoing ours", hs(session, 6, ours, k.auth), true, hsRenew, false, 0},
		{"pinned, a new nonce without our echo", hs(session, 6, 0, k.auth), true, hsStray, false, 0},
		{"pinned, another session", hs(78, pinned, ours, k.auth), true, hsDrop, false, 78},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &peerAuth{ours: ours}
			if tc.pinned {
				a.nonce = pinned
			}
			before := *a
			var h wire.Handshake
			assert.Equal(t, tc.want, k.judge(tc.b, &h, session, a))
			assert.Equal(t, tc.authFailed, a.authFailed)
			assert.Equal(t, tc.otherSess, a.otherSession)
			a.authFailed, a.otherSession = false, 0
			assert.Equal(t, before, *a, "the judgement changes nothing but the hints")
		})
	}
}

// TestNonceFor: our nonces on different links differ, are never 0, and
// are the same on one link whenever asked; another seed gives others.
func TestNonceFor(t *testing.T) {
	k := keyring{seed: 12345}
	seen := map[uint64]uint64{}
	for _, link := range []uint64{linkPeer, linkPeer | 1, linkPeer | 7, linkGuest, linkGuest | 1, linkGuest | 63, linkSource, linkSource | 1} {
		n := k.nonceFor(link)
		assert.NotZero(t, n)
		assert.Equal(t, n, k.nonceFor(link))
		if prev, dup := seen[n]; dup {
			t.Errorf("links %#x and %#x share nonce %#x", prev, link, n)
		}
		seen[n] = link
		assert.NotEqual(t, n, (&keyring{seed: 12346}).nonceFor(link))
	}
}
