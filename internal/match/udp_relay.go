package match

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/udp"
)

// runUDPRelay is RunUDP in the relay topology (Config.Relay): one more
// socket, the relay's, whose udp.Transport has the machines as peers in
// slot order, polled every millisecond by a goroutine of its own; each
// machine's udp.Transport has one peer, the relay, under its
// relay.Client. With a profile, each hop is shaped (hopProfile, or the
// whole profile with RelayFullHops): the machines' sends to the relay and
// the relay's to them.
func runUDPRelay(c Config, o UDPOptions, network string, ip netip.Addr) Result {
	var r Result
	machines := machinesOf(c)
	if err := checkRelay(c, machines); err != nil {
		r.Err = err
		return r
	}
	if c.Forge > 0 {
		r.Err = fmt.Errorf("%w: forgeries in the relay topology: netsim only so far", ErrConfig)
		return r
	}
	prof := c.Profile
	if !c.RelayFullHops {
		prof = hopProfile(prof)
	}
	listen := func() (*net.UDPConn, netip.AddrPort, error) {
		conn, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
		if err != nil {
			return nil, netip.AddrPort{}, err
		}
		return conn, conn.LocalAddr().(*net.UDPAddr).AddrPort(), nil
	}
	var closers []func()
	defer func() {
		for k := len(closers) - 1; k >= 0; k-- {
			closers[k]()
		}
	}()
	// shaped is t behind a shaper with the hop's profile, for node node.
	shaped := func(t *udp.Transport, peers, node int) (relay.Link, error) {
		if c.Profile == (Config{}).Profile {
			return t, nil
		}
		sh, err := netsim.NewShaper(t, peers, prof, c.Seed, node)
		if err != nil {
			return nil, err
		}
		closers = append(closers, sh.Close)
		return sh, nil
	}
	addrs := make([]netip.AddrPort, machines)
	conns := make([]*net.UDPConn, machines)
	for i := range conns {
		var err error
		if conns[i], addrs[i], err = listen(); err != nil {
			closeAll(conns)
			r.Err = err
			return r
		}
	}
	rconn, raddr, err := listen()
	if err != nil {
		closeAll(conns)
		r.Err = err
		return r
	}
	trs := make([]*udp.Transport, 0, machines+1)
	closers = append(closers, func() {
		for _, t := range trs {
			_ = t.Close()
		}
	})
	rt, err := udp.New(rconn, addrs)
	if err != nil {
		closeAll(append(conns, rconn))
		r.Err = err
		return r
	}
	trs = append(trs, rt)
	rlink, err := shaped(rt, machines, machines)
	if err != nil {
		closeAll(conns)
		r.Err = err
		return r
	}
	rl, err := relay.New(relay.Config{Machines: machines, Link: rlink, Tick: Tick})
	if err != nil {
		closeAll(conns)
		r.Err = err
		return r
	}
	clients := make([]*relay.Client, machines)
	sessionTrs := make([]rollback.Transport, machines)
	for i := range clients {
		t, err := udp.New(conns[i], []netip.AddrPort{raddr})
		if err != nil {
			closeAll(conns[i:])
			r.Err = err
			return r
		}
		trs = append(trs, t)
		link, err := shaped(t, 1, i)
		if err != nil {
			r.Err = err
			return r
		}
		if clients[i], err = relay.NewClient(link, 0, i, machines); err != nil {
			r.Err = err
			return r
		}
		sessionTrs[i] = clients[i]
	}
	// The relay's loop: the only user of rl, until it is told to stop.
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		start := time.Now()
		for !stop.Load() {
			rl.Poll(time.Since(start))
			time.Sleep(time.Millisecond)
		}
	})
	r = runLive(c, o, sessionTrs, nil)
	stop.Store(true)
	wg.Wait()
	for _, cl := range clients {
		st := cl.Stats()
		r.UpPackets, r.UpBytes = r.UpPackets+st.EnvelopesOut, r.UpBytes+st.BytesOut
	}
	st := rl.Stats()
	r.DownPackets, r.DownBytes = st.EnvelopesOut, st.BytesOut
	for _, t := range trs {
		r.TransportDrops += drops(t)
	}
	return r
}
