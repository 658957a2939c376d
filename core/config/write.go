package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/openworker/openworker/core/hosts"
)

// newFileHeader starts a settings file that write-back creates.
const newFileHeader = "# OpenWorker machine settings. Each key is described in the README;\n" +
	"# check this file with `openworker config check`. Settings are per machine:\n" +
	"# a project's own config cannot change them.\n"

// maxAttempts bounds how often a write-back starts over because the file changed under it.
const maxAttempts = 5

// Editor changes a settings file's text one value at a time. It is handed to the function
// given to Update; each change is checked by parsing the result, so a later change sees the
// earlier ones, and the file is written once at the end.
type Editor struct {
	file     string
	goos     string
	data     []byte
	doc      *document
	settings *Settings
	changed  bool
}

// Settings returns the settings as the edited text stands now.
func (e *Editor) Settings() *Settings { return e.settings }

// set takes new text after checking it is a valid settings file.
func (e *Editor) set(data []byte) error {
	s, doc, problems := parseDocument(e.file, data, e.goos)
	if len(problems) > 0 {
		return fmt.Errorf("the change would leave %s invalid, so it was not made: %w", e.file, &ProblemsError{Problems: problems})
	}
	if !bytes.Equal(data, e.data) {
		e.changed = true
	}
	e.data, e.doc, e.settings = data, doc, s
	return nil
}

// addToList appends value (TOML text) to the top-level list key, creating the key if needed.
func (e *Editor) addToList(key, value string) error {
	if vi, ok := e.doc.top[key]; ok {
		return e.set(appendToList(e.data, vi, value))
	}
	return e.set(insertTopLevel(e.doc, key, "["+value+"]"))
}

// removeFromList removes every string element of the top-level list key that match accepts.
func (e *Editor) removeFromList(key string, match func(string) bool) error {
	for {
		vi, ok := e.doc.top[key]
		if !ok {
			return nil
		}
		i := slices.IndexFunc(vi.elems, func(el elemIndex) bool { return match(el.text) })
		if i < 0 {
			return nil
		}
		if err := e.set(removeFromList(e.data, vi, i)); err != nil {
			return err
		}
	}
}

// AddHost adds a site to sandbox_network_hosts in its canonical form ("github.com:443"). A
// site already on the list, in any spelling, is left as it is.
func (e *Editor) AddHost(entry string) error {
	h, err := hosts.Parse(entry)
	if err != nil {
		return err
	}
	if slices.Contains(e.settings.NetworkHosts, h) {
		return nil
	}
	return e.addToList(KeyNetworkHosts, tomlString(h.String()))
}

// RemoveHost removes a site from sandbox_network_hosts, however it is spelled there.
func (e *Editor) RemoveHost(entry string) error {
	h, err := hosts.Parse(entry)
	if err != nil {
		return err
	}
	return e.removeFromList(KeyNetworkHosts, func(s string) bool {
		other, err := hosts.Parse(s)
		return err == nil && other == h
	})
}

// AddToolchain switches a home-folder toolchain on.
func (e *Editor) AddToolchain(name string) error {
	t, err := toolchainPath(name, e.goos)
	if err != nil {
		return fmt.Errorf("toolchain %q %w", name, err)
	}
	if slices.Contains(e.settings.Toolchains, t) {
		return nil
	}
	return e.addToList(KeyToolchains, tomlString(t))
}

// RemoveToolchain switches a home-folder toolchain off.
func (e *Editor) RemoveToolchain(name string) error {
	t, err := toolchainPath(name, e.goos)
	if err != nil {
		return fmt.Errorf("toolchain %q %w", name, err)
	}
	return e.removeFromList(KeyToolchains, func(s string) bool {
		other, err := toolchainPath(s, e.goos)
		return err == nil && other == t
	})
}

// SetString sets one of the string settings (sandbox_provider, sandbox_network_profile,
// sandbox_approvals, sandbox_git_metadata), replacing only its value.
func (e *Editor) SetString(key, value string) error {
	switch key {
	case KeyProvider, KeyNetworkProfile, KeyApprovals, KeyGitMetadata:
	default:
		return fmt.Errorf("%s is not a setting with a single word value; use sandbox_provider, sandbox_network_profile, sandbox_approvals or sandbox_git_metadata", key)
	}
	if vi, ok := e.doc.top[key]; ok {
		return e.set(replace(e.data, vi.value.start, vi.value.end, tomlString(value)))
	}
	return e.set(insertTopLevel(e.doc, key, tomlString(value)))
}

// CredentialKey returns what identifies a [[sandbox_credentials]] entry named id: a catalog
// name as it is, a path ("~/x" or "x") as "~/x", cleaned.
func CredentialKey(id string) (string, error) {
	if slices.Contains(CatalogNames(), id) {
		return id, nil
	}
	p, err := homePath(id)
	if err != nil {
		return "", fmt.Errorf("credential %q is neither a catalog name (%v) nor a path under the home folder: it %w", id, CatalogNames(), err)
	}
	return "~/" + p, nil
}

// CheckCredential checks a new entry as the settings file would, before it is applied: it
// returns the entry as the file would read it (its path cleaned, its hosts parsed) or the
// problems the file would have.
func CheckCredential(c Credential, goos string) (Credential, error) {
	if c.Name == "" && c.Path == "" {
		return c, errors.New("a credential needs a catalog name or a path")
	}
	if c.Path != "" {
		p, err := homePath(c.Path)
		if err != nil {
			return c, fmt.Errorf("credential path %q %w", c.Path, err)
		}
		c.Path = p
	}
	text := credentialBlock(c, "\n")
	s, problems := Parse("the new entry", []byte(text), goos)
	if len(problems) > 0 {
		return c, &ProblemsError{Problems: problems}
	}
	return s.Credentials[0], nil
}

// credential finds the entry named id: a catalog name, or a path ("~/x" or "x").
func (e *Editor) credential(id string) (*credIndex, string, error) {
	id, err := CredentialKey(id)
	if err != nil {
		return nil, "", err
	}
	for _, c := range e.doc.creds {
		if c.cred.Key() == id {
			return c, id, nil
		}
	}
	return nil, id, nil
}

// SetCredentialEnabled switches a [[sandbox_credentials]] entry on or off. Switching on a
// catalog login that has no entry adds one; a path entry must be added first.
func (e *Editor) SetCredentialEnabled(id string, enabled bool) error {
	c, key, err := e.credential(id)
	if err != nil {
		return err
	}
	if c == nil {
		switch {
		case !enabled:
			return nil
		case slices.Contains(CatalogNames(), key):
			return e.AddCredential(Credential{Name: key, Enabled: true})
		default:
			return fmt.Errorf("there is no [[sandbox_credentials]] entry for %s; add it with its label and hosts first", key)
		}
	}
	vi := c.keys["enabled"]
	return e.set(replace(e.data, vi.value.start, vi.value.end, fmt.Sprint(enabled)))
}

// RemoveCredential takes a [[sandbox_credentials]] entry out of the file: its header and
// its keys, with the blank line that set it apart. Comments around it are kept.
func (e *Editor) RemoveCredential(id string) error {
	c, key, err := e.credential(id)
	if err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("there is no [[sandbox_credentials]] entry for %s", key)
	}
	start, end := lineStart(e.data, c.header.start), lineEnd(e.data, c.header.end)
	for _, vi := range c.keys {
		end = max(end, vi.lineEnd)
	}
	if start >= 2 && e.data[start-1] == '\n' && (e.data[start-2] == '\n' || start >= 3 && e.data[start-2] == '\r' && e.data[start-3] == '\n') {
		start = lineStart(e.data, start-1)
	}
	return e.set(replace(e.data, start, end, ""))
}

// AddCredential appends a [[sandbox_credentials]] entry. An entry for the same login or path
// must not exist already.
func (e *Editor) AddCredential(c Credential) error {
	if c.Name == "" && c.Path == "" {
		return errors.New("a credential needs a catalog name or a path")
	}
	id := c.Name
	if id == "" {
		id = c.Path
	}
	if existing, key, err := e.credential(id); err != nil {
		return err
	} else if existing != nil {
		return fmt.Errorf("%s already has a [[sandbox_credentials]] entry; switch it on or off instead", key)
	}
	if c.Path != "" {
		p, err := homePath(c.Path)
		if err != nil {
			return fmt.Errorf("credential path %q %w", c.Path, err)
		}
		c.Path = p
	}
	if c.Name == "ssh" && c.Keys == "" {
		// A new ssh entry keeps the keys outside unless the person chose to copy them.
		c.Keys = SSHKeysAgent
	}
	if ok, _ := StandInSupport(c.Name, e.goos); ok && c.Secrets == "" {
		// So does a new entry of a login that can be a stand-in.
		c.Secrets = SecretsStandIn
	}
	nl := newlineAt(e.data, 0)
	return e.set(appendBlock(e.data, credentialBlock(c, nl)))
}

// Update changes the settings file at path: it takes the write lock (shared with every
// OpenWorker process), reads the file as it is now, lets change edit it, and writes it back
// atomically, keeping the file's mode. A missing file is created with a short header. A file
// that does not validate is not touched: the user is mid-edit, and guessing would lose work.
// If the file changes while the new text is being written (a user's save), the change is
// made again on the user's text, so neither edit is lost.
func Update(path, goos string, change func(*Editor) error) error {
	return update(path, goos, change, nil)
}

func update(path, goos string, change func(*Editor) error, beforeRename func()) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real // a symlinked settings file (dotfiles) stays a symlink
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the settings folder: %w", err)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()

	for range maxAttempts {
		current, exists, mode, err := readCurrent(path)
		if err != nil {
			return err
		}
		data := current
		if !exists {
			data = []byte(newFileHeader)
		}
		s, doc, problems := parseDocument(path, data, goos)
		if len(problems) > 0 {
			return fmt.Errorf("not changing %s because it has problems; fix them first (openworker config check):\n%w", path, &ProblemsError{Problems: problems})
		}
		ed := &Editor{file: path, goos: goos, data: data, doc: doc, settings: s}
		if err := change(ed); err != nil {
			return err
		}
		if !ed.changed {
			return nil
		}
		done, err := writeIfUnchanged(path, ed.data, mode, current, exists, beforeRename)
		if err != nil || done {
			return err
		}
	}
	return fmt.Errorf("%s kept changing while the change was being saved; try again", path)
}

func readCurrent(path string) (data []byte, exists bool, mode fs.FileMode, err error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, 0o600, nil
	}
	if err != nil {
		return nil, false, 0, fmt.Errorf("cannot read settings file: %w", err)
	}
	data, err = os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, 0o600, nil
	}
	if err != nil {
		return nil, false, 0, fmt.Errorf("cannot read settings file: %w", err)
	}
	return data, true, info.Mode().Perm(), nil
}

// writeIfUnchanged writes data to a temporary file beside path and renames it over path,
// unless path no longer holds what was read (then it reports done=false to start over).
func writeIfUnchanged(path string, data []byte, mode fs.FileMode, read []byte, existed bool, beforeRename func()) (done bool, err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return false, fmt.Errorf("cannot save settings: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this finds nothing
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("cannot save settings: %w", err)
	}
	if beforeRename != nil {
		beforeRename()
	}
	// A user's save between our read and now would be lost by the rename: look again. The
	// window left is the few instructions between this read and the rename.
	now, exists, _, err := readCurrent(path)
	if err != nil {
		return false, err
	}
	if exists != existed || !bytes.Equal(now, read) {
		return false, nil
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, fmt.Errorf("cannot save settings: %w", err)
	}
	syncDir(dir)
	return true, nil
}

// syncDir makes the rename durable. Not every file system can sync a folder; the rename
// itself has happened either way, so a failure here is not reported.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// AddHost adds a site to the machine's allow list in the settings file at path ("Always
// allow", ticking a site).
func AddHost(path, entry string) error {
	return Update(path, runtime.GOOS, func(e *Editor) error { return e.AddHost(entry) })
}

// RemoveHost removes a site from the allow list in the settings file at path.
func RemoveHost(path, entry string) error {
	return Update(path, runtime.GOOS, func(e *Editor) error { return e.RemoveHost(entry) })
}

// SetCredentialEnabled switches a shared login on or off in the settings file at path; id is
// a catalog name or the entry's path.
func SetCredentialEnabled(path, id string, enabled bool) error {
	return Update(path, runtime.GOOS, func(e *Editor) error { return e.SetCredentialEnabled(id, enabled) })
}

// CheckVarName checks the variable a path entry points at its copy. It may not be one the
// sandbox sets itself (HOME, PATH, the proxy's) or one that changes how programs load
// (LD_*, DYLD_*): a login's copy must not change what runs.
func CheckVarName(name string) error {
	if name == "" {
		return errors.New("is empty; name the variable the tool reads, such as \"TOOL_CONFIG\"")
	}
	for i, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Errorf("%q is not a variable name; use letters, digits and _, such as \"TOOL_CONFIG\"", name)
		}
	}
	u := strings.ToUpper(name)
	reserved := []string{"HOME", "PATH", "TMPDIR", "SHELL", "USER", "LOGNAME", "IFS", "ENV", "BASH_ENV", "PS4", "PROMPT_COMMAND",
		"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "GIT_HTTP_PROXY", "GIT_SSH_COMMAND", "GIT_SSH", "SSH_AUTH_SOCK"}
	if slices.Contains(reserved, u) || strings.HasPrefix(u, "LD_") || strings.HasPrefix(u, "DYLD_") || strings.HasPrefix(u, "XDG_") {
		return fmt.Errorf("%q is set by the sandbox itself or changes what programs run; name the variable the tool reads to find its file", name)
	}
	return nil
}

// TryChange makes change on an otherwise empty settings file in memory and says whether the
// result is valid, with the file's own messages: a check of a change's values before it is
// put in force, for changes whose validity does not depend on the rest of the file.
func TryChange(goos string, change func(*Editor) error) error {
	data := []byte(newFileHeader)
	s, doc, problems := parseDocument("config.toml", data, goos)
	if len(problems) > 0 {
		return &ProblemsError{Problems: problems}
	}
	return change(&Editor{file: "the settings", goos: goos, data: data, doc: doc, settings: s})
}

// setCredentialKey sets key = value (TOML text) in entry c: the value in place when the key
// is there, or a new line before the entry's enabled line.
func (e *Editor) setCredentialKey(c *credIndex, key, value string) error {
	if vi, ok := c.keys[key]; ok {
		return e.set(replace(e.data, vi.value.start, vi.value.end, value))
	}
	at := lineStart(e.data, c.keys["enabled"].key.start)
	return e.set(replace(e.data, at, at, key+" = "+value+newlineAt(e.data, at)))
}

// SetSSHKeys sets how the ssh login's keys reach a session: SSHKeysCopy or SSHKeysAgent.
// The ssh entry must exist.
func (e *Editor) SetSSHKeys(mode string) error {
	if mode != SSHKeysCopy && mode != SSHKeysAgent {
		return fmt.Errorf("%q is not a way to share SSH keys; use %q or %q", mode, SSHKeysAgent, SSHKeysCopy)
	}
	c, _, err := e.credential("ssh")
	if err != nil {
		return err
	}
	if c == nil {
		return errors.New("there is no [[sandbox_credentials]] entry for ssh; add it first (openworker credentials add ssh)")
	}
	return e.setCredentialKey(c, "keys", tomlString(mode))
}

// SetSecrets sets how the catalog login name's secrets reach a session: SecretsStandIn or
// SecretsCopy. The entry must exist, and a stand-in must be one the login can be here.
func (e *Editor) SetSecrets(name, mode string) error {
	if mode != SecretsStandIn && mode != SecretsCopy {
		return fmt.Errorf("%q is not a way to share a login's secrets; use %q or %q", mode, SecretsStandIn, SecretsCopy)
	}
	if ok, why := StandInSupport(name, e.goos); !ok && (mode == SecretsStandIn || name == "ssh" || !slices.Contains(CatalogNames(), name)) {
		return fmt.Errorf("%s cannot be a stand-in here: %s", name, why)
	}
	c, _, err := e.credential(name)
	if err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("there is no [[sandbox_credentials]] entry for %s; add it first (openworker credentials add %s)", name, name)
	}
	return e.setCredentialKey(c, "secrets", tomlString(mode))
}

// AddSSHAllowance keeps an "Always allow" answer of an SSH card with the ssh entry: list is
// "agent_logins" ("HOST SHA256:…") or "agent_signing" ("NAMESPACE SHA256:…"). One already
// in that list is left as it is; the same text in the other list is another answer, for
// another kind of signature.
func (e *Editor) AddSSHAllowance(list, value string) error {
	if list != "agent_logins" && list != "agent_signing" {
		return fmt.Errorf("%s is not a list of SSH answers; use agent_logins or agent_signing", list)
	}
	c, _, err := e.credential("ssh")
	if err != nil {
		return err
	}
	if c == nil {
		return errors.New("there is no [[sandbox_credentials]] entry for ssh to keep the answer with")
	}
	have := c.cred.AgentLogins
	if list == "agent_signing" {
		have = c.cred.AgentSigning
	}
	if slices.Contains(have, value) {
		return nil
	}
	if vi, ok := c.keys[list]; ok {
		return e.set(appendToList(e.data, vi, tomlString(value)))
	}
	return e.setCredentialKey(c, list, "["+tomlString(value)+"]")
}
