package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/runner"
)

// TestWallBuiltByTheHelper: with the small helper beside openworker, the wall builder (the
// sandbox's PID 1, which serves the runner) is the helper, not the CLI; neither can be
// written from inside, and the CLI is not there at all. Without the helper the CLI builds
// the wall itself.
func TestWallBuiltByTheHelper(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	dir := t.TempDir()
	cli := filepath.Join(dir, "openworker")
	helper := filepath.Join(dir, runner.HelperName)
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cli, b, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", helper, "../openworker-runner")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the helper: %v\n%s", err, out)
	}
	script := `cat /proc/1/comm; test -e ` + cli + ` && echo cli-inside; test -x ` + helper + ` && echo helper-inside; echo x >> ` + helper + ` 2>/dev/null && echo helper-written; true`
	run := func(bin string) string {
		c := exec.Command(bin, "run", "--", "sh", "-c", script)
		c.Env, c.Dir = w.env, w.project
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			t.Fatalf("%s run: %v\n%s%s", bin, err, out.String(), errb.String())
		}
		return out.String()
	}
	out := run(cli)
	if !strings.HasPrefix(out, "openworker-runn\n") {
		t.Errorf("with the helper beside the CLI, the wall builder is not the helper:\n%s", out)
	}
	if strings.Contains(out, "cli-inside") {
		t.Errorf("the CLI is inside the wall, where only the helper need be:\n%s", out)
	}
	if strings.Contains(out, "helper-written") {
		t.Errorf("a command inside wrote to the helper:\n%s", out)
	}
	if after, _ := os.ReadFile(helper); bytes.HasSuffix(after, []byte("x\n")) {
		t.Error("a command inside appended to the helper")
	}
	if out := run(binary); strings.HasPrefix(out, "openworker-runn\n") {
		t.Errorf("without a helper beside it, the CLI should build the wall itself:\n%s", out)
	}
}
