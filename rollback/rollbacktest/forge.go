package rollbacktest

import (
	"bytes"
	"fmt"

	"github.com/rewindgg/rewind/rollback/internal/wire"
)

// This file puts datagrams on a link that no session sent: an attacker's,
// made with the wire format's own encoders (rollback/internal/wire) and
// slipped in before the genuine traffic by the machine's fakepeer wrapper.

// ForgeKind is a kind of datagram [Env.Forge] makes.
type ForgeKind uint8

// Kinds of forged datagram.
const (
	// ForgeHello is a spectator's first handshake (no players, echoing
	// nothing) under a fresh nonce and key: what anyone who knows the
	// session id sends to watch. The target's answer tells the sender a
	// nonce of the target's ([Forgery].EchoLeaked).
	ForgeHello ForgeKind = 1 + iota
	// ForgeHandshake is a machine's handshake: From's players, the terms
	// the target sends, a fresh nonce and key, and the Echo given.
	ForgeHandshake
	// ForgeJunk is Size random bytes.
	ForgeJunk
	// ForgeReplay is the last input packet From really sent To, unchanged.
	ForgeReplay
	// ForgeTamper is that packet with a bit of its MAC flipped.
	ForgeTamper
)

var forgeKinds = map[string]ForgeKind{"hello": ForgeHello, "handshake": ForgeHandshake, "junk": ForgeJunk,
	"replay": ForgeReplay, "tamper": ForgeTamper}

func (k ForgeKind) String() string {
	for name, kind := range forgeKinds {
		if kind == k {
			return name
		}
	}
	return fmt.Sprintf("ForgeKind(%d)", uint8(k))
}

// ParseForgeKind returns the kind named name: hello, handshake, junk,
// replay or tamper.
func ParseForgeKind(name string) (ForgeKind, error) {
	k, ok := forgeKinds[name]
	if !ok {
		return 0, fmt.Errorf("rollbacktest: unknown forgery %q", name)
	}
	return k, nil
}

// Forgery describes the datagrams of one call to [Env.Forge].
type Forgery struct {
	Kind ForgeKind
	// From is the node whose address the datagrams come from (a
	// machine's: spoofed), or Stranger; To is the machine that receives
	// them.
	From, To int
	// N is how many (0 means 1). Handshakes take nonces Nonce, Nonce+1, …
	// (0 means a nonce drawn from the seed).
	N     int
	Nonce uint64
	// Echo is the nonce a handshake echoes; EchoLeaked echoes instead the
	// nonce To answered the stranger's hello with (ForgeHello before).
	Echo       uint64
	EchoLeaked bool
	// SessionID of a handshake; 0 means the one To sends.
	SessionID uint64
	// Size of junk; 0 means 1 byte.
	Size int
}

// Forge delivers f's datagrams to machine f.To as if they came from
// f.From's address, before anything the network brings at its next
// receive, and returns what it did.
func (e *Env) Forge(f Forgery) (string, error) {
	to, err := e.machine(f.To)
	if err != nil {
		return "", err
	}
	from := f.From
	if from == Stranger {
		if e.stranger < 0 {
			e.stranger = e.nw.AddNode()
		}
		from = e.stranger
	} else if from < 0 || from >= e.nw.Nodes() || from == f.To {
		return "", fmt.Errorf("rollbacktest: no node %d to forge from", f.From)
	}
	n := max(f.N, 1)
	var bs [][]byte
	switch f.Kind {
	case ForgeHello, ForgeHandshake:
		own := e.handshakeOf(f.To)
		if own == nil {
			return "", fmt.Errorf("rollbacktest: machine %d has sent no handshake yet", f.To)
		}
		h := wire.Handshake{Version: wire.Version, SessionID: own.SessionID, Echo: f.Echo, Terms: own.Terms}
		if f.SessionID != 0 {
			h.SessionID = f.SessionID
		}
		if f.EchoLeaked {
			leak := e.seen[[2]int{f.To, e.stranger}]
			if e.stranger < 0 || leak == nil || leak.hs == nil {
				return "", fmt.Errorf("rollbacktest: machine %d answered no hello of the stranger", f.To)
			}
			h.Echo = leak.hs.Nonce
		}
		if f.Kind == ForgeHandshake && from < len(e.machines) {
			h.Local = []uint8{uint8(from)}
		}
		share, err := wire.NewKeyShare(e.src)
		if err != nil {
			return "", err
		}
		h.Key = share.Public()
		h.Nonce = f.Nonce
		if h.Nonce == 0 {
			h.Nonce = e.rng.Uint64() | 1
		}
		for range n {
			b, err := wire.AppendHandshake(nil, &h, nil)
			if err != nil {
				return "", err
			}
			bs = append(bs, b)
			h.Nonce++
		}
	case ForgeJunk:
		for range n {
			b := make([]byte, max(f.Size, 1))
			for i := range b {
				b[i] = byte(e.rng.Uint32())
			}
			bs = append(bs, b)
		}
	case ForgeReplay, ForgeTamper:
		sn := e.seen[[2]int{from, f.To}]
		if sn == nil || sn.sealed == nil {
			return "", fmt.Errorf("rollbacktest: node %d has sent machine %d no input packet yet", from, f.To)
		}
		for k := range n {
			b := bytes.Clone(sn.sealed)
			if f.Kind == ForgeTamper {
				b[len(b)-1-k%4] ^= 0x80
			}
			bs = append(bs, b)
		}
	default:
		return "", fmt.Errorf("rollbacktest: unknown forgery %d", f.Kind)
	}
	peer := peerIndex(f.To, from)
	to.wrap.Deliver(peer, bs...)
	return fmt.Sprintf("%d %v datagrams %d→%d", len(bs), f.Kind, from, f.To), nil
}

// handshakeOf returns the last handshake machine i sent a machine.
func (e *Env) handshakeOf(i int) *wire.Handshake {
	var last *wire.Handshake
	for j := range e.machines {
		if sn := e.seen[[2]int{i, j}]; j != i && sn != nil && sn.hs != nil {
			last = sn.hs
		}
	}
	return last
}
