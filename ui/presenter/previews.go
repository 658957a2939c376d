package presenter

import (
	"time"

	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tcc"
)

// Preview is one named state of the app, for the previews (ui/preview) and the golden
// files that keep what the person sees in each.
type Preview struct {
	Name  string // a file name: "first-launch"
	Title string // what the index page calls it
	State State
	// Menu is the status menu's submenus to draw open, by title prefix ("project", "Access").
	Menu []string
	// Expand is a MenuButton's menus to draw open, by title prefix ("Add…", "A CLI's login").
	Expand []string
}

// previewNow is the previews' clock, so that "2 minutes ago" never changes.
var previewNow = time.Date(2026, 12, 1, 10, 16, 0, 0, time.UTC)

const previewHome = "/Users/ada"

// SampleCatalog is the shared logins' catalog as the product page lists it, marked found
// as on a Mac that has SSH keys, AWS profiles and npm, for the previews and tests.
func SampleCatalog() []CatalogLogin {
	cs := sampleCatalog()
	for i := range cs {
		cs[i].Status = map[bool]string{true: "found", false: "not found"}[cs[i].Found]
	}
	return cs
}

func sampleCatalog() []CatalogLogin {
	cs := []CatalogLogin{
		{Name: "ssh", Title: "SSH keys", From: "~/.ssh", Kind: "folder, credential", Lets: "push and pull over SSH, and log in to servers, as you", Hosts: []string{"github.com:22", "gitlab.com:22"}, Found: true},
		{Name: "gh", Title: "GitHub CLI", From: "~/.config/gh", Kind: "folder, credential", Lets: "pull requests, issues and releases as you", Hosts: []string{"api.github.com:443", "github.com:443"}, StandIn: true},
		{Name: "aws-config", Title: "AWS profiles", From: "~/.aws/config", Kind: "file, configuration", Lets: "regions and profile names, no keys", Hosts: []string{"*.amazonaws.com:443"}, Found: true},
		{Name: "aws-credentials", Title: "AWS credentials", From: "~/.aws/credentials", Kind: "file, credential", Lets: "your access keys", Hosts: []string{"*.amazonaws.com:443"}, Found: true},
		{Name: "kubectl", Title: "kubectl", From: "~/.kube/config", Kind: "file, credential", Lets: "your clusters", StandIn: true},
		{Name: "npm", Title: "npm", From: "~/.npmrc", Kind: "file, credential", Lets: "install and publish private packages", Hosts: []string{"registry.npmjs.org:443"}, Found: true, StandIn: true},
		{Name: "docker", Title: "Docker registries", From: "~/.docker/config.json", Kind: "file, credential", Lets: "push and pull images with your registry logins (those a credential helper keeps only as stand-ins)", Hosts: []string{"registry-1.docker.io:443", "ghcr.io:443"}},
		{Name: "gcloud", Title: "gcloud", From: "~/.config/gcloud", Kind: "folder, credential", Lets: "your Google Cloud accounts and projects", Hosts: []string{"*.googleapis.com:443", "accounts.google.com:443"}},
		{Name: "terraform", Title: "Terraform Cloud", From: "~/.terraform.d/credentials.tfrc.json", Kind: "file, credential", Lets: "runs and state in Terraform Cloud as you", Hosts: []string{"app.terraform.io:443", "registry.terraform.io:443", "releases.hashicorp.com:443"}},
	}
	for i := range cs {
		if cs[i].Name != "ssh" && !cs[i].StandIn {
			cs[i].CopyOnly = macCopyOnly(cs[i].Name)
		}
	}
	return cs
}

// macCopyOnly is why a login is always copied on a Mac, as the settings say it.
func macCopyOnly(name string) string {
	_, why := config.StandInSupport(name, "darwin")
	return why
}

func previewState(provider, network string, sites ...string) State {
	s := config.Default()
	s.Provider, s.NetworkProfile = provider, network
	for _, g := range sites {
		if grp, ok := hosts.CatalogGroup(g); ok {
			s.NetworkHosts = append(s.NetworkHosts, grp.Entries...)
			continue
		}
		e, err := hosts.Parse(g)
		if err != nil {
			panic(err)
		}
		s.NetworkHosts = append(s.NetworkHosts, e)
	}
	for _, e := range s.NetworkHosts {
		s.NetworkHostsRaw = append(s.NetworkHostsRaw, e.String())
	}
	st := State{
		Settings: &config.InForce{Settings: s}, Native: sandbox.Seatbelt, Wall: sandbox.Status{Provider: sandbox.Seatbelt, OK: true},
		Sites: backend.SitesOf(s.NetworkHosts), Home: previewHome, AuditLog: previewHome + "/Library/Application Support/OpenWorker/audit.jsonl",
		Now: previewNow, HasLogins: true, Logins: SampleCatalog(), LoginsNote: "a change applies to sessions started afterwards; a running session keeps the copies it started with",
		UI: UI{FileLabel: config.LabelCredential}, Links: &Links{},
	}
	return st
}

// withSession adds the session "project", walled in as the settings say.
func (s State) withSession(sessionOnly ...string) State {
	set := s.Settings.Settings
	enf := sandbox.Enforcement(set.Provider)
	ss := Session{ID: "7f3a9c", Writable: []string{previewHome + "/code/project"}, ReadOnly: []string{previewHome + "/Documents/specs"},
		Enforcement: enf, Network: set.NetworkProfile, Started: previewNow.Add(-25 * time.Minute)}
	ss.Access = backend.Access{Session: ss.ID, Network: set.NetworkProfile}
	for _, e := range set.NetworkHosts {
		ss.Access.Sites = append(ss.Access.Sites, backend.AccessSite{Site: e.String(), Source: backend.FromSettings})
	}
	for _, site := range sessionOnly {
		ss.Access.Sites = append(ss.Access.Sites, backend.AccessSite{Site: site, Source: backend.SessionOnly})
	}
	s.Sessions = append(s.Sessions, ss)
	return s
}

func commandCard(id, site, reason string, blockedAgo time.Duration, command string) backend.CardInfo {
	c := backend.CardInfo{ID: id, Session: "7f3a9c", Site: site, Reason: reason, Kind: string(approvals.Command), Created: previewNow.Add(-time.Minute), Askers: 1,
		Answers: []string{"session", "always", "deny"}}
	if blockedAgo > 0 {
		c.Blocked, c.BlockedCommand = previewNow.Add(-blockedAgo), command
	}
	return c
}

func fetchCard(id, site, reason string) backend.CardInfo {
	return backend.CardInfo{ID: id, Session: "7f3a9c", Site: site, Reason: reason, Kind: string(approvals.Fetch), Created: previewNow, Askers: 1,
		Answers: []string{"once", "session", "always", "deny"}}
}

const nestedReason = "OpenWorker is already running inside another sandbox, and macOS does not nest them: /usr/bin/sandbox-exec could not apply even an allow-everything profile (sandbox_apply: Operation not permitted); run OpenWorker outside that sandbox"

// Previews are the app's named states, in the order the index page lists them.
func Previews() []Preview {
	var out []Preview
	add := func(p Preview) { out = append(out, p) }

	first := previewState("direct", "allowlist")
	first.UI.FirstLaunch = true
	add(Preview{Name: "first-launch", Title: "First launch", State: first})

	add(Preview{Name: "sandbox-off", Title: "Sandbox off (direct), a session running", State: previewState("direct", "allowlist").withSession(), Menu: []string{"project"}})

	allow := previewState("seatbelt", "allowlist", "github", "pypi").withSession("files.example.org:443")
	add(Preview{Name: "allowlist", Title: "Sandbox on, only the sites you allow", State: allow, Menu: []string{"project", "Access"}})

	tccRefused := previewState("seatbelt", "allowlist", "github").withSession()
	specs := previewHome + "/Documents/specs"
	tccRefused.Sessions[0].Access.FoldersRefused = []tcc.Refusal{{Folder: specs, Area: "Documents folder", Message: tcc.Message(previewHome, specs, "Documents folder")}}
	add(Preview{Name: "folder-refused", Title: "macOS does not let OpenWorker use a session's folder", State: tccRefused, Menu: []string{"project"}})

	add(Preview{Name: "open-network", Title: "Sandbox on, network open", State: previewState("seatbelt", "open").withSession(), Menu: []string{"project"}})

	refused := previewState("seatbelt", "allowlist", "github")
	refused.Wall = sandbox.Status{Provider: sandbox.Seatbelt, Reason: nestedReason}
	add(Preview{Name: "refused", Title: "Refused: OpenWorker is inside another sandbox", State: refused})

	refusedSettings := refused
	refusedSettings.UI.Open = []string{SettingsWindow}
	add(Preview{Name: "refused-settings", Title: "Refused: Settings ▸ Sandbox says why", State: refusedSettings})

	one := previewState("seatbelt", "allowlist", "github").withSession()
	one.Cards = []backend.CardInfo{commandCard("c1", "pypi.org:443", "Install the requests package the script imports.", 2*time.Minute, "pip install requests")}
	add(Preview{Name: "one-card", Title: "One site card (not clicked into: no default button)", State: one})

	focused := one
	focused.UI.CardsFocused = true
	add(Preview{Name: "one-card-focused", Title: "One site card, clicked into (default button)", State: focused})

	three := previewState("seatbelt", "allowlist", "github").withSession()
	three.Cards = []backend.CardInfo{
		commandCard("c1", "pypi.org:443", "Install the requests package the script imports.", 2*time.Minute, "pip install requests"),
		commandCard("c2", "registry.npmjs.org:443", "Run npm ci for the web front end.", 0, ""),
		fetchCard("c3", "docs.python.org:443", "Read the documentation of urllib.parse."),
	}
	three.Cards[1].Askers = 2
	add(Preview{Name: "three-cards", Title: "Three pending asks: one stack of cards", State: three})

	fetch := previewState("seatbelt", "allowlist", "github").withSession()
	fetch.Cards = []backend.CardInfo{fetchCard("c4", "developer.apple.com:443", "Look up the NSPanel documentation.")}
	add(Preview{Name: "web-fetch-card", Title: "A web fetch's card", State: fetch})

	set := previewState("seatbelt", "allowlist", "github", "pypi")
	set.Settings.Settings.Toolchains = []string{".cargo", "tools/flutter"}
	set.Toolchains = []Toolchain{{Path: ".nvm"}, {Path: ".cargo", On: true}, {Path: ".rustup"}, {Path: "go"}, {Path: "tools/flutter", On: true, Added: true}}
	set.Added = []AddedLogin{
		{Key: "ssh", Title: "SSH keys", From: "~/.ssh", Kind: "folder, credential", Hosts: []string{"github.com:22", "gitlab.com:22"}, Enabled: true, Status: "found"},
		{Key: "aws-config", Title: "AWS profiles", From: "~/.aws/config", Kind: "file, configuration", Hosts: []string{"*.amazonaws.com:443"}, Status: "found"},
	}
	set.UI.Open = []string{SettingsWindow}
	add(Preview{Name: "settings-sandbox", Title: "Settings ▸ Sandbox", State: set})

	sites := previewState("seatbelt", "allowlist", "github", "api.internal.example:8443")
	sites = sites.withSession("files.example.org:443")
	sites.UI.Open, sites.UI.SitesSession = []string{SitesWindow}, "7f3a9c"
	sites.UI.SiteText, sites.UI.SiteMessage = "https://example.com/api", ""
	add(Preview{Name: "choose-sites", Title: "Choose sites…: GitHub ticked, a bad site typed", State: sites})

	creds := set
	creds.Added = creds.Added[:1]
	add(Preview{Name: "credentials", Title: "Add… ▸ A CLI's login: found and not found", State: creds, Expand: []string{"Add…", "A CLI's login"}})

	file := set
	file.UI.Open = []string{SettingsWindow, AddFileWindow}
	file.UI.FilePath, file.UI.FileLabel, file.UI.FileHosts = "~/.config/acme/token.json", config.LabelCredential, "api.acme.example:443"
	add(Preview{Name: "add-file", Title: "Add… ▸ A file or folder…", State: file})

	another := previewState("seatbelt", "allowlist", "github").withSession()
	another.UI.Open, another.UI.AllowText = []string{AllowWindow + ":7f3a9c"}, map[string]string{"7f3a9c": "files.example.org"}
	add(Preview{Name: "allow-another", Title: "Allow another site for a session", State: another})

	servers := previewState("seatbelt", "allowlist", "github").withSession()
	servers.Sessions[0].LocalServers = true
	add(Preview{Name: "local-servers", Title: "A session's local servers switched on", State: servers, Menu: []string{"project"}})

	published := previewState("linux", "allowlist", "github").withSession()
	published.Native, published.Wall = sandbox.Linux, sandbox.Status{Provider: sandbox.Linux, OK: true}
	published.Sessions[0].LocalServers = true
	published.Sessions[0].Access.LocalServers = true
	published.Sessions[0].Access.Published = []backend.Published{{Port: 3000, HostPort: 3000}, {Port: 8080, HostPort: 8081}, {Port: 5173, Asked: true}}
	add(Preview{Name: "published-ports", Title: "A Linux session's servers published on this machine's loopback", State: published, Menu: []string{"project"}})

	mac := servers
	mac.Links = &Links{Probed: true, Both: true}
	mac.UI.Open = []string{SettingsWindow}
	add(Preview{Name: "settings-this-mac", Title: "Settings ▸ Sandbox ▸ This Mac: links proved, a session's local servers on", State: mac})

	notProved := previewState("seatbelt", "allowlist", "github").withSession()
	notProved.Links = &Links{Probed: true, Why: "the link from the denied folder into the allowed one was made: Seatbelt does not check the existing file"}
	notProved.UI.Open = []string{SettingsWindow}
	add(Preview{Name: "settings-links-denied", Title: "Settings ▸ Sandbox ▸ This Mac: the link probe proved nothing", State: notProved})

	running := previewState("seatbelt", "allowlist", "github")
	running.UI.Open, running.UI.Check = []string{CheckWindow}, Check{Running: true}
	add(Preview{Name: "check-running", Title: "Check this Mac… while it runs", State: running})

	checked := previewState("seatbelt", "allowlist", "github")
	checked.UI.Open = []string{CheckWindow}
	checked.UI.Check = Check{
		Summary:    "The wall held. 2 programs fail behind it: send the report, it says why.",
		Report:     "OpenWorker sandbox check\n",
		ReportPath: previewHome + "/Library/Application Support/OpenWorker/check-report.txt",
		Lines: []CheckLine{
			{Name: "tools on the session's PATH", Status: "works", OK: true, Info: true, Detail: "found: git node npm python3 go cargo make cc; not found: java; UTF-8 locale"},
			{Name: "git --version", Status: "works", OK: true},
			{Name: "cc --version", Status: "works", OK: true},
			{Name: "zsh here-document", Status: "works", OK: true},
			{Name: "npm install from a registry on loopback", Status: "broken", Detail: "exit status 1: npm error code EPERM"},
			{Name: "cargo build of a one-file crate", Status: "broken", Detail: "exit status 101: error: failed to link or copy `target/debug/deps/owcheck` to `target/debug/owcheck`"},
			{Name: "java -version", Status: "skipped", OK: true, Detail: "no Java runtime is installed"},
			{Name: "server on loopback without --local-servers", Status: "refused", OK: true},
			{Name: "server on loopback with --local-servers", Status: "works", OK: true},
			{Name: "server on :: (every address) with --local-servers", Status: "works", OK: true},
			{Name: "a command's background process, after End", Status: "works", OK: true},
			{Name: "ls /System/Volumes/Data/Users (the data volume's path to the home folders)", Status: "refused", OK: true},
			{Name: "read of " + previewHome + "/.ssh/known_hosts", Status: "refused", OK: true},
			{Name: "links and clones: which ends Seatbelt checks", Status: "not proved (the link from the denied folder into the allowed one was made: Seatbelt does not check the existing file): links and clones stay refused; npm's links are made copies, and cargo build, rustup and Rust's fs::copy fail", OK: true},
		},
	}
	add(Preview{Name: "check-done", Title: "Check this Mac…: each program's line and the report", State: checked})

	broken := previewState("seatbelt", "allowlist", "github")
	broken.Settings.Problems = &config.ProblemsError{Problems: []config.Problem{{File: previewHome + "/Library/Application Support/OpenWorker/config.toml", Line: 3, Col: 26, Msg: "sandbox_network_hosts: site \"https://x\": has a scheme; write only the host and port, such as github.com:443"}}}
	broken.Settings.LastGood = true
	broken.UI.Open = []string{SettingsWindow}
	add(Preview{Name: "settings-file-problems", Title: "The settings file has problems", State: broken})

	sshAdd := previewState("seatbelt", "allowlist", "github")
	sshAdd.SSHKeysChoice = true
	sshAdd.UI.Open = []string{SettingsWindow}
	add(Preview{Name: "ssh-keys-add", Title: "Add… ▸ A CLI's login ▸ SSH keys: through OpenWorker or copied", State: sshAdd, Expand: []string{"Add…", "A CLI's login", "SSH keys"}})

	sshEntry := sshAdd
	sshEntry.Added = []AddedLogin{{Key: "ssh", Title: "SSH keys", From: "~/.ssh", Kind: "folder, credential", Hosts: []string{"github.com:22", "gitlab.com:22"}, Enabled: true, Status: "found", Keys: config.SSHKeysAgent}}
	add(Preview{Name: "ssh-keys", Title: "The SSH keys entry, used through OpenWorker's agent", State: sshEntry})

	standIn := previewState("seatbelt", "allowlist", "github")
	standIn.SecretsChoice = true
	standIn.UI.Open = []string{SettingsWindow}
	standIn.Added = []AddedLogin{
		{Key: "npm", Title: "npm", From: "~/.npmrc", Kind: "file, credential", Hosts: []string{"registry.npmjs.org:443", "npm.corp.example:443"}, Enabled: true, Status: "found", Secrets: config.SecretsStandIn, StandIn: true},
		{Key: "aws-credentials", Title: "AWS credentials", From: "~/.aws/credentials", Kind: "file, credential", Hosts: []string{"*.amazonaws.com:443"}, Enabled: true, Status: "found", Secrets: config.SecretsCopy, SecretsNote: macCopyOnly("aws-credentials")},
	}
	add(Preview{Name: "stand-in-logins", Title: "npm's tokens as stand-ins, and a login that is always copied, with why", State: standIn, Expand: []string{"Add…", "A CLI's login"}})

	sshCard := previewState("seatbelt", "allowlist", "github").withSession()
	sshCard.Cards = []backend.CardInfo{{ID: "c5", Session: "7f3a9c", Site: "github.com", Kind: string(approvals.SSHLogin), Created: previewNow, Askers: 1, BlockedCommand: "git push origin main",
		Reason:  "The coworker wants to sign in to github.com over SSH as you, with key id_ed25519 (SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s)",
		Answers: []string{"session", "always", "deny"}}}
	add(Preview{Name: "ssh-card", Title: "An SSH login's card", State: sshCard})
	return out
}
