package replay_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/examples/arena"
	"github.com/rewindgg/rewind/internal/replaytest"
	"github.com/rewindgg/rewind/replay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/savestate"
)

const arenaSize = 64 << 10

// record plays frames of a local two-player arena match with bots,
// recording it, and returns the replay and the live state's final hash.
func record(t testing.TB, frames, every int, seed uint64) ([]byte, uint64) {
	t.Helper()
	a, err := savestate.New(arenaSize)
	require.NoError(t, err)
	g, err := arena.New(a, 2, seed)
	require.NoError(t, err)
	var file bytes.Buffer
	w := replay.NewWriter(&file, arena.ReplayName, arena.ReplayParams(seed))
	s, err := rollback.NewSession(rollback.Config{Players: 2, Local: []rollback.PlayerID{0, 1}, Layout: arena.Layout,
		State: a, Game: g, Recorder: w, ChecksumEvery: every})
	require.NoError(t, err)
	bots := []*arena.Bot{arena.NewBot(seed), arena.NewBot(seed + 1)}
	for range frames {
		for p, b := range bots {
			queued, err := s.AddLocalInput(rollback.PlayerID(p), b.Next())
			require.NoError(t, err)
			require.True(t, queued)
		}
		_, err := s.Advance()
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return file.Bytes(), xxhash.Sum64(a.Bytes())
}

func TestRoundTrip(t *testing.T) {
	file, final := record(t, 700, 10, 7)
	rp, err := replay.Read(bytes.NewReader(file))
	require.NoError(t, err)
	assert.Equal(t, 700, rp.Frames())
	assert.Equal(t, 2, rp.Players)
	assert.Equal(t, arena.Layout, rp.Layout)
	assert.Equal(t, 10, rp.ChecksumEvery)
	require.Len(t, rp.Checksums, 69) // frames 10 … 690: frame 700 was never simulated
	assert.Equal(t, rollback.Frame(690), rp.Checksums[68].Frame)
	rep, err := arena.VerifyReplay(rp, arenaSize)
	require.NoError(t, err)
	assert.Equal(t, replay.Report{Frames: 700, Checksums: 69, Final: final}, rep)
	t.Logf("700 frames, 2 players: %d bytes", len(file))
}

// A recording whose inputs were changed (but re-hashed, so the file is
// well formed) fails verification at the first checksum after the change.
func TestVerifyMismatch(t *testing.T) {
	file, _ := record(t, 300, 10, 3)
	rp, err := replay.Read(bytes.NewReader(file))
	require.NoError(t, err)
	changed := rewrite(t, rp, func(f rollback.Frame, p rollback.PlayerID, in rollback.Input) rollback.Input {
		if f == 125 && p == 1 {
			in ^= 1 << 3 // player 1's thrust angle on frame 125
		}
		return in
	})
	rp, err = replay.Read(bytes.NewReader(changed))
	require.NoError(t, err)
	assert.NotEqual(t, file, changed)
	_, err = arena.VerifyReplay(rp, arenaSize)
	var me *replay.MismatchError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, rollback.Frame(130), me.Frame)
	assert.Contains(t, err.Error(), "frame 130")
}

// rewrite records rp again, each input passed through change
// (replaytest.Rewrite).
func rewrite(t *testing.T, rp *replay.Replay, change func(rollback.Frame, rollback.PlayerID, rollback.Input) rollback.Input) []byte {
	t.Helper()
	b, err := replaytest.Rewrite(rp, change)
	require.NoError(t, err)
	return b
}

func TestTruncated(t *testing.T) {
	file, _ := record(t, 300, 10, 5)
	for n := range len(file) {
		rp, err := replay.Read(bytes.NewReader(file[:n]))
		require.Error(t, err, "cut at %d", n)
		require.ErrorIs(t, err, replay.ErrFormat, "cut at %d", n)
		if n == 0 {
			continue // the header is missing: nothing to return
		}
		require.ErrorIs(t, err, replay.ErrTruncated, "cut at %d: %v", n, err)
		require.Contains(t, err.Error(), "offset", "cut at %d", n)
		if rp != nil {
			// What was read is a valid prefix: it verifies.
			_, verr := arena.VerifyReplay(rp, arenaSize)
			require.NoError(t, verr, "cut at %d", n)
		}
	}
	_, err := replay.Read(bytes.NewReader(file[:len(file)-1]))
	assert.Regexp(t, `^replay: block 2 at offset \d+: the file ends at offset \d+ inside this record$`, err.Error())
}

// Every single flipped byte is reported as a corrupt file, never read as
// a replay (which would then "desync").
func TestCorrupt(t *testing.T) {
	file, _ := record(t, 250, 10, 9)
	bad := bytes.Clone(file)
	for i := range file {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			copy(bad, file)
			bad[i] ^= x
			_, err := replay.Read(bytes.NewReader(bad))
			require.ErrorIs(t, err, replay.ErrFormat, "byte %d ^ %#x", i, x)
			var fe *replay.FormatError
			require.ErrorAs(t, err, &fe)
			require.LessOrEqual(t, fe.Offset, int64(i+1), "byte %d ^ %#x: %v", i, x, err)
		}
	}
	copy(bad, file)
	bad[len(bad)-1] ^= 1 // the last block's hash
	_, err := replay.Read(bytes.NewReader(bad))
	assert.Regexp(t, `^replay: block 2 at offset \d+: corrupt: its checksum does not match its contents$`, err.Error())
	_, err = replay.Read(bytes.NewReader(append(bytes.Clone(file), 0)))
	assert.ErrorContains(t, err, "1 bytes after the end record")
	_, err = replay.Read(bytes.NewReader([]byte("not a replay at all")))
	assert.ErrorIs(t, err, replay.ErrFormat)
	assert.NotErrorIs(t, err, replay.ErrTruncated)
}

// The writer records disconnections and game checksums as given.
func TestWriterDirect(t *testing.T) {
	var file bytes.Buffer
	w := replay.NewWriter(&file, "test", []byte{1, 2})
	w.Begin(rollback.MatchInfo{Players: 3, Layout: rollback.Layout{4}, SessionID: 99, ChecksumEvery: 100, GameChecksum: true})
	in := make([]rollback.PlayerInput, 3)
	for f := range rollback.Frame(250) {
		for p := range in {
			in[p] = rollback.PlayerInput{Input: rollback.Input((int(f) / (p + 1)) % 16), Status: rollback.Confirmed}
		}
		if f >= 130 {
			in[2] = rollback.PlayerInput{Status: rollback.Disconnected}
		}
		w.Confirmed(f, in)
		if f == 199 {
			w.Checksum(200, 0xabc)
		}
	}
	w.Checksum(100, 1) // out of order: the file is still written, Read rejects it
	require.NoError(t, w.Close())
	require.NoError(t, w.Close(), "Close twice")
	_, err := replay.Read(bytes.NewReader(file.Bytes()))
	require.ErrorContains(t, err, "checksum of frame 100 out of place")

	file.Reset()
	w = replay.NewWriter(&file, "test", []byte{1, 2})
	w.Begin(rollback.MatchInfo{Players: 3, Layout: rollback.Layout{4}, SessionID: 99, ChecksumEvery: 100, GameChecksum: true})
	for f := range rollback.Frame(250) {
		for p := range in {
			in[p] = rollback.PlayerInput{Input: rollback.Input((int(f) / (p + 1)) % 16), Status: rollback.Confirmed}
		}
		if f >= 130 {
			in[2] = rollback.PlayerInput{Status: rollback.Disconnected}
		}
		w.Confirmed(f, in)
	}
	w.Checksum(200, 0xabc)
	w.Confirmed(7, in) // out of order: an error, kept
	require.Error(t, w.Close())
	require.ErrorContains(t, w.Err(), "frame 7 out of order")

	rp, err := replay.Read(bytes.NewReader(file.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, replay.Header{Game: "test", Params: []byte{1, 2}, Players: 3, Layout: rollback.Layout{4},
		SessionID: 99, ChecksumEvery: 100, GameChecksum: true}, rp.Header)
	assert.Equal(t, []rollback.Frame{-1, -1, 130}, rp.Left)
	assert.Equal(t, []replay.Checksum{{Frame: 200, Sum: 0xabc}}, rp.Checksums)
	require.Equal(t, 250, rp.Frames())
	assert.Equal(t, rollback.Input(247/2%16), mustInput(t, rp, 247, 1))
	for f := range rollback.Frame(250) {
		for p := range rollback.PlayerID(3) {
			want := rollback.Input((int(f) / (int(p) + 1)) % 16)
			if p == 2 && f >= 130 {
				want = 0
			}
			require.Equal(t, want, mustInput(t, rp, f, p), "frame %d, player %d", f, p)
		}
	}
	for _, q := range [][2]int{{250, 0}, {-1, 0}, {0, 3}, {0, -1}} {
		_, ok := rp.Input(rollback.Frame(q[0]), rollback.PlayerID(q[1]))
		assert.False(t, ok, "frame %d, player %d is out of range", q[0], q[1])
	}
	// Written again from what Read returned, it reads back the same.
	again, err := replay.Read(bytes.NewReader(rewrite(t, rp, func(_ rollback.Frame, _ rollback.PlayerID, in rollback.Input) rollback.Input { return in })))
	require.NoError(t, err)
	assert.Equal(t, rp, again)

	// Verify hands the game Disconnected inputs from frame 130 and needs
	// the game's checksum function.
	a, err := savestate.New(1024)
	require.NoError(t, err)
	var statuses [3][rollback.Disconnected + 1]int
	g := rollback.GameFunc(func(f rollback.Frame, in []rollback.PlayerInput) {
		for p, pi := range in {
			statuses[p][pi.Status]++
		}
	})
	_, err = rp.Verify(a, g, nil)
	require.ErrorContains(t, err, "needs its ChecksumData")
	_, err = rp.Verify(a, g, func(b []byte) []byte { return append(b, 1) })
	var me *replay.MismatchError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, rollback.Frame(200), me.Frame)
	assert.Equal(t, [rollback.Disconnected + 1]int{rollback.Confirmed: 200}, statuses[0])
	assert.Equal(t, [rollback.Disconnected + 1]int{rollback.Confirmed: 130, rollback.Disconnected: 70}, statuses[2])
}

func TestWriterMisuse(t *testing.T) {
	w := replay.NewWriter(&bytes.Buffer{}, "x", nil)
	w.Confirmed(0, nil)
	require.Error(t, w.Close())
	w = replay.NewWriter(&bytes.Buffer{}, "x", nil)
	require.ErrorContains(t, w.Close(), "before the session began")
	w = replay.NewWriter(failing{}, "x", nil)
	w.Begin(rollback.MatchInfo{Players: 1, Layout: rollback.Layout{1}})
	require.ErrorIs(t, w.Close(), errDisk)
}

var errDisk = errors.New("disk full")

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errDisk }

// mustInput is rp.Input for a frame and player that must be in range.
func mustInput(t testing.TB, rp *replay.Replay, f rollback.Frame, p rollback.PlayerID) rollback.Input {
	t.Helper()
	in, ok := rp.Input(f, p)
	require.True(t, ok, "frame %d, player %d out of range", f, p)
	return in
}
