package session

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/localca"
	"github.com/openworker/openworker/core/proxy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
)

// RunnerArg is the hidden argument that starts a binary in runner mode.
const RunnerArg = runner.Arg

// Options configure a Manager. Everything comes in from outside, so tests can pass their own.
type Options struct {
	Providers map[sandbox.Enforcement]sandbox.Provider
	UserHome  string
	StateDir  string
	// SettingsPath is the settings file; no session folder may reach its folder.
	SettingsPath string
	TmpRoot      string // where private tmp folders go; default /tmp
	GOOS         string
	RunnerPath   string   // the runner's binary, started with RunnerArg; default runner.Binary()
	HostEnv      []string // OpenWorker's own environment, filtered into the sandbox's
	// LoginEnv, when set, is the person's login environment (see LoginEnv), which sessions
	// start from instead of HostEnv: read once, in the background, a session waits for it.
	LoginEnv func() []string
	Audit    *audit.Log
	// RunnerStderr receives the runner's own error output (not its commands').
	RunnerStderr *os.File
	// OnEvent, when set, sees every event as it is written to the audit trail (for the
	// local API's event stream).
	OnEvent func(audit.Event)
	// GhToken returns the GitHub CLI's token for a host, for a shared gh login whose token
	// is kept in the keychain; nil runs the gh found on PATH.
	GhToken func(host string) (string, error)
	// FollowDenials opens a command's report of denials; nil asks the session's provider,
	// where it reports them (sandbox.DenialReporter).
	FollowDenials FollowDenials
	// DeveloperTools finds the Mac's developer folder, outside every sandbox; nil runs
	// xcode-select once, at the first session on a Mac.
	DeveloperTools func() DeveloperTools
	// ProxyConnsTotal caps the connections open through all the sessions' proxies
	// together; 0 means 1024.
	ProxyConnsTotal int
	// Resolver and Dial, when set, are the sessions' proxies' and relays' (see
	// proxy.Options): tests stand in for the internet with them.
	Resolver proxy.Resolver
	Dial     func(ctx context.Context, network, address string) (net.Conn, error)
	// UpstreamRoots verify the real hosts of stand-in logins, whose TLS the proxies end;
	// nil: the system's roots, as a program in the sandbox would verify them. Tests give
	// the CA of their loopback origins.
	UpstreamRoots *x509.CertPool
}

// Manager owns the running sessions of this process.
type Manager struct {
	opts       Options
	proxyConns *proxy.ConnLimit
	mu         sync.Mutex
	sessions   map[string]*Session
	// ca is the machine's CA once a session with a stand-in login loaded it (see
	// machineCA); caMu guards it.
	caMu sync.Mutex
	ca   *localca.CA
}

// NewManager returns a manager and removes the private tmp folders of sessions whose owner
// died without ending them.
func NewManager(opts Options) (*Manager, error) {
	if opts.TmpRoot == "" {
		opts.TmpRoot = "/tmp"
	}
	for _, p := range opts.Providers {
		// A provider that keeps what it learned of this machine (the Seatbelt link probe's
		// answer) keeps it in the state folder.
		if u, ok := p.(interface{ UseStateDir(string) }); ok {
			u.UseStateDir(opts.StateDir)
		}
	}
	if opts.DeveloperTools == nil {
		opts.DeveloperTools = sync.OnceValue(FindDeveloperTools)
	}
	if opts.RunnerPath == "" {
		exe, err := runner.Binary()
		if err != nil {
			return nil, fmt.Errorf("finding the openworker binary for the tool runner: %w", err)
		}
		opts.RunnerPath = exe
	}
	if opts.StateDir == "" {
		return nil, errors.New("session: no state folder")
	}
	if err := os.MkdirAll(filepath.Join(opts.StateDir, "sessions"), 0o700); err != nil {
		return nil, fmt.Errorf("creating the state folder: %w", err)
	}
	_ = os.Chmod(opts.StateDir, 0o700)
	if opts.ProxyConnsTotal <= 0 {
		opts.ProxyConnsTotal = 1024
	}
	m := &Manager{opts: opts, proxyConns: proxy.NewConnLimit(opts.ProxyConnsTotal), sessions: map[string]*Session{}}
	m.CleanStale()
	return m, nil
}

// hostEnv is the environment a session starts from: the login environment where there is
// one (waiting for it), OpenWorker's own otherwise.
func (m *Manager) hostEnv() []string {
	if m.opts.LoginEnv != nil {
		return m.opts.LoginEnv()
	}
	return m.opts.HostEnv
}

// record is what the state folder keeps of a running session, so its private tmp can be
// removed if its owner dies. It lives outside every sandbox.
type record struct {
	ID          string `json:"id"`
	Tmp         string `json:"tmp"`
	Pid         int    `json:"pid"`
	Enforcement string `json:"enforcement,omitempty"`
	Network     string `json:"network,omitempty"`
	// Call is the tool call in flight, so that one its owner never finished still gets an
	// end record when the owner died.
	Call *recordCall `json:"call,omitempty"`
	// Kind is "check" for a wall check's folder (see ClaimCheck), which is no session.
	Kind string `json:"kind,omitempty"`
}

type recordCall struct {
	Tool    string    `json:"tool"`
	Summary string    `json:"summary,omitempty"`
	Start   time.Time `json:"start"`
}

// claim records a session and holds a lock on its record for as long as this process lives;
// a record whose lock can be taken belongs to a dead owner.
func (m *Manager) claim(s *Session) (*os.File, error) {
	path := filepath.Join(m.opts.StateDir, "sessions", s.ID+".json")
	b, _ := json.Marshal(s.record(nil))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("recording the session: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the session record: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// CleanStale removes the private tmp folders (and with them every credential copy) of
// sessions whose owner is gone.
func (m *Manager) CleanStale() (removed []string) {
	dir := filepath.Join(m.opts.StateDir, "sessions")
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, de.Name())
		f, err := os.OpenFile(path, os.O_RDWR|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // its owner is alive
			continue
		}
		var r record
		b, _ := os.ReadFile(path)
		if json.Unmarshal(b, &r) == nil && isPrivateTmp(m.opts.TmpRoot, r.Tmp) {
			for _, p := range m.opts.Providers {
				if tb, ok := p.(sandbox.TmpBounder); ok {
					tb.ReleaseTmp(r.Tmp)
				}
			}
			if os.RemoveAll(r.Tmp) == nil {
				removed = append(removed, r.Tmp)
			}
			if r.Kind != kindCheck {
				m.endDead(r)
			}
		}
		os.Remove(path)
		f.Close()
	}
	return removed
}

// isPrivateTmp guards CleanStale against a record that names any other folder.
func isPrivateTmp(root, tmp string) bool {
	if !filepath.IsAbs(tmp) || filepath.Clean(tmp) != tmp {
		return false
	}
	base := filepath.Base(tmp)
	if !strings.HasPrefix(base, "openworker-") {
		return false
	}
	parent := filepath.Dir(tmp)
	r, err := filepath.EvalSymlinks(root)
	return parent == root || (err == nil && parent == r)
}

func (m *Manager) add(s *Session) {
	m.mu.Lock()
	m.sessions[s.ID] = s
	m.mu.Unlock()
}

func (m *Manager) remove(id string) {
	m.mu.Lock()
	delete(m.sessions, id)
	m.mu.Unlock()
}

// Get returns a running session.
func (m *Manager) Get(id string) (*Session, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	return s, ok
}

// List returns the running sessions, oldest first.
func (m *Manager) List() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *Session) int { return a.Started.Compare(b.Started) })
	return out
}

// EndAll ends every session on request.
func (m *Manager) EndAll() { m.EndAllBecause("ended on request") }

// EndAllBecause ends every session, for the reason the audit trail's session.ended gives.
func (m *Manager) EndAllBecause(reason string) {
	for _, s := range m.List() {
		s.EndBecause(reason)
	}
	m.stopFollowing()
}

// stopFollowing ends what the providers keep running to report denials (the unified log's
// stream on a Mac), which would otherwise outlive a process that exits next; the next
// command starts it again.
func (m *Manager) stopFollowing() {
	for _, p := range m.opts.Providers {
		if dr, ok := p.(sandbox.DenialReporter); ok {
			dr.StopFollowing()
		}
	}
}

func (m *Manager) audit(e audit.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if m.opts.Audit != nil {
		_ = m.opts.Audit.Write(e)
	}
	if m.opts.OnEvent != nil {
		m.opts.OnEvent(e)
	}
}

// SetProxyConnsTotal changes the cap on all the sessions' proxy connections together, as
// when the settings change; connections open above it stay until they close.
func (m *Manager) SetProxyConnsTotal(n int) { m.proxyConns.SetMax(n) }

// SetSettingsHosts swaps the settings' allow list of every running session.
func (m *Manager) SetSettingsHosts(list []hosts.Entry) {
	for _, s := range m.List() {
		s.SetSettingsHosts(list)
	}
}

// endDead writes the audit records a session's dead owner could not: the end of the tool
// call it had in flight, and the session's end, with the reason.
func (m *Manager) endDead(r record) {
	if c := r.Call; c != nil {
		m.audit(audit.Event{Type: audit.ToolCall, Session: r.ID, Tool: c.Tool, Summary: c.Summary, Enforcement: r.Enforcement,
			Network: r.Network, Outcome: "daemon ended", Reason: "the process that ran the session ended (killed or crashed) while this call ran"})
	}
	m.audit(audit.Event{Type: audit.SessionEnded, Session: r.ID, Enforcement: r.Enforcement, Network: r.Network,
		Reason: "the process that ran it ended without ending it (killed or crashed); its private folder was removed at the next start"})
}

// record is what the state folder keeps of s, with call in flight (or none).
func (s *Session) record(call *pending) record {
	r := record{ID: s.ID, Tmp: s.tmp, Pid: os.Getpid(), Enforcement: string(s.Enforcement), Network: string(s.Network)}
	if call != nil {
		r.Call = &recordCall{Tool: call.req.Tool, Summary: call.summary, Start: call.start}
	}
	return r
}

// callStarted records a call in flight, in the session's record and the audit trail.
func (m *Manager) callStarted(s *Session, p *pending) {
	m.rewriteRecord(s, p)
	m.audit(audit.Event{Type: audit.ToolStarted, Time: p.start, Session: s.ID, Tool: p.req.Tool, Summary: p.summary,
		Enforcement: string(s.Enforcement), Network: string(s.Network)})
}

// callEnded writes a call's end record and takes it out of the session's record.
func (m *Manager) callEnded(s *Session, ev audit.Event) {
	m.audit(ev)
	m.rewriteRecord(s, nil)
}

func (m *Manager) rewriteRecord(s *Session, call *pending) {
	if s.lock == nil {
		return
	}
	b, _ := json.Marshal(s.record(call))
	if _, err := s.lock.WriteAt(b, 0); err == nil {
		_ = s.lock.Truncate(int64(len(b)))
	}
}

// UserHome is the person's real home folder, which shared logins are copied from.
func (m *Manager) UserHome() string { return m.opts.UserHome }
