package netsim

import (
	"fmt"
	"time"
)

// NodeClock says how a node's clock runs against the network's: local
// time = Offset + Rate × network time. The zero value is a clock in step
// with the network. A negative Offset is a node that starts later; a Rate
// of 0.97 a node whose clock (and so its 60 Hz loop) runs 3% slow.
type NodeClock struct {
	Offset time.Duration
	Rate   float64 // 0 means 1
}

// Freeze is a stretch of network time during which a node does not run (a
// hiccup: the process is descheduled, a debugger breaks in). Its clock
// keeps going; it just cannot act.
type Freeze struct {
	At, For time.Duration
}

type nodeTime struct {
	clock   NodeClock
	freezes []Freeze
}

// SetNodeClock sets node i's clock.
func (nw *Network) SetNodeClock(i int, c NodeClock) error {
	if i < 0 || i >= len(nw.nodes) || c.Rate < 0 {
		return fmt.Errorf("%w: node %d, rate %v", ErrNodes, i, c.Rate)
	}
	nw.nodes[i].time.clock = c
	return nil
}

// AddFreeze makes node i freeze for f.For from network time f.At.
func (nw *Network) AddFreeze(i int, f Freeze) error {
	if i < 0 || i >= len(nw.nodes) || f.For < 0 {
		return fmt.Errorf("%w: node %d", ErrNodes, i)
	}
	nw.nodes[i].time.freezes = append(nw.nodes[i].time.freezes, f)
	return nil
}

// NodeNow returns node i's local time.
func (nw *Network) NodeNow(i int) time.Duration {
	c := nw.nodes[i].time.clock
	rate := c.Rate
	if rate == 0 {
		rate = 1
	}
	return c.Offset + time.Duration(rate*float64(nw.now))
}

// Frozen reports whether node i is frozen now.
func (nw *Network) Frozen(i int) bool {
	for _, f := range nw.nodes[i].time.freezes {
		if nw.now >= f.At && nw.now < f.At+f.For {
			return true
		}
	}
	return false
}

// Clock returns node i's clock, for rollback.Config.Clock: NodeNow(i).
func (nw *Network) Clock(i int) func() time.Duration {
	return func() time.Duration { return nw.NodeNow(i) }
}
