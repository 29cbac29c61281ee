package rollback

import (
	"testing"

	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/stretchr/testify/assert"
)

// joinFixture is a joiner with three peers (players 1, 2 and 3; we are
// player 0), all keyed, watching through peer 0 a feed whose last frame
// marks the players of gone disconnected.
func joinFixture(gone uint8) (*joiner, peerSet) {
	ps := threePeers()
	for i := range ps {
		ps[i].auth.seal = &wire.Sealer{}
	}
	w := &Spectator{feed: newFeed(4)}
	w.feed.reset(100)
	w.feed.addRaw(make([]uint64, 4), gone, 0)
	return &joiner{watch: w, take: 128}, ps
}

// TestLivePeers: who plays at the take-over frame, so must accept it and
// confirm the state: a majority of the Readies; on a tie or before any,
// the final inputs, or an answer to our handshake without Absent.
func TestLivePeers(t *testing.T) {
	const p1, p2, p3 = 1 << 1, 1 << 2, 1 << 3
	for _, tc := range []struct {
		name    string
		gone    uint8    // players the final inputs show disconnected
		ready   [3]bool  // by peer
		playing [3]uint8 // by peer: the players its Ready says play
		absent  [3]bool  // by peer: said it joins too
		unkeyed int      // a peer that never answered our handshake; -1: none
		live    [3]bool
	}{
		{"no Readies: every keyed peer", 0, [3]bool{}, [3]uint8{}, [3]bool{}, -1, [3]bool{true, true, true}},
		{"no Readies: the source's word that 2 left is not enough", p2, [3]bool{}, [3]uint8{}, [3]bool{}, -1, [3]bool{true, true, true}},
		{"no Readies: gone and unkeyed", p2, [3]bool{}, [3]uint8{}, [3]bool{}, 1, [3]bool{true, false, true}},
		{"no Readies: gone, joining too", p2, [3]bool{}, [3]uint8{}, [3]bool{false, true}, -1, [3]bool{true, false, true}},
		{"no Readies: joining too, but the final inputs show it play", 0, [3]bool{}, [3]uint8{}, [3]bool{false, true}, -1, [3]bool{true, true, true}},
		{"two Readies leave 3 out", 0, [3]bool{true, true}, [3]uint8{p1 | p2, p1 | p2}, [3]bool{}, -1, [3]bool{true, true, false}},
		{"3 says it plays, two say not", 0, [3]bool{true, true, true}, [3]uint8{p1 | p2, p1 | p2, p1 | p2 | p3}, [3]bool{}, -1, [3]bool{true, true, false}},
		{"a tie: it answered our handshake", p3, [3]bool{true, false, true}, [3]uint8{p1 | p2, 0, p1 | p2 | p3}, [3]bool{}, -1, [3]bool{true, true, true}},
		{"a tie: the final inputs", p3, [3]bool{true, false, true}, [3]uint8{p1 | p2, 0, p1 | p2 | p3}, [3]bool{}, 2, [3]bool{true, true, false}},
		// A cut-off liar's Ready came first and says only it plays: one of
		// three is no majority, so every machine that answered is asked
		// (the joiner took over with the liar alone: soak seed 1016).
		{"one Ready of three decides nothing", p2 | p3, [3]bool{true, false, false}, [3]uint8{p1, 0, 0}, [3]bool{}, -1, [3]bool{true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, ps := joinFixture(tc.gone)
			if tc.unkeyed >= 0 {
				ps[tc.unkeyed].auth.seal = nil
			}
			copy(j.ready[:], tc.ready[:])
			copy(j.playing[:], tc.playing[:])
			copy(j.absent[:], tc.absent[:])
			j.livePeers(ps)
			assert.Equal(t, tc.live[:], j.live[:3])
		})
	}
}

// TestNextSource: the first peer after the source, in index order, not
// refuted (and, with playing, that plays and answered our handshake).
func TestNextSource(t *testing.T) {
	for _, tc := range []struct {
		name    string
		src     int
		refuted [3]bool
		live    [3]bool
		playing bool
		next    int
		ok      bool
	}{
		{"the next one", 0, [3]bool{}, [3]bool{true, true, true}, true, 1, true},
		{"round the end", 2, [3]bool{}, [3]bool{true, true, true}, true, 0, true},
		{"past a refuted one", 0, [3]bool{false, true}, [3]bool{true, true, true}, false, 2, true},
		{"past one that does not play", 0, [3]bool{}, [3]bool{true, false, true}, true, 2, true},
		{"one that does not play, when any will do", 0, [3]bool{}, [3]bool{true, false, true}, false, 1, true},
		{"none left", 0, [3]bool{true, true, true}, [3]bool{true, true, true}, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, ps := joinFixture(0)
			j.src = tc.src
			copy(j.refuted[:], tc.refuted[:])
			copy(j.live[:], tc.live[:])
			next, ok := j.nextSource(ps, tc.playing)
			assert.Equal(t, tc.ok, ok)
			if ok {
				assert.Equal(t, tc.next, next)
			}
		})
	}
}
