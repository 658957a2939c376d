package seatbelt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// processFollower is the one log stream of this process (the daemon, or a single `run`):
// following the log once, not once per command, is what keeps a command's reporting cost to
// one sentinel.
var processFollower = sync.OnceValue(func() *LogFollower {
	dir, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		dir = os.TempDir()
	}
	// Only the kernel's lines (process 0) carrying a marker: a sandboxed program that logs
	// the prefix itself cannot flood the stream, and the parser believes only the kernel.
	predicate := fmt.Sprintf(`processID == 0 AND eventMessage CONTAINS "%s"`, MarkerPrefix)
	return &LogFollower{
		Command:     []string{"/usr/bin/log", "stream", "--style", "ndjson", "--predicate", predicate},
		Provoke:     provokeSentinel,
		SentinelDir: dir,
	}
})

// StartFollower opens a window on this process's log stream for the denials that carry
// marker and returns once the stream is ready: start the command after it returns, and call
// Stop after it ends. An error wrapping ErrNotAdmin means this user may not read the log; the
// command still runs sandboxed, and its error output should start with NotReportedLine.
func StartFollower(ctx context.Context, marker string) (*Follower, error) {
	w, err := processFollower().Begin(ctx, marker)
	if err != nil {
		return nil, fmt.Errorf("seatbelt: following the unified log: %w", err)
	}
	return &Follower{w: w}, nil
}

// provokeSentinel creates target, then reads it under a one-rule profile that denies exactly
// that read with marker as its message: a denial with a target no other denial has, so the
// kernel cannot fold it into an earlier one. The file is removed again.
func provokeSentinel(ctx context.Context, marker, target string) error {
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	defer os.Remove(target)
	profile := "(version 1)\n(allow default)\n(deny file-read-data (literal " + quote(target) + ") (with message " + quote(marker) + "))\n"
	err = exec.CommandContext(ctx, DefaultSandboxExec, "-p", profile, "/bin/cat", target).Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil // cat was refused: the denial happened
	}
	if err == nil {
		return errors.New("the sentinel read was not denied")
	}
	return err
}
