package hosts

import "net/netip"

// AddrClass is the kind of address a name leads to. It is the address half of a decision:
// an entry admits a host, and the class of each address the host resolves to says whether a
// name may lead there. Only an entry that names the address itself (Decision.Literal) may
// reach a Special one; a name that could is how a site rebinds itself onto the machine or its
// network.
type AddrClass uint8

const (
	// Public: reachable through any entry that admits the host.
	Public AddrClass = iota
	// Invalid: not an address, or one with an IPv6 zone, which names an interface of this
	// machine rather than a destination.
	Invalid
	// Loopback: this machine (127.0.0.0/8, ::1).
	Loopback
	// Unspecified: 0.0.0.0 or ::, which connects to this machine.
	Unspecified
	// LinkLocal: the local link, where cloud metadata services live (169.254.0.0/16,
	// fe80::/10, ff02::/16).
	LinkLocal
	// Private: private networks (10/8, 172.16/12, 192.168/16, fc00::/7).
	Private
	// Shared: the carrier-grade NAT's shared address space (100.64.0.0/10).
	Shared
	// Multicast: any multicast group.
	Multicast
	// Reserved: "this network", reserved and broadcast, protocol assignments, benchmarking,
	// deprecated site-local, IPv4-compatible IPv6 and local-use NAT64.
	Reserved
	// ThisMachine: an address that would be public but is this machine's own (one of its
	// interfaces', or one it routes to itself), which reaches its services as loopback does.
	// ClassifyAddr, being pure, never says so: the proxy and the web fetch ask the kernel
	// (package ownaddr) about each Public address they are to connect to.
	ThisMachine
)

// Special reports whether c is an address a name must never lead to.
func (c AddrClass) Special() bool { return c != Public }

// String is the class in words, to finish "… resolves to 10.1.2.3, a … address".
func (c AddrClass) String() string {
	switch c {
	case Public:
		return "public"
	case Invalid:
		return "zoned or invalid"
	case Loopback:
		return "loopback"
	case Unspecified:
		return "unspecified"
	case LinkLocal:
		return "link-local"
	case Private:
		return "private"
	case Shared:
		return "shared (carrier-grade NAT)"
	case Multicast:
		return "multicast"
	case ThisMachine:
		return "local (this machine's own)"
	}
	return "reserved"
}

// reservedPrefixes are ranges a name must never lead to beyond what netip's predicates name.
var reservedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("fec0::/10"),
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

var (
	shared = netip.MustParsePrefix("100.64.0.0/10")
	// Prefixes that carry an IPv4 address inside an IPv6 one: the IPv4 address decides.
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// ClassifyAddr says what kind of destination a is. An IPv4 address mapped into, translated
// into (NAT64) or carried by (6to4) an IPv6 one is classified as the IPv4 address it carries.
// It allocates nothing.
func ClassifyAddr(a netip.Addr) AddrClass {
	a = a.Unmap()
	switch {
	case !a.IsValid() || a.Zone() != "":
		return Invalid
	case a.IsLoopback():
		return Loopback
	case a.IsUnspecified():
		return Unspecified
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return LinkLocal
	case a.IsPrivate():
		return Private
	case a.IsMulticast() || a.IsInterfaceLocalMulticast():
		return Multicast
	case shared.Contains(a):
		return Shared
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return Reserved
	}
	for _, p := range reservedPrefixes {
		if p.Contains(a) {
			return Reserved
		}
	}
	if v4, ok := CarriedIPv4(a); ok {
		return ClassifyAddr(v4)
	}
	return Public
}

// CarriedIPv4 is the IPv4 address an IPv6 one translates to (NAT64) or carries (6to4),
// which a connection to it reaches in the end.
func CarriedIPv4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case !a.Is6() || a.Is4In6():
		return netip.Addr{}, false
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}
