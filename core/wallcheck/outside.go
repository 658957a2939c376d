package wallcheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// ExecOutside runs a battery command outside the wall, as the person's own shell would
// (sh -c, with env), each in a fresh folder under dir that is removed after it: for a program
// that failed inside, to tell one the wall broke from one that fails on this machine anyway.
// Its temporary folder, npm's cache and cargo's home are pointed into that folder, as a
// session points them into its private tmp, so that a try writes nothing in the home folder.
// A command is stopped after a minute, as inside.
func ExecOutside(dir string, env []string) Exec {
	var n atomic.Int32
	return func(ctx context.Context, command string) (Outcome, error) {
		work := filepath.Join(dir, strconv.Itoa(int(n.Add(1))))
		if err := os.MkdirAll(work, 0o700); err != nil {
			return Outcome{}, fmt.Errorf("making a folder to try a program outside the sandbox: %w", err)
		}
		defer os.RemoveAll(work)
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
		cmd.Dir = work
		cmd.Env = append(slices.Clone(env), "TMPDIR="+work, "npm_config_cache="+filepath.Join(work, ".npm"), "CARGO_HOME="+filepath.Join(work, ".cargo"))
		cmd.WaitDelay = time.Second
		stdout, stderr := &tail{max: outsideOutput}, &tail{max: outsideOutput}
		cmd.Stdout, cmd.Stderr = stdout, stderr
		err := cmd.Run()
		o := Outcome{Stdout: string(stdout.b), Stderr: string(stderr.b)}
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			o.ExitCode = ee.ExitCode()
		case err != nil:
			return Outcome{}, fmt.Errorf("trying a program outside the sandbox: %w", err)
		}
		return o, nil
	}
}

// outsideOutput bounds what is kept of a try's output: its judge reads its end.
const outsideOutput = 64 << 10

// tail keeps the last max bytes written to it.
type tail struct {
	b   []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}
