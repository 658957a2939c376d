package proxy

import "net/netip"

// specialPrefixes are ranges a name must never lead the proxy to, beyond what netip's
// predicates name: shared address space, "this network", reserved and broadcast, protocol
// assignments, deprecated site-local, and IPv4-compatible IPv6.
var specialPrefixes = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("fec0::/10"),
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// Prefixes that carry an IPv4 address inside an IPv6 one: the IPv4 address decides.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// special reports whether a is an address the proxy reaches only for an entry that names it:
// loopback, unspecified, link-local, private, shared (CGNAT), multicast, reserved, or any of
// those wrapped in IPv6.
func special(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" {
		return true
	}
	if a.IsLoopback() || a.IsUnspecified() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsPrivate() {
		return true
	}
	if a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return true
	}
	for _, p := range specialPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	if b := a.As16(); nat64.Contains(a) {
		return special(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	} else if sixToFour.Contains(a) {
		return special(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	return false
}

// forbidden reports whether a:port is the proxy's own listening address or one of
// Options.Forbidden: never a destination, whatever the entry. On loopback (and the
// unspecified address, which connects to it) a forbidden port is forbidden at every address.
func (p *Proxy) forbidden(a netip.Addr, port int) bool {
	ap := netip.AddrPortFrom(a, uint16(port))
	if p.forbid[ap] {
		return true
	}
	if !a.IsLoopback() && !a.IsUnspecified() {
		return false
	}
	if p.forbid[netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port))] ||
		p.forbid[netip.AddrPortFrom(netip.IPv6Loopback(), uint16(port))] {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ownPorts[uint16(port)]
}
