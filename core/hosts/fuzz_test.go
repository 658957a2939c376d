package hosts

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzParse checks that every entry Parse accepts is canonical and stable: its String parses
// back to the same entry, it has a port in range, and a wildcard never admits its own suffix.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"github.com", "*.github.com:443", "[::1]:8080", "127.0.0.1", "bücher.example", "a..b", "*.com", "[::ffff:10.0.0.1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			if e != (Entry{}) {
				t.Fatalf("Parse(%q) returned %v with error %v", s, e, err)
			}
			return
		}
		if e.Port < 1 || e.Port > 65535 || e.Host == "" {
			t.Fatalf("Parse(%q) = %+v: port or host out of range", s, e)
		}
		again, err := Parse(e.String())
		if err != nil || again != e {
			t.Fatalf("Parse(%q) = %s, which parses back as %+v, %v", s, e, again, err)
		}
		l := NewList([]Entry{e})
		if e.Wildcard {
			if _, ok := l.Match(e.Host, e.Port); ok {
				t.Fatalf("wildcard %s matched its own suffix", e)
			}
			if d := Decide(l, nil, "x."+e.Host, e.Port); !d.Allowed || d.Literal {
				t.Fatalf("wildcard %s does not admit x.%s (or calls it literal): %+v", e, e.Host, d)
			}
			return
		}
		if d := Decide(l, nil, e.Host, e.Port); !d.Allowed {
			t.Fatalf("entry %s does not admit its own host: %+v", e, d)
		}
	})
}

// FuzzDecideHost checks that the fast path for plain names agrees with CanonicalName, and
// that a decision's verdict never depends on case or a trailing dot.
func FuzzDecideHost(f *testing.F) {
	for _, s := range []string{"github.com", "API.GitHub.com.", "ab--c.com", "-a.com", "xn--bcher-kva.example", "1.2.3.4", "127.1", "::1", "a_b.com"} {
		f.Add(s, 443)
	}
	list := NewList(mustParse(f, "*.github.com", "github.com", "127.0.0.1:443", "xn--bcher-kva.example"))
	f.Fuzz(func(t *testing.T, host string, port int) {
		if !strings.ContainsAny(host, ":[") && (host == "" || host[0] < '0' || host[0] > '9') {
			fast, fastErr := canonicalHost(host)
			slow, slowErr := CanonicalName(host)
			if (fastErr == nil) != (slowErr == nil) || fastErr == nil && fast != slow {
				t.Fatalf("plain name %q: fast path %q, %v; CanonicalName %q, %v", host, fast, fastErr, slow, slowErr)
			}
		}
		d := Decide(list, nil, host, port)
		if d.Allowed {
			if d.Host == "" || d.Port != port {
				t.Fatalf("Decide(%q, %d) allowed without a canonical target: %+v", host, port, d)
			}
			if !strings.HasSuffix(d.Host, "github.com") && d.Host != "127.0.0.1" && d.Host != "xn--bcher-kva.example" {
				t.Fatalf("Decide(%q, %d) admitted %q, which no entry names", host, port, d.Host)
			}
			// The canonical host is ASCII, so upper-casing it is the same name.
			variant := strings.ToUpper(d.Host) + "."
			if up := Decide(list, nil, variant, port); !isAddr(d.Host) && (!up.Allowed || up.Host != d.Host) {
				t.Fatalf("Decide(%q) allowed %q but %q (upper case, trailing dot) was decided %+v", host, d.Host, variant, up)
			}
		} else if d.Reason() == "" {
			t.Fatalf("Decide(%q, %d) refused without a reason", host, port)
		}
		_ = fmt.Sprint(d.Target())
	})
}
