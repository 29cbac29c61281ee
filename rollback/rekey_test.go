package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/fakepeer"
	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// guestsTr is fake peers with strangers at the transport indexes after
// theirs: the test queues the strangers' datagrams, and reads the nonce
// the session last sent each of them.
type guestsTr struct {
	*fakepeer.Peers
	peers int
	queue []guestDatagram
	nonce map[int]uint64 // the last handshake's nonce sent to each stranger
}

type guestDatagram struct {
	b   []byte
	idx int
}

func (t *guestsTr) Send(peer int, b []byte) error {
	if peer < t.peers {
		return t.Peers.Send(peer, b)
	}
	var h wire.Handshake
	if len(b) > 0 && wire.Kind(b[0]) == wire.KindHandshake && wire.ParseHandshake(b, &h, nil) == nil {
		t.nonce[peer] = h.Nonce
	}
	return nil
}

func (t *guestsTr) Receive(buf []byte) (int, int, bool) {
	if len(t.queue) > 0 {
		d := t.queue[0]
		t.queue = t.queue[1:]
		return copy(buf, d.b), d.idx, true
	}
	return t.Peers.Receive(buf)
}

// TestRekeyBudget: spectators that keep sending handshakes with new
// nonces, each echoing the one the session gave their address (so each
// passes the address check), make the session derive keys (X25519 and
// HKDF, ~66 µs) at most rekeyPerCall times a call, whatever their number,
// and each source at most once per handshakeRetry. (Before, each replaced
// its unverified guest and derived new keys: 32 guests × 8 handshakes a
// call were 256 derivations, 8.7–17.8 ms of every Advance.)
func TestRekeyBudget(t *testing.T) {
	const guests = maxGuests
	var tr *guestsTr
	s, _ := fourPlayers(t, func(c *Config) {
		c.MaxSpectators = guests
		tr = &guestsTr{Peers: c.Transport.(*fakepeer.Peers), peers: 2, nonce: map[int]uint64{}}
		c.Transport = tr
	})
	share, err := wire.NewKeyShare(fakeRand{})
	require.NoError(t, err)
	hs := func(idx int, nonce, echo uint64) []byte {
		b, err := wire.AppendHandshake(nil, &wire.Handshake{Version: wire.Version, SessionID: 5, Nonce: nonce, Echo: echo,
			Key: share.Public(), Terms: s.proto.keys.terms}, nil)
		require.NoError(t, err)
		return b
	}
	call := func() int64 {
		before := s.proto.keys.derived
		_, err := s.Idle()
		require.NoError(t, err)
		tr.Advance(time.Second / 60)
		return s.proto.keys.derived - before
	}
	// Every stranger says hello and is answered (strangerBudget a call).
	for idx := 2; idx < 2+guests; idx++ {
		tr.queue = append(tr.queue, guestDatagram{hs(idx, uint64(idx)<<32, 0), idx})
		if len(tr.queue) == strangerBudget {
			call()
		}
	}
	call()
	require.Len(t, tr.nonce, guests, "every stranger was answered")
	next := uint64(1)
	most, total := int64(0), int64(0)
	const calls = 30 // half a second
	for range calls {
		for idx := 2; idx < 2+guests; idx++ {
			for range guestBudget {
				next++
				tr.queue = append(tr.queue, guestDatagram{hs(idx, next, tr.nonce[idx]), idx})
			}
		}
		n := call()
		most, total = max(most, n), total+n
	}
	t.Logf("key derivations: at most %d in a call, %d in %d calls", most, total, calls)
	assert.LessOrEqual(t, most, int64(rekeyPerCall), "derivations in one call")
	perSource := int64(calls*time.Second/60/handshakeRetry) + 1
	assert.LessOrEqual(t, total, guests*perSource, "derivations per source")
}

// fakeRand is a reader of zeros (a fixed key share).
type fakeRand struct{}

func (fakeRand) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(i + 1)
	}
	return len(b), nil
}
