package rollback

import "time"

// feedFrames is how many of the latest final frames a feed holds: a
// spectator may fall this far behind what its source has (34 s at 60 Hz)
// and still catch up; one further behind is dropped and must join again.
const feedFrames = 2048

// feed holds the final inputs of the latest frames, every player's, with
// each player's status: what a machine serves its spectators (a player
// machine appends each frame as it becomes final; a spectator each frame
// as it arrives, and plays them from here). It is a ring: frames [low,
// high) are held.
type feed struct {
	players   int
	in        []Input         // frame f's inputs at slot(f)*players
	disc      []uint8         // frame f's Disconnected players, one bit each
	at        []time.Duration // when frame f was added, at slot(f); nil unless timed
	low, high Frame
}

func newFeed(players int) feed {
	return feed{players: players, in: make([]Input, feedFrames*players), disc: make([]uint8, feedFrames)}
}

func (l *feed) slot(f Frame) int { return int(uint32(f) % feedFrames) }

// timed makes the feed note when each frame is added, for a stream delay.
func (l *feed) timed() { l.at = make([]time.Duration, feedFrames) }

// ripe reports whether frame f (held) was added at least d before now, or
// the feed is not timed.
func (l *feed) ripe(f Frame, now, d time.Duration) bool {
	return l.at == nil || now-l.at[l.slot(f)] >= d
}

// reset empties the feed: its next frame is f.
func (l *feed) reset(f Frame) { l.low, l.high = f, f }

// has reports whether frame f is held.
func (l *feed) has(f Frame) bool { return f >= l.low && f < l.high }

// add appends frame l.high's inputs, at now: in has one entry per player.
func (l *feed) add(in []PlayerInput, now time.Duration) {
	k := l.slot(l.high)
	if l.at != nil {
		l.at[k] = now
	}
	var mask uint8
	for p, pi := range in[:l.players] {
		l.in[k*l.players+p] = pi.Input
		if pi.Status == Disconnected {
			mask |= 1 << p
		}
	}
	l.disc[k] = mask
	l.high++
	l.low = max(l.low, l.high-feedFrames)
}

// addRaw appends frame l.high's inputs from a packet, at now: one per
// player, and the Disconnected players' mask.
func (l *feed) addRaw(in []uint64, mask uint8, now time.Duration) {
	k := l.slot(l.high)
	if l.at != nil {
		l.at[k] = now
	}
	for p := range l.players {
		l.in[k*l.players+p] = Input(in[p])
	}
	l.disc[k] = mask
	l.high++
	l.low = max(l.low, l.high-feedFrames)
}

// inputs fills in with frame f's inputs and statuses (f must be held).
func (l *feed) inputs(f Frame, in []PlayerInput) {
	k := l.slot(f)
	for p := range l.players {
		in[p] = PlayerInput{Input: l.in[k*l.players+p], Status: Confirmed}
		if l.disc[k]&(1<<p) != 0 {
			in[p].Status = Disconnected
		}
	}
}

// mask returns frame f's Disconnected players (f must be held).
func (l *feed) mask(f Frame) uint8 { return l.disc[l.slot(f)] }

// input returns player p's input of frame f (f must be held).
func (l *feed) input(f Frame, p int) Input { return l.in[l.slot(f)*l.players+p] }
