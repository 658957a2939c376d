// Package config is the machine's settings file, config.toml: where it lives, what its
// `sandbox_*` keys mean, strict decoding with FILE:LINE:COL problems, live reload that keeps
// the last good settings when an edit goes bad, and write-back that changes one value while
// keeping every other byte the user wrote.
//
// Settings are per machine. A project's own .openworker/config.toml is read by LoadProject,
// which ignores and reports any sandbox_* key in it: nothing found in a session's folders can
// change the machine's wall. This package decides nothing about sessions; it only says what
// the user chose.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/openworker/openworker/core/hosts"
)

// Provider words, the same as the enforcement levels in results.
const (
	ProviderDirect   = "direct"
	ProviderSeatbelt = "seatbelt"
	ProviderLinux    = "linux"
)

// Network profiles.
const (
	NetworkAllowlist = "allowlist"
	NetworkOpen      = "open"
)

// Approval modes.
const (
	ApprovalsAsk        = "ask"
	ApprovalsFullAccess = "full-access"
)

// Repository metadata modes (sandbox_git_metadata).
const (
	GitMetadataProtected = "protected"
	GitMetadataWritable  = "writable"
)

// What sessions read of the person's own caches (sandbox_host_caches).
const (
	HostCachesReadOnly = "read-only"
	HostCachesOff      = "off"
)

// DefaultMaxCaches is what the tools' caches kept for projects take together at most,
// unless sandbox_max_caches says otherwise: a few projects' Go build and module caches,
// npm's and pip's, which are each some hundreds of MiB to a few GiB.
const DefaultMaxCaches = 10 << 30

// How the ssh login's keys reach a session ([[sandbox_credentials]] keys).
const (
	SSHKeysCopy  = "copy"
	SSHKeysAgent = "agent"
)

// SSHAgent says whether the entry is the ssh login used through OpenWorker's agent.
func (c Credential) SSHAgent() bool { return c.Name == "ssh" && c.Keys == SSHKeysAgent }

// How a CLI login's secrets reach a session ([[sandbox_credentials]] secrets).
const (
	// SecretsStandIn: the sandbox home gets the login's files with a stand-in for each
	// secret, and OpenWorker's proxy puts the real one on requests to the login's own hosts.
	SecretsStandIn = "stand-in"
	// SecretsCopy: the files are copied with the secrets in them.
	SecretsCopy = "copy"
)

// StandIn says whether the entry's secrets stay outside, with stand-ins inside.
func (c Credential) StandIn() bool { return c.Name != "" && c.Secrets == SecretsStandIn }

// StandInSupport says whether the catalog login name can be a stand-in on goos, and if not,
// why it is always copied there.
func StandInSupport(name, goos string) (bool, string) {
	switch name {
	case "npm", "kubectl":
		// kubectl trusts the authority its kubeconfig names, which the copy makes
		// OpenWorker's, on a Mac as well.
		return true, ""
	case "docker":
		if goos == "darwin" {
			return false, "registry clients (skopeo, crane, helm, oras) are Go programs, which on a Mac trust only the system's certificate settings and read no SSL_CERT_FILE, so they could not trust OpenWorker's certificate authority"
		}
		return true, ""
	case "gh":
		// gh's own requests go to the session's socket, where OpenWorker speaks TLS itself
		// (on a Mac gh would not trust OpenWorker's certificate authority).
		return true, ""
	case "ssh":
		return false, "the ssh login keeps its keys outside with OpenWorker's SSH agent instead (keys = \"agent\")"
	case "aws-config":
		return false, "it holds no secret"
	case "aws-credentials":
		if goos == "darwin" {
			return false, "AWS tools written in Go (terraform, the Go SDK) trust only the system's certificate settings on a Mac and read no SSL_CERT_FILE, so they could not trust OpenWorker's certificate authority, which signing each request again needs"
		}
		return true, ""
	case "gcloud":
		return false, "gcloud refreshes its own tokens with the refresh token and sends them to many Google hosts, which OpenWorker does not carry stand-ins through yet"
	case "terraform":
		if goos == "darwin" {
			return false, "terraform is a Go program, which on a Mac trusts only the system's certificate settings and reads no SSL_CERT_FILE, so it could not trust OpenWorker's certificate authority"
		}
		return true, ""
	}
	return false, "only a CLI's login from the catalog can be a stand-in"
}

// StandInLogins are the catalog logins that can be stand-ins on goos.
func StandInLogins(goos string) []string {
	var out []string
	for _, n := range CatalogNames() {
		if ok, _ := StandInSupport(n, goos); ok {
			out = append(out, n)
		}
	}
	return out
}

// Credential labels of a user's own file or folder.
const (
	LabelCredential    = "credential"
	LabelConfiguration = "configuration"
)

// Settings are the machine's sandbox settings. A *Settings handed out by Load or a Watcher is
// shared: treat it as read-only.
type Settings struct {
	// Provider is "direct" (the default: commands run without a wall), "seatbelt" (macOS) or
	// "linux" (Linux).
	Provider string
	// NetworkProfile is "allowlist" (the default) or "open" (any site, no proxy).
	NetworkProfile string
	// NetworkHosts are the sites allowed, parsed; NetworkHostsRaw are the same entries as
	// written in the file, in the same order.
	NetworkHosts    []hosts.Entry
	NetworkHostsRaw []string
	// Toolchains are home-folder toolchains made readable, each a cleaned path relative to the
	// home folder: a known name (KnownToolchains) or a folder the user added. A user's folder is
	// written relative to the home folder ("tools/flutter" or "~/tools/flutter"); it may not be
	// absolute, leave the home folder, be the home folder, or be, hold or sit inside a folder
	// that keeps logins (~/.ssh, ~/.aws, ~/.config/gh, ...) or OpenWorker's own state: those
	// would hand secrets to every command, and logins are shared one at a time with
	// [[sandbox_credentials]] instead.
	Toolchains []string
	// Approvals is "ask" (the default) or "full-access" (no cards; asks are refused).
	Approvals string
	// GitMetadata is "protected" (the default: each repository's hooks and config, which the
	// person's own git runs and obeys outside the sandbox, stay read-only inside) or
	// "writable" (commands may change them, and so run code outside the sandbox).
	GitMetadata string
	// Credentials are the shared logins the user added, in file order.
	Credentials []Credential
	// Limits bound each sandbox and the proxies' connections.
	Limits Limits
	// MaxCaches bounds, in bytes, the tools' caches kept between sessions for all projects
	// together (least recently used out); 0 keeps none, and every session starts cold.
	MaxCaches int64
	// HostCaches is "read-only" (the default: sessions read the person's own caches that
	// hold packages, Go's module downloads, never writing them) or "off".
	HostCaches string
}

// Credential is one [[sandbox_credentials]] entry: either a catalog Name, or a Path of the
// user's own with its Label and Hosts.
type Credential struct {
	// Name is a catalog name ("ssh", "gh", ...); empty for a path entry.
	Name string
	// Path is the file or folder relative to the home folder ("~/" removed, cleaned); empty
	// for a catalog entry.
	Path string
	// Label is "credential" or "configuration", for a path entry.
	Label string
	// Hosts are the sites the path entry's tool needs.
	Hosts []hosts.Entry
	// Var, for a path entry, is the variable pointed at the copy ("" for none).
	Var string
	// Keys, for the ssh login only, is how its keys reach a session: SSHKeysCopy (copied into
	// the sandbox home) or SSHKeysAgent (they stay outside, and OpenWorker's SSH agent signs
	// with them for the hosts the person allows). An entry without it copies, as entries did
	// before there was a choice; a new entry is written with SSHKeysAgent.
	Keys string
	// Secrets, for a CLI login that can be a stand-in (StandInSupport), is how its secrets
	// reach a session: SecretsStandIn (they stay outside; the sandbox gets stand-ins) or
	// SecretsCopy. An entry without it copies, as entries did before there was a choice; a
	// new entry is written with SecretsStandIn where the login can be one.
	Secrets string
	// AgentLogins are the ssh login's "Always allow" answers to sign in to a server, each
	// "HOST SHA256:…" (a host name as known_hosts writes it, and a key's fingerprint);
	// AgentSigning are those to sign other data, each "NAMESPACE SHA256:…" ("git" for commits).
	AgentLogins  []string
	AgentSigning []string
	// Enabled says whether the entry is copied into sessions. The file must say it: an entry
	// without enabled is a problem, so that sharing a login is always written out.
	Enabled bool
}

// Key returns what identifies the entry in the file: its catalog name, or "~/" + its path.
func (c Credential) Key() string {
	if c.Name != "" {
		return c.Name
	}
	return "~/" + c.Path
}

// Default returns the settings of a machine with no settings file: direct provider, allow
// list with no sites, no toolchains, approvals asked, no credentials, the default limits.
func Default() *Settings {
	return &Settings{
		Provider:       ProviderDirect,
		NetworkProfile: NetworkAllowlist,
		Approvals:      ApprovalsAsk,
		GitMetadata:    GitMetadataProtected,
		Limits:         defaultLimits(),
		MaxCaches:      DefaultMaxCaches,
		HostCaches:     HostCachesReadOnly,
	}
}

// CatalogNames returns the names a [[sandbox_credentials]] entry may use.
func CatalogNames() []string {
	return []string{"ssh", "gh", "aws-config", "aws-credentials", "kubectl", "npm", "docker", "gcloud", "terraform"}
}

// KnownToolchains returns the home-folder toolchains the product offers by name.
func KnownToolchains() []string {
	return []string{
		".nvm", ".volta", ".bun", ".deno", ".pyenv", ".rbenv", ".asdf", ".sdkman", ".cargo",
		".rustup", ".local/bin", ".local/share/uv", ".local/share/mise", ".local/pipx", "go",
	}
}

// Problem is one thing wrong with a settings file, at a 1-based line and byte column.
type Problem struct {
	File      string
	Line, Col int
	Msg       string
}

// String is "FILE:LINE:COL: message", the form editors and `openworker config check` use.
func (p Problem) String() string {
	if p.Line == 0 {
		return p.File + ": " + p.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, p.Msg)
}

// ProblemsError is the error of a settings file that does not validate.
type ProblemsError struct {
	Problems []Problem
}

func (e *ProblemsError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Load reads and validates the settings file at path for the OS goos ("darwin", "linux").
// A missing file means Default. A file that does not validate gives a *ProblemsError listing
// every problem found; the caller must not use any part of it.
func Load(path, goos string) (*Settings, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read settings file: %w", err)
	}
	s, problems := Parse(path, data, goos)
	if len(problems) > 0 {
		return nil, &ProblemsError{Problems: problems}
	}
	return s, nil
}
