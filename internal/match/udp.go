package match

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rewindgg/rewind/desync"
	"github.com/rewindgg/rewind/pacer"
	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/udp"
)

// UDPOptions tune a match over real sockets.
type UDPOptions struct {
	// Network is "udp4" (127.0.0.1, the default) or "udp6" (::1).
	Network string
	// PauseMachine stops for Pause once it reaches frame PauseAt (when
	// PauseAt > 0): a peer that goes silent and comes back.
	PauseAt      int
	PauseMachine int
	Pause        time.Duration
	// OnStart, if set, is called once every socket is bound, with each
	// machine's address and socket, before any frame runs. Tests use the
	// sockets to send datagrams from a peer's own address.
	OnStart func(addrs []netip.AddrPort, conns []*net.UDPConn)
	// OnRunning, if set, is called once, from a machine's goroutine, when
	// every machine has simulated its first frame: the handshake and the
	// start are over. Tests wait for it instead of sleeping.
	OnRunning func()
	// Timeout bounds the match; 0 means three times its length plus 20 s.
	Timeout time.Duration
}

// RunUDP plays and verifies one match in real time over UDP sockets on the
// loopback interface, every machine in its own goroutine with its own
// socket, real clock and 60 Hz pacer; c.Profile is applied by a
// netsim.Shaper wrapping each socket's transport. Nonces come from crypto/rand.
// With c.Forge, the forged datagrams go out from a goroutine of their own;
// with c.Spectators, the spectators have a socket each and are ticked by
// a goroutine of their own.
func RunUDP(c Config, o UDPOptions) Result {
	var r Result
	machines := machinesOf(c)
	if machines < 2 {
		r.Err = fmt.Errorf("%w: a UDP match needs two machines", ErrConfig)
		return r
	}
	if c.Witnesses > 0 {
		r.Err = fmt.Errorf("%w: witnesses need netsim (a UDP spectator has one peer, its source)", ErrConfig)
		return r
	}
	network, ip := o.Network, netip.MustParseAddr("127.0.0.1")
	switch network {
	case "", "udp4":
		network = "udp4"
	case "udp6":
		ip = netip.IPv6Loopback()
	default:
		r.Err = fmt.Errorf("%w: network %q", ErrConfig, network)
		return r
	}
	if c.Relay {
		return runUDPRelay(c, o, network, ip)
	}
	conns := make([]*net.UDPConn, machines)
	addrs := make([]netip.AddrPort, machines)
	for i := range conns {
		conn, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
		if err != nil {
			r.Err = err
			closeAll(conns)
			return r
		}
		conns[i], addrs[i] = conn, conn.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	trs := make([]*udp.Transport, machines)
	sessionTrs := make([]rollback.Transport, machines) // trs[i], or its shaper
	var shapers []*netsim.Shaper
	defer func() {
		for _, sh := range shapers {
			sh.Close()
		}
		for _, t := range trs {
			if t != nil {
				_ = t.Close()
			}
		}
	}()
	guests := spectatorSlots(c)
	for i := range trs {
		var peers []netip.AddrPort
		for j := range machines {
			if j != i {
				peers = append(peers, addrs[j])
			}
		}
		t, err := udp.New(conns[i], peers)
		if err != nil {
			r.Err = err
			return r
		}
		trs[i], sessionTrs[i] = t, t
		if err := t.AcceptGuests(guests); err != nil {
			r.Err = err
			return r
		}
		if c.Profile != (Config{}).Profile {
			sh, err := netsim.NewShaper(t, len(peers)+guests, c.Profile, c.Seed, i)
			if err != nil {
				r.Err = err
				return r
			}
			shapers = append(shapers, sh)
			sessionTrs[i] = sh
		}
	}
	var fg *forgery
	var stranger *net.UDPConn
	if c.Forge > 0 {
		var err error
		if fg, err = newForgery(c, machines); err != nil {
			r.Err = err
			return r
		}
		fg.hashes = make(map[uint64]struct{})
		if stranger, err = net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0))); err != nil {
			r.Err = err
			return r
		}
		defer stranger.Close()
		for i := range sessionTrs {
			sessionTrs[i] = fg.wrap(i, sessionTrs[i], fg.forgedUDP, true)
		}
	}
	x := &udpExtras{fg: fg, stranger: stranger, conns: conns, addrs: addrs, network: network, ip: ip}
	r = runLive(c, o, sessionTrs, x)
	for _, t := range trs {
		r.TransportDrops += drops(t)
	}
	if x.au != nil {
		for _, t := range x.au.trs {
			r.TransportDrops += drops(t) // nil: it never joined
		}
	}
	return r
}

// udpExtras are what a match over sockets has that a match over given
// transports has not: forged datagrams, and spectators.
type udpExtras struct {
	fg       *forgery
	stranger *net.UDPConn
	conns    []*net.UDPConn
	addrs    []netip.AddrPort
	network  string
	ip       netip.Addr
	au       *udpAudience // set by runLive when the match has spectators
}

// RunLive plays and verifies one match in real time over the given
// transports, machine i's being trs[i] (its peers the other machines in
// order), as RunUDP does over sockets: every machine in its own goroutine
// with its own real clock and 60 Hz pacer. The caller owns the
// transports (impairing them, if it wants, with a netsim.Shaper); c must
// not ask for spectators or forgeries, which need sockets. o.OnStart is
// not called.
func RunLive(c Config, o UDPOptions, trs []rollback.Transport) Result {
	var r Result
	switch {
	case len(trs) != machinesOf(c):
		r.Err = fmt.Errorf("%w: %d transports for %d machines", ErrConfig, len(trs), machinesOf(c))
		return r
	case c.Spectators > 0 || c.Forge > 0:
		r.Err = fmt.Errorf("%w: spectators and forgeries need RunUDP", ErrConfig)
		return r
	}
	return runLive(c, o, trs, nil)
}

// runLive plays the match of RunUDP and RunLive; x is nil for RunLive.
func runLive(c Config, o UDPOptions, sessionTrs []rollback.Transport, x *udpExtras) Result {
	var r Result
	if x == nil {
		x = &udpExtras{}
	}
	fg, machines := x.fg, len(sessionTrs)
	clocks := make([]func() time.Duration, machines) // one each: a machine that restarts reads its own
	for i := range clocks {
		clocks[i] = realClock()
	}
	rn, err := prepare(c, func(i int) rollback.Transport { return sessionTrs[i] },
		func(i int) func() time.Duration { return clocks[i] }, func(int) io.Reader { return nil })
	if err != nil {
		r.Err = err
		return r
	}
	var au *udpAudience
	if len(rn.watchers) > 0 {
		if au, err = newUDPAudience(len(rn.watchers), x.network, x.ip); err != nil {
			r.Err = err
			return r
		}
		defer au.close()
		x.au = au
	}
	if o.OnStart != nil && x.conns != nil {
		o.OnStart(x.addrs, x.conns)
	}
	stopForging := func() {}
	if fg != nil {
		// From before the first frame: forged handshakes race the real ones.
		fg.bind(rn)
		stop := make(chan struct{})
		var fwg sync.WaitGroup
		fwg.Go(func() { fg.sendUDP(stop, x.conns, x.addrs, x.stranger) })
		stopForging = func() {
			close(stop)
			fwg.Wait()
		}
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 3*time.Duration(c.Frames)*Tick + 20*time.Second
	}
	start := time.Now()
	deadline := start.Add(timeout)
	finished := make([]atomic.Bool, machines)
	var watched atomic.Bool // every spectator that stays has seen the whole match
	watched.Store(au == nil)
	allFinished := func() bool {
		if !watched.Load() {
			return false
		}
		if rn.script != nil {
			return rn.over(time.Since(start), func(i int) bool { return finished[i].Load() })
		}
		for i := range finished {
			if !finished[i].Load() {
				return false
			}
		}
		return true
	}
	errs := make([]error, machines)
	var stop atomic.Bool     // a desync was detected: the match is over
	var running atomic.Int32 // machines that have simulated a frame
	var wg sync.WaitGroup
	var audErr error
	if au != nil {
		wg.Go(func() { audErr = au.run(rn, x.addrs, deadline, &stop, &watched) })
	}
	for i := range machines {
		wg.Go(func() {
			p := pacer.New(Tick)
			paused, ran := false, false
			for time.Now().Before(deadline) && !stop.Load() {
				p.Wait()
				if o.PauseAt > 0 && i == o.PauseMachine && !paused && rn.ms[i].frame.Load() >= rollback.Frame(o.PauseAt) {
					paused = true
					time.Sleep(o.Pause)
				}
				rn.retarget()
				fin, err := rn.tick(i)
				if cl, ok := sessionTrs[i].(*relay.Client); ok {
					_ = cl.Flush() // what this tick sent, in one envelope
				}
				if err != nil && rn.adversaryFailed(i, err) {
					finished[i].Store(true) // silent from now on; the others play on
					return
				}
				if err != nil {
					errs[i] = err
					finished[i].Store(true)
					var de *desync.Error
					if errors.As(err, &de) {
						stop.Store(true)
					}
					return
				}
				finished[i].Store(fin)
				if !ran && rn.ms[i].frame.Load() > 0 {
					ran = true
					if running.Add(1) == int32(machines) && o.OnRunning != nil {
						o.OnRunning()
					}
				}
				if allFinished() {
					return
				}
			}
		})
	}
	wg.Wait()
	stopForging()
	r.Ticks = int(time.Since(start) / Tick)
	for i, err := range errs {
		if err != nil && rn.detected(&r, i, err) {
			errs[i] = nil
		}
	}
	r.Err = errors.Join(append(errs, audErr)...)
	r.Completed = r.Err == nil && r.Detected == nil && allFinished()
	if fg != nil {
		fg.result(&r)
	}
	rn.finish(&r)
	return r
}

// drops is what t dropped (unknown address, oversized, queue full); 0 for nil.
func drops(t *udp.Transport) int64 {
	if t == nil {
		return 0
	}
	st := t.Stats()
	return st.UnknownAddress + st.Oversized + st.QueueFull
}

func closeAll(conns []*net.UDPConn) {
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
}

// realClock reads the machine's monotonic clock from the call on: the
// clock of a match over real sockets, shared by its sessions and
// spectators where they must agree.
func realClock() func() time.Duration {
	start := time.Now()
	return func() time.Duration { return time.Since(start) }
}
