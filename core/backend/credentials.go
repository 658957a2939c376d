package backend

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/openworker/openworker/core/apitype"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/credentials"
	"github.com/openworker/openworker/core/hosts"
)

// Credentials is apitype's, the local API's wire type.
type Credentials = apitype.Credentials

// CredentialInfo is apitype's, the local API's wire type.
type CredentialInfo = apitype.CredentialInfo

// CatalogRow is apitype's, the local API's wire type.
type CatalogRow = apitype.CatalogRow

const applyNote = "a change applies to sessions started afterwards; a running session keeps the copies it started with"

// Credentials lists the shared logins as the settings in force have them.
func (b *Backend) Credentials() Credentials {
	out := credentialsOf(b.m.UserHome(), b.opts.GOOS, b.store.InForce().Settings, &b.scans)
	out.Pending = b.store.Pending()
	return out
}

// CredentialsOf is the credentials list for settings and the home folder home, as the
// settings file has it (a client without a daemon shows it).
func CredentialsOf(home string, settings *config.Settings) Credentials {
	return credentialsOf(home, runtime.GOOS, settings, nil)
}

// credentialsOf is CredentialsOf on goos with memo, what earlier lists found in ~/.ssh.
func credentialsOf(home, goos string, settings *config.Settings, memo *credentials.ScanMemo) Credentials {
	rows := credentials.Rows(home)
	out := Credentials{Note: applyNote}
	status := map[string]credentials.Row{}
	for _, r := range rows {
		status[r.Name] = r
		cr := CatalogRow{Name: r.Name, Title: r.Title, From: "~/" + r.Path, Kind: kindOf(r.Folder, r.Label), Lets: r.Lets, Var: r.Var,
			Hosts: hostStrings(r.Hosts), Found: r.Found, Status: r.Status()}
		if r.Name == "kubectl" {
			cr.Hosts = kubeHosts(filepath.Join(home, r.Path))
		}
		cr.Added = slices.ContainsFunc(settings.Credentials, func(c config.Credential) bool { return c.Name == r.Name })
		if r.Name != "ssh" {
			ok, why := config.StandInSupport(r.Name, goos)
			cr.StandIn = ok
			if !ok {
				cr.CopyOnly = why
			}
		}
		out.Catalog = append(out.Catalog, cr)
	}
	for _, c := range settings.Credentials {
		e := credentials.EntryFor(c)
		info := CredentialInfo{Key: c.Key(), Title: c.Key(), From: "~/" + e.Path, Var: e.Var, Hosts: hostStrings(e.Hosts), Enabled: c.Enabled}
		if c.Name == "ssh" && c.SSHAgent() {
			// Which of ~/.ssh's files stay outside, and why: a small folder, whose files are
			// looked through again when they changed (the app reads the list with every
			// change it shows).
			if s := credentials.Survey(credentials.Options{UserHome: home, Memo: memo}, []credentials.Entry{e}); len(s) == 1 {
				info.LeftOut = s[0].LeftOut
			}
		}
		if c.Name != "" && c.Name != "ssh" {
			info.Secrets = config.SecretsCopy
			if c.StandIn() {
				info.Secrets = config.SecretsStandIn
			}
			switch ok, why := config.StandInSupport(c.Name, goos); {
			case !ok:
				info.SecretsNote = why
			case !c.StandIn():
				info.SecretsNote = "it can be a stand-in instead: openworker credentials secrets " + c.Name + " stand-in"
			}
		}
		if c.Name == "ssh" {
			info.Keys = c.Keys
			if info.Keys == "" {
				info.Keys = config.SSHKeysCopy
			}
			info.AlwaysAllowed = alwaysOf(c)
		}
		if r, ok := status[c.Name]; ok && c.Name != "" {
			info.Title, info.Kind, info.Status = r.Title, kindOf(r.Folder, r.Label), r.Status()
			if c.Name == "kubectl" {
				info.Hosts = kubeHosts(filepath.Join(home, r.Path))
			}
		} else {
			folder, found := credentials.Found(filepath.Join(home, c.Path))
			info.Kind, info.Status = kindOf(folder, c.Label), "not found"
			if found {
				info.Status = "found"
			}
		}
		out.Entries = append(out.Entries, info)
	}
	return out
}

// AddCredential adds a catalog login by name, switched on (or off with enabled false), the
// default way: its secrets as stand-ins where it can have them, the ssh login's keys outside.
func (b *Backend) AddCredential(name string, enabled bool) (CredentialInfo, error) {
	return b.AddLogin(name, "", enabled)
}

// AddLogin adds a catalog login with its secrets shared as secrets says:
// config.SecretsStandIn, config.SecretsCopy, or "" for the default (a stand-in where the
// login can be one on this machine). A stand-in the login cannot be is refused with why.
func (b *Backend) AddLogin(name, secrets string, enabled bool) (CredentialInfo, error) {
	if _, ok := credentials.Lookup(name); !ok {
		return CredentialInfo{}, fmt.Errorf("%q is not a CLI login OpenWorker knows (%s); for another file or folder use openworker credentials add-path", name, strings.Join(config.CatalogNames(), ", "))
	}
	if name == "ssh" {
		if secrets != "" {
			return CredentialInfo{}, errors.New("the ssh login shares its keys through OpenWorker's agent or by copying them: add it with --agent or --copy")
		}
		return b.AddSSH("", enabled)
	}
	ok, why := config.StandInSupport(name, b.opts.GOOS)
	switch {
	case secrets != "" && secrets != config.SecretsStandIn && secrets != config.SecretsCopy:
		return CredentialInfo{}, fmt.Errorf("%q is not a way to share a login's secrets; use %q or %q", secrets, config.SecretsStandIn, config.SecretsCopy)
	case secrets == "" && ok:
		secrets = config.SecretsStandIn
	case secrets == config.SecretsStandIn && !ok:
		return CredentialInfo{}, fmt.Errorf("%s cannot be a stand-in here: %s; add it with --copy", name, why)
	case !ok:
		secrets = "" // copying is the only way; nothing to write
	}
	return b.addCredential(config.Credential{Name: name, Secrets: secrets, Enabled: enabled})
}

// SetSecrets switches how an added login's secrets reach sessions started afterwards:
// config.SecretsStandIn or config.SecretsCopy.
func (b *Backend) SetSecrets(name, mode string) (CredentialInfo, error) {
	if _, ok := b.credential(name); !ok || name == "" {
		return CredentialInfo{}, fmt.Errorf("%s is not added; add it with openworker credentials add %s (--stand-in or --copy)", name, name)
	}
	change := SetSecrets(name, mode)
	if err := config.TryChange(b.opts.GOOS, func(ed *config.Editor) error {
		if err := ed.AddCredential(config.Credential{Name: name, Enabled: true}); err != nil {
			return err
		}
		return change.file(ed)
	}); err != nil {
		return CredentialInfo{}, err
	}
	err := b.store.Apply(change)
	return b.publishCredential(CredentialChanged, name, err)
}

// AddCredentialPath adds a file or folder of the person's own under the home folder,
// labelled credential or configuration, with the hosts its tool needs and, optionally, the
// variable pointed at its copy.
func (b *Backend) AddCredentialPath(path, label string, sites []string, variable string, enabled bool) (CredentialInfo, error) {
	c := config.Credential{Path: path, Label: label, Var: variable, Enabled: enabled}
	if filepath.IsAbs(path) {
		rel, ok := homeRelative(b.m.UserHome(), path)
		if !ok {
			return CredentialInfo{}, fmt.Errorf("%s is not under the home folder (%s); only a file or folder under it can be shared", path, b.m.UserHome())
		}
		c.Path = rel
	}
	c.Path = strings.TrimPrefix(c.Path, "~/")
	for _, s := range sites {
		e, err := hosts.Parse(s)
		if err != nil {
			return CredentialInfo{}, fmt.Errorf("--host %s: %w", s, err)
		}
		c.Hosts = append(c.Hosts, e)
	}
	return b.addCredential(c)
}

func (b *Backend) addCredential(c config.Credential) (CredentialInfo, error) {
	c, err := config.CheckCredential(c, b.opts.GOOS)
	var pe *config.ProblemsError
	if errors.As(err, &pe) {
		// The entry is checked as a file's text would be; its problems' positions are in
		// no file the person has.
		msgs := make([]string, len(pe.Problems))
		for i, p := range pe.Problems {
			msgs[i] = p.Msg
		}
		return CredentialInfo{}, errors.New(strings.Join(msgs, "; "))
	}
	if err != nil {
		return CredentialInfo{}, err
	}
	if c.Path != "" {
		// A path that is not there would be switched on and copy nothing, silently.
		if _, err := os.Lstat(filepath.Join(b.m.UserHome(), strings.TrimPrefix(c.Path, "~/"))); err != nil {
			return CredentialInfo{}, fmt.Errorf("%s does not exist (%v); add a file or folder that is there", c.Path, errors.Unwrap(err))
		}
	}
	if _, ok := b.credential(c.Key()); ok {
		return CredentialInfo{}, fmt.Errorf("%s is added already; switch it on or off with openworker credentials enable|disable %s", c.Key(), c.Key())
	}
	err = b.store.Apply(AddCredential(c))
	return b.publishCredential(CredentialAdded, c.Key(), err)
}

// SetCredentialEnabled switches an added entry on or off.
func (b *Backend) SetCredentialEnabled(id string, on bool) (CredentialInfo, error) {
	key, err := config.CredentialKey(id)
	if err != nil {
		return CredentialInfo{}, err
	}
	if _, ok := b.credential(key); !ok {
		return CredentialInfo{}, fmt.Errorf("%s is not added; add it first with openworker credentials add (a CLI's login) or add-path (a file or folder)", key)
	}
	typ := CredentialDisabled
	if on {
		typ = CredentialEnabled
	}
	err = b.store.Apply(SetCredentialEnabled(key, on))
	return b.publishCredential(typ, key, err)
}

// RemoveCredential takes an entry out of the settings.
func (b *Backend) RemoveCredential(id string) error {
	key, err := config.CredentialKey(id)
	if err != nil {
		return err
	}
	info, ok := b.credentialInfo(key)
	if !ok {
		return fmt.Errorf("%s is not added (openworker credentials list shows what is)", key)
	}
	err = b.store.Apply(RemoveCredential(key))
	var pending *ErrPending
	if err == nil || errors.As(err, &pending) {
		b.bus.publish(Event{Type: CredentialRemoved, Credential: &info, Message: "removed " + key + "; " + applyNote})
	}
	return err
}

func (b *Backend) credential(key string) (config.Credential, bool) {
	for _, c := range b.store.InForce().Settings.Credentials {
		if c.Key() == key {
			return c, true
		}
	}
	return config.Credential{}, false
}

func (b *Backend) credentialInfo(key string) (CredentialInfo, bool) {
	for _, e := range b.Credentials().Entries {
		if e.Key == key {
			return e, true
		}
	}
	return CredentialInfo{}, false
}

// publishCredential tells the bus of a change that is in force (written, or pending while
// the file has problems).
func (b *Backend) publishCredential(typ, key string, err error) (CredentialInfo, error) {
	var pending *ErrPending
	if err != nil && !errors.As(err, &pending) {
		return CredentialInfo{}, err
	}
	info, _ := b.credentialInfo(key)
	msg := strings.TrimPrefix(typ, "credential.") + " " + key + "; " + applyNote
	b.bus.publish(Event{Type: typ, Credential: &info, Message: msg})
	return info, err
}

func kindOf(folder bool, label string) string {
	if folder {
		return "folder, " + label
	}
	return "file, " + label
}

func hostStrings(es []hosts.Entry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.String())
	}
	return out
}

func kubeHosts(path string) []string {
	es, err := credentials.KubeServers(path)
	if err != nil {
		return []string{}
	}
	return hostStrings(es)
}

// loginsNote says, on a session's Access list, that its shared logins are those it started
// with, and whether the settings have changed since.
func loginsNote(settings *config.Settings, started []credentials.Copied) string {
	var now, then []string
	for _, e := range credentials.Entries(settings.Credentials) {
		now = append(now, e.Key)
	}
	for _, c := range started {
		then = append(then, c.Key)
	}
	if len(now) == 0 && len(then) == 0 {
		return ""
	}
	note := "this session keeps the shared logins it started with (a copy cannot be taken back from a running sandbox); switching one on or off applies to sessions started afterwards"
	slices.Sort(now)
	slices.Sort(then)
	if !slices.Equal(now, then) {
		note += ". The logins switched on have changed since it started (now: " + strings.Join(now, ", ") + "); start a new session to use them"
	}
	return note
}

// copiedMessage sums up a session's copies, with everything left out.
func copiedMessage(logins []credentials.Copied) string {
	var parts []string
	for _, c := range logins {
		p := fmt.Sprintf("%s: %d file(s)", c.Key, c.Files)
		if c.Secrets == "stand-in" {
			p += " with stand-ins for its secrets"
		}
		if !c.Found {
			p = c.Key + ": not found"
		}
		if len(c.LeftOut) > 0 {
			p += ", left out: " + strings.Join(c.LeftOut, "; ")
		}
		parts = append(parts, p)
	}
	return "shared logins copied into the sandbox home: " + strings.Join(parts, "; ")
}

// homeRelative returns p relative to the home folder, as given or resolved.
func homeRelative(home, p string) (string, bool) {
	homes := []string{home}
	if real, err := filepath.EvalSymlinks(home); err == nil && real != home {
		homes = append(homes, real)
	}
	for _, h := range homes {
		if rel, err := filepath.Rel(h, filepath.Clean(p)); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			return rel, true
		}
	}
	return "", false
}
