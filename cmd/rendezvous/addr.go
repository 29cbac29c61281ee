package main

import (
	"net"
	"net/netip"
)

// addrKey is the key under which a client address's limits and quotas
// are kept: an IPv4 address itself, an IPv6 address's /prefix (a host is
// commonly given a whole /64, so one IPv6 client has as many addresses as
// it likes inside it). An IPv4-mapped IPv6 address is its IPv4 address.
// What is not an address at all is its own key.
func addrKey(host string, prefix int) string {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(prefix)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// remoteHost is the address part of a net.Addr or an http.Request's
// RemoteAddr.
func remoteHost(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
