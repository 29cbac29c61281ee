package rollback_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/internal/match"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// fullState fills a 1 MiB arena: the arena's 16-byte header, one 8-byte
// allocation record, the counters and a blob up to the last byte, so that
// every copy of the state the session keeps is a whole arena.
type fullState struct {
	Counters [8]uint64
	Blob     [1<<20 - 88]byte
}

// fullGame steps a fullState: it folds every input into a counter and
// writes a byte of the blob, a different 4 KiB page each frame.
type fullGame struct {
	a *savestate.Arena
	h savestate.Handle[fullState]
	// corruptAt, when positive, flips a bit of Blob[12345] every time
	// frame corruptAt is simulated: a desync.
	corruptAt rollback.Frame
}

func newFullGame(t testing.TB) *fullGame {
	t.Helper()
	a, err := savestate.New(1 << 20)
	require.NoError(t, err)
	h, err := savestate.Alloc[fullState](a)
	require.NoError(t, err)
	require.Equal(t, 1<<20, a.Used(), "the state fills the arena")
	return &fullGame{a: a, h: h}
}

func (g *fullGame) Step(f rollback.Frame, in []rollback.PlayerInput) {
	st := g.h.Get(g.a)
	for i, p := range in {
		st.Counters[i] = st.Counters[i]*0x9e3779b97f4a7c15 + uint64(p.Input) + uint64(f)
	}
	blob := unsafe.Slice((*byte)(unsafe.Pointer(&st.Blob)), len(st.Blob))
	blob[int(f)*4099%len(blob)] ^= byte(st.Counters[0])
	if f == g.corruptAt && f > 0 {
		st.Blob[12345] ^= 0x10
	}
}

// fullPair is two machines of one player each, each with a fullGame,
// checksumming every `every` frames.
type fullPair struct {
	advance func(time.Duration) // the network's clock
	games   [2]*fullGame
	ss      [2]*rollback.Session
	tick    int
}

// newFullPair makes the machines of a fullPair over netsim with profile p.
func newFullPair(t testing.TB, p netsim.Profile, every int) *fullPair {
	t.Helper()
	nw, err := netsim.New(2, 7, p)
	require.NoError(t, err)
	x := &fullPair{advance: nw.Advance}
	x.make(t, [2]rollback.Transport{nw.Endpoint(0), nw.Endpoint(1)}, nw.Now, every)
	return x
}

// make makes the machines over transports tr.
func (x *fullPair) make(t testing.TB, tr [2]rollback.Transport, clock func() time.Duration, every int) {
	t.Helper()
	for i := range x.ss {
		x.games[i] = newFullGame(t)
		var err error
		x.ss[i], err = rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{rollback.PlayerID(1 - i)}}},
			Layout: rollback.Layout{4}, State: x.games[i].a, Game: x.games[i], Transport: tr[i],
			Clock: clock, Rand: match.SeededRand(1, i), SessionID: 9, ChecksumEvery: every})
		require.NoError(t, err)
	}
}

// play plays n ticks: each machine's input changes every third frame, so
// that the other one mispredicts and rolls back.
func (x *fullPair) play(t testing.TB, n int) {
	for range n {
		for i, s := range x.ss {
			if _, err := s.AddLocalInput(rollback.PlayerID(i), rollback.Input((x.tick/3+i)%16)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Advance(); err != nil {
				t.Fatal(err)
			}
		}
		x.advance(match.Tick)
		x.tick++
	}
}

// heapInUse returns the live heap after two full collections (the second
// frees what sync.Pools kept through the first).
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// fixedLink carries the datagrams of two machines with a fixed delay and
// no loss, in memory allocated when it is made: the heap it holds does not
// grow with the traffic (netsim's queues do), so that a memory test
// measures the sessions alone; and, with no delay, nothing but a copy of
// each datagram, so that a benchmark measures the sessions' own cost
// (BenchmarkAdvance/steady-1KiB-plain). A queue emptied starts again at
// its first buffer: one datagram at a time touches one buffer.
type fixedLink struct {
	now, delay time.Duration
	q          [2]linkQueue // q[i]: the datagrams on their way to machine i
}

type linkQueue struct {
	at        [512]time.Duration
	n         [512]int
	buf       [512][1200]byte
	head, len int
}

func (l *fixedLink) Now() time.Duration      { return l.now }
func (l *fixedLink) Advance(d time.Duration) { l.now += d }

// end returns machine i's end of the link (its one peer is index 0).
func (l *fixedLink) end(i int) rollback.Transport { return &linkEnd{l, i} }

type linkEnd struct {
	l  *fixedLink
	me int
}

func (e *linkEnd) Send(_ int, b []byte) error {
	q := &e.l.q[1-e.me]
	if q.len == len(q.at) || len(b) > len(q.buf[0]) {
		return errors.New("fixedLink: full")
	}
	i := (q.head + q.len) % len(q.at)
	q.at[i], q.n[i] = e.l.now+e.l.delay, copy(q.buf[i][:], b)
	q.len++
	return nil
}

func (e *linkEnd) Receive(buf []byte) (n, peer int, ok bool) {
	q := &e.l.q[e.me]
	if q.len == 0 || q.at[q.head] > e.l.now {
		return 0, 0, false
	}
	n = copy(buf, q.buf[q.head][:q.n[q.head]])
	q.head, q.len = (q.head+1)%len(q.at), q.len-1
	if q.len == 0 {
		q.head = 0
	}
	return n, 0, true
}

// sessionHeap returns the heap that each of the two sessions of a match
// of n ticks over a fixedLink with this delay holds at its end,
// checksumming every `every` frames: their arenas, and everything they
// keep.
func sessionHeap(t *testing.T, delay time.Duration, every, n int) int64 {
	t.Helper()
	// What the test itself makes is made before the first measure: the
	// link, and the machines' games (fullGame's few bytes, not its arena).
	link := &fixedLink{delay: delay}
	x := &fullPair{advance: link.Advance}
	tr := [2]rollback.Transport{link.end(0), link.end(1)}
	before := heapInUse()
	x.make(t, tr, link.Now, every)
	x.play(t, n)
	after := heapInUse()
	for i, s := range x.ss {
		st := s.Stats()
		require.Greater(t, st.Frame, rollback.Frame(n-300), "machine %d", i)
		require.Positive(t, st.Rollbacks, "machine %d", i)
	}
	runtime.KeepAlive(x)
	runtime.KeepAlive(link)
	return (int64(after) - int64(before)) / 2
}

// TestCheckpointMemory: a session with a 1 MiB arena (3 MiB: the live
// region and two snapshots) that the game fills holds at most 4 MiB + 64
// KiB in all (the input ring of 512 frames holds rows of the match's
// players, not of MaxPlayers: 4,139 KiB measured with 2), checksumming
// every 10 frames, after a match of 900 frames
// with rollbacks: 1 ms away, where the peer's checksum of a frame comes
// before the next checksum frame is simulated; and 300 ms away, where it
// comes several checksum frames later. Before issue 21 the checkpoints
// were 8 more copies of the arena: 11,599,856 bytes per session.
// Reference: issue 21, "Done when".
func TestCheckpointMemory(t *testing.T) {
	const limit = 4<<20 + 64<<10
	// The first match of the process also makes what the packages make
	// once (the handshake's ciphers' tables, type caches): not counted.
	warm := &fixedLink{delay: time.Millisecond}
	w := &fullPair{advance: warm.Advance}
	w.make(t, [2]rollback.Transport{warm.end(0), warm.end(1)}, warm.Now, 10)
	w.play(t, 100)
	for _, delay := range []time.Duration{time.Millisecond, 300 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			per := sessionHeap(t, delay, 10, 900)
			off := sessionHeap(t, delay, -1, 900)
			t.Logf("%v: %d KiB per session (limit %d KiB); %d KiB without checksums (%d and %d bytes)", delay, per>>10, limit>>10, off>>10, per, off)
			assert.LessOrEqual(t, per, int64(limit), fmt.Sprintf("%d KiB per session", per>>10))
		})
	}
}

// TestCheckpointDesyncFullArena: with room for one state, a desync in a
// state that fills the arena is still explained: the report names the
// first differing field and both values, from the states exchanged.
func TestCheckpointDesyncFullArena(t *testing.T) {
	link := &fixedLink{delay: time.Millisecond}
	x := &fullPair{advance: link.Advance}
	x.make(t, [2]rollback.Transport{link.end(0), link.end(1)}, link.Now, 10)
	x.games[1].corruptAt = 300
	var de *desync.Error
	reported := false
	for tick := 0; tick < 900 && !reported; tick++ {
		for i, s := range x.ss {
			if _, err := s.AddLocalInput(rollback.PlayerID(i), rollback.Input((tick/3+i)%16)); err != nil && !errors.As(err, &de) {
				t.Fatal(err)
			}
			r, err := s.Advance()
			if err != nil && !errors.As(err, &de) {
				t.Fatal(err)
			}
			for _, e := range r.Events {
				reported = reported || e.Kind == rollback.EventDesyncReport
			}
		}
		link.Advance(match.Tick)
	}
	require.NotNil(t, de, "the desync was detected")
	require.True(t, reported, "and the states were exchanged")
	assert.Equal(t, int32(310), de.Frame, "the first checksum frame after the corruption")
	assert.Regexp(t, `^rollback_test\.fullState\.Blob\[12345\]: \d+ vs \d+$`, de.Field)
}

// TestCheckpointsDoNotAllocate: once the one buffer is made, moving it from
// checkpoint to checkpoint, and hashing the states it cannot hold,
// allocates nothing: 300 ms away, checksumming every 10 frames, with
// rollbacks.
func TestCheckpointsDoNotAllocate(t *testing.T) {
	link := &fixedLink{delay: 300 * time.Millisecond}
	x := &fullPair{advance: link.Advance}
	x.make(t, [2]rollback.Transport{link.end(0), link.end(1)}, link.Now, 10)
	x.play(t, 600)
	before := x.ss[0].Stats()
	allocs := testing.AllocsPerRun(1, func() { x.play(t, 300) })
	after := x.ss[0].Stats()
	require.Greater(t, after.Frame-before.Frame, rollback.Frame(250))
	require.Greater(t, after.Rollbacks, before.Rollbacks)
	assert.Zero(t, allocs)
}

// checksumDropper is a Transport that drops the first n datagrams of kind
// Checksum it is asked to send once armed.
type checksumDropper struct {
	rollback.Transport
	armed   func() bool
	n       int
	dropped int
}

func (d *checksumDropper) Send(peer int, b []byte) error {
	if len(b) > 0 && wire.Kind(b[0]>>4) == wire.KindChecksum && d.dropped < d.n && d.armed() {
		d.dropped++
		return nil
	}
	return d.Transport.Send(peer, b)
}

// TestDesyncReportArrives: when every copy of one machine's checksum of the
// first desynced frame is lost, the other machine still learns of the
// desync, and both name the field. It failed for two reasons: the machine
// that detected the desync (and stopped) resent nothing, and the other,
// stalled for its inputs, compared no checksums on its stalled ticks; it
// cut the first after the disconnect timeout and played on alone.
func TestDesyncReportArrives(t *testing.T) {
	link := &fixedLink{delay: time.Millisecond}
	x := &fullPair{advance: link.Advance}
	drop := &checksumDropper{Transport: link.end(0), n: 3}
	x.make(t, [2]rollback.Transport{drop, link.end(1)}, link.Now, 10)
	drop.armed = func() bool { return x.ss[0].Frame() >= 305 }
	x.games[1].corruptAt = 300
	var errs [2]*desync.Error
	var reported [2]bool
	for tick := 0; tick < 900 && !(reported[0] && reported[1]); tick++ {
		for i, s := range x.ss {
			var de *desync.Error
			if _, err := s.AddLocalInput(rollback.PlayerID(i), rollback.Input((tick/3+i)%16)); err != nil && !errors.As(err, &de) {
				t.Fatal(err)
			}
			r, err := s.Advance()
			if err != nil && !errors.As(err, &de) {
				t.Fatal(err)
			}
			if de != nil {
				errs[i] = de
			}
			for _, e := range r.Events {
				reported[i] = reported[i] || e.Kind == rollback.EventDesyncReport
			}
		}
		link.Advance(match.Tick)
	}
	require.Equal(t, 3, drop.dropped, "machine 0's three copies of its checksum were lost")
	for i := range errs {
		require.NotNil(t, errs[i], "machine %d detected the desync", i)
		assert.True(t, reported[i], "machine %d named the field", i)
		assert.Equal(t, int32(310), errs[i].Frame, "machine %d: the first checksum frame after the corruption", i)
		assert.Regexp(t, `^rollback_test\.fullState\.Blob\[12345\]: \d+ vs \d+$`, errs[i].Field, "machine %d", i)
	}
	st, _ := x.ss[1].PeerStats(0)
	assert.Zero(t, st.Suspected[rollback.SuspectWithheld], "machine 0 is not read as withholding its inputs")
}
