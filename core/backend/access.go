package backend

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/openworker/openworker/core/apitype"
	"github.com/openworker/openworker/core/audit"

	"github.com/openworker/openworker/core/hosts"
)

// Site sources in a session's Access list.
const (
	FromSettings = "settings"     // the machine's allow list (Settings ▸ Sandbox ▸ Choose sites…)
	FromLogin    = "shared login" // a shared login's hosts
	SessionOnly  = "session only" // allowed for this session; it ends with the session
)

// Access is apitype's, the local API's wire type.
type Access = apitype.Access

// AccessSite is apitype's, the local API's wire type.
type AccessSite = apitype.AccessSite

// Published is apitype's, the local API's wire type.
type Published = apitype.Published

// Access returns session id's Access list.
func (b *Backend) Access(id string) (Access, error) {
	st, err := b.sites(id)
	if err != nil {
		return Access{}, err
	}
	settings := b.store.InForce().Settings
	st.mu.Lock()
	defer st.mu.Unlock()
	a := Access{Session: id, Pending: b.store.Pending()}
	if st.s != nil {
		a.Network = string(st.s.Network)
		a.Logins = st.s.Logins()
		a.LocalServers, a.Published = st.s.LocalServers(), st.s.Published()
	}
	a.LoginsNote = loginsNote(settings, a.Logins)
	a.FoldersRefused = slices.Clone(st.folders)
	seen := map[hosts.Entry]bool{}
	add := func(es []hosts.Entry, source string) {
		for _, e := range es {
			if !seen[e] {
				seen[e] = true
				a.Sites = append(a.Sites, AccessSite{Site: e.String(), Source: source})
			}
		}
	}
	add(settings.NetworkHosts, FromSettings)
	add(st.logins, FromLogin)
	add(st.own, SessionOnly)
	for _, e := range st.denied {
		a.Denied = append(a.Denied, e.String())
	}
	a.SSH = append(slices.Clone(st.ssh), alwaysSSH(settings)...)
	// Recorded before the proxy answers the command: a caller that asks after the command
	// ended finds every refusal it met.
	for _, site := range slices.Sorted(maps.Keys(st.blocked)) {
		a.Refused = append(a.Refused, st.blocked[site])
	}
	return a, nil
}

// Who changed a session's sites or the machine's list, as the audit trail names them.
const (
	ByApp  = "the app"             // the presenter: the menu-bar app's Access and Choose sites… lists
	ByCLI  = "the CLI (local API)" // a client of the local API: openworker access, sites
	ByCard = "a card"              // a person's answer to a site card
)

// recordSite writes a person's change to the audit trail: what changed, to which site, in
// which session (none: the machine's list), and by whom.
func (b *Backend) recordSite(session, change, by string) {
	b.record(audit.Event{Type: audit.SiteChanged, Session: session, Summary: change, By: by})
}

// record writes a person's change to the audit trail and tells the bus.
func (b *Backend) record(e audit.Event) {
	e.Time = time.Now()
	if b.opts.Session.Audit != nil {
		_ = b.opts.Session.Audit.Write(e)
	}
	b.bus.publish(Event{Time: e.Time, Type: e.Type, Session: e.Session, Audit: &e})
}

// AllowForSession is AllowForSessionBy the app.
func (b *Backend) AllowForSession(id, site string) error { return b.AllowForSessionBy(id, site, ByApp) }

// AllowForSessionBy allows site for the session only, at once, and takes back a denial of
// it; the audit trail says by whom.
func (b *Backend) AllowForSessionBy(id, site, by string) error {
	e, err := hosts.Parse(site)
	if err != nil {
		return err
	}
	st, err := b.sites(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	st.denied = slices.DeleteFunc(st.denied, func(d hosts.Entry) bool { return d == e })
	if !slices.Contains(st.own, e) {
		st.own = append(st.own, e)
	}
	st.mu.Unlock()
	if !e.Wildcard {
		b.broker.Forget(id, e.String())
	}
	b.swap(st)
	b.recordSite(id, "allowed for the session: "+e.String(), by)
	b.publishAccess(id)
	return nil
}

// Revoke is RevokeBy the app.
func (b *Backend) Revoke(id, site string) error { return b.RevokeBy(id, site, ByApp) }

// RevokeBy takes back a session-only site; open tunnels to it close at once. Sites from the
// settings or a shared login are changed there, not per session. The audit trail says by whom.
func (b *Backend) RevokeBy(id, site, by string) error {
	e, err := hosts.Parse(site)
	if err != nil {
		return err
	}
	st, err := b.sites(id)
	if err != nil {
		return err
	}
	settings := b.store.InForce().Settings
	st.mu.Lock()
	i := slices.Index(st.own, e)
	if i < 0 {
		inSettings, inLogins := slices.Contains(settings.NetworkHosts, e), slices.Contains(st.logins, e)
		st.mu.Unlock()
		switch {
		case inSettings && b.opts.GOOS == "darwin":
			return fmt.Errorf("%s comes from the machine's settings, not this session; remove it in Settings ▸ Sandbox ▸ Choose sites… or with openworker sites remove %s", e, e)
		case inSettings:
			return fmt.Errorf("%s comes from the machine's settings, not this session; remove it with openworker sites remove %s", e, e)
		case inLogins && b.opts.GOOS == "darwin":
			return fmt.Errorf("%s comes from a shared login; switch that login off in Settings ▸ Sandbox (it applies to sessions started afterwards)", e)
		case inLogins:
			return fmt.Errorf("%s comes from a shared login; switch that login off with openworker credentials disable NAME (openworker credentials list names it; it applies to sessions started afterwards)", e)
		}
		return fmt.Errorf("%s is not one of this session's sites (openworker access %s lists them)", e, id)
	}
	st.own = slices.Delete(st.own, i, i+1)
	st.mu.Unlock()
	b.swap(st)
	b.recordSite(id, "revoked for the session: "+e.String(), by)
	b.publishAccess(id)
	return nil
}

// SetPublish is SetPublishBy the app.
func (b *Backend) SetPublish(id string, port int, on bool) error {
	return b.SetPublishBy(id, port, on, ByApp)
}

// SetPublishBy publishes a port of session id's sandbox loopback on this machine's 127.0.0.1
// while a server listens there (on), or takes that ask back; the audit trail says by whom.
func (b *Backend) SetPublishBy(id string, port int, on bool, by string) error {
	if _, err := b.sites(id); err != nil {
		return err
	}
	s, ok := b.m.Get(id)
	if !ok {
		return fmt.Errorf("no session %q; list them with openworker session ls", id)
	}
	if err := s.SetPublish(port, on); err != nil {
		return err
	}
	change := "published on this machine's loopback while a server listens: port " + strconv.Itoa(port)
	if !on {
		change = "no longer published on this machine's loopback: port " + strconv.Itoa(port)
	}
	b.recordSite(id, change, by)
	b.publishAccess(id)
	return nil
}

func (b *Backend) publishAccess(id string) {
	if a, err := b.Access(id); err == nil {
		b.bus.publish(Event{Type: AccessChanged, Session: id, Access: &a})
	}
}

// SetLocalServers switches a running session's local servers on or off, as the person chose
// in the app or with openworker access: on a Mac its commands may then serve and connect on
// this machine's loopback, other programs' ports included, and its runner restarts behind the
// new wall (its next result says shell state was lost); on Linux, whose sandbox has a
// loopback of its own, every port a command listens on there is published on this machine's
// 127.0.0.1, with no restart.
func (b *Backend) SetLocalServers(id string, on bool) error {
	if _, err := b.sites(id); err != nil {
		return err
	}
	s, ok := b.m.Get(id)
	if !ok {
		return fmt.Errorf("no session %q; list them with openworker session ls", id)
	}
	if err := s.SetLocalServers(context.Background(), on); err != nil {
		return err
	}
	b.publishAccess(id)
	return nil
}
