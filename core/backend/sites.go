package backend

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/openworker/openworker/core/apitype"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
)

// SiteGroup is apitype's, the local API's wire type.
type SiteGroup = apitype.SiteGroup

// Sites is apitype's, the local API's wire type.
type Sites = apitype.Sites

// Sites returns the "Choose sites…" list as the settings in force have it.
func (b *Backend) Sites() Sites {
	out := SitesOf(b.store.InForce().Settings.NetworkHosts)
	out.Pending = b.store.Pending()
	return out
}

// SitesOf is the "Choose sites…" list for a machine allow list: each catalog group, ticked
// when all its sites are on the list, and the sites no group holds.
func SitesOf(list []hosts.Entry) Sites {
	var out Sites
	inGroup := map[hosts.Entry]bool{}
	for _, g := range hosts.Catalog() {
		sg := SiteGroup{ID: g.ID, Name: g.Name, Kind: g.Kind}
		n := 0
		for _, e := range g.Entries {
			sg.Sites = append(sg.Sites, e.String())
			inGroup[e] = true
			if slices.Contains(list, e) {
				n++
			}
		}
		sg.Ticked, sg.Partial = n == len(g.Entries), n > 0 && n < len(g.Entries)
		out.Groups = append(out.Groups, sg)
	}
	for _, e := range list {
		if !inGroup[e] {
			out.Custom = append(out.Custom, e.String())
		}
	}
	return out
}

func group(id string) (hosts.Group, error) {
	if g, ok := hosts.CatalogGroup(id); ok {
		return g, nil
	}
	var ids []string
	for _, g := range hosts.Catalog() {
		ids = append(ids, g.ID)
	}
	return hosts.Group{}, fmt.Errorf("no group %q in Choose sites…; the groups are %s", id, strings.Join(ids, ", "))
}

// Tick is TickBy the app.
func (b *Backend) Tick(id string) error { return b.TickBy(id, ByApp) }

// TickBy puts every site of a group on the machine's list; the audit trail names each, and
// by whom.
func (b *Backend) TickBy(id, by string) error {
	g, err := group(id)
	if err != nil {
		return err
	}
	return b.applyAll("tick "+g.Name, g.Entries, AddHost, "added to the machine's list: %s (group "+g.ID+")", by)
}

// Untick is UntickBy the app.
func (b *Backend) Untick(id string) error { return b.UntickBy(id, ByApp) }

// UntickBy takes every site of a group off the machine's list.
func (b *Backend) UntickBy(id, by string) error {
	g, err := group(id)
	if err != nil {
		return err
	}
	return b.applyAll("untick "+g.Name, g.Entries, RemoveHost, "removed from the machine's list: %s (group "+g.ID+")", by)
}

// AddSite is AddSiteBy the app.
func (b *Backend) AddSite(site string) error { return b.AddSiteBy(site, ByApp) }

// AddSiteBy puts a site of the person's own on the machine's list, with the settings file's
// rules and messages.
func (b *Backend) AddSiteBy(site, by string) error {
	e, err := hosts.Parse(site)
	if err != nil {
		return err // it names the site
	}
	return b.applyAll("add "+e.String(), []hosts.Entry{e}, AddHost, "added to the machine's list: %s", by)
}

// RemoveSite is RemoveSiteBy the app.
func (b *Backend) RemoveSite(site string) error { return b.RemoveSiteBy(site, ByApp) }

// RemoveSiteBy takes a site off the machine's list.
func (b *Backend) RemoveSiteBy(site, by string) error {
	e, err := hosts.Parse(site)
	if err != nil {
		return err // it names the site
	}
	if !slices.Contains(b.store.InForce().Settings.NetworkHosts, e) {
		return fmt.Errorf("%s is not on the machine's list (openworker sites list shows it)", e)
	}
	return b.applyAll("remove "+e.String(), []hosts.Entry{e}, RemoveHost, "removed from the machine's list: %s", by)
}

// applyAll makes change for every entry as one change named name: in force at once, in one
// write, so that a running session never sees half of a group. Once it is in force (written,
// or pending while the settings file has problems), each site is recorded as what says (%s:
// the site), by by.
func (b *Backend) applyAll(name string, es []hosts.Entry, change func(hosts.Entry) Change, what, by string) error {
	cs := make([]Change, len(es))
	for i, e := range es {
		cs[i] = change(e)
	}
	err := b.store.Apply(Change{
		What: name,
		mem: func(s *config.Settings) {
			for _, c := range cs {
				c.mem(s)
			}
		},
		file: func(ed *config.Editor) error {
			for _, c := range cs {
				if err := c.file(ed); err != nil {
					return err
				}
			}
			return nil
		},
	})
	var pending *ErrPending
	if err == nil || errors.As(err, &pending) {
		for _, e := range es {
			b.recordSite("", fmt.Sprintf(what, e), by)
		}
	}
	return err
}

// SetProvider, SetNetworkProfile and SetApprovals change the machine's setting at once, then
// in the settings file; a value the file would refuse is refused with its message.
func (b *Backend) SetProvider(word string) error {
	return b.store.ApplyChecked(SetWord(config.KeyProvider, word))
}

func (b *Backend) SetNetworkProfile(word string) error {
	return b.store.ApplyChecked(SetWord(config.KeyNetworkProfile, word))
}

func (b *Backend) SetApprovals(word string) error {
	return b.store.ApplyChecked(SetWord(config.KeyApprovals, word))
}

// SetGitMetadata sets sandbox_git_metadata, for sessions started afterwards.
func (b *Backend) SetGitMetadata(word string) error {
	return b.store.ApplyChecked(SetWord(config.KeyGitMetadata, word))
}

// SetToolchain switches a toolchain on or off for sessions started afterwards.
func (b *Backend) SetToolchain(path string, on bool) error {
	return b.store.ApplyChecked(SetToolchain(path, on))
}
