package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoginEnv(t *testing.T) {
	home := t.TempDir()
	tools := filepath.Join(home, "tools")
	os.Mkdir(tools, 0o755)
	os.WriteFile(filepath.Join(home, ".profile"), []byte("echo noise from a startup file\nexport PATH=\""+tools+":$PATH\"\nexport LANG=xx_YY.UTF-8\nexport SECRET_TOKEN=x\n"), 0o644)
	t.Setenv("HOME", home)
	env := []string{"PATH=/usr/bin:/bin", "SHELL=/bin/sh", "HOME=" + home, "KEEP=1"}
	got := LoginEnv(context.Background(), env, "linux")
	if p := hostVar(got, "PATH"); !strings.HasPrefix(p, tools+":") {
		t.Fatalf("PATH %q: the login shell's not taken", p)
	}
	if hostVar(got, "LANG") != "xx_YY.UTF-8" || hostVar(got, "KEEP") != "1" || hostVar(got, "SECRET_TOKEN") != "" {
		t.Fatalf("login env: %q", got)
	}
	// A shell that cannot run: the system's folders are added, and a UTF-8 language set.
	got = LoginEnv(context.Background(), []string{"PATH=/nonexistent", "SHELL=/nonexistent/sh"}, "linux")
	if p := hostVar(got, "PATH"); !strings.HasPrefix(p, "/nonexistent:") || !strings.Contains(p, "/usr/bin") {
		t.Fatalf("fallback PATH %q", p)
	}
	if hostVar(got, "LANG") != "C.UTF-8" {
		t.Fatalf("fallback LANG %q", hostVar(got, "LANG"))
	}
}

// Of what a client sends, only ClientVars reach a sandbox's environment.
func TestWithVarsTakesOnlyClientVars(t *testing.T) {
	got := WithVars([]string{"PATH=/usr/bin", "HOME=/h"}, map[string]string{"PATH": "/p", "LD_PRELOAD": "/evil.so", "HOME": "/elsewhere", "LANG": ""})
	if hostVar(got, "PATH") != "/p" || hostVar(got, "LD_PRELOAD") != "" || hostVar(got, "HOME") != "/h" || strings.Contains(strings.Join(got, " "), "LANG=") {
		t.Fatalf("WithVars: %q", got)
	}
}
