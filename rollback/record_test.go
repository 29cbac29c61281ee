package rollback

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// finalRecorder is a Recorder that keeps the frames it is given and player
// 1's input and status in each.
type finalRecorder struct {
	frames []Frame
	in     []PlayerInput
}

func (r *finalRecorder) Begin(MatchInfo) {}
func (r *finalRecorder) Confirmed(f Frame, in []PlayerInput) {
	r.frames = append(r.frames, f)
	r.in = append(r.in, in[1])
}
func (r *finalRecorder) Checksum(Frame, uint64) {}

// frameRange is the frames [from, to).
func frameRange(from, to Frame) []Frame {
	var fs []Frame
	for f := from; f < to; f++ {
		fs = append(fs, f)
	}
	return fs
}

func TestRecordingRecord(t *testing.T) {
	for _, tc := range []struct {
		name     string
		frame    Frame // the next frame to simulate
		next     Frame // every player's next input: the anchor
		recorded Frame // given before
		rec, aud bool
		want     Frame // recorded after
		given    []Frame
	}{
		{"no Recorder, log or spectators: nothing", 50, 40, 0, false, false, 0, nil},
		{"up to the anchor", 50, 40, 0, true, false, 40, frameRange(0, 40)},
		{"up to the live frame, before an anchor ahead of it", 30, 40, 0, true, false, 30, frameRange(0, 30)},
		{"from the first not given", 50, 40, 35, true, false, 40, frameRange(35, 40)},
		{"nothing given twice", 50, 40, 50, true, false, 50, nil},
		{"the spectators' feed alone", 50, 40, 0, false, true, 40, nil},
		{"both", 50, 40, 10, true, true, 40, frameRange(10, 40)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := horizonFixture(t, 1, tc.frame, tc.next)
			h.out.recorded = tc.recorded
			rec := &finalRecorder{}
			if tc.rec {
				h.out.rec = rec
			}
			if tc.aud {
				f := newFeed(2)
				h.aud = &audience{feed: &f}
				h.aud.feed.reset(tc.recorded)
			}
			assert.Equal(t, tc.rec || tc.aud, h.out.feeding(h.aud))
			h.out.record(0, h)
			assert.Equal(t, tc.want, h.out.recorded)
			assert.Equal(t, tc.given, rec.frames)
			if tc.aud {
				assert.Equal(t, tc.want, h.aud.feed.high, "the feed holds every frame given")
			}
		})
	}
	// A player gone gives the input its stand-in played, Disconnected.
	h := horizonFixture(t, 1, 50, 40)
	h.inputs.disconnect(1, 20)
	h.inputs.used[h.inputs.cell(25, 1)] = 7
	rec := &finalRecorder{}
	h.out.rec = rec
	h.out.record(0, h)
	assert.Equal(t, PlayerInput{Input: 7, Status: Disconnected}, rec.in[25])
	assert.Equal(t, Confirmed, rec.in[19].Status)
}
