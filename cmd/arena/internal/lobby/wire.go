package lobby

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/rewindgg/rewind/rollback"
)

// The wire format. Every lobby datagram starts with a 6-byte header:
//
//	"RWLB" version kind
//
// To a session (docs/protocol.md), "R" starts a sealed datagram whose MAC
// cannot check out, so a lobby datagram that reaches a session late is
// dropped there as junk; here, anything without the header, or with bytes
// the message does not explain, is dropped as junk. Integers are
// big-endian. After the header:
//
//	hello (joiner to host): nonce u64, humans u8, wants u8 (bit 0 frames, bit 1
//	      round frames, bit 2 target: the settings the joiner was given),
//	      frames u32, round frames u32, target u8
//	plan  (host to joiner): nonce u64 (the hello's), machine u8, machines u8,
//	      players u8, frames u32, round frames u32, target u8, session id u64,
//	      seed u64, secret [32],
//	      then for each machine: humans u8, n u8, its n players [n]u8,
//	      addrLen u8, its address [addrLen] (netip.AddrPort binary)
//	ack   (joiner to host): nonce u64 (the plan's)
//	full  (host to joiner): nonce u64 (the hello's)
//	refuse (host to joiner): nonce u64 (the hello's), frames u32, round
//	      frames u32, target u8: the host's settings, which differ from
//	      those the joiner wants
//
// The nonce, random for each Join, binds a plan or a refusal to the hello
// that asked for it, and an ack to the plan it acknowledges.
const (
	magic   = "RWLB"
	version = 2 // 2: the plan carries the rules (round frames, target); a hello the settings it wants
	header  = len(magic) + 2

	kindHello  = 1
	kindPlan   = 2
	kindAck    = 3
	kindFull   = 4
	kindRefuse = 5

	maxMachines = rollback.MaxPlayers // every machine plays at least one ship
	maxHumans   = 2                   // players at one machine
	secretSize  = 32
	// maxAddr bounds an address's binary form: 16 bytes of IPv6, 2 of port,
	// and an IPv6 zone name (an interface name, at most 15 bytes on Linux).
	maxAddr = 16 + 2 + 32
	// maxDatagram is larger than any valid lobby datagram (a plan is at
	// most 74 bytes of fixed fields and 3+8+maxAddr bytes a machine).
	maxDatagram = 1024
)

// message is one lobby datagram, decoded.
type message struct {
	kind   byte
	nonce  uint64 // the joiner's, chosen for its hello and echoed by the rest
	humans int    // hello: how many humans the joiner brings
	// hello: the settings the joiner wants (those of wants); refuse: the
	// host's.
	settings Settings
	wants    Wants
	plan     Plan // plan: the joiner's plan (its Machine is the joiner's index)
}

// append appends m's encoding to b. m must be valid (as parse returns).
func (m message) append(b []byte) []byte {
	b = append(b, magic...)
	b = append(b, version, m.kind)
	b = binary.BigEndian.AppendUint64(b, m.nonce)
	switch m.kind {
	case kindHello:
		b = append(b, byte(m.humans), m.wants.bits())
		b = m.settings.append(b)
	case kindRefuse:
		b = m.settings.append(b)
	case kindPlan:
		p := &m.plan
		b = append(b, byte(p.Machine), byte(p.Machines), byte(p.Players))
		b = binary.BigEndian.AppendUint32(b, uint32(p.Frames))
		b = binary.BigEndian.AppendUint32(b, uint32(p.RoundFrames))
		b = append(b, byte(p.Target))
		b = binary.BigEndian.AppendUint64(b, p.SessionID)
		b = binary.BigEndian.AppendUint64(b, p.Seed)
		b = append(b, p.Secret...)
		for i := range p.Machines {
			b = append(b, byte(p.Humans[i]), byte(len(p.Owners[i])))
			for _, pl := range p.Owners[i] {
				b = append(b, byte(pl))
			}
			addr, _ := p.Addrs[i].MarshalBinary() // never fails
			b = append(b, byte(len(addr)))
			b = append(b, addr...)
		}
	}
	return b
}

// parse decodes a lobby datagram. It never panics, allocates only what
// the bounds above allow, and accepts only well-formed messages: a plan it
// returns passes Plan.check, a hello asks for 0 to 2 humans, and no
// message has bytes left over.
func parse(b []byte) (message, error) {
	if len(b) < header || string(b[:len(magic)]) != magic {
		return message{}, errors.New("lobby: not a lobby datagram")
	}
	if b[len(magic)] != version {
		return message{}, fmt.Errorf("lobby: version %d (want %d)", b[len(magic)], version)
	}
	m := message{kind: b[len(magic)+1]}
	r := reader{b: b[header:]}
	m.nonce = r.u64()
	switch m.kind {
	case kindHello:
		m.humans = r.u8()
		if m.humans < 0 || m.humans > maxHumans {
			return message{}, fmt.Errorf("lobby: hello with %d humans", m.humans)
		}
		w := r.u8()
		if w > 7 {
			return message{}, fmt.Errorf("lobby: hello wanting settings %#x", w)
		}
		m.wants = Wants{Frames: w&1 != 0, RoundFrames: w&2 != 0, Target: w&4 != 0}
		m.settings = r.settings()
	case kindRefuse:
		m.settings = r.settings()
	case kindPlan:
		var err error
		if m.plan, err = r.plan(); err != nil {
			return message{}, err
		}
	case kindAck, kindFull:
	default:
		return message{}, fmt.Errorf("lobby: unknown kind %d", m.kind)
	}
	if r.short {
		return message{}, errors.New("lobby: truncated datagram")
	}
	if len(r.b) > 0 {
		return message{}, fmt.Errorf("lobby: %d bytes left over", len(r.b))
	}
	return m, nil
}

// append appends s's encoding: frames u32, round frames u32, target u8.
func (s Settings) append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(s.Frames))
	b = binary.BigEndian.AppendUint32(b, uint32(s.RoundFrames))
	return append(b, byte(s.Target))
}

func (r *reader) settings() Settings {
	return Settings{Frames: int(r.u32()), RoundFrames: int(r.u32()), Target: r.u8()}
}

func (w Wants) bits() byte {
	var b byte
	for i, on := range []bool{w.Frames, w.RoundFrames, w.Target} {
		if on {
			b |= 1 << i
		}
	}
	return b
}

// plan decodes a plan's fields after its nonce.
func (r *reader) plan() (Plan, error) {
	p := Plan{Machine: r.u8(), Machines: r.u8(), Players: r.u8()}
	p.Frames = int(r.u32())
	p.RoundFrames = int(r.u32())
	p.Target = r.u8()
	p.SessionID = r.u64()
	p.Seed = r.u64()
	p.Secret = append([]byte(nil), r.bytes(secretSize)...)
	if p.Machines > maxMachines {
		return Plan{}, fmt.Errorf("lobby: %d machines", p.Machines)
	}
	for range p.Machines {
		humans, n := r.u8(), r.u8()
		if n > rollback.MaxPlayers {
			return Plan{}, fmt.Errorf("lobby: a machine with %d players", n)
		}
		owned := make([]rollback.PlayerID, 0, n)
		for _, pl := range r.bytes(n) {
			owned = append(owned, rollback.PlayerID(pl))
		}
		var addr netip.AddrPort
		if size := r.u8(); size > maxAddr {
			return Plan{}, fmt.Errorf("lobby: a %d-byte address", size)
		} else if b := r.bytes(size); !r.short {
			if err := addr.UnmarshalBinary(b); err != nil {
				return Plan{}, fmt.Errorf("lobby: %w", err)
			}
		}
		p.Humans = append(p.Humans, humans)
		p.Owners = append(p.Owners, owned)
		p.Addrs = append(p.Addrs, addr)
	}
	if r.short {
		return Plan{}, errors.New("lobby: truncated plan")
	}
	if p.Machine == 0 {
		return Plan{}, errors.New("lobby: a plan for the host") // the host sends plans only to joiners
	}
	return p, p.check()
}

// check reports whether p is a plan a session can be built from: every
// player owned by exactly one machine, each machine with 0 to 2 humans,
// and every field in range.
func (p *Plan) check() error {
	switch {
	case p.Machines < 2 || p.Machines > maxMachines:
		return fmt.Errorf("lobby: plan for %d machines", p.Machines)
	case p.Machine < 0 || p.Machine >= p.Machines:
		return fmt.Errorf("lobby: plan for machine %d of %d", p.Machine, p.Machines)
	case p.Players < 1 || p.Players > rollback.MaxPlayers:
		return fmt.Errorf("lobby: plan for %d players", p.Players)
	case len(p.Owners) != p.Machines || len(p.Humans) != p.Machines || len(p.Addrs) != p.Machines:
		return errors.New("lobby: plan lists the wrong number of machines")
	case p.SessionID == 0:
		return errors.New("lobby: plan with session id 0")
	case len(p.Secret) != secretSize:
		return fmt.Errorf("lobby: plan with a %d-byte secret", len(p.Secret))
	case p.Frames < 0:
		return fmt.Errorf("lobby: plan with %d frames", p.Frames)
	case p.RoundFrames < 0 || p.Target < 0 || p.Target > 255:
		return fmt.Errorf("lobby: plan with rounds of %d frames to %d", p.RoundFrames, p.Target)
	}
	var owned [rollback.MaxPlayers]bool
	count := 0
	for i, ps := range p.Owners {
		if h := p.Humans[i]; h < 0 || h > maxHumans || h > len(ps) {
			return fmt.Errorf("lobby: machine %d has %d humans for %d players", i, h, len(ps))
		}
		if i > 0 && !p.Addrs[i].IsValid() {
			return fmt.Errorf("lobby: machine %d has no address", i)
		}
		for _, pl := range ps {
			if pl < 0 || int(pl) >= p.Players || owned[pl] {
				return fmt.Errorf("lobby: player %d owned twice or out of range", pl)
			}
			owned[pl] = true
			count++
		}
	}
	if count != p.Players {
		return fmt.Errorf("lobby: %d of %d players owned", count, p.Players)
	}
	return nil
}

// reader decodes a datagram's fields in turn. Reading past the end sets
// short and yields zeros, so that a decoder checks once, at the end.
type reader struct {
	b     []byte
	short bool
}

func (r *reader) bytes(n int) []byte {
	if r.short || n > len(r.b) {
		r.short = true
		return nil
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b
}

func (r *reader) u8() int {
	if b := r.bytes(1); b != nil {
		return int(b[0])
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.bytes(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.bytes(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}
