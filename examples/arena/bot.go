package arena

import (
	"math/rand/v2"

	"github.com/rewindgg/rewind/rollback"
)

// Bot produces human-like input for one ship: it holds an input for a
// while (a quarter of a second on average), then changes it: the stick
// drifts, the thrust varies, and it fires in bursts. Its randomness is its
// own, seeded, so the same seed plays the same match.
type Bot struct {
	rng  *rand.Rand
	cur  rollback.Input
	hold int
}

// NewBot returns a bot seeded with seed.
func NewBot(seed uint64) *Bot {
	return &Bot{rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

// Next returns the bot's input for the next frame.
func (b *Bot) Next() rollback.Input {
	if b.hold > 0 {
		b.hold--
		return b.cur
	}
	_, angle, _ := Unpack(b.cur)
	angle += uint8(b.rng.IntN(81) - 40)
	var mag uint8
	switch b.rng.IntN(4) {
	case 0:
		mag = 0
	case 1:
		mag = uint8(128 + b.rng.IntN(128))
	default:
		mag = 255
	}
	var fire uint8
	if b.rng.IntN(3) == 0 {
		fire = uint8(1 + b.rng.IntN(4))
	}
	b.cur = Pack(fire, angle, mag)
	b.hold = 2 + b.rng.IntN(28)
	return b.cur
}
