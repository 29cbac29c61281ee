package rollback

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingReader fails after giving its bytes.
type failingReader struct{ b []byte }

var errBroken = errors.New("broken")

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, errBroken
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestReadNonce: four little-endian bytes, skipping zero; a reader that
// runs out is errRand.
func TestReadNonce(t *testing.T) {
	cases := []struct {
		name  string
		r     io.Reader
		want  uint64
		cause error // wrapped with errRand; nil for success
	}{
		{name: "big-endian", r: bytes.NewReader([]byte{1, 2, 3, 4, 5, 6, 7, 8}), want: 0x0102030405060708},
		{name: "zero skipped", r: bytes.NewReader([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}), want: 1},
		{name: "zeros skipped", r: bytes.NewReader(append(make([]byte, 16), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)), want: 1<<64 - 1},
		{name: "empty", r: bytes.NewReader(nil), cause: io.EOF},
		{name: "short", r: bytes.NewReader([]byte{1, 2}), cause: io.ErrUnexpectedEOF},
		{name: "zero, then short", r: bytes.NewReader([]byte{0, 0, 0, 0, 0, 0, 0, 0, 1}), cause: io.ErrUnexpectedEOF},
		{name: "a failing reader", r: &failingReader{b: []byte{1}}, cause: errBroken},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readNonce(tc.r)
			if tc.cause == nil {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				return
			}
			assert.ErrorIs(t, err, errRand)
			assert.Contains(t, err.Error(), tc.cause.Error())
			assert.Zero(t, got)
		})
	}
}

// TestNewStarter: machines are numbered by their lowest player; the host is
// the machine with the lowest of all (-1: we are).
func TestNewStarter(t *testing.T) {
	cases := []struct {
		name    string
		lowest  PlayerID
		ids     []PlayerID // each peer's lowest player
		machine int
		host    int
	}{
		{name: "alone", lowest: 0, machine: 0, host: -1},
		{name: "we are the host", lowest: 0, ids: []PlayerID{1, 2}, machine: 0, host: -1},
		{name: "two machines, the other hosts", lowest: 1, ids: []PlayerID{0}, machine: 1, host: 0},
		{name: "last of four", lowest: 3, ids: []PlayerID{5, 1, 0, 4}, machine: 2, host: 2},
		{name: "in the middle", lowest: 2, ids: []PlayerID{4, 6, 1}, machine: 1, host: 2},
		{name: "shared machines: lowest players apart", lowest: 4, ids: []PlayerID{6, 2}, machine: 1, host: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			peers := make([]peer, len(tc.ids))
			for i, id := range tc.ids {
				peers[i].id = id
			}
			st := newStarter(true, tc.lowest, peers)
			assert.Equal(t, tc.machine, st.machine)
			assert.Equal(t, tc.host, st.host)
			assert.True(t, st.noDelay)
			assert.Equal(t, int64(-1), int64(st.at), "the start is not known yet")
			assert.False(t, st.meshKnown)
		})
	}
	assert.False(t, newStarter(false, 0, nil).noDelay)
}

// TestNewProtocol: the defaults, a match without peers starting at once,
// and lockstep resending every unacknowledged input unless told otherwise.
func TestNewProtocol(t *testing.T) {
	now := 3 * time.Second
	cases := []struct {
		name             string
		cfg              Config
		started          bool
		redundant        int
		hsTimeout, every time.Duration
	}{
		{name: "defaults", cfg: Config{Peers: []Peer{{}}}, redundant: 8, hsTimeout: 10 * time.Second, every: time.Second},
		{name: "no peers: started", cfg: Config{}, started: true, redundant: 8, hsTimeout: 10 * time.Second, every: time.Second},
		{name: "set", cfg: Config{Peers: []Peer{{}}, RedundantFrames: 3, HandshakeTimeout: time.Second, QualityInterval: 500 * time.Millisecond},
			redundant: 3, hsTimeout: time.Second, every: 500 * time.Millisecond},
		{name: "lockstep: every unacknowledged frame", cfg: Config{Peers: []Peer{{}}, Mode: LockstepMode}, redundant: -1, hsTimeout: 10 * time.Second, every: time.Second},
		{name: "lockstep, set", cfg: Config{Peers: []Peer{{}}, Mode: LockstepMode, RedundantFrames: 4}, redundant: 4, hsTimeout: 10 * time.Second, every: time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newProtocol(tc.cfg, now)
			assert.Equal(t, tc.started, p.started)
			assert.Equal(t, tc.redundant, p.redundant)
			assert.Equal(t, tc.hsTimeout, p.hsTimeout)
			assert.Equal(t, tc.every, p.qualityEvery)
			assert.Equal(t, 750*time.Millisecond, p.interruptAfter)
			assert.Equal(t, 5*time.Second, p.disconnectAfter)
			assert.Equal(t, now, p.hsStart)
			assert.Equal(t, now, p.startedAt)
		})
	}
}
