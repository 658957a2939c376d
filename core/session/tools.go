package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/apitype"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/termtext"
)

// Result is apitype's, the local API's wire type.
type Result = apitype.Result

// Blocked is apitype's, the local API's wire type.
type Blocked = apitype.Blocked

// ErrEnded is returned by calls on a session that has ended.
var ErrEnded = errors.New("the session has ended; start a new one")

// BusyError refuses a tool call while another runs in the same session: a session has one
// shell, and its state (working folder, variables) is sequential.
type BusyError struct {
	Session string
	Summary string // the running call's
	Since   time.Time
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("session %s is running another command (%q, for %s); wait for it to end or interrupt it, then try again",
		e.Session, e.Summary, time.Since(e.Since).Round(time.Second))
}

// interruptGrace is how long an interrupted command has at each step: the signal it was
// sent, then SIGTERM, then SIGKILL to its group, then the whole sandbox.
const interruptGrace = 2 * time.Second

// stdinWindow bounds the streamed standard input sent ahead of what the command took.
const stdinWindow = 1 << 20

// call runs one tool call under the session's lock and fills in what the outside knows.
func (s *Session) call(ctx context.Context, p *pending) (*Result, error) {
	p.start = time.Now() // before p is shared: a refused caller reads it
	if !s.busy.CompareAndSwap(nil, p) {
		if other := s.busy.Load(); other != nil {
			return nil, &BusyError{Session: s.ID, Summary: other.summary, Since: other.start}
		}
		return nil, &BusyError{Session: s.ID}
	}
	defer s.busy.Store(nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, ErrEnded
	}
	if err := s.send(p); err != nil {
		return nil, err
	}
	return s.receive(ctx, p)
}

// pending is a tool call: what is sent to the runner, the summary the audit trail keeps of
// it, and, once it is sent, what its answer is awaited with.
type pending struct {
	req         *runner.Request
	onChunk     func(string, []byte)
	stdin       io.Reader // streamed to the command; nil: none
	summary     string
	start       time.Time
	stopDenials func(*Result)
	// apart: the call runs beside the shell (ExecApart), on client.
	apart  bool
	client *runner.Client

	// Set by Signal while the call runs.
	sigMu       sync.Mutex
	interrupted syscall.Signal // the first signal a person sent it; 0: none
	cause       string         // why, when it was not a person's signal (the caller went away)
	escalate    *time.Timer
	step        int
}

func (s *Session) send(p *pending) error {
	if p.start.IsZero() {
		p.start = time.Now()
	}
	if p.req.Tool == runner.ToolExec {
		if !s.hints.noRouteSet {
			// The first command, and each after one that succeeded (whose end is not
			// counted: see directAttempt); after a failed one, its end is this start.
			s.countDirect()
		}
		if p.onChunk != nil {
			// A streamed command's output is not in its result: the end of its error output
			// is kept for the hints that read it (the PATH hint, the one about repository
			// metadata, a refused loopback address).
			p.onChunk = s.hints.tail(p.onChunk)
		}
	}
	if p.req.Tool == runner.ToolExec || p.req.Tool == runner.ToolWrite {
		s.gitChecked = false // until the check after this call
		if p.req.Tool == runner.ToolExec {
			s.commandStarts()
		}
		s.startGitWatch()
	}
	p.stopDenials = s.startDenials(p.onChunk)
	if p.stdin != nil && p.req.Exec != nil {
		p.req.Exec.StdinStream = true
	}
	if err := s.client.Send(p.req); err != nil {
		p.stopDenials(&Result{})
		return fmt.Errorf("session %s: %w", s.ID, err)
	}
	s.m.callStarted(s, p)
	return nil
}

// receive waits for p's answer and fills in what the outside knows; s.mu is held. When ctx
// ends first, the command is interrupted as by Signal(SIGINT), and its answer still awaited.
func (s *Session) receive(ctx context.Context, p *pending) (*Result, error) {
	req, start, stopDenials, summary := p.req, p.start, p.stopDenials, p.summary
	s.running.Store(p)
	defer s.running.Store(nil)
	if ctx != nil && ctx.Done() != nil {
		defer context.AfterFunc(ctx, func() { s.interrupt(syscall.SIGINT, goneCause(ctx)) })()
	}
	var onAck func(int64)
	if p.stdin != nil && req.Exec != nil {
		pump := newStdinPump(s.client, req, p.stdin)
		defer pump.stop()
		onAck = pump.ack
	}
	res, err := s.client.Receive(req, p.onChunk, onAck)
	p.sigMu.Lock()
	if p.escalate != nil {
		p.escalate.Stop()
	}
	interrupted, cause := p.interrupted, p.cause
	p.sigMu.Unlock()
	end := time.Now()
	out := &Result{Result: res, Tool: req.Tool, Session: s.ID, Enforcement: s.Enforcement, Network: s.Network, ShellStateLost: s.stateLost, Limits: s.limits,
		Reach: s.openReach()}
	if interrupted != 0 {
		out.Interrupted = signalName(interrupted)
	}
	ev := audit.Event{Type: audit.ToolCall, Session: s.ID, Tool: req.Tool, Summary: summary,
		Enforcement: string(s.Enforcement), Network: string(s.Network), DurationMS: float64(end.Sub(start).Microseconds()) / 1000}
	var te *runner.ToolError
	switch {
	case errors.As(err, &te):
		out.Result, out.Error = &runner.Result{}, te.Msg
	case err != nil:
		stopDenials(&Result{})
		ev.Outcome, ev.Reason = "failed", err.Error()
		if interrupted != 0 {
			ev.Outcome = "interrupted"
		}
		s.m.callEnded(s, ev)
		if why := s.endReason.Load(); why != nil {
			// The session was ended under the call: that, not the runner's hang-up, is what
			// happened to it.
			return nil, fmt.Errorf("session %s ended while this ran: %s", s.ID, *why)
		}
		return nil, fmt.Errorf("session %s: %w", s.ID, err)
	}
	s.stateLost = false
	if req.Tool == runner.ToolExec {
		s.idle = out.Result.Idle
	}
	out.Blocked = s.blockedBetween(start, end)
	stopDenials(out)
	if req.Tool == runner.ToolExec || req.Tool == runner.ToolWrite {
		// Before the result returns: by then nothing the call planted may be left for
		// the person's git to run.
		out.GitMetadataMoved = s.checkGitMetadata()
		ev.GitMetadataMoved = out.GitMetadataMoved
		s.gitChecked = true
		if note := s.gitNote(out.GitMetadataMoved); note != "" && out.Result != nil && req.Tool == runner.ToolExec {
			if p.onChunk != nil {
				p.onChunk("stderr", []byte(note))
			}
			out.Stderr = append(out.Stderr, note...)
		}
	}
	if req.Tool == runner.ToolExec && out.Error == "" && out.Result != nil {
		s.addHints(out, req.Exec, p.onChunk)
	}
	ended(&ev, out, cause, req.Tool == runner.ToolExec)
	s.m.callEnded(s, ev)
	return out, nil
}

// ended fills in the audit event of a call that answered out: how it ended, its exit status
// (exec: a command's), what was blocked and denied while it ran. cause is why it was
// interrupted when no person's signal did it.
func ended(ev *audit.Event, out *Result, cause string, exec bool) {
	ev.Reason = out.Error
	switch {
	case out.Interrupted != "":
		ev.Outcome = "interrupted"
		ev.Reason = "by " + out.Interrupted
		if cause != "" {
			ev.Reason = cause + "; the command got " + out.Interrupted
		}
	case out.Result.TimedOut:
		ev.Outcome = "timed out"
	}
	if exec && out.Error == "" {
		code := out.ExitCode
		ev.ExitCode = &code
	}
	for _, b := range out.Blocked {
		ev.Blocked = append(ev.Blocked, b.String())
	}
	ev.Denials = out.Denials
}

// Signal interrupts the tool call running in the session, if any: sig (SIGINT for Ctrl-C,
// or the SIGTERM or SIGHUP that `run` got) goes to the command's process group, which may
// clean up (a trap, a KeyboardInterrupt handler); after interruptGrace it gets SIGTERM, then
// SIGKILL, and if the runner has not answered by then everything behind the wall is killed.
// A second signal skips to SIGKILL. The call's result says it was interrupted.
func (s *Session) Signal(sig syscall.Signal) { s.interrupt(sig, "") }

// goneCause says why a call's context ended, for the audit trail: the caller that waited for
// the command went away (its connection closed, the client was killed), or what it said.
func goneCause(ctx context.Context) string {
	c := context.Cause(ctx)
	switch {
	case errors.Is(c, context.DeadlineExceeded):
		return "its caller's deadline passed"
	case c == nil || errors.Is(c, context.Canceled):
		return "its caller went away (the connection closed or the client was killed)"
	}
	return c.Error()
}

// interrupt is Signal with the reason the audit trail gives when it was not a person's
// signal; the first interruption's reason is kept.
func (s *Session) interrupt(sig syscall.Signal, cause string) {
	if p := s.running.Load(); p != nil {
		s.interruptCall(p, sig, cause)
	}
}

// signalStep sends sig and arms the next step; p.sigMu is held.
func (s *Session) signalStep(p *pending, sig syscall.Signal) {
	if p.escalate != nil {
		p.escalate.Stop()
	}
	client := s.client
	if p.client != nil {
		client = p.client
	}
	if p.apart && p.step >= 2 {
		// A command beside the shell ends with its group's SIGKILL; the sandbox, whose
		// other commands run on, is not killed for it.
		_ = client.Signal(p.req, syscall.SIGKILL)
		return
	}
	if p.step >= 3 || client.Signal(p.req, sig) != nil {
		s.Interrupt()
		return
	}
	next := []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL, 0}[p.step]
	p.step++
	p.escalate = time.AfterFunc(interruptGrace, func() {
		p.sigMu.Lock()
		defer p.sigMu.Unlock()
		if next == 0 {
			s.Interrupt()
			return
		}
		s.signalStep(p, next)
	})
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return sig.String()
}

// stdinPump streams a command's standard input to the runner, at most stdinWindow bytes
// ahead of what the command took, until EOF or until the call ends.
type stdinPump struct {
	mu     sync.Mutex
	cond   *sync.Cond
	ahead  int64
	done   bool
	client *runner.Client
	req    *runner.Request
}

func newStdinPump(c *runner.Client, req *runner.Request, r io.Reader) *stdinPump {
	p := &stdinPump{client: c, req: req}
	p.cond = sync.NewCond(&p.mu)
	go p.run(r)
	return p
}

func (p *stdinPump) run(r io.Reader) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		p.mu.Lock()
		for !p.done && p.ahead+int64(n) > stdinWindow {
			p.cond.Wait()
		}
		if p.done {
			p.mu.Unlock()
			return
		}
		p.ahead += int64(n)
		p.mu.Unlock()
		eof := err != nil
		if n > 0 || eof {
			if p.client.Stdin(p.req, bytes.Clone(buf[:n]), eof) != nil {
				return
			}
		}
		if eof {
			return
		}
	}
}

func (p *stdinPump) ack(n int64) {
	p.mu.Lock()
	p.ahead -= n
	p.cond.Signal()
	p.mu.Unlock()
}

// stop ends the pump once the call has its answer. A read of the input that is still
// blocked (a terminal nobody types into) is left to end with the process.
func (p *stdinPump) stop() {
	p.mu.Lock()
	p.done = true
	p.cond.Signal()
	p.mu.Unlock()
}

// Exec runs a shell command (or argv) behind the wall.
func (s *Session) Exec(a runner.ExecArgs, onChunk func(stream string, data []byte)) (*Result, error) {
	return s.ExecContext(context.Background(), a, nil, onChunk)
}

// ExecContext is Exec with standard input streamed from stdin (nil: none), interrupted as
// Signal(SIGINT) does when ctx ends before the command.
func (s *Session) ExecContext(ctx context.Context, a runner.ExecArgs, stdin io.Reader, onChunk func(stream string, data []byte)) (*Result, error) {
	p := execCall(a, onChunk)
	p.stdin = stdin
	return s.call(ctx, p)
}

func execCall(a runner.ExecArgs, onChunk func(stream string, data []byte)) *pending {
	a.Stream = onChunk != nil
	summary := a.Command
	if len(a.Argv) > 0 {
		summary = strings.Join(a.Argv, " ")
	}
	return &pending{req: &runner.Request{Tool: runner.ToolExec, Exec: &a}, onChunk: onChunk, summary: truncate(summary, 200)}
}

// Read reads part of a file.
func (s *Session) Read(a runner.ReadArgs) (*Result, error) {
	return s.call(nil, &pending{req: &runner.Request{Tool: runner.ToolRead, Read: &a}, summary: a.Path})
}

// Write writes a file.
func (s *Session) Write(a runner.WriteArgs) (*Result, error) {
	return s.call(nil, &pending{req: &runner.Request{Tool: runner.ToolWrite, Write: &a}, summary: a.Path})
}

// List lists a folder.
func (s *Session) List(a runner.ListArgs) (*Result, error) {
	return s.call(nil, &pending{req: &runner.Request{Tool: runner.ToolList, List: &a}, summary: a.Path})
}

// Owner is the process whose descendants' shell commands go into this session (Spec.Owner).
func (s *Session) Owner() int { return s.owner }

// Folders returns the session's writable and read-only folders.
// They are never waited for behind a tool call.
func (s *Session) Folders() (writable, readOnly []string) {
	v := s.view.Load()
	if v == nil {
		return nil, nil
	}
	return slices.Clone(v.writable), slices.Clone(v.readOnly)
}

// Active lists the parts of the wall in force.
func (s *Session) Active() []string {
	if v := s.view.Load(); v != nil {
		return slices.Clone(v.active)
	}
	return nil
}

// ProxyPort is the proxy's port as the sandbox sees it (0 without a proxy).
func (s *Session) ProxyPort() int { return s.port }

// AddFolder adds a folder to a running session. A profile is fixed when a process starts,
// so the runner is restarted behind a new wall; the next result says shell state was lost.
// If the new wall cannot be proved, the session ends rather than run open.
//
// It is a tool call like the others: while another runs it is refused at once with a
// BusyError, and a call meanwhile is refused the same way. A caller that has gone away
// before the restart begins changes nothing; once the old runner is stopped, the restart is
// carried through whether or not the caller is still there, so that its leaving never ends
// the session.
func (s *Session) AddFolder(ctx context.Context, dir string, writable bool) error {
	return s.restartWith(ctx, "add folder "+dir, "adding "+dir, "the added folder "+dir, "folder added: "+dir, func(spec *Spec) {
		if writable {
			spec.Writable = append(slices.Clone(spec.Writable), dir)
		} else {
			spec.ReadOnly = append(slices.Clone(spec.ReadOnly), dir)
		}
	})
}

// LocalServers says whether the session's commands may serve and connect on this machine's
// loopback (policy.Policy.LocalServers).
func (s *Session) LocalServers() bool { return s.localServers.Load() }

// SetLocalServers switches the session's local servers on or off, as the person asked: the
// runner is restarted behind a wall with the switch so, as AddFolder restarts it, and the
// next result says shell state was lost. Asking for what it is changes nothing.
func (s *Session) SetLocalServers(ctx context.Context, on bool) error {
	if s.LocalServers() == on {
		return nil
	}
	if s.publishes() {
		// Its servers are on a loopback of its own: the switch publishes their ports, and
		// nothing in the wall changes.
		s.setPublishing(&on, nil)
		return nil
	}
	word := map[bool]string{true: "on", false: "off"}[on]
	return s.restartWith(ctx, "local servers "+word, "switching local servers "+word, "local servers "+word, "local servers "+word, func(spec *Spec) {
		spec.LocalServers = on
	})
}

// restartWith restarts the runner behind a wall built from the session's spec as change
// leaves it; summary names the change as a tool call, doing in an error, with in the
// session's end reason, and audit in the audit trail.
func (s *Session) restartWith(ctx context.Context, summary, doing, with, audited string, change func(*Spec)) error {
	p := &pending{summary: summary, start: time.Now()}
	if !s.busy.CompareAndSwap(nil, p) {
		if other := s.busy.Load(); other != nil {
			return &BusyError{Session: s.ID, Summary: other.summary, Since: other.start}
		}
		return &BusyError{Session: s.ID}
	}
	defer s.busy.Store(nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return ErrEnded
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w; the session is as it was", doing, err)
	}
	ctx = context.WithoutCancel(ctx)
	spec := s.spec
	change(&spec)
	// Validate before stopping anything: a bad folder leaves the session as it was.
	if _, err := policy.New(s.m.policyOptions(spec)); err != nil {
		return err
	}
	s.stopRunner()
	s.spec = spec
	s.stateLost = true
	s.idle = false
	prov := s.m.opts.Providers[s.Enforcement]
	if err := s.startRunner(ctx, prov, nil); err != nil {
		s.mu.Unlock()
		s.EndBecause("restarting the sandbox with " + with + " failed: " + err.Error())
		s.mu.Lock()
		return fmt.Errorf("restarting the sandbox with %s: %w; the session has ended", with, err)
	}
	if !s.publishes() {
		// Where the session publishes, the switch is its publisher's (setPublishing).
		s.localServers.Store(spec.LocalServers)
	}
	s.m.audit(audit.Event{Type: audit.SessionRestart, Session: s.ID, Enforcement: string(s.Enforcement), Network: string(s.Network), Folders: s.pol.Writable, Summary: audited})
	return nil
}

// stopRunner ends every process behind the wall and the runner connection.
func (s *Session) stopRunner() {
	s.closeForwards()
	s.lane.Store(nil)
	s.stopPublishing()
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
	if s.proc != nil {
		if st, ok := s.proc.(sandbox.Stopper); ok {
			// No process namespace ends the commands with the runner: the runner, which
			// has just read the close, ends their groups, and Stop kills what is left.
			_ = st.Stop()
		} else {
			_ = s.proc.Kill()
		}
		done := make(chan struct{})
		go func() { _ = s.proc.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		s.proc = nil
		s.live.Store(nil)
	}
	s.errs.wait()
	s.errs = nil
}

// Interrupt kills everything behind the wall at once, as Ctrl-C does to `openworker run`.
// It does not wait for a call in progress, which returns with an error; End then finishes
// the session.
func (s *Session) Interrupt() {
	if p := s.live.Load(); p != nil {
		_ = (*p).Kill()
	}
}

// End stops everything and deletes the private tmp folder, and with it every copy made for
// the session. It is safe to call more than once. The audit trail's session.ended says it
// was ended on request; EndBecause says why otherwise.
func (s *Session) End() { s.end(false, "ended on request") }

// EndBecause is End with the reason the audit trail's session.ended gives.
func (s *Session) EndBecause(reason string) { s.end(false, reason) }

// EndBeforeExit is End for a process that exits next, as `openworker run` does. When the
// last command left nothing else running in the sandbox, its init (the runner, which starts
// nothing unasked) is killed and not waited for, nor is its error output's end: nothing of
// the session runs any more, the kernel finishes taking the sandbox down once this process
// is gone (what the provider leaves, such as an empty cgroup, the next sandbox's start
// removes), and the private tmp, which nothing inside can write now, is removed at once.
// Otherwise it is End.
func (s *Session) EndBeforeExit(reason string) {
	s.end(true, reason)
	s.m.stopFollowing()
}

func (s *Session) end(beforeExit bool, reason string) {
	if !s.ending.CompareAndSwap(false, true) {
		// Whoever ends it second (a signal's end and the deferred one of the code that
		// started it) returns once it has ended too: a process may exit right after.
		if s.endDone != nil {
			<-s.endDone
		}
		return
	}
	if s.endDone != nil {
		defer close(s.endDone)
	}
	s.endReason.Store(&reason)
	s.lane.Store(nil) // no call starts beside the shell any more
	// A call in progress holds the lock until its answer: everything behind the wall is
	// killed first, so that the answer comes at once, whatever the call was stuck on.
	if s.busy.Load() != nil || s.aparts.running() > 0 {
		s.Interrupt()
		// And should the kill not end it, the answer it waits for cannot come either.
		if c := s.liveConn.Load(); c != nil {
			_ = c.Close()
		}
	}
	s.mu.Lock()
	s.ended = true
	idle, checked := s.idle && s.aparts.running() == 0, s.gitChecked
	s.mu.Unlock()
	if beforeExit && idle && s.proc != nil {
		if a, ok := s.proc.(sandbox.Abandoner); ok {
			_ = a.Abandon()
		} else {
			_ = s.proc.Kill()
		}
		s.client.Close()
		s.client, s.proc = nil, nil
		s.live.Store(nil)
		// Nor is its error output waited for: it ends with the sandbox, which has nothing
		// more to say (the runner's errors came with its last answer).
		s.errs = nil
	}
	s.teardown()
	// What a process left running after the last call planted since: it is dead now. When
	// the last call ended, was checked, and left nothing running, its check saw everything.
	if !idle || !checked {
		if moved := s.checkGitMetadata(); len(moved) > 0 {
			s.gitMetadataMoved(moved, "at the session's end")
		}
	}
	s.keepWalk()
	s.m.remove(s.ID)
	s.m.audit(audit.Event{Type: audit.SessionEnded, Session: s.ID, Enforcement: string(s.Enforcement), Network: string(s.Network), Reason: reason})
}

func (s *Session) teardown() {
	s.gitMu.Lock()
	if s.gitWatch != nil {
		close(s.gitWatch)
		s.gitWatch = nil
	}
	s.gitMu.Unlock()
	// The private tmp is removed while the kernel takes the sandbox down. A process still
	// dying may write there meanwhile; once the sandbox is empty nothing can, and what is
	// left is removed then. Where no process namespace ends the commands with the runner,
	// the runner ends them itself once its connection closes, and their SIGTERM traps get
	// their grace before their private tmp goes.
	if _, ok := s.proc.(sandbox.Stopper); ok {
		s.stopRunner()
	} else if s.proc != nil {
		_ = s.proc.Kill()
	}
	if s.sshAgent != nil {
		// Its socket is in the private tmp, and a card it waits on is given up.
		_ = s.sshAgent.Close()
	}
	if s.tmpBound != nil {
		// Its own file system is let go first: the folder beneath is removed with the rest.
		s.tmpBound.ReleaseTmp(s.tmp)
	}
	removed := make(chan struct{})
	go func() {
		if s.tmp != "" {
			_ = removeAll(s.tmp)
		}
		close(removed)
	}()
	s.stopRunner()
	<-removed
	if _, err := os.Lstat(s.tmp); s.tmp != "" && err == nil {
		_ = removeAll(s.tmp)
	}
	// Nothing inside the wall writes the project's caches any more.
	s.releaseCaches()
	if s.proxy != nil {
		_ = s.proxy.Close()
	}
	s.closeRelay()
	if s.lock != nil {
		_ = os.Remove(filepath.Join(s.m.opts.StateDir, "sessions", s.ID+".json"))
		s.lock.Close()
	}
}

// removeAll removes a tree even where a command left folders without write permission.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// truncate cuts on a character boundary: a summary is shown on cards and in the audit trail.
func truncate(s string, n int) string { return termtext.Short(s, n) }
