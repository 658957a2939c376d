package hosts

import (
	"net/netip"
	"testing"
)

func TestClassifyAddr(t *testing.T) {
	tests := []struct {
		name, addr string
		want       AddrClass
	}{
		{"public_v4", "203.0.113.7", Public},
		{"public_v6", "2001:db8::1", Public},
		{"public_mapped", "::ffff:203.0.113.7", Public},
		{"loopback_v4", "127.0.0.1", Loopback},
		{"loopback_v4_other", "127.255.0.9", Loopback},
		{"loopback_v6", "::1", Loopback},
		{"loopback_mapped", "::ffff:127.0.0.1", Loopback},
		{"unspecified_v4", "0.0.0.0", Unspecified},
		{"unspecified_v6", "::", Unspecified},
		{"this_network", "0.1.2.3", Reserved},
		{"private_10", "10.1.2.3", Private},
		{"private_172", "172.16.0.1", Private},
		{"private_192", "192.168.1.1", Private},
		{"private_ula", "fd00::1", Private},
		{"link_local_v4", "169.254.169.254", LinkLocal},
		{"link_local_v6", "fe80::1", LinkLocal},
		{"link_local_multicast", "ff02::1", LinkLocal},
		{"interface_local_multicast", "ff01::1", Multicast},
		{"multicast_v4", "239.1.2.3", Multicast},
		{"link_local_multicast_v4", "224.0.0.251", LinkLocal},
		{"multicast_v6", "ff0e::1", Multicast},
		{"shared_cgnat", "100.64.0.1", Shared},
		{"reserved_240", "240.0.0.1", Reserved},
		{"broadcast", "255.255.255.255", Reserved},
		{"protocol_assignments", "192.0.0.8", Reserved},
		{"benchmarking", "198.18.0.1", Reserved},
		{"site_local", "fec0::1", Reserved},
		{"ipv4_compatible", "::127.0.0.1", Reserved},
		{"local_nat64", "64:ff9b:1::1", Reserved},
		{"nat64_loopback", "64:ff9b::7f00:1", Loopback},
		{"nat64_private", "64:ff9b::a01:203", Private},
		{"nat64_public", "64:ff9b::cb00:7107", Public},
		{"six_to_four_loopback", "2002:7f00:1::1", Loopback},
		{"six_to_four_link_local", "2002:a9fe:a9fe::1", LinkLocal},
		{"six_to_four_public", "2002:cb00:7107::1", Public},
		{"zone", "fe80::1%eth0", Invalid},
		{"zone_on_public", "2001:db8::1%eth0", Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := netip.MustParseAddr(tt.addr)
			got := ClassifyAddr(a)
			if got != tt.want {
				t.Fatalf("ClassifyAddr(%s) = %v, want %v", a, got, tt.want)
			}
			if got.Special() != (tt.want != Public) {
				t.Fatalf("ClassifyAddr(%s).Special() = %v", a, got.Special())
			}
			if got.String() == "" {
				t.Fatalf("ClassifyAddr(%s) has no words", a)
			}
		})
	}
	if c := ClassifyAddr(netip.Addr{}); c != Invalid || !c.Special() {
		t.Fatalf("the zero Addr is %v, want Invalid and special", c)
	}
}

// TestClassifyAddrAllocates nothing: the proxy classifies every address a name leads to.
func TestClassifyAddrAllocates(t *testing.T) {
	a := netip.MustParseAddr("2002:7f00:1::1")
	if n := testing.AllocsPerRun(100, func() { ClassifyAddr(a) }); n != 0 {
		t.Fatalf("ClassifyAddr allocates %v times", n)
	}
}
