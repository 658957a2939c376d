package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"

	"github.com/openworker/openworker/core/policy"
)

// DirectProvider runs the runner with no wall at all: commands run as OpenWorker itself
// does. It is what `sandbox_provider = "direct"` means, and every result says "direct".
type DirectProvider struct{}

var _ Provider = DirectProvider{}

func (DirectProvider) Name() Enforcement { return Direct }

func (DirectProvider) Status(context.Context) Status {
	return Status{Provider: Direct, OK: true, Tier: "no sandbox (direct): commands run as OpenWorker itself, with your files and network"}
}

func (DirectProvider) Start(ctx context.Context, p *policy.Policy, spec RunnerSpec) (Process, error) {
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env, cmd.Dir = spec.Env, spec.Dir
	if spec.Conn != nil {
		cmd.ExtraFiles = []*os.File{spec.Conn}
	}
	if spec.Stderr != nil {
		cmd.Stderr = spec.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the tool runner: %w", err)
	}
	d := &directProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.done)
	}()
	return d, nil
}

type directProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

var _ Stopper = (*directProcess)(nil)

func (d *directProcess) Pid() int                    { return d.cmd.Process.Pid }
func (d *directProcess) ProxyListener() net.Listener { return nil }
func (d *directProcess) Active() []string            { return nil }

// Kill ends the runner's process group: the runner and every command still in it.
func (d *directProcess) Kill() error {
	err := syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Stop waits, once the caller has closed the runner's connection, for the runner to end its
// commands' groups and exit (see Stopper), then kills its group.
func (d *directProcess) Stop() error { return StopAfter(d.done, d.Kill) }

func (d *directProcess) Wait() error {
	<-d.done
	return d.err
}
