// Package lobby is the arena demo's meeting before a match: the machines
// that will play it agree, over the very UDP socket each then hands to its
// session's transport (rollback/udp), who plays which ship, the session
// id, the match secret and the game's seed. One machine hosts ([Host]);
// each of the others joins it by address ([Join]). Both return a [Plan],
// from which a machine builds its rollback.Config (Players, Local, Peers,
// SessionID, Secret) and its transport (udp.New(conn, plan.PeerAddrs())).
//
// What it does not protect: the exchange is neither authenticated nor
// encrypted, and it carries the match secret in the clear. Anyone who can
// see the lobby's datagrams learns the secret (and can then pass the
// session's handshake) and can answer a joiner in the host's place, and
// anyone who can reach the host while it waits can take a seat. The
// nonces only keep answers from being mixed up, not forged. That is fine
// on a LAN or on one machine, which is what the demo is for; for the
// internet, the rendezvous server of a later issue replaces this package.
//
// The exchange: a joiner sends a hello (with a random nonce, and how many
// humans sit at it) every 100 ms until the host answers with its plan
// (echoing the nonce) or with "full"; it acknowledges the plan, and
// lingers a moment to acknowledge again any plan the host repeats because
// the ack was lost. The host admits the first Machines-1 joiners that fit,
// then sends each its plan every 100 ms until it acknowledges.
//
// Both read the socket only from the caller's goroutine (timeouts are read
// deadlines), start no goroutine, and clear the read deadline before they
// return, so the socket can go straight to udp.New, whose reader takes it
// over.
package lobby

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/rewindgg/rewind/rollback"
)

// Timing. A joiner's linger is short because the host, once it has every
// ack, starts its session at once: the handshakes the other machines send
// a joiner that still lingers are read and dropped here, and wait for the
// sessions to resend them.
const (
	resend      = 100 * time.Millisecond // a hello or an unacknowledged plan is repeated this often
	ackTimeout  = 3 * time.Second        // the host stops waiting for acks after this
	lingerQuiet = 300 * time.Millisecond // a joiner stops lingering once the host is silent this long
	lingerMax   = time.Second            // and lingers this long at most
)

// ErrFull is Join's error when the host turned it away: every machine's
// seat is taken, or the humans it brings would need more ships than the
// match has left.
var ErrFull = errors.New("lobby: the match is full")

// Plan is what one machine needs for the match: its own index, every
// machine's players and address, and the values every machine shares.
type Plan struct {
	Machine  int // this machine's index: 0 is the host, joiners from 1 in the order they joined
	Machines int // machines in the match, 2 to 8
	Players  int // ships in the match (Config.Players), Machines to 8

	// Owners are each machine's players, in machine order: every player
	// 0..Players-1 is exactly one machine's.
	Owners [][]rollback.PlayerID
	// Humans is, for each machine, how many of its players (its first
	// ones) are human; the others are bots the machine drives itself.
	Humans []int
	// Addrs are the machines' addresses in machine order. In a joiner's
	// plan the host's is the address it joined; the others are the
	// addresses the host saw the joiners send from (in the host's own
	// plan, its entry is its socket's local address).
	Addrs []netip.AddrPort

	SessionID uint64 // Config.SessionID: non-zero, random, new for every match
	Secret    []byte // Config.Secret: 32 random bytes
	Seed      uint64 // the game's seed, random, the same on every machine
	Frames    int    // the match length in frames, 0 for endless
	// RoundFrames and Target are the match's rules (play.Rules): the
	// host's, the same on every machine.
	RoundFrames, Target int
}

// Local returns this machine's players: Config.Local.
func (p Plan) Local() []rollback.PlayerID { return p.Owners[p.Machine] }

// PeerAddrs returns the other machines' addresses in machine order, this
// one skipped: the order of Config.Peers, and udp.New's peers.
func (p Plan) PeerAddrs() []netip.AddrPort {
	var addrs []netip.AddrPort
	for i, a := range p.Addrs {
		if i != p.Machine {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// Peers returns the other machines' players in the order of PeerAddrs:
// Config.Peers[i].Players is Peers()[i].
func (p Plan) Peers() [][]rollback.PlayerID {
	var peers [][]rollback.PlayerID
	for i, ps := range p.Owners {
		if i != p.Machine {
			peers = append(peers, ps)
		}
	}
	return peers
}

// Settings are a match's length and rules as the lobby carries them
// (play.Settings): the host's are every machine's.
type Settings struct {
	Frames, RoundFrames, Target int
}

// Settings are p's.
func (p Plan) Settings() Settings {
	return Settings{Frames: p.Frames, RoundFrames: p.RoundFrames, Target: p.Target}
}

// Wants says which of a joiner's Settings it was given (a flag): those
// must be the host's, or the host turns it away.
type Wants struct{ Frames, RoundFrames, Target bool }

// SettingsError is Join's error when the host turned this machine away
// because the settings it wants differ from the host's, which it holds.
type SettingsError struct {
	Host, Wanted Settings
	Wants        Wants
}

func (e *SettingsError) Error() string {
	return fmt.Sprintf("lobby: the host plays %+v, this machine wants %+v", e.Host, e.Wanted)
}

// differs reports whether the host's settings h differ from s in one of
// the wanted fields.
func (w Wants) differs(h, s Settings) bool {
	return w.Frames && h.Frames != s.Frames || w.RoundFrames && h.RoundFrames != s.RoundFrames || w.Target && h.Target != s.Target
}

// HostOptions configure [Host].
type HostOptions struct {
	// Machines is the number of machines in the match, the host's
	// included: 2 to 8.
	Machines int
	// Players is the number of ships, at most 8, and at least one for each
	// human (the host's Humans, and one or two for each joiner). The ships
	// no human takes are bots, driven by the host. 0 means one ship for
	// each human and no bots.
	Players int
	// Humans is the number of players at the host: 0 (the host flies bots only), 1 or 2.
	Humans int
	// Frames is the match length in frames; 0 means endless.
	Frames int
	// RoundFrames and Target are the rules every machine plays by (the
	// round timer in frames and the score target, 0 for none; the target
	// at most 255). They travel in the plan.
	RoundFrames, Target int
	// Log, if not nil, is told of the lobby's progress: who joined, who
	// was turned away.
	Log func(string)
}

// Host waits on conn for o.Machines-1 joiners, deals the players and
// sends each joiner its plan until it acknowledges, then returns the
// host's own plan (Machine 0).
//
// Players are dealt in order: the host's humans first, then each joiner's
// humans in the order the joiners said hello, then the ships left, up to
// o.Players, as bots to the host. A joiner is admitted only if its humans
// leave a ship for each machine still to come; otherwise, or once every
// seat is taken, it is told the match is full. The same address saying
// hello again is the same joiner.
//
// A joiner that has not acknowledged its plan after 3 s does not hold up
// the match: Host returns the plan with a nil error anyway (and says so to
// o.Log), as the joiner probably has it, and the session's handshake
// reports a machine that never comes. Host returns ctx.Err() if ctx ends
// first.
func Host(ctx context.Context, conn net.PacketConn, o HostOptions) (Plan, error) {
	seats := o.Players // ships humans can take
	if seats == 0 {
		seats = rollback.MaxPlayers
	}
	switch {
	case conn == nil:
		return Plan{}, errors.New("lobby: nil conn")
	case o.Machines < 2 || o.Machines > maxMachines:
		return Plan{}, fmt.Errorf("lobby: %d machines (want 2 to %d)", o.Machines, maxMachines)
	case o.Humans < 0 || o.Humans > maxHumans:
		return Plan{}, fmt.Errorf("lobby: %d humans at the host (want 0 to 2)", o.Humans)
	case o.Players < 0 || o.Players > rollback.MaxPlayers:
		return Plan{}, fmt.Errorf("lobby: %d players (want up to %d, or 0)", o.Players, rollback.MaxPlayers)
	case ships(o.Humans)+o.Machines-1 > seats:
		return Plan{}, fmt.Errorf("lobby: %d ships for %d humans at the host and %d joiners", seats, o.Humans, o.Machines-1)
	case o.Frames < 0 || uint64(o.Frames) > 1<<32-1:
		return Plan{}, fmt.Errorf("lobby: %d frames", o.Frames)
	case o.RoundFrames < 0 || uint64(o.RoundFrames) > 1<<32-1 || o.Target < 0 || o.Target > 255:
		return Plan{}, fmt.Errorf("lobby: rounds of %d frames to %d", o.RoundFrames, o.Target)
	}
	defer conn.SetReadDeadline(time.Time{})
	h := host{conn: conn, o: o, seats: seats, taken: ships(o.Humans)}
	buf := make([]byte, maxDatagram)

	for len(h.joiners) < o.Machines-1 {
		m, from, ok, err := receive(ctx, conn, buf, time.Now().Add(resend))
		if err != nil {
			return Plan{}, err
		}
		if ok && m.kind == kindHello {
			h.hello(m, from)
		}
	}

	plan := h.plan()
	giveUp := time.Now().Add(ackTimeout)
	for next := time.Now(); len(h.waiting()) > 0; {
		now := time.Now()
		if !now.Before(giveUp) {
			h.logf("machines %v did not acknowledge their plans: starting anyway", h.waiting())
			break
		}
		if !now.Before(next) {
			for _, j := range h.joiners {
				if !j.acked {
					send(conn, j.plan, j.addr)
				}
			}
			next = now.Add(resend)
		}
		m, from, ok, err := receive(ctx, conn, buf, earlier(next, giveUp))
		if err != nil {
			return Plan{}, err
		}
		switch {
		case !ok:
		case m.kind == kindHello:
			h.hello(m, from) // a repeat, or too late: every seat is taken
		case m.kind == kindAck:
			if i, j := h.joiner(from); j != nil && m.nonce == j.nonce && !j.acked {
				j.acked = true
				h.logf("machine %d is ready", i)
			}
		}
	}
	return plan, nil
}

// host is Host's state.
type host struct {
	conn    net.PacketConn
	o       HostOptions
	seats   int       // ships the machines may take
	taken   int       // ships the machines admitted so far take, the host's included
	joiners []*joiner // in machine order, from machine 1
}

// joiner is an admitted joiner, as its first hello introduced it.
type joiner struct {
	addr   netip.AddrPort
	nonce  uint64
	humans int
	plan   []byte // its plan datagram, once dealt
	acked  bool
}

// hello admits the sender of a hello if it is new and fits, and tells it
// the match is full if it does not.
func (h *host) hello(m message, from netip.AddrPort) {
	if _, j := h.joiner(from); j != nil {
		return // a repeat: the same joiner, whose plan is on its way if it is due
	}
	toCome := h.o.Machines - 1 - len(h.joiners) - 1 // machines still to come after this one
	if toCome < 0 || h.taken+ships(m.humans)+toCome > h.seats {
		send(h.conn, message{kind: kindFull, nonce: m.nonce}.append(nil), from)
		h.logf("%v asked for %s: the match is full", from, humans(m.humans))
		return
	}
	if ours := (Settings{h.o.Frames, h.o.RoundFrames, h.o.Target}); m.wants.differs(ours, m.settings) {
		send(h.conn, message{kind: kindRefuse, nonce: m.nonce, settings: ours}.append(nil), from)
		h.logf("%v wants other settings (%+v, the host's %+v): turned away", from, m.settings, ours)
		return
	}
	h.joiners = append(h.joiners, &joiner{addr: from, nonce: m.nonce, humans: m.humans})
	h.taken += ships(m.humans)
	h.logf("machine %d joined from %v with %s", len(h.joiners), from, humans(m.humans))
}

// ships is how many ships a machine with n humans flies: one each, and a
// machine without people flies one ship as a bot (every machine plays).
func ships(n int) int { return max(n, 1) }

func humans(n int) string {
	if n == 1 {
		return "1 human"
	}
	return fmt.Sprint(n, " humans")
}

// joiner returns the joiner at addr and its machine index, or nil.
func (h *host) joiner(addr netip.AddrPort) (int, *joiner) {
	for i, j := range h.joiners {
		if j.addr == addr {
			return i + 1, j
		}
	}
	return 0, nil
}

// waiting returns the machines that have not acknowledged their plans.
func (h *host) waiting() []int {
	var ms []int
	for i, j := range h.joiners {
		if !j.acked {
			ms = append(ms, i+1)
		}
	}
	return ms
}

// plan deals the players, draws the match's random values, encodes each
// joiner's plan, and returns the host's.
func (h *host) plan() Plan {
	p := Plan{Machines: h.o.Machines, Players: h.o.Players, Secret: make([]byte, secretSize), Frames: h.o.Frames,
		RoundFrames: h.o.RoundFrames, Target: h.o.Target}
	for p.SessionID == 0 {
		p.SessionID = random()
	}
	p.Seed = random()
	rand.Read(p.Secret) // never fails (Go 1.24)
	next := rollback.PlayerID(0)
	deal := func(n int) []rollback.PlayerID {
		var ps []rollback.PlayerID
		for range n {
			ps = append(ps, next)
			next++
		}
		return ps
	}
	var local netip.AddrPort
	if a, ok := h.conn.LocalAddr().(*net.UDPAddr); ok {
		local = unmap(a.AddrPort())
	}
	p.Owners, p.Humans, p.Addrs = [][]rollback.PlayerID{deal(ships(h.o.Humans))}, []int{h.o.Humans}, []netip.AddrPort{local}
	for _, j := range h.joiners {
		p.Owners = append(p.Owners, deal(ships(j.humans)))
		p.Humans = append(p.Humans, j.humans)
		p.Addrs = append(p.Addrs, j.addr)
	}
	if p.Players == 0 {
		p.Players = int(next)
	}
	p.Owners[0] = append(p.Owners[0], deal(p.Players-int(next))...) // the bots
	for i, j := range h.joiners {
		theirs := p
		theirs.Machine = i + 1
		j.plan = message{kind: kindPlan, nonce: j.nonce, plan: theirs}.append(nil)
	}
	return p
}

func (h *host) logf(format string, args ...any) {
	if h.o.Log != nil {
		h.o.Log(fmt.Sprintf(format, args...))
	}
}

// JoinOptions configure [Join].
type JoinOptions struct {
	// Humans is the number of players at this machine: 0 (it flies one
	// ship as a bot), 1 or 2.
	Humans int
	// Settings, those of them Wants names, must be the host's: it turns
	// the joiner away with its own (a *SettingsError) if they differ.
	Settings Settings
	Wants    Wants
}

// Join says hello on conn to the host at addr until it answers with this
// machine's plan, which it returns, its Addrs[0] being addr. Datagrams
// from any other address are ignored. Before returning, Join lingers
// until the host has been silent for 300 ms (1 s at most), acknowledging
// again any plan the host repeats, so that a lost ack does not leave the
// host waiting. It returns [ErrFull] if the host turns it away for want
// of seats, a *[SettingsError] if for its settings, and ctx.Err() if ctx
// ends first.
func Join(ctx context.Context, conn net.PacketConn, addr netip.AddrPort, o JoinOptions) (Plan, error) {
	switch {
	case conn == nil:
		return Plan{}, errors.New("lobby: nil conn")
	case !addr.IsValid():
		return Plan{}, fmt.Errorf("lobby: invalid host address %v", addr)
	case o.Humans < 0 || o.Humans > maxHumans:
		return Plan{}, fmt.Errorf("lobby: %d humans (want 0 to 2)", o.Humans)
	}
	defer conn.SetReadDeadline(time.Time{})
	addr = unmap(addr)
	nonce := random()
	hello := message{kind: kindHello, nonce: nonce, humans: o.Humans, settings: o.Settings, wants: o.Wants}.append(nil)
	ack := message{kind: kindAck, nonce: nonce}.append(nil)
	buf := make([]byte, maxDatagram)

	// fromHost reports whether m is the host's answer to our hello.
	fromHost := func(m message, from netip.AddrPort) bool { return from == addr && m.nonce == nonce }
	var plan Plan
	for next := time.Now(); plan.Machines == 0; { // until the plan comes
		if !time.Now().Before(next) {
			send(conn, hello, addr)
			next = time.Now().Add(resend)
		}
		m, from, ok, err := receive(ctx, conn, buf, next)
		switch {
		case err != nil:
			return Plan{}, err
		case !ok || !fromHost(m, from):
		case m.kind == kindFull:
			return Plan{}, ErrFull
		case m.kind == kindRefuse:
			return Plan{}, &SettingsError{Host: m.settings, Wanted: o.Settings, Wants: o.Wants}
		case m.kind == kindPlan:
			plan = m.plan
		}
	}
	plan.Addrs[0] = addr // what we dialled: the host's own view may be a wildcard
	send(conn, ack, addr)

	quiet, end := time.Now().Add(lingerQuiet), time.Now().Add(lingerMax)
	for now := time.Now(); now.Before(quiet) && now.Before(end); now = time.Now() {
		m, from, ok, err := receive(ctx, conn, buf, earlier(quiet, end))
		if err != nil {
			return Plan{}, err
		}
		if ok && fromHost(m, from) && m.kind == kindPlan {
			send(conn, ack, addr) // the host has not had our ack
			quiet = time.Now().Add(lingerQuiet)
		}
	}
	return plan, nil
}

// receive waits until the time until (or ctx's deadline, if sooner) for a
// lobby datagram, and returns it and its sender; ok is false if none came.
// Datagrams that are not lobby messages are skipped. Its error is ctx's,
// or the socket's once it is closed.
func receive(ctx context.Context, conn net.PacketConn, buf []byte, until time.Time) (m message, from netip.AddrPort, ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return message{}, from, false, err
	}
	if d, has := ctx.Deadline(); has {
		until = earlier(until, d)
	}
	if err := conn.SetReadDeadline(until); err != nil {
		return message{}, from, false, err
	}
	for {
		n, a, err := conn.ReadFrom(buf)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return message{}, from, false, ctx.Err()
		case errors.Is(err, net.ErrClosed):
			return message{}, from, false, err
		case err != nil:
			continue // transient, such as an ICMP port unreachable: the deadline still bounds the wait
		}
		if m, perr := parse(buf[:n]); perr == nil {
			if from := addrPort(a); from.IsValid() {
				return m, from, true, nil
			}
		}
	}
}

// send sends b to addr. An error is not reported: the datagram is as good
// as lost, and lost datagrams are resent; a closed socket shows on the
// next read.
func send(conn net.PacketConn, b []byte, addr netip.AddrPort) {
	_, _ = conn.WriteTo(b, net.UDPAddrFromAddrPort(addr))
}

// addrPort converts a sender's address, unmapping IPv4-mapped IPv6 (as the
// udp transport does) so that one machine has one address.
func addrPort(a net.Addr) netip.AddrPort {
	if u, ok := a.(*net.UDPAddr); ok {
		return unmap(u.AddrPort())
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return unmap(ap)
}

func unmap(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// random returns 64 random bits from crypto/rand.
func random() uint64 {
	var b [8]byte
	rand.Read(b[:]) // never fails (Go 1.24)
	return binary.LittleEndian.Uint64(b[:])
}
