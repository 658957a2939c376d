package backend

import (
	"fmt"
	"slices"

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
	return hosts.Group{}, fmt.Errorf("no group %q in Choose sites…; the groups are %v", id, ids)
}

// Tick puts every site of a group on the machine's list.
func (b *Backend) Tick(id string) error {
	g, err := group(id)
	if err != nil {
		return err
	}
	return b.applyAll(g.Entries, AddHost)
}

// Untick takes every site of a group off the machine's list.
func (b *Backend) Untick(id string) error {
	g, err := group(id)
	if err != nil {
		return err
	}
	return b.applyAll(g.Entries, RemoveHost)
}

// AddSite puts a site of the person's own on the machine's list, with the settings file's
// rules and messages.
func (b *Backend) AddSite(site string) error {
	e, err := hosts.Parse(site)
	if err != nil {
		return fmt.Errorf("%s: %w", site, err)
	}
	return b.store.Apply(AddHost(e))
}

// RemoveSite takes a site off the machine's list.
func (b *Backend) RemoveSite(site string) error {
	e, err := hosts.Parse(site)
	if err != nil {
		return fmt.Errorf("%s: %w", site, err)
	}
	if !slices.Contains(b.store.InForce().Settings.NetworkHosts, e) {
		return fmt.Errorf("%s is not on the machine's list (openworker sites list shows it)", e)
	}
	return b.store.Apply(RemoveHost(e))
}

func (b *Backend) applyAll(es []hosts.Entry, change func(hosts.Entry) Change) error {
	var first error
	for _, e := range es {
		if err := b.store.Apply(change(e)); err != nil && first == nil {
			first = err
		}
	}
	return first
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
