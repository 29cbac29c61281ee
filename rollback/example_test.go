package rollback_test

import (
	"fmt"
	"time"

	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/savestate"
)

// tally is a tiny game: its whole state is each player's running total of
// inputs, kept in the arena.
type tally struct {
	a *savestate.Arena
	h savestate.Handle[[2]int64]
}

func (g *tally) Step(f rollback.Frame, in []rollback.PlayerInput) {
	st := g.h.Get(g.a) // fetch through the handle on every step
	for i, p := range in {
		st[i] += int64(p.Input)
	}
}

// Two machines, one player each, 40 ms apart. Each presses a button on a
// schedule; every press reaches the other machine a few frames late, after
// it has predicted "not pressed", so it rolls back and re-simulates (after
// 100 frames each raises its input lag to 2 to hide most of the latency, so
// the inputs for frames 300 and 301 are already confirmed too). When both
// have confirmed every input, their states agree.
func Example() {
	profile, _ := netsim.ParseProfile("latency=40ms,jitter=5ms")
	network, _ := netsim.New(2, 1, profile)
	var sessions [2]*rollback.Session
	var games [2]*tally
	for i := range sessions {
		a, _ := savestate.New(1024)
		h, _ := savestate.Alloc[[2]int64](a)
		games[i] = &tally{a: a, h: h}
		other := rollback.PlayerID(1 - i)
		var err error
		sessions[i], err = rollback.NewSession(rollback.Config{
			Players: 2, Local: []rollback.PlayerID{rollback.PlayerID(i)},
			Peers:  []rollback.Peer{{Players: []rollback.PlayerID{other}}},
			Layout: rollback.Layout{1}, State: a, Game: games[i], Transport: network.Endpoint(i),
			Clock: network.Now, SessionID: 2026, // the lobby's id for this match
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	for tick := 0; tick < 400; tick++ {
		for i, s := range sessions {
			if s.Frame() == 300 {
				_, _ = s.Idle() // done: keep exchanging until everything is confirmed
				continue
			}
			pressed := rollback.Input(0)
			if (int(s.InputFrame(rollback.PlayerID(i)))/(10+5*i))%2 == 1 {
				pressed = 1
			}
			// After a stall (the handshake, too) the session may have no room
			// for this tick's input: it is then not queued, and dropped.
			if _, err := s.AddLocalInput(rollback.PlayerID(i), pressed); err != nil {
				fmt.Println(err)
				return
			}
			if _, err := s.Advance(); err != nil {
				fmt.Println(err)
				return
			}
		}
		network.Advance(time.Second / 60) // one 60 Hz tick of the simulated network
	}
	for i, s := range sessions {
		st := s.Stats()
		fmt.Printf("machine %d: frame %d, confirmed %d, totals %v, rolled back: %v\n",
			i, st.Frame, st.ConfirmedFrame, *games[i].h.Get(games[i].a), st.Rollbacks > 0)
	}
	// Output:
	// machine 0: frame 300, confirmed 302, totals [150 150], rolled back: true
	// machine 1: frame 300, confirmed 302, totals [150 150], rolled back: true
}
