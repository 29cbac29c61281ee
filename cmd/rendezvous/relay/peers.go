package relay

import (
	"net"
	"net/netip"
	"sync"
)

// Classes of addresses the relay refuses as peers by default: a client
// must not reach, through the relay, what only the relay's host can
// reach.
// netip's own tests cover the rest: IsLoopback (127/8, ::1), IsPrivate
// (RFC 1918 and the IPv6 unique local fc00::/7), IsLinkLocalUnicast
// (169.254/16, fe80::/10), IsMulticast (224/4, ff00::/8), IsUnspecified.
var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")     // "this network" (RFC 1122)
	sharedCGNAT = netip.MustParsePrefix("100.64.0.0/10") // carrier-grade NAT (RFC 6598): clouds and overlays put services there
	reserved4   = netip.MustParsePrefix("240.0.0.0/4")   // reserved, and the broadcast address
	nat64       = netip.MustParsePrefix("64:ff9b::/96")  // NAT64: an IPv4 address inside (RFC 6052)
	v4Compat    = netip.MustParsePrefix("::/96")         // deprecated IPv4-compatible (:: and ::1 are in it too)
	siteLocal6  = netip.MustParsePrefix("fec0::/10")     // deprecated site-local
)

// Class says why the relay refuses a as a peer by default: "loopback",
// "private", "link-local", "multicast", "unspecified", "cgnat",
// "reserved", "invalid"; "" when it does not. An IPv4-mapped IPv6 address
// is its IPv4 address's class, and so is a NAT64 one (64:ff9b::/96).
func Class(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() && (nat64.Contains(a) || v4Compat.Contains(a)) && !a.IsUnspecified() && !a.IsLoopback() {
		// The IPv4 address in its last 4 bytes is what a translator reaches.
		b := a.As16()
		if c := Class(netip.AddrFrom4([4]byte(b[12:]))); c != "" {
			return c
		}
		if v4Compat.Contains(a) {
			return "reserved"
		}
	}
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	case sharedCGNAT.Contains(a):
		return "cgnat"
	case thisNetwork.Contains(a), reserved4.Contains(a), siteLocal6.Contains(a):
		return "reserved"
	}
	return ""
}

// policy decides which peers an allocation may send to: not the classes
// Class names nor the server's own addresses, unless the allow-list names
// them; at a public address (IPv4 or IPv6), only ports of live
// allocations (two clients of the relay are each other's peers there).
type policy struct {
	allow  []netip.Prefix
	public map[netip.Addr]bool // the relayed addresses' addresses
	own    map[netip.Addr]bool // the server's addresses, public included

	mu    sync.Mutex
	ports map[netip.AddrPort]bool // the live allocations' relayed addresses
}

func newPolicy(allow []netip.Prefix, public, own []netip.Addr) *policy {
	p := &policy{allow: allow, public: make(map[netip.Addr]bool), own: make(map[netip.Addr]bool),
		ports: make(map[netip.AddrPort]bool)}
	for _, a := range public {
		if a.IsValid() {
			p.public[a.Unmap()] = true
			p.own[a.Unmap()] = true
		}
	}
	for _, a := range own {
		p.own[a.Unmap()] = true
	}
	return p
}

// allowed says whether a peer at a is allowed at all, and why not.
func (p *policy) allowed(a netip.Addr) (ok bool, why string) {
	a = a.Unmap()
	if p.listed(a) {
		return true, ""
	}
	if p.public[a] {
		return true, "" // each port is checked by send
	}
	if p.own[a] {
		return false, "own address"
	}
	if c := Class(a); c != "" {
		return false, c
	}
	return true, ""
}

// permit is the TURN PermissionHandler: permissions are per IP.
func (p *policy) permit(ip net.IP) (ok bool, why string) {
	a, valid := netip.AddrFromSlice(ip)
	if !valid {
		return false, "invalid"
	}
	return p.allowed(a)
}

// send says whether a datagram may go to ap: an allowed address, and at
// a public address (unless the allow-list names it) a live allocation's
// port.
func (p *policy) send(ap netip.AddrPort) (ok bool, why string) {
	a := ap.Addr().Unmap()
	if ok, why := p.allowed(a); !ok {
		return false, why
	}
	if !p.public[a] || p.listed(a) {
		return true, ""
	}
	p.mu.Lock()
	live := p.ports[netip.AddrPortFrom(a, ap.Port())]
	p.mu.Unlock()
	if !live {
		return false, "own address"
	}
	return true, ""
}

func (p *policy) listed(a netip.Addr) bool {
	for _, pre := range p.allow {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

func (p *policy) addPort(ap netip.AddrPort) {
	p.mu.Lock()
	p.ports[ap] = true
	p.mu.Unlock()
}

func (p *policy) removePort(ap netip.AddrPort) {
	p.mu.Lock()
	delete(p.ports, ap)
	p.mu.Unlock()
}

// ownAddrs are the addresses of the host's interfaces (the relay's own
// addresses when it listens on every address).
func ownAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var own []netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				own = append(own, ip.Unmap())
			}
		}
	}
	return own
}
