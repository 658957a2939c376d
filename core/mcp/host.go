package mcp

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"time"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/session"
)

// Host is where the server's one session lives: a backend in this process, or the running
// app or daemon through its local API. The tools call it and nothing else.
type Host interface {
	Exec(ctx context.Context, a runner.ExecArgs, onChunk func(stream string, data []byte)) (*session.Result, error)
	Read(ctx context.Context, a runner.ReadArgs) (*session.Result, error)
	Write(ctx context.Context, a runner.WriteArgs) (*session.Result, error)
	List(ctx context.Context, a runner.ListArgs) (*session.Result, error)
	// RequestSite asks for a site on a card and waits up to wait for the answer.
	RequestSite(ctx context.Context, site, reason string, wait time.Duration) (backend.SiteAnswer, error)
	// Answer answers a card (the person answered it through the agent's client) and
	// returns its site.
	Answer(ctx context.Context, card, answer string) (site string, err error)
	// CardWatchers counts who shows cards to a person (the app, openworker cards --watch).
	CardWatchers(ctx context.Context) int
	// FormRefused records a form answer that answered nothing (see takeFormAnswer).
	FormRefused(ctx context.Context, detail string)
	Info(ctx context.Context) (Info, error)
	// Fetch is the web fetch, outside the sandbox under the session's list; a site not on
	// it is asked for on a card, waiting up to wait.
	Fetch(ctx context.Context, url, reason string, wait time.Duration) (backend.FetchResult, error)
	// End ends the session and everything in it.
	End()
}

// Info is what session_info tells the agent.
type Info struct {
	Session     string               `json:"session"`
	Enforcement string               `json:"enforcement"`
	Network     string               `json:"network"`
	Approvals   string               `json:"approvals"`
	Writable    []Folder             `json:"writable"`
	ReadOnly    []Folder             `json:"read_only,omitempty"`
	Sites       []backend.AccessSite `json:"sites"`
	Denied      []string             `json:"denied,omitempty"`
	Active      []string             `json:"wall,omitempty"`
	// FoldersRefused say which of the session's folders macOS does not let OpenWorker use,
	// so that commands there fail with "Operation not permitted", and where to allow them.
	FoldersRefused []string `json:"folders_refused,omitempty"`
	// LocalServers says the servers commands start can be reached from the person's machine;
	// Published are the ports of the sandbox's own loopback published on its 127.0.0.1 (at
	// host_port), and those asked for that nothing listens at yet.
	LocalServers bool                `json:"local_servers,omitempty"`
	Published    []session.Published `json:"published,omitempty"`
	// Logins are the shared logins the session started with, and how each reached it.
	Logins   []Login `json:"logins,omitempty"`
	Attached string  `json:"attached"` // "in-process" or the daemon's socket
}

// Login is one shared login as session_info gives it: Secrets is "stand-in" (its files hold
// stand-ins, which work only on its own hosts, where OpenWorker puts the real secret on the
// request), "copy" (they hold the real secrets) or "agent" (the SSH keys stay outside).
type Login struct {
	Name    string   `json:"name"`
	Secrets string   `json:"secrets"`
	Hosts   []string `json:"hosts,omitempty"`
}

// loginsOf are the session's shared logins as session_info gives them.
func loginsOf(a backend.Access) []Login {
	var out []Login
	for _, l := range a.Logins {
		if l.Found {
			out = append(out, Login{Name: l.Key, Secrets: l.Secrets, Hosts: l.Hosts})
		}
	}
	return out
}

// Folder is a session folder as given and as the wall holds it.
type Folder struct {
	Given    string `json:"given"`
	Resolved string `json:"resolved"`
}

// LocalHost is a session of a backend in this process.
type LocalHost struct {
	B     *backend.Backend
	S     *session.Session
	Given backend.Request
}

func (h *LocalHost) Exec(ctx context.Context, a runner.ExecArgs, onChunk func(string, []byte)) (*session.Result, error) {
	return h.S.ExecContext(ctx, a, nil, onChunk)
}
func (h *LocalHost) Read(_ context.Context, a runner.ReadArgs) (*session.Result, error) {
	return h.S.Read(a)
}
func (h *LocalHost) Write(_ context.Context, a runner.WriteArgs) (*session.Result, error) {
	return h.S.Write(a)
}
func (h *LocalHost) List(_ context.Context, a runner.ListArgs) (*session.Result, error) {
	return h.S.List(a)
}
func (h *LocalHost) RequestSite(ctx context.Context, site, reason string, wait time.Duration) (backend.SiteAnswer, error) {
	return h.B.RequestSite(ctx, backend.SiteRequest{Session: h.S.ID, Site: site, Reason: reason, Wait: wait})
}
func (h *LocalHost) Answer(_ context.Context, card, answer string) (string, error) {
	e, err := h.B.Answer(card, answer)
	var pending *backend.ErrPending
	if errors.As(err, &pending) {
		err = nil // in force; written once the settings file is fixed
	}
	return e.Card.Ask.Target(), err
}
func (h *LocalHost) CardWatchers(context.Context) int { return h.B.CardWatchers() }
func (h *LocalHost) FormRefused(_ context.Context, detail string) {
	h.B.FormAnswerRefused(h.S.ID, detail)
}
func (h *LocalHost) Info(context.Context) (Info, error) {
	a, err := h.B.Access(h.S.ID)
	if err != nil {
		return Info{}, err
	}
	rw, ro := h.S.Folders()
	return Info{
		Session: h.S.ID, Enforcement: string(h.S.Enforcement), Network: string(h.S.Network),
		Approvals: h.B.Settings().Settings.Approvals, Writable: pair(h.Given.Writable, rw), ReadOnly: pair(h.Given.ReadOnly, ro),
		Sites: a.Sites, Denied: a.Denied, Active: h.S.Active(), Attached: "in-process", FoldersRefused: refusedFolders(a),
		LocalServers: a.LocalServers, Published: a.Published, Logins: loginsOf(a),
	}, nil
}
func (h *LocalHost) Fetch(ctx context.Context, url, reason string, wait time.Duration) (backend.FetchResult, error) {
	return h.B.Fetch(ctx, backend.FetchRequest{Session: h.S.ID, URL: url, Reason: reason, Wait: wait})
}
func (h *LocalHost) End() { _ = h.B.EndBecause(h.S.ID, EndReason) }

// RemoteHost is a session of the running app or daemon.
type RemoteHost struct {
	C      *apiclient.Client
	ID     string
	Socket string
	Given  api.StartRequest

	// Reconnect, when set, starts the session again when a call finds it gone (its daemon
	// stopped): the call is then made once more, in the new session.
	Reconnect func(ctx context.Context) error

	mu sync.Mutex // ID, once the host is running, and restarted
	// restarted: the session was started again (Retarget) since the last command, which
	// the next command's result says.
	restarted bool
}

// again makes a call, and makes it once more in a session started anew when the first
// found the session gone.
func again[T any](ctx context.Context, h *RemoteHost, call func() (T, error)) (T, error) {
	v, err := call()
	if err != nil && h.Reconnect != nil && apiclient.SessionGone(err) {
		if rerr := h.Reconnect(ctx); rerr != nil {
			return v, rerr
		}
		return call()
	}
	return v, err
}

func (h *RemoteHost) id() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ID
}

// Session is the session the host's calls go to now.
func (h *RemoteHost) Session() string { return h.id() }

// Retarget points the host at a session started in place of its own (its daemon stopped
// and was started again): the next command's result says the shell's state was lost.
func (h *RemoteHost) Retarget(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ID, h.restarted = id, true
}

// takeRestarted says, once, that the session was started again.
func (h *RemoteHost) takeRestarted() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.restarted
	h.restarted = false
	return r
}

// Exec runs a command in the daemon's session. A cancelled call interrupts the command as
// Ctrl-C does and still waits for its answer, which comes once the command has ended
// (bounded by the interrupt's grace): so the next call finds the session free, as it does
// in a session hosted here.
func (h *RemoteHost) Exec(ctx context.Context, a runner.ExecArgs, onChunk func(string, []byte)) (*session.Result, error) {
	req := api.ExecRequest{Command: a.Command, Argv: a.Argv, Dir: a.Dir, TimeoutMS: a.Timeout.Milliseconds(), MaxOutput: a.MaxOutput}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.C.Signal(sctx, h.id(), api.SignalRequest{Signal: "SIGINT"})
	})
	defer stop()
	call := context.WithoutCancel(ctx)
	res, err := again(ctx, h, func() (*session.Result, error) {
		if onChunk == nil {
			return h.C.Exec(call, h.id(), req)
		}
		return h.C.ExecStream(call, h.id(), req, nil, onChunk)
	})
	if err == nil && h.takeRestarted() {
		res.ShellStateLost = true
	}
	return res, err
}
func (h *RemoteHost) Read(ctx context.Context, a runner.ReadArgs) (*session.Result, error) {
	return again(ctx, h, func() (*session.Result, error) {
		return h.C.Read(ctx, h.id(), api.ReadRequest{Path: a.Path, Offset: a.Offset, Limit: a.Limit})
	})
}
func (h *RemoteHost) Write(ctx context.Context, a runner.WriteArgs) (*session.Result, error) {
	return again(ctx, h, func() (*session.Result, error) {
		return h.C.Write(ctx, h.id(), api.WriteRequest{Path: a.Path, Content: a.Content})
	})
}
func (h *RemoteHost) List(ctx context.Context, a runner.ListArgs) (*session.Result, error) {
	return again(ctx, h, func() (*session.Result, error) { return h.C.List(ctx, h.id(), api.ListRequest{Path: a.Path}) })
}
func (h *RemoteHost) RequestSite(ctx context.Context, site, reason string, wait time.Duration) (backend.SiteAnswer, error) {
	return again(ctx, h, func() (backend.SiteAnswer, error) {
		return h.C.RequestSite(ctx, h.id(), api.SiteRequest{Site: site, Reason: reason, WaitMS: wait.Milliseconds()})
	})
}
func (h *RemoteHost) Answer(ctx context.Context, card, answer string) (string, error) {
	res, err := h.C.Answer(ctx, card, api.AnswerRequest{Answer: answer})
	return res.Site, err
}
func (h *RemoteHost) FormRefused(ctx context.Context, detail string) {
	_ = h.C.FormRefused(ctx, h.id(), detail)
}
func (h *RemoteHost) CardWatchers(ctx context.Context) int {
	st, err := h.C.Status(ctx)
	if err != nil {
		return 0
	}
	return st.CardWatchers
}
func (h *RemoteHost) Info(ctx context.Context) (Info, error) {
	st, err := h.C.Status(ctx)
	if err != nil {
		return Info{}, err
	}
	a, err := h.C.Access(ctx, h.id())
	if err != nil {
		return Info{}, err
	}
	for _, s := range st.Sessions {
		if s.ID == h.id() {
			return Info{Session: s.ID, Enforcement: s.Enforcement, Network: s.Network, Approvals: st.Approvals,
				Writable: pair(h.Given.Writable, s.Writable), ReadOnly: pair(h.Given.ReadOnly, s.ReadOnly),
				Sites: a.Sites, Denied: a.Denied, Active: s.Active, Attached: h.Socket, FoldersRefused: refusedFolders(a),
				LocalServers: a.LocalServers, Published: a.Published, Logins: loginsOf(a)}, nil
		}
	}
	return Info{}, errors.New("the session has ended")
}
func (h *RemoteHost) Fetch(ctx context.Context, url, reason string, wait time.Duration) (backend.FetchResult, error) {
	return again(ctx, h, func() (backend.FetchResult, error) {
		return h.C.Fetch(ctx, h.id(), api.FetchRequest{URL: url, Reason: reason, WaitMS: wait.Milliseconds()})
	})
}
func (h *RemoteHost) End() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = h.C.EndBecause(ctx, h.id(), EndReason)
}

// EndReason is what the audit trail says of a session its MCP client ended.
const EndReason = "its MCP client disconnected"

// refusedFolders are the messages of the session's folders macOS refused OpenWorker.
func refusedFolders(a backend.Access) []string {
	var out []string
	for _, f := range a.FoldersRefused {
		out = append(out, f.Message)
	}
	return out
}

// pair gives each folder as given with where the wall holds it: its resolved path, among
// the session's resolved folders.
func pair(given, resolved []string) []Folder {
	out := make([]Folder, 0, len(given))
	seen := map[string]bool{}
	for _, g := range given {
		r, err := filepath.EvalSymlinks(g)
		if err != nil {
			r = filepath.Clean(g)
		}
		out = append(out, Folder{Given: g, Resolved: r})
		seen[r] = true
	}
	for _, r := range resolved {
		if !seen[r] {
			out = append(out, Folder{Resolved: r})
		}
	}
	return out
}
