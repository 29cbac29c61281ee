package netplay

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rtc"
	rdv "github.com/rewindgg/rewind/rtc/lobby"
)

// full is a full match of seats seats, as the rendezvous hands it out
// (no ICE servers: host candidates only).
func full(seats int) rdv.Match {
	return rdv.Match{Code: "TEST42", Seats: seats, Taken: seats, Full: true, SessionID: 0x5eed_1d,
		Secret: []byte("thirty-two bytes of match secret")}
}

func TestPlan(t *testing.T) {
	m := full(3)
	p, err := Plan(m, 1, 1, play.Settings{Frames: 900, Rules: play.Rules{RoundFrames: 600, Target: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Machine != 1 || p.Machines != 3 || p.Players != 3 || p.Frames != 900 || p.SessionID != m.SessionID {
		t.Errorf("plan %+v", p)
	}
	if !slices.Equal(p.Local(), []rollback.PlayerID{1}) {
		t.Errorf("local players %v, want [1]", p.Local())
	}
	if peers := p.Peers(); len(peers) != 2 || !slices.Equal(peers[0], []rollback.PlayerID{0}) || !slices.Equal(peers[1], []rollback.PlayerID{2}) {
		t.Errorf("peers %v, want [[0] [2]]", peers)
	}
	cfg := Config(p, nil)
	if cfg.Humans != 1 || cfg.Players != 3 || cfg.Seed != Seed(m.SessionID) || string(cfg.Secret) != string(m.Secret) ||
		cfg.Rules != (play.Rules{RoundFrames: 600, Target: 5}) || cfg.Frames != 900 {
		t.Errorf("config %+v", cfg)
	}
	p0, _ := Plan(m, 0, 0, play.Settings{Frames: 900})
	if p0.Seed != p.Seed || Config(p0, nil).Humans != 0 {
		t.Errorf("seat 0's seed %x and humans %d; seat 1's seed %x", p0.Seed, Config(p0, nil).Humans, p.Seed)
	}
	if Seed(1) == Seed(2) || Seed(1) == 1 {
		t.Errorf("seeds: %x %x", Seed(1), Seed(2))
	}
	bad := m
	bad.Full, bad.SessionID = false, 0
	for name, f := range map[string]func() error{
		"not full":   func() error { _, err := Plan(bad, 0, 1, play.Settings{}); return err },
		"seat 3":     func() error { _, err := Plan(m, 3, 1, play.Settings{}); return err },
		"two humans": func() error { _, err := Plan(m, 0, 2, play.Settings{}); return err },
		"relay without TURN": func() error {
			_, err := Dial(context.Background(), m, 0, rtc.MemorySignalers(3)[0], true, true)
			return err
		},
	} {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestMatchOverWebRTC: two machines of a rendezvous match connect over
// WebRTC data channels on loopback (signaling in memory, where the
// rendezvous relays it) and play the demo's Match with bots until both
// are done: the authenticated handshake passes with the match's session
// id and secret, and both end on the same state at the same frame.
func TestMatchOverWebRTC(t *testing.T) {
	const frames = 300
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := full(2)
	sigs := rtc.MemorySignalers(2)
	type dialed struct {
		tr  *rtc.Transport
		err error
	}
	ch := make(chan dialed, 2)
	trs := make([]*rtc.Transport, 2)
	for seat := range 2 {
		go func() {
			tr, err := Dial(ctx, m, seat, sigs[seat], false, true)
			if err == nil {
				trs[seat] = tr
			}
			ch <- dialed{tr, err}
		}()
	}
	var errs []error
	for range 2 {
		errs = append(errs, (<-ch).err)
	}
	for _, tr := range trs {
		if tr != nil {
			t.Cleanup(func() { tr.Close() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var ms [2]*play.Match
	for seat := range 2 {
		p, err := Plan(m, seat, 0, play.Settings{Frames: frames})
		if err != nil {
			t.Fatal(err)
		}
		if ms[seat], err = play.New(Config(p, trs[seat])); err != nil {
			t.Fatal(err)
		}
	}
	// Both machines in one loop, faster than 60 Hz (the sessions keep
	// each other in step); the deadline is ctx's.
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !ms[0].Done() || !ms[1].Done() {
		select {
		case <-ctx.Done():
			t.Fatalf("not done: frames %d and %d (confirmed %d and %d)", ms[0].Frame(), ms[1].Frame(),
				ms[0].Session().ConfirmedFrame(), ms[1].Session().ConfirmedFrame())
		case <-tick.C:
		}
		for seat, mt := range ms {
			if err := mt.Tick(nil); err != nil {
				t.Fatalf("machine %d: %v", seat, err)
			}
		}
	}
	for seat, mt := range ms {
		if mt.Frame() != frames {
			t.Errorf("machine %d stopped at frame %d, want %d", seat, mt.Frame(), frames)
		}
		if err := mt.Close(); err != nil {
			t.Errorf("machine %d: close: %v", seat, err)
		}
	}
	if h0, h1 := ms[0].Hash(), ms[1].Hash(); h0 != h1 {
		t.Fatalf("hashes differ: %016x and %016x", h0, h1)
	}
	if w := ms[0].World(); w.Players != 2 {
		t.Errorf("%d ships, want 2", w.Players)
	}
	for seat, tr := range trs {
		if st := tr.Stats(); st.Oversized+st.Malformed > 0 {
			t.Errorf("machine %d's transport: %+v", seat, st)
		}
	}
	t.Logf("frame %d, hash %016x, rollbacks %d and %d, routes %q", ms[0].Frame(), ms[0].Hash(),
		ms[0].Session().Stats().Rollbacks, ms[1].Session().Stats().Rollbacks, trs[0].Route(0))
}
