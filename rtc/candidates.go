package rtc

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"
)

// MaxCandidates bounds the ICE candidates a connection takes from its
// peer (those the policy admits, trickled or in its offer or answer);
// the rest are dropped and counted (Stats.CandidatesExcess). A machine
// sends one per address it has, and one per address family and STUN or
// TURN server that answers: pion on a host with one IPv4 and one IPv6
// address sends 2 host candidates; a browser adds TCP ones. Each is an
// address this machine's checks go to, so a peer that lies aims them at
// no more than this many.
const MaxCandidates = 32

// maxCandidateLine bounds a candidate's text: one with every field at
// its longest, and a few extensions, is about 200 bytes.
const maxCandidateLine = 512

// policy decides which remote candidates are handed to ICE: a candidate
// tells this machine where to send connectivity checks (RFC 8445 section
// 19.5.1), so it is a claim to check like anything else a peer sends.
type policy struct {
	allow    []netip.Prefix // Config.AllowCandidates, masked
	loopback bool           // Config.Loopback with no AllowCandidates
	servers  []netip.Addr   // the ICE servers' addresses (their URLs' IP literals)
}

func newPolicy(c Config) (policy, error) {
	p := policy{loopback: c.Loopback && len(c.AllowCandidates) == 0, servers: serverAddrs(c.ICEServers)}
	for _, pr := range c.AllowCandidates {
		if !pr.IsValid() {
			return policy{}, fmt.Errorf("%w: AllowCandidates has an invalid prefix %v", ErrConfig, pr)
		}
		if pr.Addr().Is4In6() && pr.Bits() >= 96 { // addresses are judged unmapped
			pr = netip.PrefixFrom(pr.Addr().Unmap(), pr.Bits()-96)
		}
		p.allow = append(p.allow, pr.Masked())
	}
	return p, nil
}

// errCandidate is a candidate that does not parse.
var errCandidate = errors.New("rtc: malformed candidate")

// admit checks a candidate's text (with or without its "candidate:"
// prefix). It returns the candidate rewritten from the fields it checked
// ("candidate:" and the fields RFC 8839 section 5.1 defines, one space
// apart, extensions other than tcptype left out), so what ICE parses is
// exactly what was checked; ok is false when the policy refuses the
// address, and err is set when the text does not parse.
func (p policy) admit(raw string) (line string, ok bool, err error) {
	c, err := parseCandidate(raw)
	switch {
	case err != nil:
		return "", false, err
	case c.mdns:
		return c.String(), true, nil
	case !c.addr.IsValid(): // a host name, which ICE would look up
		return "", false, nil
	}
	a := c.addr.Unmap()
	if addrClass(a) == "" || p.loopback && a.IsLoopback() || slices.Contains(p.servers, a) {
		return c.String(), true, nil
	}
	for _, pr := range p.allow {
		if pr.Contains(a) {
			return c.String(), true, nil
		}
	}
	return "", false, nil
}

// candidate is a remote candidate's checked fields.
type candidate struct {
	foundation string
	component  int64
	protocol   string // "udp" or "tcp"
	priority   uint32
	addr       netip.Addr // invalid if the address is a name
	name       string     // the address's text as sent
	mdns       bool       // name is a browser's random <uuid>.local
	port       int64
	typ        string
	raddr      netip.Addr // the related address, if any (informative only)
	rport      int64
	tcptype    string
}

// parseCandidate parses a candidate attribute's value strictly: fields
// one space apart, each of its grammar (RFC 8839 section 5.1), the
// address an IP address (its IPv6 zone dropped, as ICE does) or a host
// name. Anything else is an error.
func parseCandidate(raw string) (candidate, error) {
	raw = strings.TrimPrefix(raw, "candidate:")
	if len(raw) > maxCandidateLine {
		return candidate{}, fmt.Errorf("%w: %d bytes", errCandidate, len(raw))
	}
	f := strings.Split(raw, " ")
	if len(f) < 8 || len(f)%2 != 0 || f[6] != "typ" {
		return candidate{}, fmt.Errorf("%w: %q", errCandidate, raw)
	}
	var c candidate
	var prio int64
	var okComponent, okPriority, okPort bool
	c.foundation = f[0]
	c.component, okComponent = number(f[1], 1, 256)
	prio, okPriority = number(f[3], 1, 1<<32-1)
	c.port, okPort = number(f[5], 0, 65535)
	if !iceChars(c.foundation) || len(c.foundation) > 32 || !okComponent || !okPriority || !okPort {
		return candidate{}, fmt.Errorf("%w: %q", errCandidate, raw)
	}
	c.priority = uint32(prio)
	c.protocol = strings.ToLower(f[2])
	c.typ = f[7]
	switch {
	case c.protocol != "udp" && c.protocol != "tcp":
		return candidate{}, fmt.Errorf("%w: transport %q", errCandidate, f[2])
	case c.typ != "host" && c.typ != "srflx" && c.typ != "prflx" && c.typ != "relay":
		return candidate{}, fmt.Errorf("%w: type %q", errCandidate, c.typ)
	}
	c.name = f[4]
	if a, err := netip.ParseAddr(c.name); err == nil {
		c.addr = a.WithZone("") // which ICE ignores
	} else if !isHostName(c.name) {
		return candidate{}, fmt.Errorf("%w: address %q", errCandidate, c.name)
	} else {
		c.mdns = c.typ == "host" && isMDNSName(c.name)
	}
	var raddr string
	rport := int64(-1)
	for i := 8; i < len(f); i += 2 {
		k, v := f[i], f[i+1]
		switch {
		case k == "" || v == "":
			return candidate{}, fmt.Errorf("%w: %q", errCandidate, raw)
		case k == "raddr":
			raddr = v
		case k == "rport":
			if n, ok := number(v, 0, 65535); ok {
				rport = n
			}
		case k == "tcptype":
			c.tcptype = v
		}
	}
	if a, err := netip.ParseAddr(raddr); err == nil && a.Zone() == "" && rport >= 0 {
		c.raddr, c.rport = a, rport
	}
	switch {
	case c.protocol == "tcp" && c.tcptype != "active" && c.tcptype != "passive" && c.tcptype != "so":
		return candidate{}, fmt.Errorf("%w: tcptype %q", errCandidate, c.tcptype)
	case c.protocol == "udp":
		c.tcptype = ""
	}
	return c, nil
}

// String is the candidate's canonical text, "candidate:" and its fields.
func (c candidate) String() string {
	addr := c.name
	if !c.mdns {
		addr = c.addr.Unmap().String()
	}
	s := fmt.Sprintf("candidate:%s %d %s %d %s %d typ %s", c.foundation, c.component, c.protocol, c.priority, addr, c.port, c.typ)
	if c.raddr.IsValid() {
		s += fmt.Sprintf(" raddr %s rport %d", c.raddr.Unmap(), c.rport)
	}
	if c.tcptype != "" {
		s += " tcptype " + c.tcptype
	}
	return s
}

// number parses s, 1 to 10 decimal digits, as a number from lo to hi.
func number(s string, lo, hi int64) (int64, bool) {
	if len(s) == 0 || len(s) > 10 {
		return 0, false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= lo && n <= hi
}

// iceChars reports whether s is 1 or more ice-chars (RFC 8839): letters,
// digits, '+' and '/'.
func iceChars(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '+' || r == '/') {
			return false
		}
	}
	return true
}

// isHostName reports whether s is a domain name's text: letters, digits,
// '-', '_' and '.', 253 bytes at most.
func isHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// isMDNSName reports whether s is the name a browser (or pion) gives a
// host address it hides: a random UUID and ".local"
// (draft-ietf-mmusic-mdns-ice-candidates). Only the host that made one
// up answers for it, on the local link, so it cannot name another host
// there the way "printer.local" could.
func isMDNSName(s string) bool {
	u, ok := strings.CutSuffix(s, ".local")
	if !ok || len(u) != 36 {
		return false
	}
	for i, r := range u {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F') {
				return false
			}
		}
	}
	return true
}

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10") // carrier-grade NAT (RFC 6598)
	reserved4   = netip.MustParsePrefix("240.0.0.0/4")   // and 255.255.255.255, broadcast
	siteLocal   = netip.MustParsePrefix("fec0::/10")
	nat64       = netip.MustParsePrefix("64:ff9b::/96") // IPv4 addresses translated (RFC 6052)
)

// addrClass names the class of a, if it is one whose remote candidates
// are refused by default, or returns "" for an address reachable across
// the internet. The classes are those a TURN relay refuses as peers: an
// address that reaches only this machine, its local network or its
// carrier's.
func addrClass(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified() || thisNetwork.Contains(a):
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate() || siteLocal.Contains(a):
		return "private"
	case sharedSpace.Contains(a):
		return "shared"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	case reserved4.Contains(a):
		return "reserved"
	case nat64.Contains(a):
		b := a.As16()
		return addrClass(netip.AddrFrom4([4]byte(b[12:])))
	}
	return ""
}

// sdpCandidates takes the candidates out of a session description: it
// returns the description without them, as pion's SDP package writes it
// (so the ICE agent, pion or a browser, parses what was checked), and
// the candidates, to be admitted like trickled ones.
func sdpCandidates(s string) (string, []webrtc.ICECandidateInit, error) {
	var d sdp.SessionDescription
	if err := d.UnmarshalString(s); err != nil {
		return "", nil, err
	}
	var out []webrtc.ICECandidateInit
	d.Attributes = slices.DeleteFunc(d.Attributes, isCandidate) // ICE reads only a media section's
	for i, m := range d.MediaDescriptions {
		var mid *string
		if v, ok := m.Attribute("mid"); ok {
			mid = &v
		}
		index := uint16(i)
		for _, a := range m.Attributes {
			if isCandidate(a) {
				out = append(out, webrtc.ICECandidateInit{Candidate: "candidate:" + a.Value, SDPMid: mid, SDPMLineIndex: &index})
			}
		}
		m.Attributes = slices.DeleteFunc(m.Attributes, isCandidate)
	}
	b, err := d.Marshal()
	if err != nil {
		return "", nil, err
	}
	return string(b), out, nil
}

func isCandidate(a sdp.Attribute) bool { return strings.EqualFold(a.Key, "candidate") }

// serverAddrs are the IP addresses that ICE servers' URLs name
// (turn:203.0.113.7:3478?transport=udp, stun:[2001:db8::1]): a peer's
// relayed candidates are there, and this machine sends to them anyway,
// so a candidate at one aims its checks nowhere new, even when the
// server is on a private or loopback address (a LAN's or a developer's
// own rendezvous). Host names are not looked up.
func serverAddrs(servers []ICEServer) []netip.Addr {
	var addrs []netip.Addr
	for _, s := range servers {
		for _, u := range s.URLs {
			_, rest, ok := strings.Cut(u, ":")
			if !ok {
				continue
			}
			rest, _, _ = strings.Cut(rest, "?")
			host := rest
			if h, _, err := net.SplitHostPort(rest); err == nil {
				host = h
			}
			if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
				addrs = append(addrs, a.Unmap())
			}
		}
	}
	return addrs
}
