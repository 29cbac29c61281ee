package match

import (
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/rewindgg/rewind/pacer"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/udp"
)

// udpAudience is the spectators of a match over UDP: a socket each, bound
// before the first frame so that a relay's address is known to the
// spectators below it, and from its join a udp.Transport (shaped like the
// players' with c.Profile) whose peer 0 is its parent, with guest slots
// for the spectators it relays to. Its own goroutine ticks them all at
// 60 Hz on one real clock.
type udpAudience struct {
	conns   []*net.UDPConn
	addrs   []netip.AddrPort
	trs     []*udp.Transport // nil until it joins
	shapers []*netsim.Shaper
	clock   func() time.Duration
}

// newUDPAudience binds n sockets on ip.
func newUDPAudience(n int, network string, ip netip.Addr) (*udpAudience, error) {
	au := &udpAudience{conns: make([]*net.UDPConn, n), addrs: make([]netip.AddrPort, n), trs: make([]*udp.Transport, n), clock: realClock()}
	for k := range au.conns {
		conn, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
		if err != nil {
			au.close()
			return nil, err
		}
		au.conns[k], au.addrs[k] = conn, conn.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	return au, nil
}

// start starts watcher k of rn; players are the player machines' addresses.
func (au *udpAudience) start(rn *run, k int, players []netip.AddrPort) error {
	parent := rn.watchers[k].parent
	var to netip.AddrPort
	if parent < len(players) {
		to = players[parent]
	} else {
		to = au.addrs[parent-len(players)]
	}
	t, err := udp.New(au.conns[k], []netip.AddrPort{to})
	if err != nil {
		return err
	}
	au.trs[k] = t
	if err := t.AcceptGuests(SpectatorsPerMachine); err != nil {
		return err
	}
	var tr rollback.Transport = t
	if rn.c.Profile != (Config{}).Profile {
		sh, err := netsim.NewShaper(t, 1+SpectatorsPerMachine, rn.c.Profile, rn.c.Seed, len(players)+k)
		if err != nil {
			return err
		}
		au.shapers = append(au.shapers, sh)
		tr = sh
	}
	return rn.startSpectator(k, tr, 0, au.clock, nil)
}

// run ticks every spectator of rn at 60 Hz, starting each at its join
// tick, until every one that stays has simulated the whole match (done is
// then set), the deadline passes or stop is set.
func (au *udpAudience) run(rn *run, players []netip.AddrPort, deadline time.Time, stop, done *atomic.Bool) error {
	p := pacer.New(Tick)
	for tick := 0; time.Now().Before(deadline) && !stop.Load(); tick++ {
		p.Wait()
		for k := range rn.watchers {
			if w := &rn.watchers[k]; w.s == nil && w.join <= tick && !w.done {
				if err := au.start(rn, k, players); err != nil {
					return err
				}
			}
			rn.tickSpectator(k, tick)
		}
		if rn.spectatorsDone() {
			done.Store(true)
			return nil
		}
	}
	return nil
}

// close stops the shapers and closes every socket.
func (au *udpAudience) close() {
	for _, sh := range au.shapers {
		sh.Close()
	}
	for k, t := range au.trs {
		if t != nil {
			_ = t.Close()
		} else if au.conns[k] != nil {
			_ = au.conns[k].Close()
		}
	}
}
