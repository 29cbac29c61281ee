// Package netplay is what the arena demo's two ways of meeting share, and
// the rendezvous way's pure parts: a lobby.Plan becomes a play.Config
// ([Config]) whether it came from the UDP lobby or from the rendezvous
// server; a rendezvous match (package rtc/lobby) becomes a Plan ([Plan],
// with the game's seed derived from the session id, [Seed]) and an
// rtc.Transport ([Dial]); and the browser build's options come from its
// page's query string ([ParseQuery]). It does not import Ebitengine, so
// it is tested without a display, and it builds natively and for
// js/wasm.
package netplay

import (
	"context"
	"fmt"
	"strings"

	"github.com/rewindgg/rewind/cmd/arena/internal/lobby"
	"github.com/rewindgg/rewind/cmd/arena/internal/play"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rtc"
	rdv "github.com/rewindgg/rewind/rtc/lobby"
)

// Config is a machine's play.Config for plan over tr: its players, its
// humans (plan.Humans[plan.Machine]), the peers' players in machine
// order (the order of both udp.New's and rtc.Dial's peers), and the
// values every machine shares.
func Config(plan lobby.Plan, tr rollback.Transport) play.Config {
	return play.Config{Players: plan.Players, Local: plan.Local(), Humans: plan.Humans[plan.Machine], Peers: plan.Peers(),
		Transport: tr, SessionID: plan.SessionID, Secret: plan.Secret, Seed: plan.Seed, Frames: plan.Frames,
		Rules: play.Rules{RoundFrames: plan.RoundFrames, Target: plan.Target}}
}

// Settings are plan's match settings.
func Settings(plan lobby.Plan) play.Settings {
	return play.Settings{Frames: plan.Frames, Rules: play.Rules{RoundFrames: plan.RoundFrames, Target: plan.Target}}
}

// Seed is the game's seed of the match with session id id: every machine
// derives the same one (the rendezvous hands out the session id and the
// secret, not a seed). It is SplitMix64's output for id, so that matches
// with close ids still start apart.
func Seed(id uint64) uint64 {
	z := id + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Plan is seat's plan of the full match m: every seat is one machine
// flying one ship (player p is seat p), with humans people at this one
// (0 or 1) and the settings st (the creator's: the rendezvous does not
// carry them, SendSettings and ReceiveSettings do). Plan.Addrs is empty (the transport
// finds its own routes), and Humans holds this machine's count only (the
// others' are theirs to know; nothing here needs them).
func Plan(m rdv.Match, seat, humans int, st play.Settings) (lobby.Plan, error) {
	switch {
	case !m.Full || m.SessionID == 0 || len(m.Secret) == 0:
		return lobby.Plan{}, fmt.Errorf("netplay: match %s is not ready (full %v)", m.Code, m.Full)
	case m.Seats < rdv.MinSeats || m.Seats > rdv.MaxSeats:
		return lobby.Plan{}, fmt.Errorf("netplay: match %s has %d seats", m.Code, m.Seats)
	case seat < 0 || seat >= m.Seats:
		return lobby.Plan{}, fmt.Errorf("netplay: seat %d of a %d-seat match", seat, m.Seats)
	case humans < 0 || humans > 1:
		return lobby.Plan{}, fmt.Errorf("netplay: %d humans at a machine with one ship (want 0 or 1)", humans)
	case st.Frames < 0:
		return lobby.Plan{}, fmt.Errorf("netplay: %d frames", st.Frames)
	case st.Rules.Check() != nil:
		return lobby.Plan{}, fmt.Errorf("netplay: %w", st.Rules.Check())
	}
	p := lobby.Plan{Machine: seat, Machines: m.Seats, Players: m.Seats, Humans: make([]int, m.Seats),
		SessionID: m.SessionID, Secret: m.Secret, Seed: Seed(m.SessionID), Frames: st.Frames,
		RoundFrames: st.RoundFrames, Target: st.Target}
	for s := range m.Seats {
		p.Owners = append(p.Owners, []rollback.PlayerID{rollback.PlayerID(s)})
	}
	p.Humans[seat] = humans
	return p, nil
}

// Dial connects seat of the full match m to every other seat over WebRTC,
// signaling through sig (the seat's lobby client, or a MemorySignaler),
// with the match's ICE servers. relay and loopback are rtc.Config's
// Relay and Loopback; relay without a TURN server among the ICE servers
// is an error, not a Dial that can only time out.
func Dial(ctx context.Context, m rdv.Match, seat int, sig rtc.Signaler, relay, loopback bool) (*rtc.Transport, error) {
	c := rtc.Config{Machine: seat, Machines: m.Seats, ICEServers: m.ICEServers, Relay: relay, Loopback: loopback}
	turn := false
	for _, s := range m.ICEServers {
		for _, u := range s.URLs {
			turn = turn || strings.HasPrefix(u, "turn:") || strings.HasPrefix(u, "turns:")
		}
	}
	if relay && !turn {
		return nil, fmt.Errorf("netplay: relay only, but the rendezvous offers no TURN server")
	}
	return rtc.Dial(ctx, c, sig)
}
