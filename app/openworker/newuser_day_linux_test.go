package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What a new user meets over a working day with the real binary: tools broken outside,
// advice that must fit the session's state, interrupted waits, typos.

// pathFirst puts dir first on the world's PATH.
func (w *world) pathFirst(dir string) {
	for i, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			w.env[i] = "PATH=" + dir + ":" + v
		}
	}
}

// sandbox check does not blame the wall for a tool that fails outside it too (rustup's
// cargo in a home with no default toolchain), and says what to switch on for one found only
// where sessions do not see it, in the words of this OS: the setting, not a Mac's screen.
func TestSandboxCheckTriesToolsOutside(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	line := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "cargo build of a one-file crate") {
				return l
			}
		}
		return ""
	}
	broken := filepath.Join(filepath.Dir(w.project), "broken-bin")
	os.MkdirAll(broken, 0o755)
	if err := os.WriteFile(filepath.Join(broken, "cargo"), []byte("#!/bin/sh\necho \"error: rustup could not choose a version of cargo to run, because one wasn't specified explicitly, and no default is configured.\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.pathFirst(broken)
	out, errs, code := w.run("sandbox", "check")
	if l := line(out); code != 0 || !strings.Contains(l, "skipped: fails outside the sandbox too (exit status 1: error: rustup could not choose") ||
		strings.Contains(out, "broken") {
		t.Errorf("a cargo broken outside: exit %d, line %q\n%s%s", code, l, out, errs)
	}

	// A cargo that works, in the home folder, which sessions do not see.
	w = newWorld(t)
	bin := filepath.Join(w.home, ".cargo", "bin")
	os.MkdirAll(bin, 0o755)
	if err := os.WriteFile(filepath.Join(bin, "cargo"), []byte("#!/bin/sh\n# builds the crate's program, as cargo build would\n"+
		"mkdir -p target/debug && printf '#!/bin/sh\\necho built by cargo\\n' > target/debug/owcheck && chmod +x target/debug/owcheck\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.pathFirst(bin)
	out, errs, code = w.run("sandbox", "check")
	l := line(out)
	if code != 0 || !strings.Contains(l, "skipped: ") || !strings.Contains(l, bin) || !strings.Contains(l, "sandbox_toolchains") ||
		strings.Contains(out, "Settings ▸") || strings.Contains(out, "broken") {
		t.Errorf("a cargo only in the home folder: exit %d, line %q\n%s%s", code, l, out, errs)
	}
	if _, err := os.Stat(filepath.Join(w.home, ".cargo", "registry")); err == nil {
		t.Error("the try outside wrote in the home folder's ~/.cargo")
	}
}
