package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What a new user meets after the README's first commands, through the real binary.

// After --, session exec's words are an argv whatever their count, as run takes them: one
// word is a program's name, never a shell command.
func TestSessionExecOneWordAfterDashDashIsAnArgv(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	id := w.walledSession()
	tool := filepath.Join(w.project, "bin dir", "my tool")
	if err := os.MkdirAll(filepath.Dir(tool), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho tool ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errs, code := w.run("session", "exec", id, "--", "./bin dir/my tool")
	if code != 0 || out != "tool ran\n" {
		t.Errorf(`exec -- "./bin dir/my tool": exit %d, stdout %q, stderr %q`, code, out, errs)
	}
	_, errs, code = w.run("session", "exec", id, "--", `touch "$(echo pwned)"`)
	if code != 127 || !strings.Contains(errs, "command not found") {
		t.Errorf(`exec -- 'touch "$(echo pwned)"': exit %d, stderr %q; want 127 and command not found`, code, errs)
	}
	if _, err := os.Lstat(filepath.Join(w.project, "pwned")); err == nil {
		t.Error(`exec -- 'touch "$(echo pwned)"' ran a shell: the file pwned was made`)
	}
	_, errs, code = w.run("session", "exec", id, "--", "nosuchcmd")
	if code != 127 || !strings.Contains(errs, "nosuchcmd: command not found") || strings.Contains(errs, "eval") {
		t.Errorf("exec -- nosuchcmd: exit %d, stderr %q; want 127 and what run says", code, errs)
	}
	// Several words without -- are neither: the message shows both forms.
	if _, errs, code := w.run("session", "exec", id, "echo", "hi"); code != 2 || !strings.Contains(errs, "after --") {
		t.Errorf("exec echo hi: exit %d, stderr %q; want a usage error showing --", code, errs)
	}
	// Without --, one word is still a shell command, whose cd carries over.
	if out, errs, code := w.run("session", "exec", id, "cd 'bin dir' && pwd"); code != 0 || out != filepath.Join(w.project, "bin dir")+"\n" {
		t.Errorf("exec 'cd ... && pwd': exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
