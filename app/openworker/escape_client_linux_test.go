package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClientProgramIsNotWritableInside: a client started from a build folder (`session
// start`, or `mcp` that an agent host starts unsandboxed on every launch) attached to a
// daemon that runs another copy may not share that folder writable: a command inside would
// replace the program that runs outside. The session is refused, saying which program, and
// the program is unchanged.
func TestClientProgramIsNotWritableInside(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	_, stop := w.daemon()
	defer stop()
	build := filepath.Join(w.project, "build")
	client := filepath.Join(build, "openworker")
	if err := os.MkdirAll(build, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(client, b, 0o755); err != nil {
		t.Fatal(err)
	}
	want := "contains the program of the client that asked for this session " + client
	run := func(t *testing.T, args ...string) (string, int) {
		c := exec.Command(client, args...)
		c.Env, c.Dir = w.env, w.project
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		done := make(chan error, 1)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- c.Wait() }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			c.Process.Kill()
			<-done
			t.Fatalf("%v did not end:\n%s", args, out.String())
		}
		return out.String(), c.ProcessState.ExitCode()
	}
	t.Run("session_start", func(t *testing.T) {
		out, code := run(t, "session", "start", "--no-cwd", "--rw", build, "--network", "none", "--provider", "linux")
		if code == 0 {
			id, _, _ := strings.Cut(out, "\n")
			// The escape: the session replaces the client's program.
			run(t, "session", "exec", id, "--", "printf replaced > "+client+".new && mv "+client+".new "+client)
			got, _ := os.ReadFile(client)
			os.Remove(client)
			os.WriteFile(client, b, 0o755)
			run(t, "session", "end", id)
			if !bytes.Equal(got, b) {
				t.Fatalf("a command inside replaced the client's program:\n%s", out)
			}
		}
		if code == 0 || !strings.Contains(out, want) || !strings.Contains(out, "replace a program that runs outside") {
			t.Fatalf("exit %d, want the session refused with %q:\n%s", code, want, out)
		}
	})
	t.Run("mcp", func(t *testing.T) {
		// A server that cannot start still answers its client (every call says why), and
		// says why on standard error; no session starts.
		out, code := run(t, "mcp", "--no-cwd", "--rw", build, "--network", "none")
		if !strings.Contains(out, want) {
			t.Fatalf("exit %d, want the server's session refused with %q:\n%s", code, want, out)
		}
		if strings.Contains(out, "openworker mcp: session ") {
			t.Fatalf("the server's session started:\n%s", out)
		}
	})
	// A folder beside it is fine.
	src := filepath.Join(w.project, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	out, code := run(t, "session", "start", "--no-cwd", "--rw", src, "--network", "none", "--provider", "linux")
	if code != 0 {
		t.Fatalf("a session beside the build folder: exit %d\n%s", code, out)
	}
	id, _, _ := strings.Cut(out, "\n")
	// Nor may the build folder be added to it later: the session remembers whose it is.
	if out, code := run(t, "session", "add-folder", id, build); code == 0 || !strings.Contains(out, want) {
		t.Errorf("adding the build folder: exit %d, want %q:\n%s", code, want, out)
	}
	run(t, "session", "end", id)
}
