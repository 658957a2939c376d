package dnsstub

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestStubAnswersEveryNameWithItsOwnAddress: a real resolver asking the stub gets one
// address per name, the same one each time, in the reserved range; AAAA gets none.
func TestStubAnswersEveryNameWithItsOwnAddress(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMap()
	go Serve(pc, m)
	defer pc.Close()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lookup := func(name string) netip.Addr {
		t.Helper()
		as, err := r.LookupNetIP(ctx, "ip", name)
		if err != nil || len(as) != 1 {
			t.Fatalf("%s: %v %v", name, as, err)
		}
		return as[0]
	}
	a, b := lookup("example.test"), lookup("other.test")
	if a == b || !Range.Contains(a) || !Range.Contains(b) {
		t.Fatalf("addresses %v %v: want two distinct ones in %v", a, b, Range)
	}
	if again := lookup("EXAMPLE.test."); again != a {
		t.Errorf("the same name got %v, then %v", a, again)
	}
	if n, ok := m.Name(a); !ok || n != "example.test" {
		t.Errorf("Name(%v) = %q %v", a, n, ok)
	}
	if _, ok := m.Name(netip.MustParseAddr("198.18.200.1")); ok {
		t.Error("an address never given out stands for a name")
	}
	if as, err := r.LookupNetIP(ctx, "ip6", "example.test"); err == nil && len(as) > 0 {
		t.Errorf("AAAA answered %v", as)
	}
}

func TestMapIsBounded(t *testing.T) {
	m := NewMap()
	for i := range MaxNames {
		if _, ok := m.AddrFor("n" + string(rune('a'+i%26)) + itoa(i) + ".test"); !ok {
			t.Fatalf("name %d refused", i)
		}
	}
	if _, ok := m.AddrFor("one-more.test"); ok {
		t.Error("the map gave out more than MaxNames addresses")
	}
}

func itoa(i int) string {
	return netip.AddrFrom4([4]byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}).String()
}
