package rtc

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

const uuidName = "0c9a8b52-7f3e-4d8e-9b1a-2f3c4d5e6f70.local"

// TestAddressClasses: which addresses a candidate may name by default,
// and the class of those refused.
func TestAddressClasses(t *testing.T) {
	var p policy // the default: no Loopback, no AllowCandidates
	for _, c := range []struct{ addr, class string }{
		// IPv4
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"192.0.2.1", ""}, // documentation, but routed as any other
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "shared"},
		{"100.127.255.255", "shared"},
		{"169.254.169.254", "link-local"},
		{"224.0.0.251", "multicast"},
		{"239.255.255.250", "multicast"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "reserved"},
		// IPv6
		{"2606:4700::1111", ""},
		{"2001:db8::1", ""},
		{"::1", "loopback"},
		{"::", "unspecified"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"fec0::1", "private"},
		{"ff02::1", "multicast"},
		{"ff05::1:3", "multicast"},
		// IPv4 in IPv6
		{"::ffff:8.8.8.8", ""},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"64:ff9b::8.8.8.8", ""},
		{"64:ff9b::127.0.0.1", "loopback"},
		{"64:ff9b::192.168.0.1", "private"},
	} {
		a := netip.MustParseAddr(c.addr)
		if got := addrClass(a); got != c.class {
			t.Errorf("addrClass(%s) = %q, want %q", c.addr, got, c.class)
		}
		line, ok, err := p.admit("candidate:1 1 udp 2130706431 " + c.addr + " 9 typ host")
		if err != nil || ok != (c.class == "") {
			t.Errorf("%s: admitted %v, %v; want %v", c.addr, ok, err, c.class == "")
		}
		if ok && strings.Contains(line, "::ffff:") {
			t.Errorf("%s: admitted as %q, want the IPv4 address", c.addr, line)
		}
	}
	// Names: a browser's random mDNS name is accepted; any other name
	// (which ICE would look up, by mDNS or DNS) is refused; junk does not
	// parse.
	for _, c := range []struct {
		addr    string
		ok, bad bool
	}{
		{uuidName, true, false},
		{strings.ToUpper(uuidName[:36]) + ".local", true, false},
		{"printer.local", false, false},
		{"raspberrypi.local", false, false},
		{"0c9a8b52-7f3e-4d8e-9b1a-2f3c4d5e6f7.local", false, false}, // one digit short
		{"0c9a8b52x7f3e-4d8e-9b1a-2f3c4d5e6f70.local", false, false},
		{"0c9a8b52-7f3e-4d8e-9b1a-2f3c4d5e6f70.LOCAL", false, false}, // ICE would not take it for mDNS
		{"0c9a8b52-7f3e-4d8e-9b1a-2f3c4d5e6f70.local.example.com", false, false},
		{"example.com", false, false},
		{"localhost", false, false},
		{"127.1", false, false}, // not an address to netip, nor to ICE
		{"1.2.3.4.5", false, false},
		{"", false, true},
		{"a\tb", false, true},
		{"a/b", false, true},
		{"8.8.8.8\x00", false, true},
		{"[::1]", false, true},
		{strings.Repeat("a", 254), false, true},
	} {
		_, ok, err := p.admit("candidate:1 1 udp 2130706431 " + c.addr + " 9 typ host")
		if ok != c.ok || (err != nil) != c.bad {
			t.Errorf("%q: admitted %v, %v; want %v, malformed %v", c.addr, ok, err, c.ok, c.bad)
		}
	}
	// An mDNS name as a reflexive or relayed address is a host name.
	if _, ok, err := p.admit("candidate:1 1 udp 1 " + uuidName + " 9 typ srflx"); ok || err != nil {
		t.Errorf("a reflexive candidate at an mDNS name: admitted %v, %v", ok, err)
	}
}

// TestAllowCandidates: Loopback accepts loopback addresses unless
// AllowCandidates is set; AllowCandidates accepts its prefixes and
// nothing else of the refused classes.
func TestAllowCandidates(t *testing.T) {
	pfx := func(s ...string) (ps []netip.Prefix) {
		for _, x := range s {
			ps = append(ps, netip.MustParsePrefix(x))
		}
		return ps
	}
	for _, c := range []struct {
		config Config
		ok     map[string]bool
	}{
		{Config{}, map[string]bool{"8.8.8.8": true, "127.0.0.1": false, "::1": false, "192.168.1.2": false}},
		{Config{Loopback: true}, map[string]bool{"8.8.8.8": true, "127.0.0.1": true, "127.0.0.9": true, "::1": true, "::ffff:127.0.0.1": true, "192.168.1.2": false}},
		{Config{Loopback: true, AllowCandidates: pfx("127.0.0.1/32")}, map[string]bool{"8.8.8.8": true, "127.0.0.1": true, "::ffff:127.0.0.1": true, "127.0.0.2": false, "::1": false}},
		{Config{AllowCandidates: pfx("192.168.1.0/24", "fd00::/8")}, map[string]bool{"192.168.1.2": true, "192.168.2.1": false, "fd00::2": true, "fc00::2": false, "10.0.0.1": false, "127.0.0.1": false}},
		{Config{AllowCandidates: pfx("192.168.1.7/24")}, map[string]bool{"192.168.1.2": true}}, // masked
		{Config{AllowCandidates: pfx("::ffff:10.0.0.0/104")}, map[string]bool{"10.1.2.3": true, "::ffff:10.1.2.3": true, "11.0.0.1": true, "192.168.0.1": false}},
		{Config{AllowCandidates: pfx("0.0.0.0/0", "::/0")}, map[string]bool{"127.0.0.1": true, "10.0.0.1": true, "ff02::1": true, "fe80::1": true, "::ffff:10.0.0.1": true}},
		// The ICE servers' own addresses: a developer's rendezvous on
		// loopback, a LAN's on a private address (the peers' relayed
		// candidates are there); their host names are not looked up.
		{Config{ICEServers: []ICEServer{{URLs: []string{"stun:127.0.0.1:3478", "turn:10.1.2.3:3478?transport=udp"}}, {URLs: []string{"turns:[fd00::7]:5349?transport=tcp", "turn:turn.example.com"}}}},
			map[string]bool{"127.0.0.1": true, "::ffff:127.0.0.1": true, "127.0.0.2": false, "10.1.2.3": true, "10.1.2.4": false, "fd00::7": true, "fd00::8": false, "8.8.8.8": true}},
	} {
		p, err := newPolicy(c.config)
		if err != nil {
			t.Fatal(err)
		}
		for addr, want := range c.ok {
			if _, ok, err := p.admit("candidate:1 1 udp 1 " + addr + " 9 typ host"); ok != want || err != nil {
				t.Errorf("Loopback %v, AllowCandidates %v: %s admitted %v, %v; want %v", c.config.Loopback, c.config.AllowCandidates, addr, ok, err, want)
			}
		}
	}
	if _, err := newPolicy(Config{AllowCandidates: []netip.Prefix{{}}}); !errors.Is(err, ErrConfig) {
		t.Errorf("an invalid prefix: %v, want ErrConfig", err)
	}
}

// TestCandidateText: what ICE is handed is the candidate rewritten from
// the fields that were checked; anything that does not parse strictly is
// malformed.
func TestCandidateText(t *testing.T) {
	allow := policy{allow: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}
	for in, want := range map[string]string{
		"candidate:1 1 udp 2130706431 8.8.8.8 9 typ host": "candidate:1 1 udp 2130706431 8.8.8.8 9 typ host",
		"1 1 UDP 2130706431 8.8.8.8 9 typ host":           "candidate:1 1 udp 2130706431 8.8.8.8 9 typ host",
		"candidate:842163049 1 udp 1677729535 8.8.8.8 3478 typ srflx raddr 0.0.0.0 rport 0 generation 0 ufrag Ab/+ network-cost 999": "candidate:842163049 1 udp 1677729535 8.8.8.8 3478 typ srflx raddr 0.0.0.0 rport 0",
		"candidate:a+/Z 2 tcp 1518280447 2606:4700::1 9 typ host tcptype active generation 0":                                        "candidate:a+/Z 2 tcp 1518280447 2606:4700::1 9 typ host tcptype active",
		"candidate:1 1 udp 1 ::ffff:8.8.8.8 65535 typ relay raddr ::ffff:1.2.3.4 rport 5":                                            "candidate:1 1 udp 1 8.8.8.8 65535 typ relay raddr 1.2.3.4 rport 5",
		"candidate:1 1 udp 1 8.8.8.8 9 typ relay raddr x.local rport 5":                                                              "candidate:1 1 udp 1 8.8.8.8 9 typ relay", // not an address: left out
		"candidate:1 1 udp 1 8.8.8.8 9 typ relay raddr 1.2.3.4 rport 65536":                                                          "candidate:1 1 udp 1 8.8.8.8 9 typ relay",
		"candidate:1 1 udp 1 8.8.8.8 9 typ host tcptype passive":                                                                     "candidate:1 1 udp 1 8.8.8.8 9 typ host",
		"candidate:1 1 udp 1 fe80::1%eth0 9 typ host":                                                                                "candidate:1 1 udp 1 fe80::1 9 typ host",
		"candidate:1 1 udp 4294967295 " + uuidName + " 9 typ host":                                                                   "candidate:1 1 udp 4294967295 " + uuidName + " 9 typ host",
	} {
		got, ok, err := allow.admit(in)
		if got != want || !ok || err != nil {
			t.Errorf("%q:\n got %q, %v, %v\nwant %q", in, got, ok, err, want)
		}
		if again, _, _ := allow.admit(got); again != got {
			t.Errorf("%q rewritten again as %q", got, again)
		}
	}
	for _, in := range []string{
		"",
		"candidate:",
		"candidate:1 1 udp 1 8.8.8.8 9 typ",
		"candidate:1 1 udp 1 8.8.8.8 9 type host",
		"candidate:1 1 udp 1 8.8.8.8 9 typ foo",
		"candidate:1 1 udp 1 8.8.8.8 9 typ host generation",
		"candidate:1 1 udp 1 8.8.8.8 9 typ host  generation 0",
		"candidate:1 1 udp 1 8.8.8.8 9 typ host ",
		"candidate:1  1 udp 1 8.8.8.8 9 typ host",
		"candidate:1\t1 udp 1 8.8.8.8 9 typ host",
		" candidate:1 1 udp 1 8.8.8.8 9 typ host",
		"candidate:1 1 sctp 1 8.8.8.8 9 typ host",
		"candidate:1 1 tcp 1 8.8.8.8 9 typ host",
		"candidate:1 1 tcp 1 8.8.8.8 9 typ host tcptype sideways",
		"candidate:1 0 udp 1 8.8.8.8 9 typ host",
		"candidate:1 257 udp 1 8.8.8.8 9 typ host",
		"candidate:1 1 udp 0 8.8.8.8 9 typ host",
		"candidate:1 1 udp 4294967296 8.8.8.8 9 typ host",
		"candidate:1 1 udp 99999999999 8.8.8.8 9 typ host",
		"candidate:1 1 udp 1 8.8.8.8 65536 typ host",
		"candidate:1 1 udp 1 8.8.8.8 -1 typ host",
		"candidate:1 1 udp 1 8.8.8.8 +9 typ host",
		"candidate:1 1 udp 1 8.8.8.8 ٩ typ host",
		"candidate:1 1 udp 1 8.8.8.8 0x9 typ host",
		"candidate:x=y 1 udp 1 8.8.8.8 9 typ host",
		"candidate:" + strings.Repeat("f", 33) + " 1 udp 1 8.8.8.8 9 typ host",
		"candidate: 1 udp 1 8.8.8.8 9 typ host",
		"candidate:1 1 udp 1 8.8.8.8 9 typ host x " + strings.Repeat("y", maxCandidateLine),
	} {
		if line, ok, err := allow.admit(in); err == nil {
			t.Errorf("%q admitted as %q, %v; want malformed", in, line, ok)
		}
	}
}

// TestSDPCandidates: an offer's or answer's candidates are taken out of
// it, those of its media sections to be admitted, those outside them
// dropped (ICE reads none there).
func TestSDPCandidates(t *testing.T) {
	in := "v=0\r\no=- 1 2 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=candidate:9 1 udp 1 10.0.0.9 9 typ host\r\n" +
		"m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n" +
		"a=candidate:1 1 udp 1 127.0.0.2 9 typ host\r\na=ice-ufrag:abcd\r\na=CANDIDATE:2 1 udp 1 127.0.0.3 9 typ host\r\n"
	out, cands, err := sdpCandidates(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(out), "candidate") || !strings.Contains(out, "a=mid:0\r\na=ice-ufrag:abcd\r\n") {
		t.Errorf("description left as %q", out)
	}
	if len(cands) != 2 || cands[0].Candidate != "candidate:1 1 udp 1 127.0.0.2 9 typ host" || cands[1].Candidate != "candidate:2 1 udp 1 127.0.0.3 9 typ host" ||
		*cands[0].SDPMid != "0" || *cands[1].SDPMLineIndex != 0 {
		t.Errorf("candidates %+v", cands)
	}
	if _, _, err := sdpCandidates("v=0\r\nnot a description"); err == nil {
		t.Error("junk parsed as a description")
	}
}

// FuzzCandidate: no text makes the parser panic, and what it admits it
// admits again as it is.
func FuzzCandidate(f *testing.F) {
	for _, s := range []string{
		"candidate:842163049 1 udp 1677729535 8.8.8.8 3478 typ srflx raddr 0.0.0.0 rport 0 generation 0 ufrag Ab/+ network-cost 999",
		"candidate:1 1 tcp 1518280447 2606:4700::1 9 typ host tcptype active generation 0",
		"candidate:1 1 udp 2130706431 " + uuidName + " 9 typ host",
		"candidate:1 1 udp 1 fe80::1%eth0 9 typ host",
		"candidate:1 1 udp 1 ::ffff:8.8.8.8 65535 typ relay raddr ::ffff:1.2.3.4 rport 5",
	} {
		f.Add(s)
	}
	all := policy{allow: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}
	f.Fuzz(func(t *testing.T, s string) {
		var def policy
		def.admit(s)
		line, ok, err := all.admit(s)
		if err != nil || !ok {
			return
		}
		if again, ok, err := all.admit(line); again != line || !ok || err != nil {
			t.Fatalf("%q admitted as %q, then as %q, %v, %v", s, line, again, ok, err)
		}
	})
}
