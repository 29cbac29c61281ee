package rollback

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// TestHandlers: the receive table has a handler for each kind the
// session's features take, and none for the others: checksums and
// desync reports only with checksums, keys and attestations only with
// statements, nothing for the kinds a spectator or a handshake uses.
func TestHandlers(t *testing.T) {
	always := []wire.Kind{wire.KindInput, wire.KindQuality, wire.KindQualityReply, wire.KindReady, wire.KindStart,
		wire.KindGo, wire.KindDisconnect, wire.KindJoin}
	never := []wire.Kind{0, wire.KindHandshake, wire.KindWatch, wire.KindSnap, wire.KindJoin + 1, 255}
	for _, tc := range []struct {
		name       string
		sums, stmt bool
	}{{"bare", false, false}, {"checksums", true, false}, {"statements", false, true}, {"both", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Session{}
			if tc.sums {
				s.sums = &checksums{}
			}
			if tc.stmt {
				s.stmts = &statements{}
			}
			var h handlers
			h.register(s)
			for _, k := range always {
				assert.NotNil(t, h.of(k), "kind %d", k)
			}
			for _, k := range never {
				assert.Nil(t, h.of(k), "kind %d", k)
			}
			for _, k := range []wire.Kind{wire.KindChecksum, wire.KindState} {
				assert.Equal(t, tc.sums, h.of(k) != nil, "kind %d with checksums %v", k, tc.sums)
			}
			for _, k := range []wire.Kind{wire.KindKeys, wire.KindAttest} {
				assert.Equal(t, tc.stmt, h.of(k) != nil, "kind %d with statements %v", k, tc.stmt)
			}
		})
	}
}

// TestFeed: the feed holds the latest feedFrames frames of every
// player's final input and the disconnected mask, as a ring.
func TestFeed(t *testing.T) {
	f := newFeed(2)
	f.reset(10)
	assert.False(t, f.has(10), "empty")
	for i := range feedFrames + 5 {
		in := []PlayerInput{{Input: Input(i)}, {Input: Input(i + 1), Status: Disconnected}}
		if i%2 == 0 {
			in[1].Status = Confirmed
		}
		f.add(in, 0)
	}
	assert.Equal(t, Frame(10+feedFrames+5), f.high)
	assert.Equal(t, f.high-feedFrames, f.low, "the oldest frames went")
	assert.False(t, f.has(f.low-1))
	assert.True(t, f.has(f.low))
	assert.False(t, f.has(f.high))
	got := make([]PlayerInput, 2)
	last := f.high - 1
	f.inputs(last, got)
	i := int(last - 10) // even: player 1 confirmed; the frame before, disconnected
	assert.Equal(t, []PlayerInput{{Input: Input(i), Status: Confirmed}, {Input: Input(i + 1), Status: Confirmed}}, got)
	assert.Equal(t, uint8(0), f.mask(last))
	assert.Equal(t, uint8(2), f.mask(last-1))
	f.inputs(last-1, got)
	assert.Equal(t, []PlayerInput{{Input: Input(i - 1), Status: Confirmed}, {Input: Input(i), Status: Disconnected}}, got)
	assert.Equal(t, Input(i+1), f.input(last, 1))
	f.addRaw([]uint64{7, 8}, 1, 0)
	f.inputs(f.high-1, got)
	assert.Equal(t, []PlayerInput{{Input: 7, Status: Disconnected}, {Input: 8, Status: Confirmed}}, got)
	assert.True(t, f.ripe(f.high-1, 0, time.Hour), "an untimed feed has every frame ripe")
}

// TestFeedTimed: a timed feed notes when each frame came, and a frame is
// ripe once the delay has passed since.
func TestFeedTimed(t *testing.T) {
	f := newFeed(1)
	f.timed()
	for i := range 3 {
		f.add([]PlayerInput{{}}, time.Duration(i)*time.Second)
	}
	f.addRaw([]uint64{0}, 0, 5*time.Second)
	for _, tc := range []struct {
		f    Frame
		now  time.Duration
		ripe bool
	}{{0, 2 * time.Second, true}, {1, 2 * time.Second, false}, {1, 3 * time.Second, true}, {3, 6 * time.Second, false}, {3, 7 * time.Second, true}} {
		assert.Equal(t, tc.ripe, f.ripe(tc.f, tc.now, 2*time.Second), "frame %d at %v", tc.f, tc.now)
	}
}
