package netsim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/udp"
)

// A Shaper is a rollback.Transport and wraps one; a UDP transport is one.
var (
	_ rollback.Transport = (*netsim.Shaper)(nil)
	_ netsim.Transport   = rollback.Transport(nil)
	_ netsim.Transport   = (*udp.Transport)(nil)
)

type sent struct {
	peer int
	data string
	at   time.Time
}

// sink is a transport that hands every datagram sent through it to a
// channel; Send is safe for concurrent use, as a Shaper requires.
type sink struct{ got chan sent }

func newSink() *sink { return &sink{got: make(chan sent, 4096)} }

func (s *sink) Send(peer int, b []byte) error {
	s.got <- sent{peer, string(b), time.Now()}
	return nil
}

func (s *sink) Receive(buf []byte) (n, peer int, ok bool) { return copy(buf, "from the wire"), 1, true }

// next waits up to 10 s for the next datagram the shaper sends on.
func (s *sink) next(t *testing.T) sent {
	t.Helper()
	select {
	case d := <-s.got:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no datagram within 10 s")
		return sent{}
	}
}

func TestShaperPerfectProfileDeliversInOrder(t *testing.T) {
	s := newSink()
	sh, err := netsim.NewShaper(s, 2, netsim.Profile{}, 1, 0)
	require.NoError(t, err)
	defer sh.Close()
	for i := range 20 {
		require.NoError(t, sh.Send(i%2, []byte(fmt.Sprint(i))))
	}
	for i := range 20 {
		d := s.next(t)
		assert.Equal(t, sent{peer: i % 2, data: fmt.Sprint(i)}, sent{peer: d.peer, data: d.data})
	}
	buf := make([]byte, 64)
	n, peer, ok := sh.Receive(buf)
	assert.True(t, ok)
	assert.Equal(t, 1, peer)
	assert.Equal(t, "from the wire", string(buf[:n]), "Receive is the wrapped transport's")
	sh.Close()
	st := sh.Stats()
	assert.Equal(t, netsim.LinkStats{Sent: 20, Bytes: 30, Delivered: 20}, st)
}

func TestShaperDelaysOnTheRealClock(t *testing.T) {
	const latency = 30 * time.Millisecond
	s := newSink()
	sh, err := netsim.NewShaper(s, 1, netsim.Profile{Latency: latency}, 1, 0)
	require.NoError(t, err)
	defer sh.Close()
	b := []byte("late")
	start := time.Now()
	require.NoError(t, sh.Send(0, b))
	copy(b, "XXXX") // the shaper does not retain b
	d := s.next(t)
	assert.Equal(t, "late", d.data)
	assert.GreaterOrEqual(t, d.at.Sub(start), latency)
}

func TestShaperDuplicates(t *testing.T) {
	s := newSink()
	sh, err := netsim.NewShaper(s, 1, netsim.Profile{Duplicate: 1}, 1, 0)
	require.NoError(t, err)
	defer sh.Close()
	for i := range 10 {
		require.NoError(t, sh.Send(0, []byte{byte(i)}))
	}
	count := map[string]int{}
	for range 20 {
		count[s.next(t).data]++
	}
	for i := range 10 {
		assert.Equal(t, 2, count[string([]byte{byte(i)})], "datagram %d", i)
	}
	sh.Close()
	assert.Equal(t, 10, sh.Stats().Duplicated)
	assert.Equal(t, 20, sh.Stats().Delivered)
}

// TestShaperStreams checks that a shaper loses exactly the datagrams the
// Impairer of stream node*64+peer loses: a soak seed names the same fates
// whatever transport carries them.
func TestShaperStreams(t *testing.T) {
	p := netsim.Profile{Loss: 0.5}
	const seed, node, peer, n = 9, 3, 1, 200
	imp, err := netsim.NewImpairer(p, seed, node*64+peer)
	require.NoError(t, err)
	lost := 0
	for range n {
		if imp.Next(0).Lost {
			lost++
		}
	}
	require.Positive(t, lost)
	s := newSink()
	sh, err := netsim.NewShaper(s, 2, p, seed, node)
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, sh.Send(peer, []byte{byte(i)}))
	}
	for range n - lost {
		s.next(t)
	}
	sh.Close()
	assert.Equal(t, lost, sh.Stats().Lost)
	assert.Equal(t, n-lost, sh.Stats().Delivered)
	assert.Empty(t, s.got, "nothing beyond the survivors")
}

func TestShaperErrors(t *testing.T) {
	_, err := netsim.NewShaper(nil, 1, netsim.Profile{}, 1, 0)
	assert.Error(t, err)
	_, err = netsim.NewShaper(newSink(), 0, netsim.Profile{}, 1, 0)
	assert.Error(t, err)
	_, err = netsim.NewShaper(newSink(), 65, netsim.Profile{}, 1, 0)
	assert.Error(t, err)
	_, err = netsim.NewShaper(newSink(), 1, netsim.Profile{Loss: 2}, 1, 0)
	assert.ErrorIs(t, err, netsim.ErrProfile)

	s := newSink()
	sh, err := netsim.NewShaper(s, 2, netsim.Profile{Loss: 1}, 1, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, sh.Send(-1, nil), netsim.ErrPeer)
	assert.ErrorIs(t, sh.Send(2, nil), netsim.ErrPeer)
	require.NoError(t, sh.Send(1, []byte("lost")))
	sh.Close()
	sh.Close() // twice is harmless
	assert.ErrorIs(t, sh.Send(0, []byte("x")), netsim.ErrClosed)
	assert.Equal(t, netsim.LinkStats{Sent: 1, Bytes: 4, Lost: 1}, sh.Stats())
	assert.Empty(t, s.got)
}
