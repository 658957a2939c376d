package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
)

// lane is a running runner as calls beside the shell use it: they never wait for the
// session's lock, which a call of the shell's holds until its answer.
type lane struct {
	client *runner.Client
	pol    *policy.Policy
	proc   sandbox.Process
}

// apartHints are what the session says after its calls beside the shell, which do not share
// the shell's hints (they are held by the session's lock).
type apartHints struct {
	sync.Mutex
	h hints
}

// guarding says whether the session checks repository metadata.
func (s *Session) guarding() bool {
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	return s.gitSnap != nil
}

// apartCalls are the calls running beside the shell, by the tag their caller gave.
type apartCalls struct {
	mu    sync.Mutex
	n     int
	byTag map[string]*pending
}

func (a *apartCalls) add(tag string, p *pending) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if tag != "" {
		if a.byTag[tag] != nil {
			return ErrTagInUse
		}
		if a.byTag == nil {
			a.byTag = map[string]*pending{}
		}
		a.byTag[tag] = p
	}
	a.n++
	return nil
}

func (a *apartCalls) remove(tag string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n--
	if tag != "" {
		delete(a.byTag, tag)
	}
}

func (a *apartCalls) get(tag string) *pending {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byTag[tag]
}

func (a *apartCalls) running() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// ErrTagInUse refuses a call beside the shell whose tag names one that still runs.
var ErrTagInUse = errors.New("a command with this tag is still running in the session")

// ExecApart runs a command beside the session's shell: it starts at once, whatever else
// runs (a call of the shell's, other such commands), in a.Dir with the session's variables
// and a.Env, and nothing it changes carries over to other commands. This is how an agent
// host's own shell tool runs its commands in the session: each call of the host is a shell
// of its own, several may run at once (a dev server in the background, a test meanwhile),
// and the host keeps the working folder itself.
//
// tag names the call for SignalApart (empty: none). When ctx ends first, the command is
// interrupted (SIGINT, then SIGTERM, then SIGKILL to its group) and its answer still
// awaited. The result carries the sites blocked while it ran, and, when the repository
// metadata is guarded, what the check after it moved aside.
func (s *Session) ExecApart(ctx context.Context, a runner.ExecArgs, tag string, stdin io.Reader, onChunk func(stream string, data []byte)) (*Result, error) {
	l := s.lane.Load()
	if l == nil || s.ending.Load() {
		if why := s.endReason.Load(); why != nil {
			return nil, fmt.Errorf("session %s has ended (%s); start a new one", s.ID, *why)
		}
		return nil, ErrEnded
	}
	a.Apart = true
	p := execCall(a, onChunk)
	p.apart, p.client, p.stdin = true, l.client, stdin
	p.start = time.Now()
	if err := s.aparts.add(tag, p); err != nil {
		return nil, err
	}
	defer s.aparts.remove(tag)
	s.commandStarts()
	s.startGitWatch()
	p.stopDenials = s.startDenialsOn(l, p.onChunk)
	if p.stdin != nil {
		p.req.Exec.StdinStream = true
	}
	// A signal for the call waits until it is sent: it names the call by the ID sending
	// gives it.
	p.sigMu.Lock()
	err := l.client.SendApart(p.req)
	p.sigMu.Unlock()
	if err != nil {
		p.stopDenials(&Result{})
		return nil, s.apartGone(err)
	}
	s.m.audit(audit.Event{Type: audit.ToolStarted, Time: p.start, Session: s.ID, Tool: p.req.Tool, Summary: p.summary,
		Enforcement: string(s.Enforcement), Network: string(s.Network)})
	if ctx != nil && ctx.Done() != nil {
		defer context.AfterFunc(ctx, func() { s.callerGone(p, goneCause(ctx)) })()
	}
	var onAck func(int64)
	if p.stdin != nil {
		pump := newStdinPump(l.client, p.req, p.stdin)
		defer pump.stop()
		onAck = pump.ack
	}
	res, err := l.client.Receive(p.req, p.onChunk, onAck)
	p.sigMu.Lock()
	if p.escalate != nil {
		p.escalate.Stop()
	}
	interrupted, cause := p.interrupted, p.cause
	p.sigMu.Unlock()
	end := time.Now()
	out := &Result{Result: res, Tool: p.req.Tool, Session: s.ID, Enforcement: s.Enforcement, Network: s.Network, Limits: s.limits, Reach: s.openReach()}
	if interrupted != 0 {
		out.Interrupted = signalName(interrupted)
	}
	ev := audit.Event{Type: audit.ToolCall, Session: s.ID, Tool: p.req.Tool, Summary: p.summary,
		Enforcement: string(s.Enforcement), Network: string(s.Network), DurationMS: float64(end.Sub(p.start).Microseconds()) / 1000}
	var te *runner.ToolError
	switch {
	case errors.As(err, &te):
		out.Result, out.Error = &runner.Result{}, te.Msg
	case err != nil:
		p.stopDenials(&Result{})
		ev.Outcome, ev.Reason = "failed", err.Error()
		s.m.audit(ev)
		return nil, s.apartGone(err)
	}
	out.Blocked = s.blockedBetween(p.start, end)
	p.stopDenials(out)
	// Before the result returns: by then nothing the command planted may be left for the
	// person's git to run.
	out.GitMetadataMoved = s.checkGitMetadata()
	ev.GitMetadataMoved = out.GitMetadataMoved
	if note := s.gitNote(out.GitMetadataMoved); note != "" && out.Error == "" {
		if p.onChunk != nil {
			p.onChunk("stderr", []byte(note))
		}
		out.Stderr = append(out.Stderr, note...)
	}
	if out.Error == "" && out.Result != nil {
		// What the session says of a command's git refusals, as after a command of the
		// shell's: an agent host's git push -u exits 0 with its upstream never set.
		var carried []string
		if s.guarding() {
			output := append(out.Stdout[:len(out.Stdout):len(out.Stdout)], out.Stderr...)
			carried = append(s.carryUpstreams(p.req.Exec.Dir, output, commandWords(p.req.Exec)), s.carrySubmodules(p.req.Exec.Dir, output)...)
		}
		s.apartHints.Lock()
		line := s.apartHints.h.gitMetadataHint(out.Result, s.guarding(), s.m.opts.GOOS, carried...)
		s.apartHints.Unlock()
		if line != "" {
			if p.onChunk != nil {
				p.onChunk("stderr", []byte(line))
			}
			out.Stderr = append(out.Stderr, line...)
		}
	}
	ended(&ev, out, cause, true)
	s.m.audit(ev)
	return out, nil
}

// apartGone is the error of a call beside the shell whose runner went away under it.
func (s *Session) apartGone(err error) error {
	if why := s.endReason.Load(); why != nil {
		return fmt.Errorf("session %s ended while this ran: %s", s.ID, *why)
	}
	if errors.Is(err, runner.ErrGone) {
		return fmt.Errorf("session %s: the sandbox was restarted or stopped while this ran (%v); run the command again", s.ID, err)
	}
	return fmt.Errorf("session %s: %w", s.ID, err)
}

// SignalApart interrupts the call beside the shell that tag names, as Signal does a call
// of the shell's; it says whether one runs.
func (s *Session) SignalApart(tag string, sig syscall.Signal) bool {
	p := s.aparts.get(tag)
	if p == nil {
		return false
	}
	s.interruptCall(p, sig, "")
	return true
}

// callerGone stops the call p whose caller went away: an agent host's shell, killed by its
// host, which stops a command with SIGTERM (and passes it on, unless it is killed first).
// So SIGTERM, as a program whose parent stops it gets, then SIGKILL after the grace. A call
// already being stopped goes on as it was: its grace, then SIGKILL; the host's killing its
// shell right after passing the signal on does not cut the command's cleanup short.
func (s *Session) callerGone(p *pending, cause string) {
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	if p.interrupted != 0 {
		return
	}
	p.interrupted, p.cause, p.step = syscall.SIGTERM, cause, 1 // after SIGTERM, SIGKILL
	s.signalStep(p, syscall.SIGTERM)
}

// interruptCall is interrupt for the call p.
func (s *Session) interruptCall(p *pending, sig syscall.Signal, cause string) {
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	if p.interrupted == 0 {
		p.interrupted, p.cause = sig, cause
	} else {
		sig, p.step = syscall.SIGKILL, 2
	}
	s.signalStep(p, sig)
}
