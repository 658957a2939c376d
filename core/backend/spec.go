// Package backend is the one owner of what the daemon, the app and the CLI decide from the
// machine's settings: which wall a session gets, with which sites. Its clients (the local API,
// the CLI, the MCP server, the menu-bar presenter) parse, call and print; they do not decide.
//
// It enforces nothing itself: walls are built by the providers, sites admitted by the proxy.
package backend

import (
	"errors"
	"fmt"

	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/credentials"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
)

// Provider words a request may give besides the enforcement levels.
const (
	// ProviderSettings (the empty word) is a session the app or the daemon starts without
	// naming a provider: the machine's sandbox_provider decides.
	ProviderSettings = ""
	// ProviderAuto is this OS's sandbox: a person's explicit choice (`run`, `mcp`).
	ProviderAuto = "auto"
)

// Request is a session asked for, by a person or a program, before the settings are applied.
type Request struct {
	Provider string   // ProviderSettings, ProviderAuto, or an enforcement level
	Writable []string // absolute
	ReadOnly []string // absolute
	Dir      string   // the first working folder; default the first writable folder
	Network  string   // "" means the settings' sandbox_network_profile
	Allow    []string // sites for this session only, HOST[:PORT]
	// GitMetadata is "protected" or "writable"; "" means the settings' sandbox_git_metadata.
	GitMetadata string
	// HowToAllow says how a person allows a refused site (host:port) where this session
	// runs, for the proxy's refusals; nil means the app's words.
	HowToAllow func(target string) string
	// Agent says a model reads what the session's commands print and what its asks return
	// (an MCP session). Text it reads then names no command, file or setting that opens a
	// site: only that the agent may ask the person with request_site and a reason. The
	// person's ways stay on the person's surfaces (cards, the app, the CLI's own lines).
	Agent bool
	// Programs are the programs of the client that asks for the session: the one it names
	// (apitype.StartRequest.Program) and the one the kernel says is at the other end of
	// its connection, where known. None for a session of this process's own.
	Programs []string
	// LocalServers: see policy.Policy.LocalServers and session.Spec.LocalServers.
	LocalServers bool
	// Publish: see session.Spec.Publish.
	Publish []int
	// FreshCaches starts the session cold: its tools' caches are its own and go with it,
	// and neither its project's kept caches nor the person's are used.
	FreshCaches bool
	// ClientEnv: see session.Spec.ClientEnv.
	ClientEnv map[string]string
	// Owner: see session.Spec.Owner.
	Owner int
}

// Machine is what SpecFor needs to know of this machine.
type Machine struct {
	Settings *config.InForce
	// Native is this OS's sandbox, or "" when it has none.
	Native sandbox.Enforcement
	GOOS   string
	// OpenOwnNetwork says open mode has a network of its own here, whose relay keeps this
	// machine's loopback and private services out of reach (Linux with nf_tables).
	OpenOwnNetwork bool
}

// ErrNoSettings refuses a session that sandbox_provider decides while the settings file has
// problems and no version of it was ever valid: which wall the person chose is not known.
var ErrNoSettings = errors.New("the settings file has problems and no earlier version of it was valid, so which sandbox this machine uses is not known; sessions that sandbox_provider decides are refused until it is fixed (openworker config check)")

// FlagError is a word of a request that is not one of its choices (--network opne,
// --provider seatbelt on Linux, --allow "exa mple.com", --publish 0): a person's mistake in
// how a command was called, which the CLI says as a usage error.
type FlagError struct {
	Flag string // "--network"
	Err  error
}

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// CheckFlags finds the words of r that are not one of their choices on m, whatever the
// settings: a FlagError, or nil. SpecFor checks the same first.
func CheckFlags(m Machine, r Request) error {
	if r.Provider != ProviderSettings && r.Provider != ProviderAuto {
		if _, err := m.named(r.Provider, "--provider"); err != nil {
			return &FlagError{"--provider", err}
		}
	}
	if r.Network != "" {
		if _, err := policy.ParseNetwork(r.Network); err != nil {
			return &FlagError{"--network", fmt.Errorf("--network %q is not a choice; use allowlist, open or none", r.Network)}
		}
	}
	if r.GitMetadata != "" {
		if _, err := gitMetadataWritable(r.GitMetadata, ""); err != nil {
			return &FlagError{"--git-metadata", err}
		}
	}
	for _, a := range r.Allow {
		if _, err := hosts.Parse(a); err != nil {
			return &FlagError{"--allow", fmt.Errorf("--allow %s: %w", a, err)}
		}
	}
	for _, port := range r.Publish {
		if port < 1 || port > 65535 {
			return &FlagError{"--publish", fmt.Errorf("--publish %d is not a port; give one from 1 to 65535", port)}
		}
	}
	return nil
}

// SpecFor is the one place where a request and the machine's settings become a session.
func SpecFor(m Machine, r Request) (session.Spec, error) {
	var spec session.Spec
	if err := CheckFlags(m, r); err != nil {
		return spec, err
	}
	s := m.Settings.Settings
	prov, err := m.provider(r.Provider)
	if err != nil {
		return spec, err
	}
	if len(r.Writable) == 0 && len(r.ReadOnly) == 0 {
		return spec, errors.New("a session needs at least one folder")
	}
	netName := r.Network
	if netName == "" {
		netName = s.NetworkProfile
	}
	network, err := policy.ParseNetwork(netName)
	if err != nil {
		return spec, err
	}
	var own []hosts.Entry
	for _, a := range r.Allow {
		h, err := hosts.Parse(a)
		if err != nil {
			return spec, fmt.Errorf("--allow %s: %w", a, err)
		}
		own = append(own, h)
	}
	gitWritable, err := gitMetadataWritable(r.GitMetadata, s.GitMetadata)
	if err != nil {
		return spec, err
	}
	if len(r.Publish) > 0 && prov == sandbox.Seatbelt {
		return spec, errors.New("--publish: on a Mac a session's servers bind this Mac's loopback itself once --local-servers is on; there is no port to publish")
	}
	return session.Spec{
		LocalServers: r.LocalServers, Publish: r.Publish, ClientEnv: r.ClientEnv, Owner: r.Owner,
		GitMetadataWritable: gitWritable,
		Provider:            prov, Writable: r.Writable, ReadOnly: r.ReadOnly, Dir: r.Dir, Network: network,
		Hosts: s.NetworkHosts, SessionHosts: own, Toolchains: s.Toolchains, HowToAllow: r.HowToAllow,
		Limits: Limits(s.Limits), ProxyConns: s.Limits.MaxProxyConnections,
		Logins:   credentials.Entries(s.Credentials),
		SSHAgent: alwaysOnlySSH(s),
		Caches:   session.CacheSpec{Keep: s.MaxCaches, Host: s.HostCaches != config.HostCachesOff, Fresh: r.FreshCaches},
	}, nil
}

// gitMetadataWritable resolves a request's --git-metadata word over the settings' one.
func gitMetadataWritable(word, settings string) (bool, error) {
	if word == "" {
		word = settings
	}
	switch word {
	case config.GitMetadataProtected, "":
		return false, nil
	case config.GitMetadataWritable:
		return true, nil
	}
	return false, fmt.Errorf("--git-metadata %q is not a choice; use protected (repository hooks and config stay read-only inside) or writable", word)
}

// provider resolves a request's provider word to the wall it gets.
func (m Machine) provider(word string) (sandbox.Enforcement, error) {
	switch word {
	case ProviderSettings:
		if m.Settings.NoLastGood {
			return "", ErrNoSettings
		}
		return m.named(m.Settings.Settings.Provider, "sandbox_provider")
	case ProviderAuto:
		if m.Native == "" {
			return "", fmt.Errorf("there is no sandbox for %s; use --provider direct to run without one", m.GOOS)
		}
		return m.Native, nil
	}
	return m.named(word, "--provider")
}

func (m Machine) named(word, what string) (sandbox.Enforcement, error) {
	e := sandbox.Enforcement(word)
	if e == sandbox.Direct || (e != "" && e == m.Native) {
		return e, nil
	}
	native := string(m.Native)
	if native == "" {
		native = "none on " + m.GOOS
	}
	return "", fmt.Errorf("%s %q is not a provider on %s; use direct or this OS's sandbox (%s)", what, word, m.GOOS, native)
}

// Rule says, per entry point, which wall a session gets; `machine sandbox status` prints it.
func (m Machine) Rule() []string {
	native := string(m.Native)
	if native == "" {
		native = "none on " + m.GOOS
	}
	daemon := "the app's and the daemon's sessions: "
	switch p, err := m.provider(ProviderSettings); {
	case err != nil:
		daemon += "refused (" + err.Error() + ")"
	case p == sandbox.Direct:
		daemon += "direct, no wall (sandbox_provider = \"direct\"; set it to \"" + native + "\" to turn the sandbox on)"
	default:
		daemon += string(p) + " (sandbox_provider)"
	}
	rule := []string{
		daemon,
		"openworker run and openworker mcp: " + native + " unless --provider direct is given",
	}
	if reach := session.OpenReach(m.Native, policy.Open); reach != "" && !m.OpenOwnNetwork {
		rule = append(rule, reach)
	} else if reach != "" {
		rule = append(rule, "network open on Linux: the internet, through the relay; this machine's loopback and private services stay out of reach")
	}
	return rule
}

// howToAllow names only the ways that open target in the state it is in: after a Deny, the
// session's Access list (where the Deny is taken back; a card or the settings file would
// change nothing while it stands); with full access, the settings (there are no cards);
// otherwise a card, the session's Access list, or the settings.
func howToAllow(settingsPath, session, target string, denied, fullAccess bool) string {
	id := session
	if id == "" {
		id = "SESSION"
	}
	switch {
	case denied:
		return "take the Deny back in the session's Access list (openworker access " + id + " --allow " + target + ")"
	case fullAccess:
		return "with full access there are no cards: add it with openworker sites add " + target + ", or to sandbox_network_hosts in " + settingsPath + " (running sessions take it at once)"
	}
	return "ask for it on a card (openworker request-site " + id + " " + target + " --reason …), allow it for this session (openworker access " + id +
		" --allow " + target + "), or add " + target + " to sandbox_network_hosts in " + settingsPath + " (running sessions take it at once)"
}

// directHowToAllow is what a direct session's refusals say instead of how to open a site.
const directHowToAllow = "this session has no sandbox (direct): only programs that use its proxy keep to the list, and nothing is enforced; a sandboxed session is what holds a command to it"

// agentHowToAllow is what a model reads about a refused site: that it may ask, never how a
// site is opened. A person's command or file named here would be one the model could run
// or write itself on a host that lets it, and approve its own ask.
func agentHowToAllow(denied, fullAccess bool) string {
	switch {
	case denied:
		return "the person decided; do not ask for it again"
	case fullAccess:
		return "there are no cards in this mode; only the person can put a site on the list"
	}
	return "ask the person for it with the request_site tool and a reason they can judge"
}
