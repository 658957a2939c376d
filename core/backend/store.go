package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
)

// Store is the machine's settings as the backend holds them: the file's (through its
// watcher), with a person's changes applied in memory first. A change takes effect at once
// and is then written to the file keeping every other byte of it; while the file has
// problems it stays pending, in force, and is written once the file is fixed, never over the
// person's broken text.
type Store struct {
	path, stateDir, goos string

	mu      sync.Mutex
	file    *config.InForce // what the file (or the last good copy) says
	pending []Change        // in force, not yet written
	watcher *config.Watcher
	onSet   func(*config.InForce) // the settings in force changed
}

// Change is one change a person makes to the settings: how it applies to settings in
// memory, and to the file.
type Change struct {
	What string // for messages: "add github.com:443 to the allow list"
	mem  func(*config.Settings)
	file func(*config.Editor) error
}

// AddHost is the change that allows a site on the machine (Always allow, Choose sites…).
func AddHost(e hosts.Entry) Change {
	return Change{
		What: "add " + e.String() + " to the allow list",
		mem: func(s *config.Settings) {
			if !slices.Contains(s.NetworkHosts, e) {
				s.NetworkHosts = append(s.NetworkHosts, e)
				s.NetworkHostsRaw = append(s.NetworkHostsRaw, e.String())
			}
		},
		file: func(ed *config.Editor) error { return ed.AddHost(e.String()) },
	}
}

// RemoveHost is the change that takes a site off the machine's list.
func RemoveHost(e hosts.Entry) Change {
	return Change{
		What: "remove " + e.String() + " from the allow list",
		mem: func(s *config.Settings) {
			for i := len(s.NetworkHosts) - 1; i >= 0; i-- {
				if s.NetworkHosts[i] == e {
					s.NetworkHosts = slices.Delete(s.NetworkHosts, i, i+1)
					if i < len(s.NetworkHostsRaw) {
						s.NetworkHostsRaw = slices.Delete(s.NetworkHostsRaw, i, i+1)
					}
				}
			}
		},
		file: func(ed *config.Editor) error { return ed.RemoveHost(e.String()) },
	}
}

// AddCredential is the change that adds a shared login ("Add… ▸ A CLI's login", "Add… ▸ A
// file or folder"); c is checked already (config.CheckCredential).
func AddCredential(c config.Credential) Change {
	return Change{
		What: "add the shared login " + c.Key(),
		mem: func(s *config.Settings) {
			if !slices.ContainsFunc(s.Credentials, func(o config.Credential) bool { return o.Key() == c.Key() }) {
				s.Credentials = append(s.Credentials, c)
			}
		},
		file: func(ed *config.Editor) error {
			if slices.ContainsFunc(ed.Settings().Credentials, func(o config.Credential) bool { return o.Key() == c.Key() }) {
				return nil // written already (the person's own edit, or a retry)
			}
			return ed.AddCredential(c)
		},
	}
}

// SetCredentialEnabled is the change that switches a shared login on or off; key is its
// config.CredentialKey.
func SetCredentialEnabled(key string, on bool) Change {
	what := "switch the shared login " + key + " off"
	if on {
		what = "switch the shared login " + key + " on"
	}
	return Change{
		What: what,
		mem: func(s *config.Settings) {
			for i := range s.Credentials {
				if s.Credentials[i].Key() == key {
					s.Credentials[i].Enabled = on
				}
			}
		},
		file: func(ed *config.Editor) error { return ed.SetCredentialEnabled(key, on) },
	}
}

// RemoveCredential is the change that takes a shared login out of the settings.
func RemoveCredential(key string) Change {
	return Change{
		What: "remove the shared login " + key,
		mem: func(s *config.Settings) {
			s.Credentials = slices.DeleteFunc(s.Credentials, func(c config.Credential) bool { return c.Key() == key })
		},
		file: func(ed *config.Editor) error {
			if !slices.ContainsFunc(ed.Settings().Credentials, func(o config.Credential) bool { return o.Key() == key }) {
				return nil
			}
			return ed.RemoveCredential(key)
		},
	}
}

// OpenStore reads the settings in force and, with watch, follows the file until ctx ends.
func OpenStore(ctx context.Context, path, stateDir, goos string, watch bool) (*Store, error) {
	in, err := config.LoadInForce(path, stateDir, goos)
	if err != nil {
		return nil, err
	}
	st := &Store{path: path, stateDir: stateDir, goos: goos, file: in}
	if !watch {
		return st, nil
	}
	w, err := config.Watch(ctx, path, goos, 100*time.Millisecond)
	if err != nil {
		return nil, err
	}
	st.watcher = w
	events, cancel := w.Subscribe()
	go func() {
		defer cancel()
		for ev := range events {
			st.reloaded(ev)
		}
	}()
	return st, nil
}

// Close stops following the file.
func (st *Store) Close() error {
	if st.watcher != nil {
		return st.watcher.Close()
	}
	return nil
}

// Path is the settings file's path.
func (st *Store) Path() string { return st.path }

// InForce returns the settings in force: the file's, with the pending changes applied.
func (st *Store) InForce() *config.InForce {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.inForceLocked()
}

func (st *Store) inForceLocked() *config.InForce {
	in := *st.file
	if len(st.pending) > 0 {
		s := clone(in.Settings)
		for _, c := range st.pending {
			c.mem(s)
		}
		in.Settings = s
	}
	return &in
}

// Pending lists the changes in force that are not written yet.
func (st *Store) Pending() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []string
	for _, c := range st.pending {
		out = append(out, c.What)
	}
	return out
}

// ErrPending says a change is in force but not written: the file has problems.
type ErrPending struct {
	Change   string
	Problems error
	Path     string
	// Earlier is how many changes made before it wait to be written too.
	Earlier int
}

func (e *ErrPending) Error() string {
	earlier := ""
	if e.Earlier > 0 {
		earlier = fmt.Sprintf(", after %d earlier change%s", e.Earlier, map[bool]string{true: "", false: "s"}[e.Earlier == 1])
	}
	return fmt.Sprintf("%s: in force now; it will be written to %s%s once the file's problems are fixed (openworker config check):\n%v", e.Change, e.Path, earlier, e.Problems)
}

// Apply makes a change: in force at once, then written. A file that has problems keeps the
// change pending (an *ErrPending says so); any other failure to write is returned too, and
// the change stays in force and pending.
func (st *Store) Apply(c Change) error {
	st.mu.Lock()
	st.pending = append(st.pending, c)
	in := st.inForceLocked()
	onSet := st.onSet
	st.mu.Unlock()
	if onSet != nil {
		onSet(in)
	}
	err := st.flush()
	// What waits is said as the change just made, not the first one still waiting.
	var pe *ErrPending
	if errors.As(err, &pe) {
		st.mu.Lock()
		pe.Change, pe.Earlier = c.What, max(len(st.pending)-1, 0)
		st.mu.Unlock()
	}
	return err
}

// flush writes the pending changes, oldest first, until one cannot be written.
func (st *Store) flush() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	for len(st.pending) > 0 {
		c := st.pending[0]
		err := config.Update(st.path, st.goos, c.file)
		var pe *config.ProblemsError
		if errors.As(err, &pe) {
			return &ErrPending{Change: c.What, Problems: pe, Path: st.path}
		}
		if err != nil {
			return fmt.Errorf("%s: in force now, but writing %s failed: %w", c.What, st.path, err)
		}
		st.pending = st.pending[1:]
		// The file now says it; take its new text as the settings in force, so that the
		// change is in force whether or not the watcher has seen the write yet.
		if data, err := os.ReadFile(st.path); err == nil {
			if s, problems := config.Parse(st.path, data, st.goos); len(problems) == 0 {
				st.file = &config.InForce{Settings: s}
				_ = config.SaveLastGood(st.stateDir, data)
			}
		}
	}
	return nil
}

// reloaded takes what the watcher read. A good file first gets the pending changes written.
func (st *Store) reloaded(ev config.Event) {
	st.mu.Lock()
	if ev.Err != nil {
		in := *st.file
		in.Problems = ev.Err
		in.LastGood = ev.Settings != nil || st.file.LastGood
		if ev.Settings != nil {
			in.Settings, in.NoLastGood = ev.Settings, false
		}
		st.file = &in
	} else {
		// The event may have been read before a write of the store's own that came after
		// it (flush takes the file's new text at once): what the file says now is what is
		// in force, or a removed site could come back for a moment.
		st.file = &config.InForce{Settings: ev.Settings}
		if data, err := os.ReadFile(st.path); err == nil {
			if s, problems := config.Parse(st.path, data, st.goos); len(problems) == 0 {
				st.file = &config.InForce{Settings: s}
				_ = config.SaveLastGood(st.stateDir, data)
			}
		}
	}
	hasPending := len(st.pending) > 0
	st.mu.Unlock()
	if ev.Err == nil && hasPending {
		_ = st.flush()
	}
	if st.onSet != nil {
		st.onSet(st.InForce())
	}
}

// clone copies settings deeply enough for a change to edit the copy.
func clone(s *config.Settings) *config.Settings {
	c := *s
	c.NetworkHosts = slices.Clone(s.NetworkHosts)
	c.NetworkHostsRaw = slices.Clone(s.NetworkHostsRaw)
	c.Toolchains = slices.Clone(s.Toolchains)
	c.Credentials = slices.Clone(s.Credentials)
	return &c
}

// SetWord is the change of one of the single-word settings (sandbox_provider,
// sandbox_network_profile, sandbox_approvals) to value.
func SetWord(key, value string) Change {
	return Change{
		What: "set " + key + " to " + value,
		mem: func(s *config.Settings) {
			switch key {
			case config.KeyProvider:
				s.Provider = value
			case config.KeyNetworkProfile:
				s.NetworkProfile = value
			case config.KeyApprovals:
				s.Approvals = value
			case config.KeyGitMetadata:
				s.GitMetadata = value
			}
		},
		file: func(ed *config.Editor) error { return ed.SetString(key, value) },
	}
}

// SetToolchain is the change that switches a home-folder toolchain on or off; path is as
// the settings file writes it (".cargo", "tools/flutter").
func SetToolchain(path string, on bool) Change {
	what := "switch the toolchain " + path + " off"
	if on {
		what = "switch the toolchain " + path + " on"
	}
	return Change{
		What: what,
		mem: func(s *config.Settings) {
			s.Toolchains = slices.DeleteFunc(s.Toolchains, func(t string) bool { return t == path })
			if on {
				s.Toolchains = append(s.Toolchains, path)
			}
		},
		file: func(ed *config.Editor) error {
			if on {
				return ed.AddToolchain(path)
			}
			return ed.RemoveToolchain(path)
		},
	}
}

// ApplyChecked checks a change's own values as the settings file would, then applies it.
func (st *Store) ApplyChecked(c Change) error {
	if err := config.TryChange(st.goos, c.file); err != nil {
		return err
	}
	return st.Apply(c)
}

// SetSSHKeys is the change that chooses how the ssh login's keys reach sessions:
// config.SSHKeysAgent (they stay outside) or config.SSHKeysCopy.
func SetSSHKeys(mode string) Change {
	return Change{
		What: "share the SSH keys by " + map[string]string{config.SSHKeysAgent: "OpenWorker's agent", config.SSHKeysCopy: "copying them"}[mode],
		mem: func(s *config.Settings) {
			for i := range s.Credentials {
				if s.Credentials[i].Name == "ssh" {
					s.Credentials[i].Keys = mode
				}
			}
		},
		file: func(ed *config.Editor) error { return ed.SetSSHKeys(mode) },
	}
}

// SetSecrets is the change that chooses how the catalog login name's secrets reach
// sessions: config.SecretsStandIn or config.SecretsCopy.
func SetSecrets(name, mode string) Change {
	what := "copy the secrets of " + name + " into sessions"
	if mode == config.SecretsStandIn {
		what = "give sessions stand-ins for the secrets of " + name
	}
	return Change{
		What: what,
		mem: func(s *config.Settings) {
			for i := range s.Credentials {
				if s.Credentials[i].Name == name {
					s.Credentials[i].Secrets = mode
				}
			}
		},
		file: func(ed *config.Editor) error { return ed.SetSecrets(name, mode) },
	}
}

// AddSSHAllowance is the change that keeps an SSH card's Always allow with the ssh entry:
// list is "agent_logins" or "agent_signing", value "NAME SHA256:…".
func AddSSHAllowance(list, value string) Change {
	what := "always allow SSH logins to " + value
	if list == "agent_signing" {
		what = "always allow SSH signing for " + value
	}
	return Change{
		What: what,
		mem: func(s *config.Settings) {
			for i := range s.Credentials {
				c := &s.Credentials[i]
				if c.Name != "ssh" {
					continue
				}
				l := &c.AgentLogins
				if list == "agent_signing" {
					l = &c.AgentSigning
				}
				if !slices.Contains(*l, value) {
					*l = append(slices.Clip(*l), value) // the settings in force share the old array
				}
			}
		},
		file: func(ed *config.Editor) error { return ed.AddSSHAllowance(list, value) },
	}
}
