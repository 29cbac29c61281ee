package match

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rewindgg/rewind/internal/liar"
	"github.com/rewindgg/rewind/pacer"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
	"github.com/rewindgg/rewind/rollback/rollbacktest/offpath"
)

// This file is the attacked match (Config.Forge): a offpath.Forger sends
// every machine Config.Forge forged datagrams a second as if from the
// other machines' addresses, from before the handshake to the end, and
// each machine's transport is wrapped to count the forged datagrams its
// session received and the ones it took as valid.

// earlierFrames bounds the earlier match whose datagrams are replayed.
const earlierFrames = 600

// forgery is one match's attacker and its accounting.
type forgery struct {
	mu       sync.Mutex // over UDP the machines' goroutines and the sender share it
	f        *offpath.Forger
	rate     int
	machines int
	sent     []int64 // forged datagrams sent to each machine
	turn     []int   // round robin over the senders each machine's forgeries claim
	trs      []*forgeTransport
	hashes   map[uint64]struct{} // UDP: every forged datagram sent, by content
	rn       *run
	started  bool  // every machine has simulated a frame
	racing   int64 // forged handshakes sent before that
	// inject delivers a forged datagram on netsim (nil: Network.Inject):
	// in the relay topology, in an envelope from the relay's node.
	inject func(from, to int, b []byte)
}

// newForgery returns the attacker of match c, loaded with the datagrams
// of an earlier match with the same session id: the same seed, network
// and bots, but other nonces and keys.
func newForgery(c Config, machines int) (*forgery, error) {
	f, err := offpath.NewForger(c.Seed^0x5eed_f0e6, machines, sessionID(c))
	if err != nil {
		return nil, err
	}
	ec := c
	ec.Forge, ec.SessionID, ec.randSalt = 0, sessionID(c), c.randSalt+1
	ec.Frames = min(c.Frames, earlierFrames)
	ec.Log, ec.Record, ec.DropAt, ec.InjectDesync, ec.Adversary, ec.inspect = false, false, 0, 0, liar.None, nil
	ec.Relay, ec.RelayDiesAt = false, 0 // the attacker records the datagrams, not envelopes
	runNetsim(ec, f.LoadEarlier)
	return &forgery{f: f, rate: c.Forge, machines: machines, sent: make([]int64, machines),
		turn: make([]int, machines), trs: make([]*forgeTransport, machines)}, nil
}

// sessionID is the sessions' Config.SessionID in match c.
func sessionID(c Config) uint64 {
	if c.SessionID != 0 {
		return c.SessionID
	}
	return c.Seed
}

// observe shows the attacker a genuine datagram.
func (fg *forgery) observe(from, to int, b []byte) {
	fg.mu.Lock()
	fg.f.Observe(from, to, b)
	fg.mu.Unlock()
}

// due returns how many forged datagrams each machine is owed by time t
// since the attack began.
func (fg *forgery) due(t time.Duration) int64 {
	return int64(t/time.Millisecond) * int64(fg.rate) / 1000
}

// next returns the next forged datagram for machine to and the machine
// it claims to be from (the others in turn). The caller holds mu.
func (fg *forgery) next(to int) ([]byte, int) {
	from := fg.turn[to] % (fg.machines - 1)
	fg.turn[to]++
	if from >= to {
		from++
	}
	b, k := fg.f.Next(from, to)
	fg.sent[to]++
	if k == offpath.ForgeHandshake && !fg.allStarted() {
		fg.racing++
	}
	return b, from
}

// allStarted reports whether every machine has simulated a frame.
func (fg *forgery) allStarted() bool {
	if fg.started || fg.rn == nil {
		return fg.started
	}
	for i := range fg.rn.ms {
		if fg.rn.ms[i].frame.Load() == 0 {
			return false
		}
	}
	fg.started = true
	return true
}

// injectUntil injects every machine's forged datagrams due by network
// time t.
func (fg *forgery) injectUntil(nw *netsim.Network, t time.Duration) {
	due := fg.due(t)
	for to := range fg.machines {
		for fg.sent[to] < due {
			b, from := fg.next(to)
			if fg.inject != nil {
				fg.inject(from, to, b)
			} else {
				_ = nw.Inject(from, to, b)
			}
		}
	}
}

// sendUDP sends the forged datagrams over real sockets until stop is
// closed, paced at 60 Hz: every other one from stranger (the transport
// drops them: an unknown address), the rest from the claimed peer's own
// socket, as a source-address spoofer would.
func (fg *forgery) sendUDP(stop <-chan struct{}, conns []*net.UDPConn, addrs []netip.AddrPort, stranger *net.UDPConn) {
	p := pacer.New(Tick)
	start := time.Now()
	for {
		select {
		case <-stop:
			return
		default:
		}
		due := fg.due(time.Since(start))
		for to := range fg.machines {
			for {
				fg.mu.Lock()
				if fg.sent[to] >= due {
					fg.mu.Unlock()
					break
				}
				b, from := fg.next(to)
				fg.hashes[xxhash.Sum64(b)] = struct{}{}
				spoofed := fg.sent[to]%2 == 0
				fg.mu.Unlock()
				conn := stranger
				if spoofed {
					conn = conns[from]
				}
				_, _ = conn.WriteToUDPAddrPort(b, addrs[to])
			}
		}
		p.Wait()
	}
}

// forgedUDP reports whether b is a datagram sendUDP sent.
func (fg *forgery) forgedUDP(b []byte) bool {
	h := xxhash.Sum64(b)
	fg.mu.Lock()
	defer fg.mu.Unlock()
	_, ok := fg.hashes[h]
	return ok
}

// wrap returns machine i's transport tr wrapped for the accounting;
// forged tells a forged datagram, and tap, when set, shows the attacker
// what the session sends.
func (fg *forgery) wrap(i int, tr rollback.Transport, forged func([]byte) bool, tap bool) rollback.Transport {
	t := &forgeTransport{Transport: tr, fg: fg, node: i, forged: forged, tap: tap}
	fg.trs[i] = t
	return t
}

// bind gives each wrapper its machine's session.
func (fg *forgery) bind(rn *run) {
	fg.rn = rn
	for i, t := range fg.trs {
		if t != nil {
			t.s = rn.ms[i].s
		}
	}
}

// result settles the last datagrams and adds the counts to r.
func (fg *forgery) result(r *Result) {
	fg.mu.Lock()
	defer fg.mu.Unlock()
	for _, t := range fg.trs {
		if t != nil {
			t.settle()
			r.ForgedReceived += t.received
			r.ForgedAccepted += t.accepted
		}
	}
	r.ForgedDatagrams, r.ForgedHandshakesBeforeStart = fg.f.Total(), fg.racing
	for k := range offpath.NumForgeKinds {
		r.ForgedKinds[k+1] = fg.f.Count(offpath.ForgeKind(k + 1))
	}
}

// forgeTransport is one machine's transport in an attacked match. A
// session reads every waiting datagram in a loop (Receive until ok is
// false), so when Receive is called again the datagram it last returned
// has been judged: if it was forged and the peer's
// PeerStats.PacketsReceived went up, the session took a forgery as valid.
type forgeTransport struct {
	rollback.Transport
	fg     *forgery
	node   int
	s      *rollback.Session
	forged func([]byte) bool
	tap    bool

	pending            bool // the last datagram returned was forged, not yet settled
	peer               int
	before             int64
	received, accepted int64
}

// Relayed passes on the wrapped transport's: a session over a relay
// client sends the cast body behind the attacker too.
func (t *forgeTransport) Relayed() bool {
	r, ok := t.Transport.(interface{ Relayed() bool })
	return ok && r.Relayed()
}

func (t *forgeTransport) Send(peer int, b []byte) error {
	if t.tap {
		to := peer
		if to >= t.node {
			to++
		}
		t.fg.observe(t.node, to, b)
	}
	return t.Transport.Send(peer, b)
}

func (t *forgeTransport) Receive(buf []byte) (n, peer int, ok bool) {
	t.settle()
	n, peer, ok = t.Transport.Receive(buf)
	if ok && t.s != nil && t.forged(buf[:n]) {
		ps, _ := t.s.PeerStats(peer)
		t.pending, t.peer, t.before = true, peer, ps.PacketsReceived
		t.received++
	}
	return n, peer, ok
}

// settle judges the forged datagram Receive last returned, if any.
func (t *forgeTransport) settle() {
	if !t.pending {
		return
	}
	t.pending = false
	if ps, _ := t.s.PeerStats(t.peer); ps.PacketsReceived > t.before {
		t.accepted++
	}
}
