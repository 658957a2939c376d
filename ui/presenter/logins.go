package presenter

import (
	"errors"
	"strings"

	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
)

// BackendLogins is the shared logins of a backend, as the presenter needs them.
type BackendLogins struct{ B *backend.Backend }

var _ Logins = BackendLogins{}

func (l BackendLogins) List() LoginList {
	c := l.B.Credentials()
	out := LoginList{Note: c.Note}
	for _, e := range c.Entries {
		out.Added = append(out.Added, AddedLogin{Key: e.Key, Title: e.Title, From: e.From, Kind: e.Kind, Hosts: e.Hosts,
			Enabled: e.Enabled, Status: e.Status, Problem: e.Problem, Keys: e.Keys, LeftOut: e.LeftOut,
			Secrets: e.Secrets, SecretsNote: e.SecretsNote, StandIn: e.Secrets == config.SecretsStandIn || strings.HasPrefix(e.SecretsNote, "it can be a stand-in")})
	}
	for _, r := range c.Catalog {
		out.Catalog = append(out.Catalog, CatalogLogin{Name: r.Name, Title: r.Title, From: r.From, Kind: r.Kind, Lets: r.Lets,
			Hosts: r.Hosts, Found: r.Found, Status: r.Status, Added: r.Added, StandIn: r.StandIn, CopyOnly: r.CopyOnly})
	}
	return out
}

func (l BackendLogins) AddCatalog(name string) error {
	_, err := l.B.AddCredential(name, true)
	return pendingIsDone(err)
}

func (l BackendLogins) AddPath(path, label string, hosts []string) error {
	_, err := l.B.AddCredentialPath(path, label, hosts, "", true)
	return pendingIsDone(err)
}

func (l BackendLogins) SetEnabled(key string, on bool) error {
	_, err := l.B.SetCredentialEnabled(key, on)
	return pendingIsDone(err)
}

func (l BackendLogins) Remove(key string) error { return pendingIsDone(l.B.RemoveCredential(key)) }

var _ SSHKeys = BackendLogins{}

func (l BackendLogins) AddSSH(keys string) error {
	_, err := l.B.AddSSH(keys, true)
	return pendingIsDone(err)
}

func (l BackendLogins) SetSSHKeys(mode string) error {
	_, err := l.B.SetSSHKeys(mode)
	return pendingIsDone(err)
}

var _ Secrets = BackendLogins{}

func (l BackendLogins) AddLoginSecrets(name, secrets string) error {
	_, err := l.B.AddLogin(name, secrets, true)
	return pendingIsDone(err)
}

func (l BackendLogins) SetSecrets(name, mode string) error {
	_, err := l.B.SetSecrets(name, mode)
	return pendingIsDone(err)
}

// pendingIsDone treats a change kept pending (the settings file has problems) as made: it
// is in force, and the settings screen says the file has problems.
func pendingIsDone(err error) error {
	var pending *backend.ErrPending
	if errors.As(err, &pending) {
		return nil
	}
	return err
}
