// Package session is a session's lifecycle: the private tmp folder and sandbox home, the
// policy, the egress proxy with its token, the tool runner started behind the wall by a
// provider, the wall check from inside, tool calls, and the end that leaves nothing behind.
//
// A session that cannot prove its wall is refused, never run open.
package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/caches"
	"github.com/openworker/openworker/core/credentials"
	"github.com/openworker/openworker/core/dnsstub"
	"github.com/openworker/openworker/core/gitmeta"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/proxy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/sshagent"
)

// Spec is what a session is started with.
type Spec struct {
	Provider sandbox.Enforcement
	Writable []string
	ReadOnly []string
	Network  policy.Network
	Hosts    []hosts.Entry // the allow list from the settings
	// SessionHosts are sites allowed for this session only; they end with it.
	SessionHosts []hosts.Entry
	Toolchains   []string
	// Dir is the first working folder; default the first writable folder.
	Dir string
	// HowToAllow says how a person allows a refused site (host:port) where the session's
	// commands run; the proxy's refusals end with it. nil: the app's words.
	HowToAllow func(target string) string
	// Denied are sites a person denied for this session; they win over the lists.
	Denied []hosts.Entry
	// OnRefusal is told of each site the session's proxy refuses, as it does.
	OnRefusal func(proxy.Refusal)
	// Limits bound the sandbox, where its provider can; zero fields are the defaults.
	Limits sandbox.Limits
	// ProxyConns caps the connections open through the session's proxy; 0 is the proxy's
	// default.
	ProxyConns int
	// Logins are the shared logins copied into the sandbox home when the session starts;
	// their hosts join the allow list. A running session keeps what it started with.
	Logins []credentials.Entry
	// LoginHosts are the copied logins' hosts, set when they are copied.
	LoginHosts []hosts.Entry
	// Programs run outside the sandbox besides the runner's own (the client's that asked
	// for the session): no writable folder may hold them.
	Programs []string
	// GitMetadataWritable lets commands change repository hooks and config (see
	// policy.Options.GitMetadataWritable); by default they stay read-only inside.
	GitMetadataWritable bool
	// LocalServers: see policy.Policy.LocalServers. Where the sandbox has a network of its
	// own (Linux), it publishes every port a command listens on there on this machine's
	// 127.0.0.1 instead (see publish.go).
	LocalServers bool
	// Publish are ports of the sandbox's own loopback published on this machine's 127.0.0.1
	// while a server listens there, with local servers off (Linux; see publish.go).
	Publish []int
	// OnPublished, when set, is told at once each line about a port published or taken
	// back, which otherwise comes with the next result (openworker run, whose command may
	// be the server).
	OnPublished func(line string)
	// ClientEnv are the ClientVars of the client that asked for the session (its PATH and
	// language), which win over the daemon's own.
	ClientEnv map[string]string
	// SSHAgent answers for the session's SSH agent when the shared ssh login's keys stay
	// outside (keys = "agent"); nil: the agent refuses every signature.
	SSHAgent *SSHAgentHooks
	// Owner is the process whose descendants' shell commands go into this session (an
	// agent host, or openworker agent, which starts one); 0: none.
	Owner int
	// Caches says what the session does with the tools' caches (see caches.go).
	Caches CacheSpec
}

// Session is one running session.
type Session struct {
	ID          string
	Enforcement sandbox.Enforcement
	Network     policy.Network
	Started     time.Time

	m        *Manager
	spec     Spec
	owner    int // spec.Owner, which no restart changes
	tmp      string
	home     string
	proxy    *proxy.Proxy
	port     int
	proxyURL string
	logins   *credentials.Result // the shared logins copied at start; nil: none
	sshAgent *sshagent.Agent     // serves the ssh login's keys from outside; nil: none
	// standIns are what the proxies need for the stand-in logins, and trustBundle the CA
	// bundle the sandbox's programs trust; nil and "" without one.
	standIns    *proxy.StandIns
	trustBundle string
	// javaTrustStore is the same roots as a Java key store, beside the bundle; "" for none.
	javaTrustStore string
	// httpSocketServed: the socket of plain HTTP for https sites is served (see
	// serveHTTPSocket).
	httpSocketServed bool

	mu        sync.Mutex // one tool call at a time; guards the fields below
	pol       *policy.Policy
	proc      sandbox.Process
	client    *runner.Client
	conn      *os.File
	errs      *errStream // the runner's own error output
	stateLost bool
	// localServers is spec.LocalServers, for readers that cannot wait for mu.
	localServers atomic.Bool
	// live is proc for Interrupt, which cannot wait for mu.
	live atomic.Pointer[sandbox.Process]
	// lane is the running runner for calls beside the shell (ExecApart), which do not wait
	// for mu; nil while none runs. aparts are those calls.
	lane       atomic.Pointer[lane]
	aparts     apartCalls
	apartHints apartHints
	// busy is the tool call in progress, from its start (a second is refused), and running
	// the same once it was sent, for Signal.
	busy    atomic.Pointer[pending]
	running atomic.Pointer[pending]
	ending  atomic.Bool // End was called
	// endDone is closed once the first End has finished: a later End waits for it.
	endDone chan struct{}
	// endReason is why End was called, for a call it cut short.
	endReason atomic.Pointer[string]
	// sitesMu orders swaps of the proxy's lists; it is never held across a tool call.
	sitesMu sync.Mutex
	// liveConn is conn for an end that cannot wait for mu: closing it ends a call that
	// waits on a runner that is stuck.
	liveConn atomic.Pointer[os.File]
	// view is what Folders and Active return, so that they never wait for a tool call.
	view atomic.Pointer[sessionView]
	// idle: the last command left nothing else running in the sandbox (see EndBeforeExit).
	idle   bool
	ended  bool
	active []string
	// limits say what bounds the sandbox (sandbox.LimitReporter), for every result.
	limits []string
	lock   *os.File
	// tmpBound is the provider that bounded the private tmp, to release it at the end.
	tmpBound sandbox.TmpBounder
	// forwards relay the host loopback ports forwarded into the running wall (linux,
	// allowlist): forwardAddrs. fwdMu guards them and lateHints, which a change of sites
	// writes while a tool call may run.
	forwards []*proxy.Forward
	hints    hints
	// openRelay decides the relayed connections of an open session (linux); names are the
	// DNS stub's, for the session's whole life; stub and relayLn are the running wall's
	// sockets. relayed: a wall had the relay.
	openRelay    *proxy.Proxy
	names        *dnsstub.Map
	stub         net.PacketConn
	relayLn      net.Listener
	relayed      bool
	fwdMu        sync.Mutex
	forwardAddrs []netip.AddrPort
	lateHints    []string
	// gitMu guards gitSnap and gitWatch, which calls beside the shell (ExecApart) use
	// while a call of the shell's may run.
	gitMu sync.Mutex
	// gitSnap is the repository metadata in the writable folders as last checked (see
	// gitmeta.go); nil when the session does not check it.
	gitSnap *gitmeta.Snapshot
	// hostKnown are the agent hosts' settings in the project when the wall was made, bound
	// read-only (see gitmeta.HostSettings); one a command makes is moved aside.
	hostKnown []gitmeta.Entry
	// gitRoots are the folders gitSnap walks, whose walk is kept at the end (keepWalk).
	gitRoots []string
	// gitWatch stops watchGitMetadata; nil when it does not run. gitWatchRoots are the
	// folders it watches: those gitSnap walks.
	gitWatch      chan struct{}
	gitWatchRoots []string
	// gitWatcher tells of changes in gitWatchRoots while watchGitMetadata runs; gitTold is
	// what it had told when the last check began, and gitSettled says that check read every
	// folder the watcher covers: while it tells nothing more, a check would find the same.
	gitWatcher *gitmeta.Watcher
	gitTold    uint64
	gitSettled bool
	// gitMidCall are the lines of what checks moved while a call ran, for its result.
	gitMidCall []string
	// gitMovedSince are the paths moved aside since the last command started: one moved
	// again was planted again by a process that runs on (stopPlanter).
	gitMovedSince map[string]bool
	// planterStopping: stopPlanter is stopping the sandbox.
	planterStopping atomic.Bool
	// gitChecked: the last call that could write ended and was checked after it.
	gitChecked bool
	// pub publishes the running wall's servers (publish.go); pubAll and pubAsked are what
	// the person asked to publish, for every wall of the session. pubMu guards the three,
	// and is never held across a tool call.
	pubMu    sync.Mutex
	pub      *publisher
	pubAll   bool
	pubAsked []int
	// kept are the project's tool caches the session holds (see caches.go); nil: none.
	// keptTried: the first wall asked for them.
	kept      *caches.Kept
	keptTried bool
}

// RefusedError is a session the wall check (or the wall's construction) refused.
type RefusedError struct {
	Check  string // which check failed, or "wall" when it could not be built
	Target string
	Reason string
}

func (e *RefusedError) Error() string {
	if e.Target != "" {
		return fmt.Sprintf("session refused: the wall check %q failed for %s: %s; nothing was run", e.Check, e.Target, e.Reason)
	}
	return fmt.Sprintf("session refused: %s: %s; nothing was run", e.Check, e.Reason)
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Start starts a session: it refuses when the wall cannot be built or proved.
func (m *Manager) Start(ctx context.Context, spec Spec) (*Session, error) {
	return m.start(ctx, spec, nil)
}

// StartExec starts a session as Start does and runs one command in it, sent right behind
// the wall check with no round trip between: the runner refuses every call after a failed
// check, so the command runs only behind a wall that was proved. When the check fails the
// session is refused as by Start, and the command never ran.
//
// It returns once the command runs; wait waits for its result. Meanwhile the session's
// Signal interrupts it. Standard input is streamed from stdin (nil: none). When ctx ends
// before the wall is up, nothing was run.
func (m *Manager) StartExec(ctx context.Context, spec Spec, a runner.ExecArgs, stdin io.Reader, onChunk func(stream string, data []byte)) (_ *Session, wait func() (*Result, error), _ error) {
	first := execCall(a, onChunk)
	first.stdin = stdin
	first.start = time.Now()
	s, err := m.start(ctx, spec, first)
	if err != nil {
		return nil, nil, err
	}
	s.busy.Store(first)
	s.running.Store(first) // so that a signal from now on reaches the command
	s.hints.oneShot = true
	return s, func() (*Result, error) {
		defer s.busy.Store(nil)
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.receive(nil, first)
	}, nil
}

func (m *Manager) start(ctx context.Context, spec Spec, first *pending) (_ *Session, err error) {
	prov, ok := m.opts.Providers[spec.Provider]
	if !ok {
		return nil, fmt.Errorf("sandbox provider %q is not available on this machine", spec.Provider)
	}
	if spec.Network == "" {
		spec.Network = policy.Allowlist
	}
	if pp, ok := prov.(sandbox.Preparer); ok {
		// The wall's first process starts now and boots while the private tmp, the proxy
		// and the policy are made; the provider's Start below takes it.
		pp.Prepare(spec.Network)
	}
	s := &Session{ID: newID(), Enforcement: spec.Provider, Network: spec.Network, Started: time.Now(), m: m, spec: spec, owner: spec.Owner, endDone: make(chan struct{})}
	s.localServers.Store(spec.LocalServers)
	s.pubAll, s.pubAsked = spec.LocalServers, slices.Clone(spec.Publish)
	defer func() {
		if err != nil {
			s.teardown()
			m.audit(audit.Event{Type: audit.SessionRefused, Session: s.ID, Enforcement: string(s.Enforcement), Network: string(s.Network), Reason: err.Error(), Folders: spec.Writable})
		}
	}()
	if err := s.makeTmp(prov); err != nil {
		return nil, err
	}
	if err := s.copyLogins(); err != nil {
		return nil, err
	}
	if err := s.startSSHAgent(); err != nil {
		return nil, err
	}
	if err := s.prepareStandIns(); err != nil {
		return nil, err
	}
	if spec.Network == policy.Allowlist {
		px, err := proxy.New(proxy.Options{Token: proxy.NewToken(), HowToAllow: spec.HowToAllow, OnRefusal: spec.OnRefusal, Denied: spec.Denied, MaxConns: spec.ProxyConns, Shared: m.proxyConns,
			Resolver: m.opts.Resolver, Dial: m.opts.Dial, StandIns: s.standIns})
		if err != nil {
			return nil, fmt.Errorf("starting the egress proxy: %w", err)
		}
		s.proxy = px
		px.SetAllowList(allowList(s.spec))
		if err := s.serveHTTPSocket(px); err != nil {
			return nil, err
		}
		if spec.Provider == sandbox.Linux {
			// The sandbox has a network of its own: the port is inside it, where only the
			// proxy's listener and the forwarded host ports are.
			s.forwardAddrs = forwardsOf(allowList(s.spec))
			for s.port == 0 || slices.ContainsFunc(s.forwardAddrs, func(a netip.AddrPort) bool { return int(a.Port()) == s.port }) {
				s.port = sandbox.ProxyPortLow + int(randUint16()%40000)
			}
		} else if s.port, err = px.ListenLoopback(); err != nil {
			return nil, fmt.Errorf("starting the egress proxy: %w", err)
		}
		s.proxyURL = px.URL(s.port)
	}
	if err := s.startRunner(ctx, prov, first); err != nil {
		return nil, err
	}
	m.add(s)
	m.audit(audit.Event{Type: audit.SessionStarted, Session: s.ID, Enforcement: string(s.Enforcement), Network: string(s.Network), Folders: s.pol.Writable, Summary: strings.Join(s.active, ", ") + s.loginsSummary()})
	return s, nil
}

// forwardsOf are the host loopback addresses the allow list names literally: a program
// that never uses a proxy for loopback reaches them directly, at the same address and port
// inside. localhost names both.
func forwardsOf(list []hosts.Entry) []netip.AddrPort {
	var out []netip.AddrPort
	add := func(a netip.AddrPort) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, e := range list {
		switch {
		case e.Wildcard:
		case e.IP.IsValid() && e.IP.IsLoopback():
			add(netip.AddrPortFrom(e.IP, uint16(e.Port)))
		case e.Host == "localhost":
			add(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(e.Port)))
			add(netip.AddrPortFrom(netip.IPv6Loopback(), uint16(e.Port)))
		}
	}
	return out
}

// LoopbackEntries are the host loopback addresses list names literally, as a session's wall
// gets them: `openworker sandbox profile --allow` shows them.
func LoopbackEntries(list []hosts.Entry) []netip.AddrPort { return forwardsOf(list) }

func randUint16() uint16 {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return uint16(b[0])<<8 | uint16(b[1])
}

// makeTmp creates the private tmp folder, owner-only, with the sandbox home inside, and
// records it in the state folder so a crashed owner's folder is removed at the next start.
// A provider that can bound its size does so before anything is put in it.
func (s *Session) makeTmp(prov sandbox.Provider) error {
	root := s.m.opts.TmpRoot
	tmp, err := os.MkdirTemp(root, "openworker-")
	if err != nil {
		return fmt.Errorf("creating the private tmp folder: %w", err)
	}
	if err := os.Chmod(tmp, 0o700); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	s.tmp, err = policy.Resolve(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if tb, ok := prov.(sandbox.TmpBounder); ok {
		if err := tb.BoundTmp(s.tmp, s.spec.Limits.Tmp); err != nil {
			os.RemoveAll(tmp)
			return err
		}
		s.tmpBound = tb
	}
	// The tool caches' folder (see BuildEnv) is left to the tools, each of which makes its
	// cache folder when it is missing: making and removing folders is slow on some disks.
	s.home = filepath.Join(s.tmp, "home")
	if err := os.Mkdir(s.home, 0o700); err != nil {
		return err
	}
	s.lock, err = s.m.claim(s)
	return err
}

// startRunner starts the runner behind a new wall and proves the wall. first, when set, is
// sent once the runner runs, before the wall check's answer is read.
func (s *Session) startRunner(ctx context.Context, prov sandbox.Provider, first *pending) error {
	m := s.m
	opts := m.policyOptions(s.spec)
	opts.PrivateTmp, opts.Home, opts.ProxyPort = s.tmp, s.home, s.port
	opts.Settings = policy.GitSettings
	opts.TrustBundle, opts.JavaTrustStore = s.trustBundle, s.javaTrustStore
	pol, err := policy.New(opts)
	if err != nil {
		return err
	}
	m.recordWritable(pol.Writable, opts.Untrusted)
	dir, err := workingFolder(pol, s.spec, s.home)
	if err != nil {
		return err
	}
	// What the last wall's commands left is moved aside before the new wall takes the
	// folders as they are.
	if moved := s.checkGitMetadata(); len(moved) > 0 {
		s.gitMetadataMoved(moved, "when the wall was made again")
	}
	s.hints = hints{}
	s.scanGitMetadata(pol)
	if err := s.addCaches(pol); err != nil {
		return err
	}
	if s.proxy != nil && s.Enforcement == sandbox.Linux {
		// Made again for each wall, from the list in force now.
		s.fwdMu.Lock()
		s.forwardAddrs = nil
		for _, a := range forwardsOf(s.proxy.AllowList()) {
			if int(a.Port()) == s.port {
				s.hints.sayOnce(fmt.Sprintf("openworker: the host's %s is not forwarded into the sandbox: inside, port %d is the proxy's; "+
					"programs that use the proxy still reach it, and a new session can have it directly\n", a, s.port))
				continue
			}
			s.forwardAddrs = append(s.forwardAddrs, a)
		}
		pol.Forwards = slices.Clone(s.forwardAddrs)
		s.fwdMu.Unlock()
	}
	if s.proxy != nil && s.Enforcement == sandbox.Seatbelt {
		// The sandbox shares the host's loopback: the profile lets programs that never use a
		// proxy for loopback (psql, redis-cli, Go's HTTP client) reach an allowed entry there.
		pol.Forwards = forwardsOf(s.proxy.AllowList())
	}
	if s.Enforcement != sandbox.Linux {
		// The Linux wall binds the settings files in place; elsewhere the sandbox home
		// links to them, and the profile lets them be read where they are.
		for _, st := range pol.Settings {
			if os.MkdirAll(filepath.Dir(st.Dst), 0o700) == nil {
				_ = os.Symlink(st.Src, st.Dst)
			}
		}
	}
	var readable []string
	if s.Enforcement != sandbox.Direct {
		readable = pol.Readable()
	}
	var dev DeveloperTools
	if m.opts.GOOS == "darwin" {
		dev = m.opts.DeveloperTools()
	}
	// A wall that refuses every hard link and clone (a Mac the link probe has not proved)
	// gets npm's links made copies, and a line after a command that failed on one.
	// Only a Mac's wall refuses SysV IPC and leaves URLSession without a network.
	s.hints.enforcement, s.hints.allowlist = s.Enforcement, s.Network == policy.Allowlist
	var npmCopies string
	if lr, ok := prov.(sandbox.LinkRefuser); ok && lr.RefusesLinks() {
		if npmCopies, err = writeNpmLinkCopies(s.tmp); err != nil {
			return fmt.Errorf("writing npm's link copies into the private tmp: %w", err)
		}
		s.hints.linksRefused = true
	}
	var gitSystem string
	if m.opts.GOOS == "darwin" {
		// Java reads no proxy variable on a Mac; Gradle and Maven read their own files.
		if err := writeJVMProxyFiles(s.home, s.proxyURL, nil); err != nil {
			return fmt.Errorf("writing Gradle's and Maven's proxy settings into the sandbox home: %w", err)
		}
		// git's system credential helper (osxkeychain) reads a keychain that is out of reach.
		if gitSystem, err = writeGitSystemConfig(s.tmp, macGitSystemConfigs); err != nil {
			return fmt.Errorf("writing git's system settings into the private tmp: %w", err)
		}
	}
	host := WithVars(m.hostEnv(), s.spec.ClientEnv)
	insidePath := filepath.SplitList(hostVar(host, "PATH"))
	if readable != nil {
		s.hints.order = insidePath
		s.hints.kept, s.hints.dropped = InsidePath(hostVar(host, "PATH"), readable)
		insidePath = s.hints.kept
	}
	goProxy := s.goProxy(pol, insidePath)
	env := BuildEnv(EnvOptions{Host: host, Home: s.home, Tmp: s.tmp, ProxyURL: s.proxyURL, GOOS: m.opts.GOOS, Readable: readable, ExtraVars: s.loginVars(), PathFirst: s.loginPath(), DeveloperTools: dev,
		ToolchainHomes: ToolchainHomes(m.opts.UserHome, s.spec.Toolchains, readable), NpmLinkCopies: npmCopies, GitSystemConfig: gitSystem,
		Caches: cachesDir(pol), GoProxy: goProxy})
	for _, line := range gitIncludeHints(pol) {
		s.hints.sayOnce(line)
	}
	// Both ends close-on-exec from the start (under ForkLock, as macOS has no
	// SOCK_CLOEXEC): the provider hands the runner its end as fd 3 explicitly, and no
	// other child may inherit either.
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return fmt.Errorf("creating the runner connection: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "runner")
	theirs := os.NewFile(uintptr(fds[1]), "runner-end")
	defer theirs.Close()
	errs, err := newErrStream(s.ID, m.opts.RunnerStderr)
	if err != nil {
		ours.Close()
		return err
	}
	defer errs.handed()
	client := runner.NewClient(ours)
	// The wall check is sent first: it waits in the connection and runs as soon as the
	// runner is up, with no round trip in between. It is the runner's first call, and the
	// session's only answer to whether the wall holds.
	var check *wallCheck
	if s.Enforcement != sandbox.Direct {
		if check, err = s.sendWallCheck(client, pol, openOwnNetwork(prov)); err != nil {
			ours.Close()
			return err
		}
		defer check.canary.Close()
	}
	proc, err := prov.Start(ctx, pol, sandbox.RunnerSpec{
		Path: m.opts.RunnerPath, Args: []string{RunnerArg}, Env: env, Dir: dir, Conn: theirs, Stderr: errs.file(), Serve: true,
		Limits: s.spec.Limits,
	})
	if err != nil {
		ours.Close()
		return &RefusedError{Check: "the wall could not be built", Reason: err.Error()}
	}
	theirs.Close()
	s.pol, s.proc, s.client, s.conn, s.errs, s.active = pol, proc, client, ours, errs, proc.Active()
	s.lane.Store(&lane{client: client, pol: pol, proc: proc})
	if lr, ok := proc.(sandbox.LimitReporter); ok {
		s.limits = lr.Limits()
	} else {
		s.limits = []string{"no limits: the " + string(s.Enforcement) + " provider sets none"}
	}
	s.live.Store(&proc)
	s.liveConn.Store(ours)
	s.view.Store(&sessionView{writable: slices.Clone(pol.Writable), readOnly: slices.Clone(pol.ReadOnly), active: slices.Clone(s.active)})
	if l := proc.ProxyListener(); l != nil {
		if s.proxy == nil {
			l.Close()
		} else {
			go s.proxy.Serve(l)
		}
	}
	s.startForwards(proc)
	if err := s.serveRelay(proc); err != nil {
		return err
	}
	s.startPublishing(proc)
	if reach := s.openReach(); reach != "" {
		s.hints.sayOnce("openworker: " + reach + "\n")
	}
	if first != nil {
		if err := s.send(first); err != nil {
			return err
		}
	}
	if check == nil {
		return nil
	}
	if err := check.result(client); err != nil {
		if first != nil {
			first.stopDenials(&Result{})
		}
		return err
	}
	return nil
}

// wallCheck is the wall check from inside, sent to the runner: every session folder
// reachable as it should be, the home folder not, a canary port on the host's loopback not
// reachable, the proxy answering, and in a Linux sandbox the host's kernel settings
// read-only.
type wallCheck struct {
	req    *runner.Request
	canary net.Listener
}

func (s *Session) sendWallCheck(client *runner.Client, pol *policy.Policy, ownNetwork bool) (*wallCheck, error) {
	canary, err := s.listenCanary()
	if err != nil {
		return nil, &RefusedError{Check: "canary", Reason: "cannot open a canary port on loopback: " + err.Error()}
	}
	go func() {
		for {
			c, err := canary.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// The read-only folders; settings files (on macOS among them) are not folders to list.
	ro := slices.DeleteFunc(slices.Clone(pol.ReadOnly), func(d string) bool {
		return slices.ContainsFunc(pol.Settings, func(st policy.Setting) bool { return st.Src == d })
	})
	args := &runner.ProbeArgs{Writable: pol.Writable, ReadOnly: ro, Home: pol.UserHome}
	args.Writable = append(args.Writable, s.tmp)
	// The person's caches are only read, where the tools find them. (Whether the project's
	// are written is the tools' concern, not the wall's.)
	for _, c := range pol.HostCaches {
		args.ReadOnly = append(args.ReadOnly, c.Dst)
	}
	if s.Network != policy.Open || ownNetwork {
		args.Unreachable = []string{canary.Addr().String()}
	}
	if s.Network == policy.Allowlist {
		args.Reachable = []string{fmt.Sprintf("127.0.0.1:%d", s.port)}
	}
	if s.Enforcement == sandbox.Linux {
		// The host's kernel settings in /proc, which no layer but the read-only mount may
		// be left to guard.
		args.Unwritable = runner.KernelSettings
	}
	c := &wallCheck{req: &runner.Request{Tool: runner.ToolProbe, Probe: args}, canary: canary}
	if err := client.Send(c.req); err != nil {
		canary.Close()
		return nil, &RefusedError{Check: "the wall check did not run", Reason: err.Error()}
	}
	return c, nil
}

// result waits for the wall check's answer; any failure refuses the session.
func (c *wallCheck) result(client *runner.Client) error {
	args := c.req.Probe
	res, err := client.Receive(c.req, nil, nil)
	if err != nil {
		return &RefusedError{Check: "the wall check did not run", Reason: err.Error()}
	}
	if want := len(args.Writable) + len(args.ReadOnly) + 1 + len(args.Unreachable) + len(args.Reachable) + len(args.Unwritable); len(res.Checks) != want {
		return &RefusedError{Check: "the wall check", Reason: fmt.Sprintf("the runner answered %d probes of %d", len(res.Checks), want)}
	}
	for _, c := range res.Checks {
		if !c.OK {
			return &RefusedError{Check: c.Name, Target: c.Target, Reason: c.Detail}
		}
	}
	return nil
}

func allowList(spec Spec) []hosts.Entry {
	out := append([]hosts.Entry(nil), spec.Hosts...)
	out = append(out, spec.LoginHosts...)
	return append(out, spec.SessionHosts...)
}

// copyLogins copies the spec's shared logins into the sandbox home, inside the private tmp:
// they go with it when the session ends, and after a crash with CleanStale.
func (s *Session) copyLogins() error {
	if len(s.spec.Logins) == 0 {
		return nil
	}
	res, err := credentials.Copy(credentials.Options{
		UserHome: s.m.opts.UserHome, SandboxHome: s.home, Helper: s.m.opts.RunnerPath, GhToken: s.m.opts.GhToken,
		Untrusted: s.m.untrusted(), SSHAgentSocket: s.sshAgentSocket(), HTTPSocket: s.httpSocket(),
		StandInCA: func() ([]byte, error) {
			ca, err := s.m.machineCA()
			if err != nil {
				return nil, err
			}
			return ca.CertPEM(), nil
		},
	}, s.spec.Logins)
	if err != nil {
		return err
	}
	s.logins = res
	s.spec.LoginHosts = slices.Clone(res.Hosts)
	return nil
}

func (s *Session) loginVars() map[string]string {
	if s.logins == nil {
		return nil
	}
	return s.logins.Vars
}

// loginsSummary names the shared logins copied in, for the audit trail: which logins an
// agent had is part of what it could do.
func (s *Session) loginsSummary() string {
	if s.logins == nil {
		return ""
	}
	var parts []string
	for _, c := range s.logins.Entries {
		if c.Found {
			parts = append(parts, fmt.Sprintf("%s (%d files, %s)", c.Key, c.Files, c.Secrets))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; shared logins: " + strings.Join(parts, ", ")
}

func (s *Session) loginPath() []string {
	if s.logins == nil {
		return nil
	}
	return s.logins.PathFirst
}

// Logins is what became of the session's shared logins when it started.
func (s *Session) Logins() []credentials.Copied {
	if s.logins == nil {
		return nil
	}
	return slices.Clone(s.logins.Entries)
}

// LoginHosts are the hosts the session's shared logins added to its allow list.
func (s *Session) LoginHosts() []hosts.Entry {
	return slices.Clone(s.spec.LoginHosts)
}

// SetSettingsHosts swaps the settings' part of the allow list, as when the user changes the
// settings or answers a card with Always allow. The next request sees it; tunnels to sites
// no longer allowed are closed.
func (s *Session) SetSettingsHosts(list []hosts.Entry) {
	s.sitesMu.Lock()
	defer s.sitesMu.Unlock()
	s.spec.Hosts = append([]hosts.Entry(nil), list...)
	if s.proxy != nil {
		s.swapList(allowList(s.spec))
	}
	if s.openRelay != nil {
		s.openRelay.SetAllowList(allowList(s.spec))
	}
}

// swapList puts list in force in the proxy, which closes the forwards and tunnels it no
// longer admits; s.sitesMu is held. A host loopback port newly on it is forwarded into the
// running sandbox where the provider can make a listener there now; a server inside that has
// the port already keeps it, and the next command says the forward was refused.
func (s *Session) swapList(list []hosts.Entry) {
	s.proxy.SetAllowList(list)
	if s.Enforcement != sandbox.Linux {
		return
	}
	var fw sandbox.Forwarder
	if p := s.live.Load(); p != nil {
		fw, _ = (*p).(sandbox.Forwarder)
	}
	s.fwdMu.Lock()
	defer s.fwdMu.Unlock()
	now := forwardsOf(list)
	// One no longer allowed was closed by the swap; allowed again, it is forwarded again.
	s.forwardAddrs = slices.DeleteFunc(s.forwardAddrs, func(a netip.AddrPort) bool { return !slices.Contains(now, a) })
	for _, a := range now {
		if slices.Contains(s.forwardAddrs, a) {
			continue
		}
		s.forwardAddrs = append(s.forwardAddrs, a) // tried, or said, once
		port := int(a.Port())
		if port == s.port || slices.ContainsFunc(s.forwards, func(f *proxy.Forward) bool { return f.Port() == port && !f.Closed() }) {
			continue // the proxy's own, or forwarded already at another loopback address
		}
		var err error = errors.New("this sandbox has no network of its own")
		if fw != nil {
			var l net.Listener
			if l, err = fw.ForwardListen(port); err == nil {
				var f *proxy.Forward
				if f, err = s.proxy.Forward(l, port); err == nil {
					s.forwards = append(s.forwards, f)
					continue
				}
			}
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			s.lateHints = append(s.lateHints, fmt.Sprintf("openworker: %s is allowed now, but a server inside the sandbox listens on port %d: "+
				"the forward of the host's port is refused, and inside, port %d stays that server's; programs that use the proxy reach the host's through it\n", a, port, port))
			continue
		}
		s.lateHints = append(s.lateHints, fmt.Sprintf("openworker: %s is allowed now; programs that use the proxy reach it, and a direct connection "+
			"reaches it from the next session (it could not be forwarded into this one: %v)\n", a, err))
	}
}

// SetSites replaces the session's whole allow list and its denials in its proxy, at once:
// the next request is decided by them, and open tunnels they no longer admit are closed.
// It never waits for a tool call in progress.
func (s *Session) SetSites(allow, denied []hosts.Entry) {
	s.sitesMu.Lock()
	defer s.sitesMu.Unlock()
	if s.openRelay != nil {
		s.openRelay.SetAllowList(allow)
		s.openRelay.SetDenied(denied)
	}
	if s.proxy == nil {
		return
	}
	s.swapList(allow)
	s.proxy.SetDenied(denied)
}

// Running is the summary of the tool call in progress, or "" when none is.
func (s *Session) Running() string {
	if p := s.busy.Load(); p != nil {
		return p.summary
	}
	return ""
}

// startForwards relays the forwarded host ports the wall holds listeners for, and says once
// which it could not have.
func (s *Session) startForwards(proc sandbox.Process) {
	fw, ok := proc.(sandbox.Forwarder)
	if !ok {
		return
	}
	ls, refused := fw.ForwardListeners()
	for port, l := range ls {
		if s.proxy == nil {
			l.Close()
			continue
		}
		f, err := s.proxy.Forward(l, port)
		if err != nil {
			s.hints.sayOnce(fmt.Sprintf("openworker: the host's loopback port %d is not reachable inside: %v\n", port, err))
			continue
		}
		s.fwdMu.Lock()
		s.forwards = append(s.forwards, f)
		s.fwdMu.Unlock()
	}
	for port, why := range refused {
		if strings.Contains(why, "address already in use") {
			why = "the port is taken inside the sandbox"
		}
		s.hints.sayOnce(fmt.Sprintf("openworker: the host's loopback port %d is not forwarded into the sandbox (%s); "+
			"programs inside that use the proxy still reach it through the proxy\n", port, why))
	}
}

// closeForwards stops relaying the forwarded ports of the wall that is ending.
func (s *Session) closeForwards() {
	s.fwdMu.Lock()
	defer s.fwdMu.Unlock()
	for _, f := range s.forwards {
		f.Close()
	}
	s.forwards = nil
}

// Forwards are the host loopback ports this session relays into its sandbox now.
func (s *Session) Forwards() []int {
	s.fwdMu.Lock()
	defer s.fwdMu.Unlock()
	var out []int
	for _, f := range s.forwards {
		if !f.Closed() {
			out = append(out, f.Port())
		}
	}
	return out
}

// hostVar is name's value in env.
func hostVar(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// listenCanary opens the canary on the host's loopback at a port no listener of the
// sandbox's own can have: inside a Linux sandbox 127.0.0.1 is the sandbox's loopback, where
// its proxy, the relay's listener and the forwarded host ports answer, so a canary at one of
// their ports would turn the check's proof into a false refusal. The range is the one the
// sandbox check's outside listener keeps to (below the proxy's and the relay's ports), less
// the proxy's port and the forwarded ones, which a person chooses.
func (s *Session) listenCanary() (net.Listener, error) {
	s.fwdMu.Lock()
	forwards := slices.Clone(s.forwardAddrs)
	s.fwdMu.Unlock()
	return sandbox.ListenOutside(func(port int) bool {
		return port == s.port || slices.ContainsFunc(forwards, func(a netip.AddrPort) bool { return int(a.Port()) == port })
	})
}

// sessionView is the session's folders and wall as last started.
type sessionView struct {
	writable, readOnly, active []string
}
