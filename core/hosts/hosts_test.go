package hosts

import (
	"strings"
	"testing"
)

func mustParse(t testing.TB, ss ...string) []Entry {
	t.Helper()
	var out []Entry
	for _, s := range ss {
		e, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		out = append(out, e)
	}
	return out
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, in, want, errHas string
	}{
		{"host_default_port", "github.com", "github.com:443", ""},
		{"host_port", "GitHub.COM.:22", "github.com:22", ""},
		{"wildcard", "*.github.com", "*.github.com:443", ""},
		{"ipv4", "127.0.0.1:8080", "127.0.0.1:8080", ""},
		{"ipv6", "[::1]:8080", "[::1]:8080", ""},
		{"ipv6_default_port", "[::1]", "[::1]:443", ""},
		{"mapped_v4_is_v4", "[::ffff:127.0.0.1]:80", "127.0.0.1:80", ""},
		{"idn_punycode", "bücher.example", "xn--bcher-kva.example:443", ""},
		{"localhost", "localhost:8080", "localhost:8080", ""},
		{"empty", "", "", "is empty"},
		{"scheme", "https://github.com", "", "has a scheme"},
		{"path", "github.com/x", "", "has a path"},
		{"star_everything", "*", "", "allows every site"},
		{"star_inner", "a.*.com", "", "not a leading"},
		{"wildcard_tld", "*.com", "", "whole top-level domain"},
		{"port_zero", "github.com:0", "", "a port is 1 to 65535"},
		{"port_text", "github.com:https", "", "not a number"},
		{"v6_unbracketed", "::1", "", "without brackets"},
		{"zone", "[fe80::1%25eth0]:80", "", "IPv6 address"},
		{"numeric_name", "2130706433:80", "", "numeric address"},
		{"short_dotted", "127.1:80", "", "numeric address"},
		{"hex_dotted", "0x7f.1:80", "", "numeric address"},
		{"wildcard_numeric", "*.2.3.4", "", "numeric address"},
		{"double_dot", "a..com", "", "empty label"},
		{"underscore", "a_b.com", "", "not a valid host name"},
		{"long_label", strings.Repeat("a", 64) + ".com", "", "longer than 63"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse(tt.in)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("Parse(%q) = %v, %v; want error containing %q", tt.in, e, err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got := e.String(); got != tt.want {
				t.Fatalf("Parse(%q) = %s, want %s", tt.in, got, tt.want)
			}
			again, err := Parse(e.String())
			if err != nil || again != e {
				t.Fatalf("canonical form %q does not parse back to itself: %v, %v", e.String(), again, err)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	list := NewList(mustParse(t,
		"*.github.com", "gitlab.com", "example.org:80", "127.0.0.1:8080", "[::1]:8080", "localhost:9000",
		"xn--bcher-kva.example", "*.deep.example.net", "a.deep.example.net:8443"))
	denied := NewList(mustParse(t, "blocked.github.com"))
	tests := []struct {
		name, host string
		port       int
		allowed    bool
		entry      string
		literal    bool
		reasonHas  string
	}{
		{"wildcard_subdomain", "api.github.com", 443, true, "*.github.com:443", false, ""},
		{"wildcard_deep_subdomain", "a.b.github.com", 443, true, "*.github.com:443", false, ""},
		{"wildcard_not_apex", "github.com", 443, false, "", false, "github.com:443 is not on this session's allow list; " + HowToAllow},
		{"suffix_without_dot", "evilgithub.com", 443, false, "", false, "not on this session's allow list"},
		{"name_as_prefix", "github.com.evil.net", 443, false, "", false, "not on this session's allow list"},
		{"wildcard_other_port", "api.github.com", 80, false, "", false, "api.github.com:80 is not"},
		{"exact", "gitlab.com", 443, true, "gitlab.com:443", false, ""},
		{"exact_not_subdomain", "www.gitlab.com", 443, false, "", false, "not on"},
		{"case_and_trailing_dot", "GitLab.COM.", 443, true, "gitlab.com:443", false, ""},
		{"idn_unicode", "Bücher.example", 443, true, "xn--bcher-kva.example:443", false, ""},
		{"idn_punycode", "xn--bcher-kva.example", 443, true, "xn--bcher-kva.example:443", false, ""},
		{"explicit_port", "example.org", 80, true, "example.org:80", false, ""},
		{"default_port_is_443", "example.org", 443, false, "", false, "example.org:443 is not"},
		{"literal_v4", "127.0.0.1", 8080, true, "127.0.0.1:8080", true, ""},
		{"literal_v4_mapped", "::ffff:127.0.0.1", 8080, true, "127.0.0.1:8080", true, ""},
		{"literal_v6", "::1", 8080, true, "[::1]:8080", true, ""},
		{"literal_v6_bracketed", "[::1]", 8080, true, "[::1]:8080", true, ""},
		{"literal_other_port", "127.0.0.1", 8081, false, "", false, "127.0.0.1:8081 is not"},
		{"localhost_literal", "LOCALHOST", 9000, true, "localhost:9000", true, ""},
		{"exact_beats_wildcard", "a.deep.example.net", 8443, true, "a.deep.example.net:8443", false, ""},
		{"denied_wins", "blocked.github.com", 443, false, "blocked.github.com:443", false, "blocked.github.com:443 was denied for this session; " + HowToAllow},
		{"numeric_name", "2130706433", 80, false, "", false, "numeric address"},
		{"zone", "fe80::1%eth0", 80, false, "", false, "zone"},
		{"bad_port", "gitlab.com", 0, false, "", false, "a port is 1 to 65535"},
		{"empty_host", "", 443, false, "", false, "has no host"},
		{"underscore", "a_b.github.com", 443, false, "", false, "not a valid host name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(list, denied, tt.host, tt.port)
			if d.Allowed != tt.allowed || d.Literal != tt.literal {
				t.Fatalf("Decide(%q, %d) = %+v; want allowed=%v literal=%v", tt.host, tt.port, d, tt.allowed, tt.literal)
			}
			if tt.entry != "" && d.Entry.String() != tt.entry {
				t.Fatalf("Decide(%q, %d) entry = %s, want %s", tt.host, tt.port, d.Entry, tt.entry)
			}
			if !strings.Contains(d.Reason(), tt.reasonHas) {
				t.Fatalf("Decide(%q, %d) reason = %q, want it to contain %q", tt.host, tt.port, d.Reason(), tt.reasonHas)
			}
		})
	}
}

func TestNilListsRefuse(t *testing.T) {
	d := Decide(nil, nil, "github.com", 443)
	if d.Allowed {
		t.Fatalf("an empty list admitted github.com: %+v", d)
	}
}

func TestListEntries(t *testing.T) {
	l := NewList(mustParse(t, "b.com", "a.com", "b.com:443", "*.a.com"))
	var got []string
	for _, e := range l.Entries() {
		got = append(got, e.String())
	}
	if strings.Join(got, " ") != "a.com:443 *.a.com:443 b.com:443" || l.Len() != 3 {
		t.Fatalf("Entries() = %v (Len %d); want sorted and deduplicated", got, l.Len())
	}
	if _, err := ParseList([]string{"a.com", "http://b.com"}); err == nil {
		t.Fatal("ParseList accepted a list with a bad entry")
	}
}

func TestCatalog(t *testing.T) {
	groups := Catalog()
	want := []string{"GitHub", "GitLab", "PyPI", "npm", "crates.io", "Go module proxy", "Brave Search API", "Tavily", "DuckDuckGo"}
	if len(groups) != len(want) {
		t.Fatalf("Catalog() has %d groups, want %d", len(groups), len(want))
	}
	for i, g := range groups {
		if g.Name != want[i] || len(g.Entries) == 0 || g.ID == "" || g.Kind == "" {
			t.Fatalf("group %d = %+v, want %s with entries", i, g, want[i])
		}
		for _, e := range g.Entries {
			if e.Wildcard || e.Port != 443 {
				t.Fatalf("group %s entry %s: catalog entries are exact HTTPS hosts", g.Name, e)
			}
		}
	}
	pypi, ok := CatalogGroup("pypi")
	if !ok || len(pypi.Entries) < 2 {
		t.Fatalf("PyPI group must hold the index and the files host: %+v", pypi)
	}
	goGroup, _ := CatalogGroup("go")
	if len(goGroup.Entries) < 2 {
		t.Fatalf("Go group must hold the proxy and the checksum database: %+v", goGroup)
	}

	own := mustParse(t, "example.org")
	ticked := pypi.Tick(own)
	if !pypi.Ticked(ticked) || pypi.Ticked(own) {
		t.Fatalf("Tick/Ticked disagree: after tick %v", ticked)
	}
	if again := pypi.Tick(ticked); len(again) != len(ticked) {
		t.Fatalf("ticking twice added duplicates: %v", again)
	}
	partial := append(own, pypi.Entries[0])
	if pypi.Ticked(partial) {
		t.Fatal("a group with only some of its entries is shown ticked")
	}
	keep := pypi.Entries[:1]
	after := pypi.Untick(ticked, keep)
	if pypi.Ticked(after) || !NewList(after).Contains(own[0]) || !NewList(after).Contains(keep[0]) {
		t.Fatalf("Untick = %v; want the user's own site and kept entries to stay", after)
	}
	// Catalog returns fresh values: changing one must not change the next.
	groups[0].Entries[0].Host = "changed.example"
	if Catalog()[0].Entries[0].Host == "changed.example" {
		t.Fatal("Catalog shares its data with callers")
	}
}
