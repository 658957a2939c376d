package hosts

import "fmt"

// Group is one tick box of "Choose sites…": a service and every entry its tools need.
type Group struct {
	// ID is stable across releases and safe to store; Name is what the list shows.
	ID   string
	Name string
	// Kind groups the tick boxes: "Code hosting", "Package registries", "Search APIs".
	Kind    string
	Entries []Entry
}

// catalog is the data of Catalog. Each service lists every host its usual tools contact, so
// that ticking one box is enough for them to work: an index and the host its files are
// served from, a proxy and its checksum database.
var catalog = []struct {
	id, name, kind string
	entries        []string
}{
	{"github", "GitHub", "Code hosting", []string{
		"github.com:443", "api.github.com:443", "codeload.github.com:443",
		"raw.githubusercontent.com:443", "objects.githubusercontent.com:443",
	}},
	{"gitlab", "GitLab", "Code hosting", []string{
		"gitlab.com:443", "registry.gitlab.com:443",
	}},
	{"pypi", "PyPI", "Package registries", []string{
		"pypi.org:443", "files.pythonhosted.org:443",
	}},
	{"npm", "npm", "Package registries", []string{
		"registry.npmjs.org:443",
	}},
	{"crates", "crates.io", "Package registries", []string{
		"crates.io:443", "index.crates.io:443", "static.crates.io:443",
	}},
	{"go", "Go module proxy", "Package registries", []string{
		"proxy.golang.org:443", "sum.golang.org:443",
	}},
	{"brave", "Brave Search API", "Search APIs", []string{
		"api.search.brave.com:443",
	}},
	{"tavily", "Tavily", "Search APIs", []string{
		"api.tavily.com:443",
	}},
	{"duckduckgo", "DuckDuckGo", "Search APIs", []string{
		"duckduckgo.com:443", "html.duckduckgo.com:443", "lite.duckduckgo.com:443", "api.duckduckgo.com:443",
	}},
}

// Catalog returns the groups "Choose sites…" offers, in the order it shows them. Each call
// returns fresh values that the caller may change.
func Catalog() []Group {
	groups := make([]Group, 0, len(catalog))
	for _, c := range catalog {
		g := Group{ID: c.id, Name: c.name, Kind: c.kind}
		for _, s := range c.entries {
			e, err := Parse(s)
			if err != nil {
				// The data above is fixed and tested; a bad entry is a defect of this file.
				panic(fmt.Sprintf("hosts: catalog group %s: %v", c.id, err))
			}
			g.Entries = append(g.Entries, e)
		}
		groups = append(groups, g)
	}
	return groups
}

// CatalogGroup returns the group with the given ID.
func CatalogGroup(id string) (Group, bool) {
	for _, g := range Catalog() {
		if g.ID == id {
			return g, true
		}
	}
	return Group{}, false
}

// Ticked reports whether every entry of the group is in entries: a group is shown ticked
// only when all the hosts its tools need are allowed.
func (g Group) Ticked(entries []Entry) bool {
	have := NewList(entries)
	for _, e := range g.Entries {
		if !have.Contains(e) {
			return false
		}
	}
	return true
}

// Tick returns entries with every entry of the group added, keeping the order of entries and
// adding only those missing.
func (g Group) Tick(entries []Entry) []Entry {
	have := NewList(entries)
	out := append([]Entry(nil), entries...)
	for _, e := range g.Entries {
		if !have.Contains(e) {
			out = append(out, e)
		}
	}
	return out
}

// Untick returns entries without the group's entries, except those in keep: the entries
// another ticked group or a credential entry still needs, so that unticking one box does not
// take away a host something else relies on.
func (g Group) Untick(entries, keep []Entry) []Entry {
	mine := NewList(g.Entries)
	kept := NewList(keep)
	out := make([]Entry, 0, len(entries))
	for _, e := range entries {
		if mine.Contains(e) && !kept.Contains(e) {
			continue
		}
		out = append(out, e)
	}
	return out
}
