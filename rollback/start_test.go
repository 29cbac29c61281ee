package rollback

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
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
		{name: "set", cfg: Config{Peers: []Peer{{}}, RedundantFrames: 3, Timeouts: Timeouts{Handshake: time.Second}, QualityInterval: 500 * time.Millisecond},
			redundant: 3, hsTimeout: time.Second, every: 500 * time.Millisecond},
		{name: "lockstep: every unacknowledged frame", cfg: Config{Peers: []Peer{{}}, Lockstep: true}, redundant: -1, hsTimeout: 10 * time.Second, every: time.Second},
		{name: "lockstep, set", cfg: Config{Peers: []Peer{{}}, Lockstep: true, RedundantFrames: 4}, redundant: 4, hsTimeout: 10 * time.Second, every: time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newProtocol(tc.cfg.populate(), now)
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

// TestStarterTake: a Ready's row is kept, capped at what our round trips
// allow (lied when capped); the host's Start sets the mesh once, naming a
// lie in the host's own row only; a Start from a machine that is not the
// host, a row of the wrong size, and a message that does not parse are
// invalid; Start and Go mark the peer's Go seen.
func TestStarterTake(t *testing.T) {
	const limit = 2*50_000 + 100_000 // µs: twice our slowest round trip, plus the slack
	encode := func(m wire.Control) []byte {
		b, err := wire.AppendControl(nil, m)
		require.NoError(t, err)
		return b
	}
	for _, tc := range []struct {
		name      string
		from      int
		kind      wire.Kind
		msg       wire.Control
		started   bool
		ok, lied  bool
		row       []uint32 // the peer's row after
		meshKnown bool
		goSeen    bool
	}{
		{name: "a Ready", from: 1, kind: wire.KindReady, msg: &wire.Ready{RTT: []uint32{10, 0, 20}}, ok: true, row: []uint32{10, 0, 20}},
		{name: "a Ready over the limit", from: 1, kind: wire.KindReady, msg: &wire.Ready{RTT: []uint32{10, 0, 1 << 30}}, ok: true, lied: true, row: []uint32{10, 0, limit}},
		{name: "a Ready of the wrong size", from: 1, kind: wire.KindReady, msg: &wire.Ready{RTT: []uint32{10, 0}}},
		{name: "the host's Start", from: 0, kind: wire.KindStart, msg: &wire.Start{Mesh: make([]uint32, 9)}, ok: true, meshKnown: true, goSeen: true},
		{name: "the host's Start, its row a lie", from: 0, kind: wire.KindStart, msg: &wire.Start{Mesh: []uint32{0, 1 << 30, 0, 0, 0, 0, 0, 0, 0}}, ok: true, lied: true, meshKnown: true, goSeen: true},
		{name: "a Start relaying a lie in another's row", from: 0, kind: wire.KindStart, msg: &wire.Start{Mesh: []uint32{0, 0, 0, 1 << 30, 0, 0, 0, 0, 0}}, ok: true, meshKnown: true, goSeen: true},
		{name: "a Start once the match runs", from: 0, kind: wire.KindStart, msg: &wire.Start{Mesh: make([]uint32, 9)}, started: true, ok: true, goSeen: true},
		{name: "a Start from another machine", from: 1, kind: wire.KindStart, msg: &wire.Start{Mesh: make([]uint32, 9)}},
		{name: "a Start of the wrong size", from: 0, kind: wire.KindStart, msg: &wire.Start{Mesh: make([]uint32, 4)}},
		{name: "a Go", from: 1, kind: wire.KindGo, msg: &wire.Go{}, ok: true, goSeen: true},
		{name: "not a start message", from: 1, kind: wire.KindQuality, msg: &wire.Quality{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// We are machine 1; peer 0 (machine 0) hosts; peer 1 is machine 2.
			peers := peerSet{{id: 0}, {id: 2}}
			peers[0].link.rtt, peers[1].link.rtt = 30*time.Millisecond, 50*time.Millisecond
			peers[1].machine = 2
			st := newStarter(false, 1, peers)
			require.Equal(t, 0, st.host)
			var rx startMsgs
			ok, lied := st.take(peers, tc.from, tc.kind, encode(tc.msg), &rx, tc.started)
			assert.Equal(t, tc.ok, ok, "valid")
			assert.Equal(t, tc.lied, lied, "lied")
			assert.Equal(t, tc.row, peers[tc.from].start.row)
			assert.Equal(t, tc.meshKnown, st.meshKnown)
			assert.Equal(t, tc.goSeen, peers[tc.from].start.goSeen)
			if tc.meshKnown {
				for _, row := range st.mesh {
					for _, d := range row {
						assert.LessOrEqual(t, d, time.Duration(limit)*time.Microsecond, "every round trip capped")
					}
				}
			}
		})
	}
}
