package hosts

import (
	"fmt"
	"testing"
)

// bigList is n entries, half exact names and half wildcards, as a large organisation's
// settings might hold.
func bigList(tb testing.TB, n int) *List {
	tb.Helper()
	entries := make([]Entry, 0, n)
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("host%d.example%d.com:443", i, i%97)
		if i%2 == 1 {
			s = fmt.Sprintf("*.zone%d.example.net:443", i)
		}
		entries = append(entries, mustParse(tb, s)...)
	}
	return NewList(entries)
}

// BenchmarkDecide10k is a decision against a 10,000-entry list: target ≤ 300 ns.
func BenchmarkDecide10k(b *testing.B) {
	list := bigList(b, 10000)
	denied := NewList(mustParse(b, "denied.example.org"))
	cases := []struct {
		name, host string
		allowed    bool
	}{
		{"exact_hit", "host4242.example71.com", true},
		{"wildcard_hit", "a.b.zone4243.example.net", true},
		{"miss", "a.b.c.not-listed.example.org", false},
		{"mixed_case_trailing_dot", "Host4242.Example71.COM.", true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if d := Decide(list, denied, c.host, 443); d.Allowed != c.allowed {
				b.Fatalf("Decide(%q) = %+v, want allowed=%v", c.host, d, c.allowed)
			}
			b.ReportAllocs()
			for b.Loop() {
				Decide(list, denied, c.host, 443)
			}
		})
	}
}

// BenchmarkNewList10k is building the index a swap installs.
func BenchmarkNewList10k(b *testing.B) {
	entries := bigList(b, 10000).Entries()
	b.ReportAllocs()
	for b.Loop() {
		NewList(entries)
	}
}
