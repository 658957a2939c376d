//go:build darwin || linux

package seatbelt

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"

	"github.com/openworker/openworker/core/sandbox"
)

// markInheritedCloseOnExec marks every descriptor above the standard streams close-on-exec.
// A descriptor this process got without close-on-exec from whatever started it would otherwise
// reach the runner, and Seatbelt checks a file when it is opened, not when a descriptor someone
// else opened is used.
func markInheritedCloseOnExec() error {
	entries, err := os.ReadDir("/dev/fd")
	if err != nil {
		return fmt.Errorf("seatbelt: listing this process's descriptors to mark them close-on-exec: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The descriptor ReadDir itself used is closed by now; marking it is harmless.
		syscall.CloseOnExec(fd)
	}
	return nil
}

// launch starts exe with args as the runner: its own session and process group with no
// controlling terminal, the runner's end of the socket pair as fd 3, nothing else inherited.
func launch(exe string, args []string, spec sandbox.RunnerSpec, active []string) (*process, error) {
	if spec.Conn == nil {
		return nil, errors.New("seatbelt: the runner spec has no connection to become fd 3")
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = spec.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would pass OpenWorker's own environment, secrets included
	}
	cmd.Dir = spec.Dir
	if spec.Stderr != nil {
		cmd.Stderr = spec.Stderr
	}
	cmd.ExtraFiles = []*os.File{spec.Conn}
	// A session of its own: its own process group, so that Kill reaches every process the
	// runner started, and no controlling terminal, so that no command can open /dev/tty (the
	// profile denies it too) or get the terminal's signals.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := markInheritedCloseOnExec(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("seatbelt: starting the runner under %s: %w", exe, err)
	}
	p := &process{cmd: cmd, active: active, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// process is a runner started by launch.
type process struct {
	cmd    *exec.Cmd
	active []string
	done   chan struct{}
	err    error
}

func (p *process) Pid() int                    { return p.cmd.Process.Pid }
func (p *process) ProxyListener() net.Listener { return nil }
func (p *process) Active() []string            { return append([]string(nil), p.active...) }

// Kill ends the runner's session at once: it records the process groups in it, then kills the
// runner's group and each recorded one, then every process left in the session — what the
// commands started, whatever group they moved to — found in the kernel's process table, in
// rounds until none is left (one may fork while the last round runs). macOS has no process
// namespace to end them with the runner, and the runner may be gone already, its commands
// still in its session. A process that made a session of its own (setsid) is out of reach
// and survives; the profile still confines it.
func (p *process) Kill() error {
	sid := p.cmd.Process.Pid
	groups := []int{sid}
	// A listing that fails here fails in the sweep below too, which says so.
	listed, _ := sessionGroups(sid)
	for _, g := range listed {
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	for _, g := range groups {
		err := syscall.Kill(-g, syscall.SIGKILL)
		if err != nil && !errors.Is(err, syscall.ESRCH) && g == sid {
			return fmt.Errorf("seatbelt: killing the runner's process group %d: %w", sid, err)
		}
	}
	// A process SIGKILLed in an earlier round is dying and forks no more; it may still be
	// listed for a moment (not yet a zombie), and is not counted again.
	signalled := map[int]bool{}
	for range maxKillRounds {
		pids, err := sessionPIDs(sid)
		if err != nil {
			return fmt.Errorf("seatbelt: listing what is left of the runner's session %d: %w", sid, err)
		}
		killed := 0
		for _, pid := range pids {
			if !signalled[pid] && syscall.Kill(pid, syscall.SIGKILL) == nil {
				signalled[pid] = true
				killed++
			}
		}
		if killed == 0 {
			return nil
		}
	}
	return fmt.Errorf("seatbelt: processes of the runner's session %d were still starting after %d rounds of SIGKILL", sid, maxKillRounds)
}

// sessionGroups lists the process groups of session sid.
func sessionGroups(sid int) ([]int, error) {
	ps, err := (hostProcs{}).session(sid)
	var out []int
	for _, pr := range ps {
		if !slices.Contains(out, pr.pgid) {
			out = append(out, pr.pgid)
		}
	}
	return out, err
}

// Stop ends the runner's session once the caller has closed the runner's connection: the
// runner, reading the close, sends SIGTERM to the groups its commands started, gives their
// traps a second, SIGKILLs them and exits. Stop waits for that up to sandbox.StopWait, then kills
// whatever is left as Kill does (a command that ignored SIGTERM and left its group, a runner
// that did not end). Killing at once would give no command its grace.
func (p *process) Stop() error { return sandbox.StopAfter(p.done, p.Kill) }

// maxKillRounds bounds Kill's sweep of the runner's session.
const maxKillRounds = 16

// Wait waits for the runner to exit.
func (p *process) Wait() error {
	<-p.done
	return p.err
}
