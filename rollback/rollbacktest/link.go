package rollbacktest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file is the links: what happens to a datagram between a machine's
// session and the network. Links are named by nodes, from → to; a link
// with no rule hands every datagram to the network at once.

// port is a node's rollback.Transport: sends go through the link rules,
// receives come from the network.
type port struct {
	e    *Env
	node int
}

func (p *port) Send(peer int, b []byte) error {
	to := peer
	if to >= p.node {
		to++
	}
	return p.e.send(p.node, to, b)
}

func (p *port) Receive(buf []byte) (int, int, bool) {
	return p.e.nw.Endpoint(p.node).Receive(buf)
}

// peerIndex returns node to's transport index in node from's view.
func peerIndex(from, to int) int {
	if to > from {
		return to - 1
	}
	return to
}

// link is the rules of one directed link.
type link struct {
	drop    int           // datagrams still to drop; -1: every one
	hold    bool          // keep every datagram until Deliver
	delay   time.Duration // keep every datagram this long
	queue   []queued
	dropped int
}

type queued struct {
	due time.Duration // -1: held until Deliver
	b   []byte
}

func (e *Env) link(from, to int) *link {
	k := [2]int{from, to}
	l := e.links[k]
	if l == nil {
		l = &link{}
		e.links[k] = l
	}
	return l
}

func (e *Env) send(from, to int, b []byte) error {
	if l := e.links[[2]int{from, to}]; l != nil {
		switch {
		case l.drop != 0:
			if l.drop > 0 {
				l.drop--
			}
			l.dropped++
			return nil
		case l.hold:
			l.queue = append(l.queue, queued{due: -1, b: bytes.Clone(b)})
			return nil
		case l.delay > 0:
			l.queue = append(l.queue, queued{due: e.nw.Now() + l.delay, b: bytes.Clone(b)})
			return nil
		}
	}
	return e.nw.Endpoint(from).Send(peerIndex(from, to), b)
}

// release sends on every delayed datagram now due.
func (e *Env) release() {
	for _, k := range e.linkKeys() {
		l := e.links[k]
		kept := l.queue[:0]
		for _, q := range l.queue {
			if q.due >= 0 && q.due <= e.nw.Now() {
				_ = e.nw.Endpoint(k[0]).Send(peerIndex(k[0], k[1]), q.b)
			} else {
				kept = append(kept, q)
			}
		}
		l.queue = kept
	}
}

// linkKeys returns the links with rules, in order.
func (e *Env) linkKeys() [][2]int {
	var ks [][2]int
	for k := range e.links {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	return ks
}

func (e *Env) checkLink(from, to int) error {
	if from < 0 || to < 0 || from >= e.nw.Nodes() || to >= e.nw.Nodes() || from == to {
		return fmt.Errorf("rollbacktest: no link %d→%d", from, to)
	}
	return nil
}

// Drop drops the next n datagrams sent from node from to node to (every
// one, until Heal, when n is negative).
func (e *Env) Drop(from, to, n int) error {
	if err := e.checkLink(from, to); err != nil {
		return err
	}
	e.link(from, to).drop = n
	return nil
}

// Hold keeps every datagram sent from node from to node to, until Deliver
// or Heal.
func (e *Env) Hold(from, to int) error {
	if err := e.checkLink(from, to); err != nil {
		return err
	}
	e.link(from, to).hold = true
	return nil
}

// Delay keeps every datagram sent from node from to node to for d before
// it goes on the network (0: no more delay; those kept still wait).
func (e *Env) Delay(from, to int, d time.Duration) error {
	if err := e.checkLink(from, to); err != nil {
		return err
	}
	e.link(from, to).delay = d
	return nil
}

// Deliver puts on the network the n oldest datagrams held on the link (all
// of them when n is negative), newest first when reverse is set, and
// returns how many.
func (e *Env) Deliver(from, to, n int, reverse bool) (int, error) {
	if err := e.checkLink(from, to); err != nil {
		return 0, err
	}
	l := e.link(from, to)
	var out [][]byte
	kept := l.queue[:0]
	for _, q := range l.queue {
		if q.due < 0 && (n < 0 || len(out) < n) {
			out = append(out, q.b)
		} else {
			kept = append(kept, q)
		}
	}
	l.queue = kept
	if reverse {
		slices.Reverse(out)
	}
	for _, b := range out {
		_ = e.nw.Endpoint(from).Send(peerIndex(from, to), b)
	}
	return len(out), nil
}

// Heal removes the link's rules and delivers what it held or delayed.
func (e *Env) Heal(from, to int) error {
	if err := e.checkLink(from, to); err != nil {
		return err
	}
	l := e.link(from, to)
	l.drop, l.hold, l.delay = 0, false, 0
	for _, q := range l.queue {
		_ = e.nw.Endpoint(from).Send(peerIndex(from, to), q.b)
	}
	l.queue = nil
	return nil
}

// Links returns a line per link with rules or traffic held: what it does
// and how many datagrams it dropped and holds.
func (e *Env) Links() string {
	var out strings.Builder
	for _, k := range e.linkKeys() {
		l := e.links[k]
		var rules []string
		switch {
		case l.drop < 0:
			rules = append(rules, "drop all")
		case l.drop > 0:
			rules = append(rules, fmt.Sprintf("drop next %d", l.drop))
		}
		if l.hold {
			rules = append(rules, "hold")
		}
		if l.delay > 0 {
			rules = append(rules, fmt.Sprintf("delay %v", l.delay))
		}
		if len(rules) == 0 {
			rules = append(rules, "pass")
		}
		fmt.Fprintf(&out, "%d→%d: %s, dropped=%d queued=%d\n", k[0], k[1], strings.Join(rules, ", "), l.dropped, len(l.queue))
	}
	return out.String()
}

// seen is what the network carried on one directed link: the kinds of
// datagram, the last handshake and the last sealed input packet.
type seen struct {
	kinds  map[wire.Kind]int
	hs     *wire.Handshake
	sealed []byte
}

// observe is the network's Tap.
func (e *Env) observe(from, to int, b []byte) {
	if len(b) == 0 {
		return
	}
	k := [2]int{from, to}
	sn := e.seen[k]
	if sn == nil {
		sn = &seen{kinds: map[wire.Kind]int{}}
		e.seen[k] = sn
	}
	kind := kindOf(b)
	sn.kinds[kind]++
	switch kind {
	case wire.KindHandshake:
		var h wire.Handshake
		if wire.ParseHandshake(b, &h, nil) == nil {
			h.Terms.Owners, h.Terms.Layout, h.Local = slices.Clone(h.Terms.Owners), slices.Clone(h.Terms.Layout), slices.Clone(h.Local)
			sn.hs = &h
		}
	case wire.KindInput:
		sn.sealed = bytes.Clone(b)
	}
}

// kindOf returns a datagram's kind: a sealed one's is in its first
// byte's high four bits, a handshake's is the first byte.
func kindOf(b []byte) wire.Kind {
	if b[0]>>4 == 0 {
		return wire.Kind(b[0])
	}
	return wire.Kind(b[0] >> 4)
}

// Traffic returns the kinds of datagram the network carried from node from
// to node to so far (sorted by name), or "none".
func (e *Env) Traffic(from, to int) string {
	sn := e.seen[[2]int{from, to}]
	if sn == nil {
		return "none"
	}
	var names []string
	for k := range sn.kinds {
		names = append(names, k.String())
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

// NetworkStats returns what the network did with the datagrams sent from node
// from to node to: sent, lost by the profile's impairments, delivered.
// Datagrams a link rule dropped or still holds never reached the network.
func (e *Env) NetworkStats(from, to int) (string, error) {
	if err := e.checkLink(from, to); err != nil {
		return "", err
	}
	st := e.nw.Link(from, to)
	return fmt.Sprintf("%d→%d: sent=%d lost=%d delivered=%d\n", from, to, st.Sent, st.Lost, st.Delivered), nil
}
