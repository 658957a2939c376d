package hosts

import (
	"net/netip"
	"slices"
	"strings"
)

// List is an immutable, indexed set of entries. Matching a host costs one map lookup for the
// exact name and one per dot in the name for wildcards, however long the list is. A nil *List
// is empty. Build a new List to change it; share one freely between goroutines.
type List struct {
	// exact and wild map a name (a wildcard's suffix) to its entries, one per port. Keying by
	// the string alone keeps lookups on the runtime's fast path for string keys; a name rarely
	// has more than two ports.
	exact map[string][]Entry
	wild  map[string][]Entry
	// wildLabels has bit k set when some wildcard's suffix has k labels (k ≥ 63 shares bit
	// 63), so a lookup is made only for the suffixes of a length some wildcard has.
	wildLabels uint64
	entries    []Entry
}

// NewList indexes entries. Duplicates collapse into one; the order of entries does not matter.
func NewList(entries []Entry) *List {
	l := &List{
		exact:   make(map[string][]Entry, len(entries)),
		wild:    make(map[string][]Entry),
		entries: make([]Entry, 0, len(entries)),
	}
	for _, e := range entries {
		m := l.exact
		if e.Wildcard {
			m = l.wild
		}
		if _, dup := atPort(m[e.Host], e.Port); dup {
			continue
		}
		m[e.Host] = append(m[e.Host], e)
		if e.Wildcard {
			l.wildLabels |= 1 << min(strings.Count(e.Host, ".")+1, 63)
		}
		l.entries = append(l.entries, e)
	}
	slices.SortFunc(l.entries, compareEntries)
	return l
}

// ParseList parses each string with Parse and indexes the result. The first bad entry fails
// the whole list, so a broken setting never half-applies.
func ParseList(ss []string) (*List, error) {
	entries := make([]Entry, 0, len(ss))
	for _, s := range ss {
		e, err := Parse(s)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return NewList(entries), nil
}

// compareEntries orders entries by host, then exact before wildcard, then port, without
// building their text: a swap sorts the whole list.
func compareEntries(a, b Entry) int {
	if c := strings.Compare(a.Host, b.Host); c != 0 {
		return c
	}
	if a.Wildcard != b.Wildcard {
		if a.Wildcard {
			return 1
		}
		return -1
	}
	return a.Port - b.Port
}

// Entries returns the list's entries, sorted by host, each once.
func (l *List) Entries() []Entry {
	if l == nil {
		return nil
	}
	return slices.Clone(l.entries)
}

// Len is the number of distinct entries.
func (l *List) Len() int {
	if l == nil {
		return 0
	}
	return len(l.entries)
}

// Contains reports whether the list holds e itself (not merely an entry that would match it).
func (l *List) Contains(e Entry) bool {
	if l == nil {
		return false
	}
	m := l.exact
	if e.Wildcard {
		m = l.wild
	}
	_, ok := atPort(m[e.Host], e.Port)
	return ok
}

// Match returns the entry that admits host at port. host must be canonical (as CanonicalName
// returns it, or an address's text); Decide canonicalises a request's host first. An exact
// entry wins over a wildcard, and a longer wildcard over a shorter one. Wildcards never match
// an address.
func (l *List) Match(host string, port int) (Entry, bool) {
	if l == nil || host == "" {
		return Entry{}, false
	}
	if e, ok := atPort(l.exact[host], port); ok {
		return e, true
	}
	if len(l.wild) == 0 || isAddr(host) {
		return Entry{}, false
	}
	// Walk the label suffixes, longest first: for a.b.example.com try b.example.com,
	// example.com. A wildcard's Host is the part after "*." and has at least two labels, so
	// an entry for Host matches every strict subdomain and never Host itself, and the last
	// label alone need not be looked up.
	labels := strings.Count(host, ".") + 1
	for rest := host; labels > 2; {
		rest = rest[strings.IndexByte(rest, '.')+1:]
		labels--
		if l.wildLabels&(1<<min(labels, 63)) == 0 {
			continue
		}
		if e, ok := atPort(l.wild[rest], port); ok {
			return e, true
		}
	}
	return Entry{}, false
}

func atPort(entries []Entry, port int) (Entry, bool) {
	for _, e := range entries {
		if e.Port == port {
			return e, true
		}
	}
	return Entry{}, false
}

// isAddr reports whether host is an address's text. Canonical names never start with a digit
// in their last label, and never contain ':'; addresses always end in a digit or hex digit
// after a ':'.
func isAddr(host string) bool {
	if strings.IndexByte(host, ':') >= 0 {
		return true
	}
	c := host[len(host)-1]
	if c < '0' || c > '9' {
		return false
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}
