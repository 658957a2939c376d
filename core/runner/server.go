package runner

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/openworker/openworker/core/internal/wire"
)

// ConnFD is the descriptor on which the runner inherits its end of the socketpair.
const ConnFD = 3

// DefaultMaxOutput bounds each of stdout and stderr kept in an exec result.
const DefaultMaxOutput = 256 << 10

// killGrace is how long a timed-out command's group has between TERM and KILL.
const killGrace = 2 * time.Second

// Arg is the hidden argument that starts a binary (the openworker binary, or the small
// helper beside it on a Mac) in runner mode.
const Arg = "__runner"

// Main is the runner's entry point. It takes fd 3, marks it close-on-exec so no command
// inherits it, and serves tool calls on it until the core hangs up.
func Main() error {
	syscall.CloseOnExec(ConnFD)
	f := os.NewFile(ConnFD, "runner-conn")
	if f == nil {
		return errors.New("runner: no connection on fd 3; the runner is started by openworker, not by hand")
	}
	dir, err := os.Getwd()
	if err != nil {
		dir = "/"
	}
	return NewServer(Config{Dir: dir, Env: os.Environ()}).Serve(f)
}

// Config is where a Server's shell starts and how it starts commands.
type Config struct {
	Dir string   // the first working folder
	Env []string // the first environment; its TMPDIR holds the shell's state file
	// Guard, when set, runs before every tool call, and its error refuses the call. A
	// runner that lives in another program's process (the Linux wall's first process)
	// checks with it that calls run where the wall holds.
	Guard func() error
	// Children, when set, starts every command, for a runner that is also its sandbox's
	// init and reaps orphans.
	Children Children
	// Idle, when set, says whether nothing but the runner runs in the sandbox; an exec's
	// result carries its answer once the command has ended.
	Idle func() bool
}

// Children starts a runner's commands in a process that also reaps orphans.
type Children interface {
	// Start calls start, which forks one child and returns its PID, such that an orphan
	// reaper running meanwhile never collects that child's exit status.
	Start(start func() (int, error)) error
	// Done says the child's exit status has been collected.
	Done(pid int)
}

// Server carries out tool calls and keeps the shell state between them.
type Server struct {
	mu    sync.Mutex // one tool call at a time: shell state is sequential
	shell *shell
	guard func() error
	idle  func() bool
	// refused is set by a wall check that failed: no call is carried out after it. The
	// core may send a call right behind the check without waiting for its answer.
	refusedMu sync.Mutex
	refused   error

	// running are the execs read and not yet answered, by call ID: the signals and standard
	// input sent for them while they run go to their command.
	runMu   sync.Mutex
	running map[uint64]*execIO
}

// NewServer returns a server whose shell starts as cfg says.
func NewServer(cfg Config) *Server {
	return &Server{shell: newShell(cfg), guard: cfg.Guard, idle: cfg.Idle, running: map[uint64]*execIO{}}
}

// Serve reads requests from rw and answers them until EOF, then ends every process group
// its commands started.
//
// Tool calls are carried out one at a time on the goroutine that called Serve, which a
// runner inside the wall keeps on the one thread behind all of the wall. Another goroutine
// reads the connection, so that a signal or standard input for the running command is taken
// while it runs: those only send a signal to the command's process group or copy bytes into
// its standard input's pipe.
func (s *Server) Serve(rw io.ReadWriter) error {
	// Whatever the commands left running goes with the runner.
	defer s.shell.stopGroups()
	go warmStart()
	var wmu sync.Mutex
	send := func(r *Response) {
		msg := r.encodeFitting()
		wmu.Lock()
		defer wmu.Unlock()
		_ = wire.WriteFrame(rw, msg)
	}
	if f, ok := rw.(interface{ Fd() uintptr }); ok && canPoll {
		return s.servePolling(rw, int(f.Fd()), send)
	}
	calls := make(chan *Request, 8)
	var readErr error
	var hungUp atomic.Bool
	go func() {
		defer close(calls)
		in := newReader(rw)
		for {
			msg, err := in.next()
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				hungUp.Store(true)
				return
			}
			var req *Request
			if err == nil {
				req, err = decodeRequest(msg)
			}
			if err != nil {
				readErr = fmt.Errorf("runner: reading a request: %w", err)
				hungUp.Store(true)
				return
			}
			switch {
			case s.control(req):
			case s.startApart(req, send):
				// Beside the shell: started here, while a command of the shell's may run
				// on the other goroutine. (No guard holds a runner to one thread here.)
			default:
				if req.Tool == ToolExec && req.Exec != nil {
					s.runMu.Lock()
					s.running[req.ID] = newExecIO(req.ID, req.Exec.StdinStream, send)
					s.runMu.Unlock()
				}
				calls <- req
			}
		}
	}()
	for req := range calls {
		if hungUp.Load() {
			// Nobody waits for the answers to what was still queued.
			s.forget(req.ID)
			continue
		}
		res, err := s.handle(req, send)
		s.forget(req.ID)
		out := &Response{ID: req.ID, Result: res}
		if err != nil {
			out.Result = nil
			out.Error = err.Error()
		}
		send(out)
	}
	return readErr
}

// servePolling is Serve where this goroutine can wait for a command and the connection at
// once (pidfd_open and poll, on Linux): calls are read and carried out in turn on this
// goroutine as a plain loop, and while an exec's command runs, the same goroutine takes the
// signals and standard input sent for it. A reader on another goroutine would cost every
// call two hand-offs between threads, which a sandboxed command's start measurably pays.
func (s *Server) servePolling(rw io.ReadWriter, fd int, send func(*Response)) error {
	in := newReader(rw)
	var queued []*Request // calls read while a command ran, in order
	for {
		var req *Request
		if len(queued) > 0 {
			req, queued = queued[0], queued[1:]
		} else {
			msg, err := in.next()
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if err == nil {
				req, err = decodeRequest(msg)
			}
			if err != nil {
				return fmt.Errorf("runner: reading a request: %w", err)
			}
		}
		if s.control(req) || s.startApart(req, send) {
			continue
		}
		if req.Tool == ToolExec && req.Exec != nil {
			x := newExecIO(req.ID, req.Exec.StdinStream, send)
			take := func(msg []byte) error { return s.takeControl(msg, &queued, send) }
			x.pump = func(pid int) error { return pumpUntilExit(in, fd, pid, take) }
			s.runMu.Lock()
			s.running[req.ID] = x
			s.runMu.Unlock()
		}
		res, err := s.handle(req, send)
		s.forget(req.ID)
		out := &Response{ID: req.ID, Result: res}
		if err != nil {
			out.Result = nil
			out.Error = err.Error()
		}
		send(out)
	}
}

// takeControl carries out a message read while a command of the shell's runs: a signal or
// standard input for a running command, a command to start beside it, or a call to queue
// for after it. It runs on the serving goroutine, as every start does.
func (s *Server) takeControl(msg []byte, queued *[]*Request, send func(*Response)) error {
	req, err := decodeRequest(msg)
	if err != nil {
		return fmt.Errorf("runner: reading a request: %w", err)
	}
	if !s.control(req) && !s.startApart(req, send) {
		*queued = append(*queued, req)
	}
	return nil
}

// control carries out a signal or a piece of standard input for the running command it
// names, and says whether req was one. What comes for a command that has ended is dropped.
func (s *Server) control(req *Request) bool {
	switch {
	case req.Tool == ToolSignal && req.Sig != nil:
		if x := s.execFor(req.Sig.Call); x != nil {
			x.signal(syscall.Signal(req.Sig.Signal))
		}
	case req.Tool == ToolStdin && req.In != nil:
		if x := s.execFor(req.In.Call); x != nil {
			x.feed(req.In.Data, req.In.EOF)
		}
	case req.Tool == ToolSignal || req.Tool == ToolStdin:
	default:
		return false
	}
	return true
}

// startApart starts req's command beside the shell when it asks for that (ExecArgs.Apart),
// and says whether it did: it runs while the shell's commands and other such commands run,
// and its answer is sent once it has ended. It is started on the calling goroutine, which
// for a runner inside the wall is the walled thread that every command is forked from.
func (s *Server) startApart(req *Request, send func(*Response)) bool {
	if req.Tool != ToolExec || req.Exec == nil || !req.Exec.Apart {
		return false
	}
	answer := func(res *Result, err error) {
		s.forget(req.ID)
		out := &Response{ID: req.ID, Result: res}
		if err != nil {
			out.Result, out.Error = nil, err.Error()
		}
		send(out)
	}
	if err := s.admit(); err != nil {
		answer(nil, err)
		return true
	}
	x := newExecIO(req.ID, req.Exec.StdinStream, send)
	s.runMu.Lock()
	s.running[req.ID] = x
	s.runMu.Unlock()
	s.shell.execApart(req.ID, req.Exec, send, x, answer)
	return true
}

// admit refuses a call on a thread outside the wall, or after a failed wall check.
func (s *Server) admit() error {
	if s.guard != nil {
		if err := s.guard(); err != nil {
			return err
		}
	}
	s.refusedMu.Lock()
	defer s.refusedMu.Unlock()
	return s.refused
}

func (s *Server) execFor(id uint64) *execIO {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	return s.running[id]
}

func (s *Server) forget(id uint64) {
	s.runMu.Lock()
	delete(s.running, id)
	s.runMu.Unlock()
}

func (s *Server) handle(req *Request, send func(*Response)) (*Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admit(); err != nil {
		return nil, err
	}
	switch {
	case req.Tool == ToolExec && req.Exec != nil:
		res, err := s.shell.exec(req.ID, req.Exec, send, s.execFor(req.ID))
		if err == nil && s.idle != nil {
			res.Idle = s.idle()
		}
		return res, err
	case req.Tool == ToolRead && req.Read != nil:
		return readFile(s.shell.abs(req.Read.Path), req.Read.Offset, req.Read.Limit)
	case req.Tool == ToolWrite && req.Write != nil:
		return writeFile(s.shell.abs(req.Write.Path), req.Write.Content)
	case req.Tool == ToolList && req.List != nil:
		return listDir(s.shell.abs(req.List.Path))
	case req.Tool == ToolProbe && req.Probe != nil:
		checks := probe(req.Probe)
		for _, c := range checks {
			if !c.OK {
				s.refusedMu.Lock()
				defer s.refusedMu.Unlock()
				s.refused = fmt.Errorf("runner: the wall check failed (%s %s: %s); this runner carries out no more calls", c.Name, c.Target, c.Detail)
				break
			}
		}
		return &Result{Checks: checks}, nil
	}
	return nil, fmt.Errorf("unknown tool %q or missing arguments", req.Tool)
}

// MaxRead bounds one read call.
const MaxRead = 8 << 20

// warmStart makes, while the runner waits for its first call, the check os/exec makes once
// before a process's first child on Linux (whether pidfds work, by starting and reaping a
// child of its own): otherwise the first command, often a run's only one, waits for it.
func warmStart() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Release()
	}
}
