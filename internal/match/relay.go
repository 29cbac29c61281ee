package match

import (
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rewindgg/rewind/relay"
	"github.com/rewindgg/rewind/rollback"
	"github.com/rewindgg/rewind/rollback/netsim"
)

// relayNode is the relay topology of a netsim match (Config.Relay): node
// machines of the network is the relay, and each machine's transport is a
// relay.Client over its endpoint.
type relayNode struct {
	r       *relay.Relay
	node    int
	clients []*relay.Client
	// With Config.RelayDiesAt: the second relay, node+1, which the
	// machines move to RelayMoveAfter later; moved once they have.
	next  *relay.Relay
	moved bool
	// With Config.RelayClock: the relay's decisions, machine by machine.
	decisions []decided
}

// decided is one of the relay clock's decisions.
type decided struct {
	machine int
	frame   int32
	inputs  []uint64
}

// checkRelay refuses what the relay topology does not carry yet.
func checkRelay(c Config, machines int) error {
	switch {
	case !c.Relay:
		return nil
	case machines < 2:
		return fmt.Errorf("%w: the relay topology needs two machines", ErrConfig)
	case c.Spectators > 0:
		return fmt.Errorf("%w: the relay topology without spectators (not built yet)", ErrConfig)
	case c.RelayDiesAt < 0 || c.RelayMoveAfter < 0:
		return fmt.Errorf("%w: negative RelayDiesAt or RelayMoveAfter", ErrConfig)
	case c.RelayClock && (c.RelayDiesAt > 0 || c.RelayAllowance < 0):
		return fmt.Errorf("%w: the relay clock without RelayDiesAt (not built yet), with RelayAllowance ≥ 0", ErrConfig)
	}
	return nil
}

// relayNodes is how many relay nodes a match of c has.
func relayNodes(c Config) int {
	switch {
	case !c.Relay:
		return 0
	case c.RelayDiesAt > 0:
		return 2
	}
	return 1
}

// newRelayNode makes the relay of a network of machines+relayNodes(c)
// nodes: node machines, and machines+1 with Config.RelayDiesAt.
func newRelayNode(nw *netsim.Network, machines int, c Config) (*relayNode, error) {
	var link relay.Link = nw.Endpoint(machines)
	if c.relayLink != nil {
		link = c.relayLink(nw, link)
	}
	rl := &relayNode{node: machines}
	var clk *relay.Clock
	var pub ed25519.PublicKey
	if c.RelayClock {
		// The lobby's key pair for the match's relay: every machine gets
		// the public key.
		seed := make([]byte, ed25519.SeedSize)
		_, _ = seededRand(c.Seed, 0xc10c, 0).Read(seed)
		key := ed25519.NewKeyFromSeed(seed)
		pub = key.Public().(ed25519.PublicKey)
		clk = &relay.Clock{Key: key, Allowance: c.RelayAllowance, OnDecide: func(slot int, f int32, in []uint64) {
			rl.decisions = append(rl.decisions, decided{slot, f, slices.Clone(in)})
		}}
	}
	r, err := relay.New(relay.Config{Machines: machines, Link: link, Tick: Tick, Clock: clk})
	if err != nil {
		return nil, err
	}
	rl.r = r
	if c.RelayDiesAt > 0 {
		if rl.next, err = relay.New(relay.Config{Machines: machines, Link: nw.Endpoint(machines + 1), Tick: Tick}); err != nil {
			return nil, err
		}
	}
	for i := range machines {
		// The relay is the last node: every machine's peer machines-1.
		c, err := relay.NewClient(nw.Endpoint(i), machines-1, i, machines)
		if err != nil {
			return nil, err
		}
		if pub != nil {
			if err := c.UseClock(pub); err != nil {
				return nil, err
			}
		}
		rl.clients = append(rl.clients, c)
	}
	return rl, nil
}

// hopProfile is the profile of each of a relayed path's two hops, so that
// the path through the relay is as impaired as a mesh link with p: half
// the latency and jitter, and each chance of loss, duplication and
// reordering, and of a burst starting, such that two hops come to p's.
// Bursts last as long; a reordered packet is held back as long.
func hopProfile(p netsim.Profile) netsim.Profile {
	half := func(pr float64) float64 { return 1 - math.Sqrt(1-pr) }
	reorderDelay := p.ReorderDelay
	if p.Reorder > 0 && reorderDelay == 0 {
		reorderDelay = 2*p.Jitter + 10*time.Millisecond // netsim's default for p
	}
	return netsim.Profile{Latency: p.Latency / 2, Jitter: p.Jitter / 2,
		Loss: half(p.Loss), BurstLoss: half(p.BurstLoss), BurstLength: p.BurstLength,
		Duplicate: half(p.Duplicate), Reorder: half(p.Reorder), ReorderDelay: reorderDelay}
}

// wire counts, per machine, what crossed the network: in the relay
// topology the machine's link to the relay each way, in the mesh its
// links to the other machines.
func wire(nw *netsim.Network, machines int, rl *relayNode, r *Result) {
	for i := range machines {
		if rl != nil {
			for node := rl.node; node < nw.Nodes(); node++ { // the relays: the nodes after the machines
				up, down := nw.Link(i, node), nw.Link(node, i)
				r.UpPackets, r.UpBytes = r.UpPackets+int64(up.Sent), r.UpBytes+int64(up.Bytes)
				r.DownPackets, r.DownBytes = r.DownPackets+int64(down.Sent), r.DownBytes+int64(down.Bytes)
			}
			continue
		}
		for j := range machines {
			up, down := nw.Link(i, j), nw.Link(j, i)
			r.UpPackets, r.UpBytes = r.UpPackets+int64(up.Sent), r.UpBytes+int64(up.Bytes)
			r.DownPackets, r.DownBytes = r.DownPackets+int64(down.Sent), r.DownBytes+int64(down.Bytes)
		}
	}
}

// poll runs the relays at network time now: the first until it dies
// (Config.RelayDiesAt; what reaches it after is never read), the second,
// once the machines have moved to it RelayMoveAfter later.
func (rl *relayNode) poll(nw *netsim.Network, c Config) {
	now := nw.Now()
	if rl.next == nil || now < c.RelayDiesAt {
		rl.r.Poll(now)
		return
	}
	if !rl.moved && now >= c.RelayDiesAt+c.RelayMoveAfter {
		rl.moved = true
		for i, cl := range rl.clients {
			// The second relay is node rl.node+1: machine i's peer rl.node.
			if err := cl.Move(nw.Endpoint(i), rl.node); err != nil {
				panic(err) // a valid link and peer: cannot fail
			}
		}
	}
	rl.next.Poll(now)
}

// injector delivers an off-path attacker's datagram b to machine to as
// the relay would forward one from machine from: in an envelope from the
// relay's node, its source address (Config.Forge).
func (rl *relayNode) injector(nw *netsim.Network) func(from, to int, b []byte) {
	var env []byte
	return func(from, to int, b []byte) {
		env = append(env[:0], 0xe1, byte(from)) // an envelope of one record (docs/protocol.md)
		env = binary.AppendUvarint(env, uint64(len(b)))
		env = append(env, b...)
		_ = nw.Inject(rl.node, to, env)
	}
}

// flush sends what machine i's session sent in its tick, in one envelope.
func (rl *relayNode) flush(i int) {
	if rl != nil {
		_ = rl.clients[i].Flush() // an error is a datagram lost
	}
}

// decided puts the relay clock's decisions into the truth: they are the
// final inputs of their frames, on every machine.
func (rl *relayNode) decided(rn *run, r *Result) {
	if rl == nil || !rn.c.RelayClock {
		return
	}
	r.Decisions = rl.r.Stats().Decisions
	decided := make([]bool, len(rn.truth))
	for _, d := range rl.decisions {
		m := &rn.ms[d.machine]
		for j, p := range m.players {
			if k := int(d.frame)*rn.c.Players + int(p); j < len(d.inputs) && k < len(rn.truth) {
				rn.truth[k], decided[k] = rollback.Input(d.inputs[j]), true
			}
		}
	}
	// The frames a machine caught up on its own repeat the final input of
	// the frame before (decided or not), unless the relay decided them.
	for k := rn.c.Players; k < len(rn.truth); k++ {
		if rn.repeated[k] && !decided[k] {
			rn.truth[k] = rn.truth[k-rn.c.Players]
		}
	}
	for i := range rn.ms {
		r.DecisionConflicts += rn.ms[i].s.Stats().DecisionConflicts
	}
}

// noteRepeated marks, with the relay clock, the frames machine m's
// session added its players' inputs for on its own in its last Advance:
// decided ones, and those it caught up (rollback's catchUpClock).
func (rn *run) noteRepeated(m *machine) {
	if m.lastIn == nil {
		return
	}
	for k, p := range m.players {
		for f := m.lastIn[k] + 1; f < m.s.InputFrame(p); f++ {
			if i := int(f)*rn.c.Players + int(p); i < len(rn.repeated) {
				rn.repeated[i] = true
			}
		}
		m.lastIn[k] = max(m.lastIn[k], m.s.InputFrame(p)-1)
	}
}

// transport is machine i's transport.
func (rl *relayNode) transport(i int) rollback.Transport { return rl.clients[i] }

// relaySecret is the sessions' Config.Secret in the relay topology: what
// a lobby hands every machine of the match and never the relay, without
// which the relay could sit in the middle of the handshakes.
func relaySecret(c Config) []byte {
	b := make([]byte, 16)
	_, _ = seededRand(c.Seed, 0x5ec7e7, 0).Read(b)
	return b
}
