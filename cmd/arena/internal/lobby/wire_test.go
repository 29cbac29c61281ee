package lobby

import (
	"bytes"
	"net/netip"
	"reflect"
	"testing"

	"github.com/rewindgg/rewind/rollback"
)

// testPlan is machine 1's plan of a 3-machine match of 6 ships: the host
// has a human and 2 bots, machine 1 two humans, machine 2 one.
func testPlan() Plan {
	return Plan{Machine: 1, Machines: 3, Players: 6,
		Owners: [][]rollback.PlayerID{{0, 4, 5}, {1, 2}, {3}},
		Humans: []int{1, 2, 1},
		Addrs: []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:7000"),
			netip.MustParseAddrPort("192.168.1.20:50123"), netip.MustParseAddrPort("[fe80::1%eth0]:7001")},
		SessionID: 0x0123456789abcdef, Secret: bytes.Repeat([]byte{0xa5}, secretSize), Seed: 42, Frames: 3600, RoundFrames: 1800, Target: 7}
}

// validMessages returns one message of each kind.
func validMessages() map[string]message {
	eight := Plan{Machine: 7, Machines: 8, Players: 8, SessionID: 1, Secret: make([]byte, secretSize)}
	for m := range 8 {
		eight.Owners = append(eight.Owners, []rollback.PlayerID{rollback.PlayerID(7 - m)})
		eight.Humans = append(eight.Humans, 1)
		eight.Addrs = append(eight.Addrs, netip.AddrPortFrom(netip.MustParseAddr("2001:db8::1"), uint16(9000+m)))
	}
	eight.Addrs[0] = netip.AddrPort{} // the host's own entry, when it does not know it
	return map[string]message{
		"hello":   {kind: kindHello, nonce: 0xfeedface, humans: 2},
		"plan":    {kind: kindPlan, nonce: 0xfeedface, plan: testPlan()},
		"plan-8":  {kind: kindPlan, nonce: 1, plan: eight},
		"ack":     {kind: kindAck, nonce: 0xfeedface},
		"full":    {kind: kindFull, nonce: 0xfeedface},
		"hello-1": {kind: kindHello, humans: 1},
		"hello-wants": {kind: kindHello, nonce: 3, humans: 1, settings: Settings{Frames: 1200, RoundFrames: 3600, Target: 10},
			wants: Wants{Frames: true, Target: true}},
		"refuse": {kind: kindRefuse, nonce: 3, settings: Settings{Frames: 600, RoundFrames: 1, Target: 255}},
	}
}

func TestRoundTrip(t *testing.T) {
	for name, m := range validMessages() {
		b := m.append(nil)
		got, err := parse(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%s: parsed\n%+v\nwant\n%+v", name, got, m)
		}
		if name == "plan-8" && len(b) > maxDatagram {
			t.Errorf("an 8-machine plan takes %d bytes", len(b))
		}
	}
}

func TestParseRejects(t *testing.T) {
	for name, m := range validMessages() {
		b := m.append(nil)
		for n := range len(b) {
			if _, err := parse(b[:n]); err == nil {
				t.Errorf("%s cut to %d of %d bytes: accepted", name, n, len(b))
			}
		}
		if _, err := parse(append(b, 0)); err == nil {
			t.Errorf("%s with a byte more: accepted", name)
		}
		for i := range header {
			bad := bytes.Clone(b)
			bad[i] ^= 0x40
			if _, err := parse(bad); err == nil {
				t.Errorf("%s with header byte %d changed: accepted", name, i)
			}
		}
	}
	for name, change := range map[string]func(p *Plan){
		"for the host":             func(p *Plan) { p.Machine = 0 },
		"for a machine not in it":  func(p *Plan) { p.Machine = 3 },
		"a player twice":           func(p *Plan) { p.Owners[2][0] = 1 },
		"a player nobody's":        func(p *Plan) { p.Players = 7 },
		"a player out of range":    func(p *Plan) { p.Owners[2][0] = 6 },
		"a machine with nobody":    func(p *Plan) { p.Owners[2], p.Owners[0] = nil, []rollback.PlayerID{0, 3, 4, 5} },
		"negative humans":          func(p *Plan) { p.Humans[1] = -1 },
		"three humans":             func(p *Plan) { p.Owners[0], p.Humans[0] = []rollback.PlayerID{0, 4, 5}, 3 },
		"more humans than players": func(p *Plan) { p.Humans[2] = 2 },
		"session id 0":             func(p *Plan) { p.SessionID = 0 },
		"a short secret":           func(p *Plan) { p.Secret = p.Secret[1:] },
		"a joiner without address": func(p *Plan) { p.Addrs[2] = netip.AddrPort{} },
		"one machine": func(p *Plan) {
			p.Machines, p.Owners, p.Humans, p.Addrs = 1, p.Owners[:1], p.Humans[:1], p.Addrs[:1]
			p.Owners[0] = []rollback.PlayerID{0, 1, 2, 3, 4, 5}
		},
		"nine machines": func(p *Plan) {
			for len(p.Owners) < 9 {
				p.Owners = append(p.Owners, []rollback.PlayerID{rollback.PlayerID(len(p.Owners) + 3)})
				p.Humans = append(p.Humans, 1)
				p.Addrs = append(p.Addrs, p.Addrs[1])
			}
			p.Machines, p.Players = 9, 11
		},
	} {
		p := testPlan()
		change(&p)
		if _, err := parse(message{kind: kindPlan, plan: p}.append(nil)); err == nil {
			t.Errorf("a plan with %s: accepted", name)
		}
	}
	// An address longer than any netip.AddrPort: its length byte is the
	// last of the first machine's entry.
	b := message{kind: kindPlan, plan: testPlan()}.append(nil)
	at := header + 8 + 3 + 4 + 4 + 1 + 8 + 8 + secretSize + 2 + 3
	if b[at] != 6 {
		t.Fatalf("byte %d is %d, want the host's address length 6", at, b[at])
	}
	b[at] = maxAddr + 1
	if _, err := parse(b); err == nil {
		t.Errorf("a %d-byte address: accepted", maxAddr+1)
	}
}

// FuzzParse: parse never panics, and accepts only what it would encode
// the same way: a canonical, well-formed message, whose plan (if it is
// one) passes check and gives every machine but this one as a peer.
func FuzzParse(f *testing.F) {
	for _, m := range validMessages() {
		f.Add(m.append(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parse(b)
		if err != nil {
			return
		}
		if again := m.append(nil); !bytes.Equal(again, b) {
			t.Fatalf("parsed %+v from\n%x\nwhich encodes as\n%x", m, b, again)
		}
		if m.kind != kindPlan {
			return
		}
		p := m.plan
		if err := p.check(); err != nil {
			t.Fatal(err)
		}
		if len(p.Local()) == 0 || len(p.Peers()) != p.Machines-1 || len(p.PeerAddrs()) != p.Machines-1 {
			t.Fatalf("plan %+v: local %v, peers %v at %v", p, p.Local(), p.Peers(), p.PeerAddrs())
		}
	})
}
