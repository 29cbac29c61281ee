// Package netsim is a seeded in-memory network on a virtual clock, for
// tests, benchmarks and the soak command.
//
// A [Network] joins N nodes. Every directed link applies the same [Profile]:
// one-way latency plus uniform jitter, random loss, loss bursts (dropouts
// that last a stretch of time), duplication and reordering, each drawn from
// the link's own random stream seeded from the network's seed.
// [Network.Reliable] turns every link into a TCP model instead. Time moves only when the
// caller calls [Network.Advance], so a match over a Network is a pure
// function of its seed: the same seed delivers the same packets at the same
// virtual instants, bit for bit.
//
// Each node's [Endpoint] is a rollback.Transport: peer k of node i is the
// k-th other node in ascending order. Sending copies the payload into a
// pooled buffer, so steady-state traffic allocates nothing.
//
// A [Shaper] applies the same impairments to a real transport (a UDP
// socket) on the real clock, for tests and soaks over loopback.
//
// Attacks: [Network.Tap] sees every datagram a node sends, and
// [Network.Inject] delivers a datagram to a node as if another node had
// sent it. The Forger of rollback/rollbacktest/offpath uses both to model
// an off-path attacker that floods the sessions with forged datagrams.
package netsim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/rewindgg/rewind/internal/pqueue"
)

// MTU is the largest payload a Network carries.
const MTU = 1400

// Errors returned by the package.
var (
	ErrTooLarge = errors.New("netsim: packet larger than MTU")
	ErrPeer     = errors.New("netsim: no such peer")
	ErrProfile  = errors.New("netsim: invalid profile")
	ErrNodes    = errors.New("netsim: node count out of range")
)

// Profile describes the impairments of every link. Durations are one-way;
// probabilities are in [0, 1]. The zero Profile is a perfect network that
// delivers every packet at the next Advance.
type Profile struct {
	Latency time.Duration // fixed one-way delay
	Jitter  time.Duration // extra delay, uniform in [0, Jitter]
	Loss    float64       // chance that a packet is lost
	// BurstLoss and BurstLength describe loss bursts (dropouts) in 60 Hz
	// packets: BurstLoss is the chance that a burst starts in any 1/60 s,
	// BurstLength a burst's mean length in 1/60 s (default 8 when
	// BurstLoss > 0; exponentially distributed). Both are rates in time,
	// whatever the sending rate: counted in packets, a slow sender (a
	// handshake at ten packets a second) would see the same burst last six
	// times longer.
	BurstLoss    float64
	BurstLength  float64
	Duplicate    float64       // chance that a packet is delivered twice
	Reorder      float64       // chance that a packet is held back by ReorderDelay
	ReorderDelay time.Duration // default 2×Jitter + 10 ms
}

// Validate reports whether p is usable.
func (p Profile) Validate() error {
	if p.Latency < 0 || p.Jitter < 0 || p.ReorderDelay < 0 {
		return fmt.Errorf("%w: negative duration", ErrProfile)
	}
	for _, pr := range []struct {
		name string
		v    float64
	}{{"loss", p.Loss}, {"burst", p.BurstLoss}, {"dup", p.Duplicate}, {"reorder", p.Reorder}} {
		if !(pr.v >= 0 && pr.v <= 1) {
			return fmt.Errorf("%w: %s %v is not a probability", ErrProfile, pr.name, pr.v)
		}
	}
	if p.BurstLength < 0 {
		return fmt.Errorf("%w: negative burst length", ErrProfile)
	}
	return nil
}

func (p Profile) withDefaults() Profile {
	if p.BurstLoss > 0 && p.BurstLength == 0 {
		p.BurstLength = 8
	}
	if p.Reorder > 0 && p.ReorderDelay == 0 {
		p.ReorderDelay = 2*p.Jitter + 10*time.Millisecond
	}
	return p
}

// Presets are the named profiles, in order of increasing hostility.
var Presets = []struct {
	Name    string
	Profile Profile
}{
	{"lan", Profile{Latency: 1 * time.Millisecond, Jitter: 1 * time.Millisecond}},
	{"wifi", Profile{Latency: 8 * time.Millisecond, Jitter: 12 * time.Millisecond, Loss: 0.02, BurstLoss: 0.002, BurstLength: 4, Duplicate: 0.005, Reorder: 0.01}},
	{"continental", Profile{Latency: 35 * time.Millisecond, Jitter: 6 * time.Millisecond, Loss: 0.01, Duplicate: 0.002, Reorder: 0.005}},
	{"intercontinental", Profile{Latency: 90 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.02, BurstLoss: 0.003, BurstLength: 5, Duplicate: 0.005, Reorder: 0.01}},
	{"far", Profile{Latency: 290 * time.Millisecond, Jitter: 20 * time.Millisecond, Loss: 0.02, Duplicate: 0.005, Reorder: 0.01}}, // 300 ms one way on average; random loss, no bursts (hell has them)
	{"hell", Profile{Latency: 170 * time.Millisecond, Jitter: 60 * time.Millisecond, Loss: 0.10, BurstLoss: 0.01, BurstLength: 8, Duplicate: 0.03, Reorder: 0.05}},
}

// ParseProfile returns the preset with the given name, or parses a spec such
// as "latency=80ms,jitter=10ms,loss=2%,dup=1%,reorder=1%". Spec keys are
// latency, jitter, loss, burst, burstlen, dup, reorder and reorderdelay;
// probabilities take a percent sign or a fraction.
func ParseProfile(s string) (Profile, error) {
	for _, pr := range Presets {
		if pr.Name == s {
			return pr.Profile, nil
		}
	}
	if !strings.Contains(s, "=") {
		return Profile{}, fmt.Errorf("%w: unknown preset %q", ErrProfile, s)
	}
	var p Profile
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return Profile{}, fmt.Errorf("%w: %q is not key=value", ErrProfile, kv)
		}
		var err error
		switch k {
		case "latency":
			p.Latency, err = time.ParseDuration(v)
		case "jitter":
			p.Jitter, err = time.ParseDuration(v)
		case "reorderdelay":
			p.ReorderDelay, err = time.ParseDuration(v)
		case "loss":
			p.Loss, err = parseProb(v)
		case "burst":
			p.BurstLoss, err = parseProb(v)
		case "dup":
			p.Duplicate, err = parseProb(v)
		case "reorder":
			p.Reorder, err = parseProb(v)
		case "burstlen":
			p.BurstLength, err = strconv.ParseFloat(v, 64)
		default:
			return Profile{}, fmt.Errorf("%w: unknown key %q", ErrProfile, k)
		}
		if err != nil {
			return Profile{}, fmt.Errorf("%w: %s: %v", ErrProfile, k, err)
		}
	}
	return p, p.Validate()
}

func parseProb(v string) (float64, error) {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		return f / 100, err
	}
	return strconv.ParseFloat(v, 64)
}

// LinkStats counts what happened on one directed link.
type LinkStats struct {
	Sent       int // packets given to Send
	Bytes      int // payload bytes given to Send
	Delivered  int // packets handed to the receiver, duplicates included
	Lost       int // packets dropped by random or burst loss
	Duplicated int
	Reordered  int
	Injected   int // datagrams given to Inject (in no other count)
}

// Network is the simulated network. It is not safe for concurrent use.
type Network struct {
	now   time.Duration
	prof  Profile
	nodes []*node
	links [][]*link // [from][to]
	base  int       // the nodes New made: their links' random streams are from*base + to
	pool  [][]byte
	seq   uint64

	reliable bool // Reliable: every link is a TCP model
	seed     uint64

	// Tap, if set, is called with every datagram a node gives to Send
	// (before the link decides its fate, so lost ones too), never with an
	// injected one. b is valid only during the call. Tests use it to show
	// an attacker the traffic (offpath.Forger.Observe).
	Tap func(from, to int, b []byte)
}

type node struct {
	ep    Endpoint
	queue pqueue.Queue[packet] // by (at, seq)
	time  nodeTime
}

func packetBefore(a, b *packet) bool { return a.at < b.at || (a.at == b.at && a.seq < b.seq) }

type link struct {
	imp   Impairer
	stats LinkStats
	last  time.Duration // reliable mode: when the previous packet is delivered
}

// Impairer decides the fate of each packet on one link: lost, or delivered
// after a delay, possibly twice. netsim uses one per directed link; a
// [Shaper] uses one per peer, on the real clock.
type Impairer struct {
	prof       Profile
	rng        *rand.Rand
	last       time.Duration // when the previous packet was sent
	burstUntil time.Duration // packets sent before then are lost
}

// burstPacket is the packet interval BurstLength counts in.
const burstPacket = time.Second / 60

// NewImpairer returns an Impairer for p, seeded with seed and stream.
func NewImpairer(p Profile, seed, stream uint64) (*Impairer, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Impairer{prof: p.withDefaults(), rng: rand.New(rand.NewPCG(seed, stream+0x9e3779b97f4a7c15))}, nil
}

// Fate is what happens to one packet.
type Fate struct {
	Lost      bool
	Reordered bool
	Delay     time.Duration // of the first copy
	Duplicate bool
	DupDelay  time.Duration // of the second copy
}

// Next decides the fate of a packet sent at now (time since any fixed
// origin, not decreasing from call to call). It draws the same seven
// random numbers whatever happens, so that one packet's fate never shifts
// the stream of the next.
func (im *Impairer) Next(now time.Duration) Fate {
	p, r := &im.prof, im.rng
	lossDraw, burstDraw, lengthDraw, dupDraw, reorderDraw := r.Float64(), r.Float64(), r.Float64(), r.Float64(), r.Float64()
	jitter, jitter2 := r.Float64(), r.Float64()
	if now >= im.burstUntil && p.BurstLoss > 0 {
		// The chance that a burst started since the last packet; it is
		// counted from this one.
		if ticks := float64(max(0, now-im.last)) / float64(burstPacket); burstDraw < -math.Expm1(math.Log1p(-p.BurstLoss)*ticks) {
			im.burstUntil = now + time.Duration(-math.Log(1-lengthDraw)*p.BurstLength*float64(burstPacket)) + 1
		}
	}
	im.last = now
	if now < im.burstUntil || lossDraw < p.Loss {
		return Fate{Lost: true}
	}
	f := Fate{Delay: p.Latency + time.Duration(jitter*float64(p.Jitter))}
	if reorderDraw < p.Reorder {
		f.Delay += p.ReorderDelay
		f.Reordered = true
	}
	if dupDraw < p.Duplicate {
		f.Duplicate, f.DupDelay = true, p.Latency+time.Duration(jitter2*float64(p.Jitter))
	}
	return f
}

type packet struct {
	at       time.Duration
	seq      uint64
	from     int
	injected bool // from Inject
	buf      []byte
}

// New returns a network of n nodes (2 to 64) whose links all follow p,
// seeded with seed.
func New(n int, seed uint64, p Profile) (*Network, error) {
	if n < 1 || n > maxNodes {
		return nil, fmt.Errorf("%w: %d", ErrNodes, n)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	nw := &Network{prof: p.withDefaults(), base: n, seed: seed}
	for range n {
		nw.AddNode()
	}
	return nw, nil
}

// AddNode adds a node to the network (a machine joining later: a
// spectator) and returns its index, or -1 when the network already has 64.
// The links between the nodes New made keep their random streams, so
// adding a node never changes the fate of their packets.
func (nw *Network) AddNode() int {
	n := len(nw.nodes)
	if n == maxNodes {
		return -1
	}
	nd := &node{ep: Endpoint{nw: nw, id: n}}
	nd.queue.Less = packetBefore
	nw.nodes = append(nw.nodes, nd)
	nw.links = append(nw.links, nil)
	for from := range nw.links {
		for len(nw.links[from]) <= n {
			to := len(nw.links[from])
			stream := uint64(from*nw.base + to)
			if from >= nw.base || to >= nw.base {
				stream = 1<<32 + uint64(from*maxNodes+to)
			}
			nw.links[from] = append(nw.links[from], &link{imp: Impairer{prof: nw.prof, rng: rand.New(rand.NewPCG(nw.seed, stream+0x9e3779b97f4a7c15))}})
		}
	}
	return n
}

// maxNodes bounds a network's nodes.
const maxNodes = 64

// Reliable makes every link a reliable, ordered byte stream over the same
// lossy link: a model of TCP, for comparing it with UDP and redundancy
// (the Gaffer article). A lost packet is retransmitted after two round
// trips (each retransmission may be lost again, up to maxAttempts), every
// later packet waits behind it (head-of-line blocking), and nothing is
// duplicated or reordered. Call it before the first Send.
func (nw *Network) Reliable() { nw.reliable = true }

// maxAttempts bounds a reliable packet's transmissions; a link that loses
// them all is as good as down, and the packet is dropped.
const maxAttempts = 16

func (nw *Network) sendReliable(l *link, from, to int, b []byte, f Fate) error {
	p := &nw.prof
	rto := 2 * 2 * (p.Latency + p.Jitter/2) // two round trips
	var wait time.Duration
	for attempt := 1; f.Lost; attempt++ {
		l.stats.Lost++
		if attempt == maxAttempts {
			return nil
		}
		wait += rto
		f = l.imp.Next(nw.now)
	}
	due := max(nw.now+wait+f.Delay, l.last)
	l.last = due
	nw.enqueue(from, to, b, due-nw.now, false)
	return nil
}

// Now returns the virtual time since the network was created.
func (nw *Network) Now() time.Duration { return nw.now }

// Advance moves the virtual clock forward by d.
func (nw *Network) Advance(d time.Duration) {
	if d > 0 {
		nw.now += d
	}
}

// Endpoint returns node i's endpoint, or nil when i is out of range.
func (nw *Network) Endpoint(i int) *Endpoint {
	if i < 0 || i >= len(nw.nodes) {
		return nil
	}
	return &nw.nodes[i].ep
}

// Nodes returns the number of nodes.
func (nw *Network) Nodes() int { return len(nw.nodes) }

// Link returns the statistics of the link from node from to node to.
func (nw *Network) Link(from, to int) LinkStats {
	if from < 0 || to < 0 || from >= len(nw.nodes) || to >= len(nw.nodes) {
		return LinkStats{}
	}
	return nw.links[from][to].stats
}

// Total returns the sum of every link's statistics.
func (nw *Network) Total() LinkStats {
	var t LinkStats
	for _, row := range nw.links {
		for _, l := range row {
			t.add(l.stats)
		}
	}
	return t
}

func (t *LinkStats) add(s LinkStats) {
	t.Sent += s.Sent
	t.Bytes += s.Bytes
	t.Delivered += s.Delivered
	t.Lost += s.Lost
	t.Duplicated += s.Duplicated
	t.Reordered += s.Reordered
	t.Injected += s.Injected
}

func (nw *Network) send(from, to int, b []byte) error {
	if len(b) > MTU {
		return ErrTooLarge
	}
	if nw.Tap != nil {
		nw.Tap(from, to, b)
	}
	l := nw.links[from][to]
	l.stats.Sent++
	l.stats.Bytes += len(b)
	f := l.imp.Next(nw.now)
	if nw.reliable {
		return nw.sendReliable(l, from, to, b, f)
	}
	if f.Lost {
		l.stats.Lost++
		return nil
	}
	if f.Reordered {
		l.stats.Reordered++
	}
	nw.enqueue(from, to, b, f.Delay, false)
	if f.Duplicate {
		l.stats.Duplicated++
		nw.enqueue(from, to, b, f.DupDelay, false)
	}
	return nil
}

// Inject delivers b to node to as if node from had sent it: its receiver
// cannot tell it from the datagrams from's endpoint sends. It bypasses the
// link's impairments: it arrives after the profile's fixed Latency, never
// lost, duplicated, reordered or delayed by jitter (the attacker's own
// path), and it draws nothing from the link's random stream, so injecting
// never changes the fate of the genuine traffic. It is counted only in the
// link's Injected, and [Endpoint.Injected] tells the receiving side's
// tests which datagrams were injected. It does not retain b.
func (nw *Network) Inject(from, to int, b []byte) error {
	if from < 0 || to < 0 || from >= len(nw.nodes) || to >= len(nw.nodes) || from == to {
		return ErrPeer
	}
	if len(b) > MTU {
		return ErrTooLarge
	}
	nw.links[from][to].stats.Injected++
	nw.enqueue(from, to, b, nw.prof.Latency, true)
	return nil
}

func (nw *Network) enqueue(from, to int, b []byte, delay time.Duration, injected bool) {
	var buf []byte
	if n := len(nw.pool); n > 0 {
		buf, nw.pool = nw.pool[n-1][:0], nw.pool[:n-1]
	} else {
		buf = make([]byte, 0, MTU)
	}
	nw.seq++
	nw.nodes[to].queue.Push(packet{at: nw.now + delay, seq: nw.seq, from: from, injected: injected, buf: append(buf, b...)})
}

// Endpoint is one node's view of the network; it implements
// rollback.Transport. Peer k is the k-th other node in ascending order.
type Endpoint struct {
	nw       *Network
	id       int
	injected bool // the last datagram Receive returned came from Inject
}

// Node returns the endpoint's node index.
func (e *Endpoint) Node() int { return e.id }

// Send queues b for delivery to peer. It does not retain b.
func (e *Endpoint) Send(peer int, b []byte) error {
	if peer < 0 || peer >= len(e.nw.nodes)-1 {
		return ErrPeer
	}
	to := peer
	if to >= e.id {
		to++
	}
	return e.nw.send(e.id, to, b)
}

// Receive copies the earliest packet due by now into buf and reports its
// length and sender; ok is false when nothing is due. A packet longer than
// buf is truncated to len(buf).
func (e *Endpoint) Receive(buf []byte) (n, peer int, ok bool) {
	q := &e.nw.nodes[e.id].queue
	if q.Len() == 0 || q.Items[0].at > e.nw.now {
		return 0, 0, false
	}
	p := q.Pop()
	n = copy(buf, p.buf)
	e.nw.pool = append(e.nw.pool, p.buf)
	e.injected = p.injected
	if !p.injected {
		e.nw.links[p.from][e.id].stats.Delivered++
	}
	peer = p.from
	if peer > e.id {
		peer--
	}
	return n, peer, true
}

// Injected reports whether the datagram the last successful Receive
// returned was injected ([Network.Inject]) rather than sent by a node's
// endpoint. The session under test cannot see it; its tests use it to
// count the forged datagrams the session took.
func (e *Endpoint) Injected() bool { return e.injected }
