package relay_test

import (
	"net/netip"
	"testing"

	"github.com/rewindgg/rewind/cmd/rendezvous/relay"
)

// The classes of addresses the relay refuses as peers, and some it does
// not: IPv4, IPv6, IPv4-mapped IPv6 and NAT64.
func TestClass(t *testing.T) {
	for _, c := range []struct{ addr, class string }{
		{"8.8.8.8", ""},
		{"203.0.113.7", ""}, // documentation, but routable as far as the relay knows
		{"100.63.255.255", ""},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"169.254.169.254", "link-local"}, // a cloud's metadata service
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "reserved"},
		{"255.255.255.255", "reserved"},
		{"240.0.0.1", "reserved"},
		{"100.64.0.1", "cgnat"},
		{"100.100.100.200", "cgnat"}, // a cloud's metadata service too
		{"2001:db8::1", ""},
		{"2606:4700::1111", ""},
		{"::1", "loopback"},
		{"::", "unspecified"},
		{"fe80::1", "link-local"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"ff02::1", "multicast"},
		{"fec0::1", "reserved"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:169.254.1.1", "link-local"},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::7f00:1", "loopback"}, // NAT64 of 127.0.0.1
		{"64:ff9b::a00:1", "private"},   // NAT64 of 10.0.0.1
		{"64:ff9b::808:808", ""},        // NAT64 of 8.8.8.8
		{"::7f00:1", "loopback"},        // IPv4-compatible 127.0.0.1
		{"::808:808", "reserved"},       // IPv4-compatible, deprecated
	} {
		if got := relay.Class(netip.MustParseAddr(c.addr)); got != c.class {
			t.Errorf("Class(%s) = %q, want %q", c.addr, got, c.class)
		}
	}
	if got := relay.Class(netip.Addr{}); got != "invalid" {
		t.Errorf("Class of the zero Addr = %q", got)
	}
}
