// Package apitype is the local API's wire types: what its clients send and receive (the
// CLI, the MCP server attached to a daemon, the menu-bar app's watchers). It holds no code
// that decides or enforces, so a client imports it without the server, the sessions or the
// walls; core/backend and core/session use these same types for what they return.
package apitype

import (
	"path/filepath"
	"strconv"
	"time"

	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/credentials"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tcc"
	"github.com/openworker/openworker/core/webfetch"
)

// SocketName is the local API's socket's file name in the state folder.
const SocketName = "openworker.sock"

// SocketPath returns the socket's path for a state folder.
func SocketPath(stateDir string) string { return filepath.Join(stateDir, SocketName) }

func (b Blocked) String() string { return b.Host + ":" + strconv.Itoa(b.Port) }

// ToAllow is what an entry must name to open the site: Allow, or the site itself.
func (b Blocked) ToAllow() string {
	if b.Allow != "" {
		return b.Allow
	}
	return b.String()
}

// Access is a session's Access list: its sites with where each comes from, and its denials.
type Access struct {
	Session string       `json:"session"`
	Network string       `json:"network"`
	Sites   []AccessSite `json:"sites"`
	Denied  []string     `json:"denied,omitempty"`
	// Pending are changes to the settings in force but not yet written (the file has problems).
	Pending []string `json:"pending,omitempty"`
	// Logins are the shared logins copied into this session when it started, and LoginsNote
	// says that switching one applies to sessions started afterwards.
	Logins     []credentials.Copied `json:"logins,omitempty"`
	LoginsNote string               `json:"logins_note,omitempty"`
	// FoldersRefused are this session's folders that macOS does not let OpenWorker use
	// (checked when the session started), with where to allow them.
	FoldersRefused []tcc.Refusal `json:"folders_refused,omitempty"`
	// SSH are the SSH cards' answers that hold for this session: its own (Source "session
	// only") and the ssh login's Always allow ("settings").
	SSH []SSHAnswer `json:"ssh,omitempty"`
	// LocalServers says the session's local servers are on; Published is what its sandbox's
	// loopback publishes on this machine's 127.0.0.1, and the ports asked for.
	LocalServers bool        `json:"local_servers,omitempty"`
	Published    []Published `json:"published,omitempty"`
	// Refused are the sites the session was refused, each with its last refusal (at most
	// the last 1,024 sites), by site.
	Refused []Refusal `json:"refused,omitempty"`
}

// SSH answer kinds: a login to a server, or a signature for what it names (git's commits).
// An answer holds for its kind only.
const (
	SSHLogin   = "login"
	SSHSigning = "signing"
)

// SSHAnswer is an SSH card's Allow: for a Kind of signature, with the key whose fingerprint
// is Key, for Name — the server's (SSHLogin) or the namespace a signature is for
// (SSHSigning).
type SSHAnswer struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Key    string `json:"key"`
	Source string `json:"source,omitempty"`
}

// String is the answer in words: "login to github.com with SHA256:…", "signing for "git"
// with SHA256:…".
func (a SSHAnswer) String() string {
	if a.Kind == SSHSigning {
		return "signing for " + strconv.Quote(a.Name) + " with " + a.Key
	}
	return "login to " + a.Name + " with " + a.Key
}

// AccessSite is one site of a session's list.
type AccessSite struct {
	Site   string `json:"site"`
	Source string `json:"source"`
}

// SiteAnswer is what an ask came to.
type SiteAnswer struct {
	Outcome approvals.Outcome `json:"decision"`
	Site    string            `json:"site"`
	Card    *CardInfo         `json:"card,omitempty"`
	Message string            `json:"message,omitempty"`
}

// CardInfo is a card as clients show it.
type CardInfo struct {
	ID             string    `json:"id"`
	Session        string    `json:"session"`
	Site           string    `json:"site"`
	Reason         string    `json:"reason"`
	Kind           string    `json:"kind"`
	Created        time.Time `json:"created"`
	Blocked        time.Time `json:"blocked,omitzero"`
	BlockedCommand string    `json:"blocked_command,omitempty"`
	Askers         int       `json:"askers"`
	Answers        []string  `json:"answers"`
}

// Credentials is Settings ▸ Sandbox ▸ "Explicit config and keys exposed to Agent": the
// entries the person added, each with its switch, and the catalog "Add… ▸ A CLI's login"
// offers, each found or not found on this machine.
type Credentials struct {
	Entries []CredentialInfo `json:"entries"`
	Catalog []CatalogRow     `json:"catalog"`
	Pending []string         `json:"pending,omitempty"`
	// Note says when a change applies.
	Note string `json:"note"`
}

// CredentialInfo is one added entry.
type CredentialInfo struct {
	Key     string   `json:"key"`           // "ssh", "~/.config/tool"
	Title   string   `json:"title"`         // "SSH keys", or the path
	From    string   `json:"from"`          // "~/.ssh"
	Kind    string   `json:"kind"`          // "folder, credential"
	Var     string   `json:"var,omitempty"` // the variable pointed at the copy
	Hosts   []string `json:"hosts"`         // joined to the allow list of sessions
	Enabled bool     `json:"enabled"`       // its switch
	Status  string   `json:"status"`        // found, not found, found (token in the keychain)
	Problem string   `json:"problem,omitempty"`
	// Keys, for the ssh login, is how its keys reach sessions: "agent" (they stay outside,
	// and OpenWorker's agent signs for the hosts the person allows) or "copy".
	Keys string `json:"keys,omitempty"`
	// Secrets, for another CLI's login, is how its secrets reach sessions: "stand-in" (they
	// stay outside; the sandbox gets stand-ins, which OpenWorker replaces on requests to the
	// login's own hosts) or "copy"; SecretsNote says why a login is copied where it is.
	Secrets     string `json:"secrets,omitempty"`
	SecretsNote string `json:"secrets_note,omitempty"`
	// AlwaysAllowed are the ssh login's SSH cards answered Always allow, each with its kind.
	AlwaysAllowed []SSHAnswer `json:"always_allowed,omitempty"`
	// LeftOut, for the ssh login whose keys stay outside, are the files of ~/.ssh a session
	// started now would not get, each with why (every file that holds a private key).
	LeftOut []string `json:"left_out,omitempty"`
}

// CatalogRow is one row of "Add… ▸ A CLI's login".
type CatalogRow struct {
	Name   string   `json:"name"`
	Title  string   `json:"title"`
	From   string   `json:"from"`
	Kind   string   `json:"kind"`
	Lets   string   `json:"lets"`
	Var    string   `json:"var,omitempty"`
	Hosts  []string `json:"hosts"`
	Found  bool     `json:"found"`
	Status string   `json:"status"`
	Added  bool     `json:"added"`
	// StandIn says the login can be a stand-in on this machine (a new entry is one);
	// CopyOnly says why it is always copied, for the logins that cannot.
	StandIn  bool   `json:"stand_in,omitempty"`
	CopyOnly string `json:"copy_only,omitempty"`
}

// Event is one thing that happened in the backend, as its watchers (the local API's event
// stream, the app, the audit trail) receive it: a type and the one payload that type has.
type Event struct {
	Time time.Time `json:"time"`
	Type string    `json:"type"`
	// Session is the session it concerns, if any.
	Session string `json:"session,omitempty"`
	// Audit is a session or tool-call event, as the audit trail writes it.
	Audit *audit.Event `json:"audit,omitempty"`
	// Card is a card that is pending, answered or expired; Outcome is how it ended.
	Card    *CardInfo `json:"card,omitempty"`
	Outcome string    `json:"outcome,omitempty"`
	// Access is a session's sites after a change.
	Access *Access `json:"access,omitempty"`
	// Refused is a site the proxy refused.
	Refused *Refusal `json:"refused,omitempty"`
	// Credential is a shared login after a change to it.
	Credential *CredentialInfo `json:"credential,omitempty"`
	// Logins are what a session's shared logins came to when it started.
	Logins []credentials.Copied `json:"logins,omitempty"`
	// Message says what happened, for settings events and errors.
	Message string `json:"message,omitempty"`
}

// Refusal is a site a session's proxy refused.
type Refusal struct {
	Site    string    `json:"site"`
	Reason  string    `json:"reason"`
	Command string    `json:"command,omitempty"` // the command running then
	Time    time.Time `json:"time"`
}

// FetchResult is a web fetch's outcome: the page, or why there is none.
type FetchResult struct {
	Page *webfetch.Result `json:"page,omitempty"`
	// Outcome is set when a card was asked, or the fetch refused: once, session, always,
	// denied, no answer yet, refused: full access.
	Outcome approvals.Outcome `json:"decision,omitempty"`
	Site    string            `json:"site,omitempty"`
	Card    *CardInfo         `json:"card,omitempty"`
	Message string            `json:"message,omitempty"`
}

// SiteGroup is one tick box of "Choose sites…" with whether it is ticked: all its sites are
// on the machine's list.
type SiteGroup struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Sites   []string `json:"sites"`
	Ticked  bool     `json:"ticked"`
	Partial bool     `json:"partial,omitempty"` // some of its sites are on the list
}

// Sites is the "Choose sites…" list: the catalog's groups and the machine's own sites.
type Sites struct {
	Groups []SiteGroup `json:"groups"`
	// Custom are the sites on the list that no group holds.
	Custom  []string `json:"custom"`
	Pending []string `json:"pending,omitempty"`
}

// StartRequest starts a session.
type StartRequest struct {
	Provider string   `json:"provider,omitempty"` // "" (the machine's sandbox_provider), auto, seatbelt, linux, direct
	Writable []string `json:"writable,omitempty"`
	ReadOnly []string `json:"read_only,omitempty"`
	Network  string   `json:"network,omitempty"` // default: the settings'
	Allow    []string `json:"allow,omitempty"`   // sites for this session only
	Dir      string   `json:"dir,omitempty"`     // the first working folder; default the first writable one
	// GitMetadata is "protected" or "writable" (repository hooks and config inside the
	// writable folders); "" is the machine's sandbox_git_metadata.
	GitMetadata string `json:"git_metadata,omitempty"`
	// Program is the resolved path of the client's own executable (the CLI, or the MCP
	// server an agent host starts outside every sandbox): no writable folder may hold it.
	// The client fills it in; see apiclient.Client.Start.
	Program string `json:"program,omitempty"`
	// Agent: a model reads the session's output and answers (an MCP server's session), so
	// its refusals name no command, file or setting that opens a site.
	Agent bool `json:"agent,omitempty"`
	// Hold: the session lives as long as this request's connection. The answer is the
	// session's info as one JSON line, and the connection stays open; when it closes (the
	// client ended, crashed or was killed) the daemon ends the session.
	Hold bool `json:"hold,omitempty"`
	// Env is the client's PATH and language (PATH, LANG, LC_ALL, LC_CTYPE; nothing else is
	// taken), which win over the daemon's own for this session: a daemon started by launchd
	// or systemd, or the app opened from Finder, has a minimal PATH. apiclient fills it in.
	Env map[string]string `json:"env,omitempty"`
	// LocalServers: the session's commands may serve and connect on this Mac's loopback,
	// other programs' ports included (policy.Policy.LocalServers); on Linux, every port a
	// command listens on in the sandbox's own network is published on this machine's
	// 127.0.0.1 while it listens (session.Spec.LocalServers).
	LocalServers bool `json:"local_servers,omitempty"`
	// Owner is the process whose descendants' shell commands go into this session: an agent
	// host started by openworker agent, or the host whose MCP server asked for it. The
	// agent hosts' shell (openworker-shell) finds its session by it, among its ancestors.
	// It routes commands; it opens nothing that the person's other processes could not.
	Owner int `json:"owner,omitempty"`
	// HostPrograms are the agent host's program as found on PATH and as resolved, which
	// run outside every sandbox as the client's own program does: no writable folder may
	// hold them.
	HostPrograms []string `json:"host_programs,omitempty"`
	// Publish are ports of the sandbox's own loopback published on this machine's 127.0.0.1
	// while a server listens there (Linux; session.Spec.Publish).
	Publish []int `json:"publish,omitempty"`
	// FreshCaches: the session starts cold; its tools' caches are its own and go with it,
	// and neither its project's kept caches nor the person's are used.
	FreshCaches bool `json:"fresh_caches,omitempty"`
}

// ClientVars are the variables a client sends with a session's start (StartRequest.Env) and
// the daemon takes over its own: where the person's programs are, and their language.
var ClientVars = []string{"PATH", "LANG", "LC_ALL", "LC_CTYPE"}

// FormRefusal reports a form answer an agent's client sent for a question its server never
// put to it: for the audit trail.
type FormRefusal struct {
	Detail string `json:"detail"`
}

// SessionInfo describes a running session.
type SessionInfo struct {
	ID          string    `json:"id"`
	Enforcement string    `json:"enforcement"`
	Network     string    `json:"network"`
	Writable    []string  `json:"writable"`
	ReadOnly    []string  `json:"read_only,omitempty"`
	ProxyPort   int       `json:"proxy_port,omitempty"`
	Active      []string  `json:"active,omitempty"`
	Started     time.Time `json:"started"`
	// Owner: see StartRequest.Owner; 0 for a session no agent host owns.
	Owner int `json:"owner,omitempty"`
	// LocalServers says the session's local servers are on; Published is what its sandbox's
	// loopback publishes on this machine's 127.0.0.1, and the ports asked for.
	LocalServers bool        `json:"local_servers,omitempty"`
	Published    []Published `json:"published,omitempty"`
	// Refused are the sites the session was refused, each with its last refusal (at most
	// the last 1,024 sites), by site.
	Refused []Refusal `json:"refused,omitempty"`
}

// ExecRequest runs a command in a session: either a program with its arguments (Argv) or a
// shell command (Command), never both.
type ExecRequest struct {
	// Command is a shell command, run as by sh -c; its cd and export carry over to the
	// session's next commands. Used only when Argv is empty.
	Command string `json:"command"`
	// Argv is a program and its arguments, exactly as given and whatever their count: no
	// shell reads them, so ["./bin dir/my tool"] runs that file and ["$(echo x)"] looks for a
	// program of that name. A client that took its words after -- sends them here.
	Argv      []string `json:"argv,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	MaxOutput int      `json:"max_output,omitempty"`
	// Stdin says the request body goes on, after this JSON value and a newline, with the
	// command's standard input, streamed until the body ends.
	Stdin bool `json:"stdin,omitempty"`
	// Apart runs the command beside the session's shell (an agent host's shell tool): at
	// once, whatever else runs in the session, in Dir, and nothing it changes (cd, export)
	// carries over. Tag, when given, names it for a SignalRequest while it runs.
	Apart bool   `json:"apart,omitempty"`
	Tag   string `json:"tag,omitempty"`
	// Env are NAME=VALUE pairs added to an Apart command's variables: the few an agent host
	// gives its shell (GIT_EDITOR=true, …). A name that says it holds a secret is refused.
	Env []string `json:"env,omitempty"`
}

// SignalRequest interrupts the command running in a session: "SIGINT" (Ctrl-C), "SIGTERM"
// or "SIGHUP"; a second one kills it.
type SignalRequest struct {
	Signal string `json:"signal"`
	// Tag names a command running apart (ExecRequest.Tag) instead of the shell's.
	Tag string `json:"tag,omitempty"`
}

// ReadRequest, WriteRequest and ListRequest are the file tools' arguments.
type ReadRequest struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset,omitempty"`
	Limit  int64  `json:"limit,omitempty"`
}

type WriteRequest struct {
	Path    string `json:"path"`
	Content []byte `json:"content"`
}

type ListRequest struct {
	Path string `json:"path"`
}

// FolderRequest adds a folder to a running session.
type FolderRequest struct {
	Path     string `json:"path"`
	Writable bool   `json:"writable"`
}

// StreamMessage is one line of a streamed exec: an output chunk, or the final result.
type StreamMessage struct {
	Stream string  `json:"stream,omitempty"`
	Data   []byte  `json:"data,omitempty"`
	Result *Result `json:"result,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// Status is the daemon's state.
type Status struct {
	Provider string        `json:"provider"`
	Sessions []SessionInfo `json:"sessions"`
	Settings string        `json:"settings,omitempty"`
	// SettingsError is set when the settings file is broken: what is wrong, and which
	// settings are in force meanwhile.
	SettingsError string `json:"settings_error,omitempty"`
	// Rule says, per entry point, which wall a session gets.
	Rule []string `json:"rule,omitempty"`
	// Approvals is the machine's sandbox_approvals; CardWatchers counts who shows cards to
	// a person (the app, openworker cards --watch).
	Approvals    string `json:"approvals,omitempty"`
	CardWatchers int    `json:"card_watchers"`
}

// AnswerRequest answers a card: once (fetch cards), session, always or deny.
type AnswerRequest struct {
	Answer string `json:"answer"`
	// Exact is set by a client where a person typed the answer (the CLI): a word that is not
	// one of the card's answers is then refused and the card stays up, where otherwise
	// (the app, a form) it is taken as a deny.
	Exact bool `json:"exact,omitempty"`
}

// AnswerResponse is what an answer came to; Message says what else happened (a change to
// the settings left pending, an answer word taken as deny).
type AnswerResponse struct {
	Outcome string `json:"outcome"`
	Card    string `json:"card"`
	Site    string `json:"site"`
	Message string `json:"message,omitempty"`
}

// SiteRequest asks for a site for a session, waiting up to WaitMS (default 60 s), or not at
// all with NoWait (the answer is then "no answer yet" with the card, at once).
type SiteRequest struct {
	Site   string `json:"site"`
	Reason string `json:"reason"`
	Kind   string `json:"kind,omitempty"` // command (default) or fetch
	WaitMS int64  `json:"wait_ms,omitempty"`
	NoWait bool   `json:"no_wait,omitempty"`
}

// CardProgress is one line of the answer to a site request or a fetch made with ?progress=1
// (newline-delimited JSON): Card as soon as a card is up, so that the asker can say which
// one the person is to answer; then the last line, with Answer (a site request), Fetch (a
// fetch) or Error.
type CardProgress struct {
	Card   *CardInfo    `json:"card,omitempty"`
	Answer *SiteAnswer  `json:"answer,omitempty"`
	Fetch  *FetchResult `json:"fetch,omitempty"`
	Error  string       `json:"error,omitempty"`
}

// AccessRequest changes a session's Access list.
type AccessRequest struct {
	Allow  []string `json:"allow,omitempty"`
	Revoke []string `json:"revoke,omitempty"`
	// Publish and Unpublish ask for a port of the sandbox's loopback to be published on
	// this machine's 127.0.0.1 while a server listens there, or take the ask back.
	Publish   []int `json:"publish,omitempty"`
	Unpublish []int `json:"unpublish,omitempty"`
	// LocalServers, when set, switches the session's local servers on or off, as the app's
	// session menu does (on a Mac its runner restarts).
	LocalServers *bool `json:"local_servers,omitempty"`
}

// SitesRequest changes the "Choose sites…" list: tick or untick a group, add or remove a site.
type SitesRequest struct {
	Action string `json:"action"`
	Value  string `json:"value"`
}

// SitesResponse is the list after a change, and what was left pending.
type SitesResponse struct {
	Sites   Sites  `json:"sites"`
	Message string `json:"message,omitempty"`
}

// FetchRequest is a web fetch for a session, outside the sandbox, under its allow list.
type FetchRequest struct {
	URL    string `json:"url"`
	Reason string `json:"reason,omitempty"` // shown on a card if the site must be asked for
	WaitMS int64  `json:"wait_ms,omitempty"`
	NoWait bool   `json:"no_wait,omitempty"` // a card is not waited for
}

// Result is a tool call's outcome as the core reports it: the runner's answer plus what
// only the outside knows — which mode produced it and what the proxy blocked meanwhile.
type Result struct {
	*runner.Result
	Tool        string              `json:"tool"`
	Session     string              `json:"session"`
	Enforcement sandbox.Enforcement `json:"enforcement"`
	Network     policy.Network      `json:"network"`
	Blocked     []Blocked           `json:"blocked,omitempty"`
	// ShellStateLost says the runner was restarted (a folder was added) before this call:
	// the working folder and exported variables of earlier commands are gone.
	ShellStateLost bool `json:"shell_state_lost,omitempty"`
	// Interrupted names the signal a person sent the command (SIGINT for Ctrl-C).
	Interrupted string `json:"interrupted,omitempty"`
	Error       string `json:"error,omitempty"` // the tool failed (file not found, denied)
	// Denials are what the wall refused while the call ran, where the wall reports them
	// (Seatbelt, through the unified log).
	Denials []string `json:"denials,omitempty"`
	// Limits say which limits bound the sandbox, and which do not here and why.
	Limits []string `json:"limits,omitempty"`
	// Reach says what the sandbox's network reaches beyond the internet, where that is this
	// machine's own services (open mode on Linux shares the host's network); "" otherwise.
	Reach string `json:"reach,omitempty"`
	// GitMetadataMoved names each repository hook or settings file the call planted, which
	// the person's git would have run or obeyed outside the sandbox, and where it was moved.
	GitMetadataMoved []string `json:"git_metadata_moved,omitempty"`
}

// Published is a port of a sandbox's own loopback that this machine's 127.0.0.1 reaches (a
// server a command started, with the session's local servers on or the port asked for).
type Published struct {
	Port int `json:"port"` // inside the sandbox
	// HostPort is where this machine reaches it: 127.0.0.1:HostPort, the same port or the
	// next free one. 0: not published now (nothing listens at Port yet, or no port here).
	HostPort int `json:"host_port,omitempty"`
	// Asked says the person asked for this port (--publish, the Access list); otherwise it
	// is published because the session's local servers are on.
	Asked bool `json:"asked,omitempty"`
}

// Blocked is a site the proxy refused while a call ran.
type Blocked struct {
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Reason string `json:"reason"`
	// Allow is the host:port an entry must name to open the site, where that is not the
	// site itself: the address an allowed name led to ("127.0.0.1:5432").
	Allow string `json:"allow,omitempty"`
	// HowTo is how whoever reads the session's refusals opens the site in its state when the
	// call ended, in the words of the proxy's refusal (a person's ways, or for an agent's
	// session only that it may ask); empty where the session says none.
	HowTo string `json:"how_to,omitempty"`
}

// CredentialsRequest changes the shared logins: add (a CLI's login by Name), add-path (a
// file or folder under the home folder, with its Label, Hosts and Var), enable, disable or
// remove (an entry by Name: a catalog name or "~/path"), ssh-keys (Keys) or secrets (Name's
// Secrets).
type CredentialsRequest struct {
	Action string   `json:"action"`
	Name   string   `json:"name,omitempty"`
	Path   string   `json:"path,omitempty"`
	Label  string   `json:"label,omitempty"`
	Hosts  []string `json:"hosts,omitempty"`
	Var    string   `json:"var,omitempty"`
	// Off adds the entry switched off.
	Off bool `json:"off,omitempty"`
	// Keys is how the ssh login's keys are shared, with add (ssh) and ssh-keys: "agent" or
	// "copy".
	Keys string `json:"keys,omitempty"`
	// Secrets is how another CLI's login's secrets are shared, with add and secrets:
	// "stand-in" or "copy" ("" with add: a stand-in where the login can be one).
	Secrets string `json:"secrets,omitempty"`
}

// CredentialsResponse is the list after a change, and what was left pending.
type CredentialsResponse struct {
	Credentials Credentials `json:"credentials"`
	Message     string      `json:"message,omitempty"`
}
