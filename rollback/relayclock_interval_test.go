package rollback

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewindgg/rewind/rollback/internal/fakepeer"
	"github.com/rewindgg/rewind/rollback/internal/wire"
	"github.com/rewindgg/rewind/savestate"
)

// clockOn is a transport that says the relay is the match clock and
// never has an item.
type clockOn struct{ Transport }

func (clockOn) ClockOn() bool                           { return true }
func (clockOn) ClockLocal(int32, []uint64)              {}
func (clockOn) ClockNext() (int, int32, []uint64, bool) { return 0, 0, nil, false }
func (clockOn) ClockTaken()                             {}
func (clockOn) ClockSlack() time.Duration               { return time.Second }

// TestRelayClockStatementInterval: with the relay clock the statements
// span wire.StatementFrames, the receipts' interval, whatever the terms
// allow without it (4 players on hell with the clock: 2 matches of 50
// disconnected with 64-frame statements, 1 with 16).
func TestRelayClockStatementInterval(t *testing.T) {
	for _, clock := range []bool{false, true} {
		a, err := savestate.New(1024)
		require.NoError(t, err)
		h, err := savestate.Alloc[[MaxPlayers]int64](a)
		require.NoError(t, err)
		tr := fakepeer.New(100, 101)
		var link Transport = tr
		if clock {
			link = clockOn{tr}
		}
		s, err := NewSession(Config{Players: 3, Local: []PlayerID{0},
			Peers:  []Peer{{Players: []PlayerID{1}}, {Players: []PlayerID{2}}},
			Layout: Layout{3, 8, 8}, State: a, Game: &walkGame{a: a, h: h}, Transport: link, MaxRollback: 8,
			SessionID: 5, Rand: rand.NewChaCha8([32]byte{1}), Clock: tr.Now})
		require.NoError(t, err)
		require.NotNil(t, s.stmts)
		if !clock {
			require.Greater(t, s.stmts.every, Frame(wire.StatementFrames), "the terms allow a longer interval")
			continue
		}
		require.Equal(t, Frame(wire.StatementFrames), s.stmts.every)
	}
}
