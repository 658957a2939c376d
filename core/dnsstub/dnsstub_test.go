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

// TestMapGivesBackLeastRecentlyUsed: past MaxNames, the name no connection uses that was
// asked for or connected to longest ago is given back, and the new name gets an address no
// name had before (a client that kept the old answer reaches nothing, not another name).
func TestMapGivesBackLeastRecentlyUsed(t *testing.T) {
	m := NewMap()
	given := map[netip.Addr]bool{}
	for i := range MaxNames {
		a, ok := m.AddrFor(name(i))
		if !ok {
			t.Fatalf("name %d refused", i)
		}
		given[a] = true
	}
	first, _ := m.AddrFor(name(0)) // asked again: now the most recently used
	second, _ := m.AddrFor(name(1))
	m.Name(second) // a connection to it: used too
	a, ok := m.AddrFor("one-more.test")
	if !ok {
		t.Fatal("past MaxNames, a new name was refused")
	}
	if given[a] {
		t.Errorf("the new name got %v, an address another name had", a)
	}
	if n, ok := m.Name(a); !ok || n != "one-more.test" {
		t.Errorf("Name(%v) = %q %v", a, n, ok)
	}
	if n, ok := m.Name(first); !ok || n != name(0) {
		t.Errorf("the name asked for again was given back: Name(%v) = %q %v", first, n, ok)
	}
	if n, ok := m.Name(second); !ok || n != name(1) {
		t.Errorf("the name connected to was given back: Name(%v) = %q %v", second, n, ok)
	}
	// name(2) was then the least recently used: it is the one given back.
	if has(m, name(2)) || !has(m, name(3)) {
		t.Errorf("given back: %s %v, %s %v; want the least recently used, %s", name(2), !has(m, name(2)), name(3), !has(m, name(3)), name(2))
	}
	if len(m.byName) > MaxNames || len(m.byAddr) > MaxNames {
		t.Errorf("the map holds %d names and %d addresses, more than MaxNames", len(m.byName), len(m.byAddr))
	}
}

// TestMapKeepsHeldNames: a name a connection holds is never given back; when every name is
// held, a new name is refused and the map says which.
func TestMapKeepsHeldNames(t *testing.T) {
	m := NewMap()
	var releases []func()
	for i := range MaxNames {
		a, ok := m.AddrFor(name(i))
		if !ok {
			t.Fatalf("name %d refused", i)
		}
		n, release, ok := m.Hold(a)
		if !ok || n != name(i) {
			t.Fatalf("Hold(%v) = %q %v", a, n, ok)
		}
		releases = append(releases, release)
	}
	if _, ok := m.AddrFor("one-more.test"); ok {
		t.Fatal("a new name was given an address with every name held by a connection")
	}
	if names, total := m.TakeRefused(); total != 1 || len(names) != 1 || names[0] != "one-more.test" {
		t.Errorf("TakeRefused() = %v %d, want the one refused name", names, total)
	}
	if _, total := m.TakeRefused(); total != 0 {
		t.Errorf("a refusal was said twice")
	}
	releases[7]()
	releases[7]() // a second release of one hold changes nothing
	more, ok := m.AddrFor("one-more.test")
	if !ok {
		t.Fatal("a name released by its connection was not given back")
	}
	if _, _, ok := m.Hold(more); !ok {
		t.Fatal("the new name cannot be held")
	}
	if has(m, name(7)) {
		t.Errorf("%s, released, is still kept", name(7))
	}
	if _, ok := m.Name(mustAddr(t, m, name(8))); !ok {
		t.Error("a held name was given back")
	}
	if _, ok := m.AddrFor("two-more.test"); ok {
		t.Error("a second new name was given an address with every other name held")
	}
}

func name(i int) string { return "n" + string(rune('a'+i%26)) + itoa(i) + ".test" }

func has(m *Map, n string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.byName[n]
	return ok
}

func mustAddr(t *testing.T, m *Map, n string) netip.Addr {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byName[n]
	if !ok {
		t.Fatalf("%s has no address", n)
	}
	return e.addr
}

func itoa(i int) string {
	return netip.AddrFrom4([4]byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}).String()
}

// TestAddressesWrapAround: once the end of Range is reached, addresses are given from its
// start again, skipping those that stand for a name.
func TestAddressesWrapAround(t *testing.T) {
	m := NewMap()
	first, _ := m.AddrFor("first.test")
	m.next = lastAddr.Prev()
	a, _ := m.AddrFor("last.test")
	b, _ := m.AddrFor("wrapped.test")
	if a != lastAddr.Prev() || b != first.Next() {
		t.Errorf("at the end of %v: %v, then %v; want %v, then %v (%v is first.test's)", Range, a, b, lastAddr.Prev(), first.Next(), first)
	}
}
