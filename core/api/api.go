// Package api is the local API: HTTP and JSON over a Unix socket in the state folder, which
// only its owner can open (the folder and socket are owner-only, and every connection's peer
// uid is checked). The CLI's session commands, the MCP server and watchers are its clients.
// A sandboxed command cannot reach it: the state folder is outside every wall, and the
// sandbox has no Unix sockets.
package api

import (
	"path/filepath"
	"time"

	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/session"
)

// SocketName is the socket's file name in the state folder.
const SocketName = "openworker.sock"

// SocketPath returns the socket's path for a state folder.
func SocketPath(stateDir string) string { return filepath.Join(stateDir, SocketName) }

// StartRequest starts a session.
type StartRequest struct {
	Provider string   `json:"provider,omitempty"` // "" (the machine's sandbox_provider), auto, seatbelt, linux, direct
	Writable []string `json:"writable,omitempty"`
	ReadOnly []string `json:"read_only,omitempty"`
	Network  string   `json:"network,omitempty"` // default: the settings'
	Allow    []string `json:"allow,omitempty"`   // sites for this session only
	Dir      string   `json:"dir,omitempty"`     // the first working folder; default the first writable one
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
}

// ExecRequest runs a shell command in a session.
type ExecRequest struct {
	Command   string   `json:"command"`
	Argv      []string `json:"argv,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	MaxOutput int      `json:"max_output,omitempty"`
	// Stdin says the request body goes on, after this JSON value and a newline, with the
	// command's standard input, streamed until the body ends.
	Stdin bool `json:"stdin,omitempty"`
}

// SignalRequest interrupts the command running in a session: "SIGINT" (Ctrl-C), "SIGTERM"
// or "SIGHUP"; a second one kills it.
type SignalRequest struct {
	Signal string `json:"signal"`
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
	Stream string          `json:"stream,omitempty"`
	Data   []byte          `json:"data,omitempty"`
	Result *session.Result `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
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

// errorBody is every error answer's body.
type errorBody struct {
	Error string `json:"error"`
}

// AnswerRequest answers a card: once (fetch cards), session, always or deny.
type AnswerRequest struct {
	Answer string `json:"answer"`
}

// AnswerResponse is what an answer came to; Message says what else happened (a change to
// the settings left pending, an answer word taken as deny).
type AnswerResponse struct {
	Outcome string `json:"outcome"`
	Card    string `json:"card"`
	Site    string `json:"site"`
	Message string `json:"message,omitempty"`
}

// SiteRequest asks for a site for a session, waiting up to WaitMS (default 60 s).
type SiteRequest struct {
	Site   string `json:"site"`
	Reason string `json:"reason"`
	Kind   string `json:"kind,omitempty"` // command (default) or fetch
	WaitMS int64  `json:"wait_ms,omitempty"`
}

// AccessRequest changes a session's Access list.
type AccessRequest struct {
	Allow  []string `json:"allow,omitempty"`
	Revoke []string `json:"revoke,omitempty"`
}

// SitesRequest changes the "Choose sites…" list: tick or untick a group, add or remove a site.
type SitesRequest struct {
	Action string `json:"action"`
	Value  string `json:"value"`
}

// SitesResponse is the list after a change, and what was left pending.
type SitesResponse struct {
	Sites   backend.Sites `json:"sites"`
	Message string        `json:"message,omitempty"`
}

// FetchRequest is a web fetch for a session, outside the sandbox, under its allow list.
type FetchRequest struct {
	URL    string `json:"url"`
	Reason string `json:"reason,omitempty"` // shown on a card if the site must be asked for
	WaitMS int64  `json:"wait_ms,omitempty"`
}
