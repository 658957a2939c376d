package seatbelt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// newLogFollower is a provider's log stream: Seatbelt's denials that the kernel logged with a
// marker, and sandboxd's reports.
func newLogFollower() *LogFollower {
	dir, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		dir = os.TempDir()
	}
	// The kernel's lines (process 0) carrying a marker, so that a sandboxed program that logs
	// the prefix itself cannot flood the stream; and the reports sandboxd writes (mach-lookup
	// denials, for one), from sandboxd's image only. The parser believes only these two.
	predicate := fmt.Sprintf(`(processID == 0 AND eventMessage CONTAINS "%s") OR (subsystem == "%s" AND processImagePath == "%s")`,
		MarkerPrefix, reportingSubsystem, SandboxdPath)
	return &LogFollower{
		Command:     []string{"/usr/bin/log", "stream", "--style", "ndjson", "--predicate", predicate},
		Provoke:     provokeSentinel,
		SentinelDir: dir,
		procs:       hostProcs{},
	}
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
