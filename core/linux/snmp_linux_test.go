package linux

import "testing"

// The counts read from a sandbox network's /proc/net/snmp and snmp6.
func TestSNMPCounts(t *testing.T) {
	snmp := "Ip: Forwarding DefaultTTL InReceives OutNoRoutes\nIp: 2 64 10 7\nTcp: RtoAlgorithm ActiveOpens AttemptFails\nTcp: 1 5 3\n"
	if n, err := outNoRoutes(snmp, "Ip:"); err != nil || n != 7 {
		t.Fatalf("OutNoRoutes %d %v", n, err)
	}
	if n, err := snmpCount(snmp, "Tcp:", "AttemptFails"); err != nil || n != 3 {
		t.Fatalf("AttemptFails %d %v", n, err)
	}
	if n, err := outNoRoutes("Ip6InReceives 4\nIp6OutNoRoutes 9\n", "Ip6OutNoRoutes"); err != nil || n != 9 {
		t.Fatalf("Ip6OutNoRoutes %d %v", n, err)
	}
	if _, err := snmpCount(snmp, "Udp:", "InDatagrams"); err == nil {
		t.Fatal("a missing count was found")
	}
}
