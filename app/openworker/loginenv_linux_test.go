package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/api"
	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/apitype"
)

// A daemon started by systemd or launchd has a minimal PATH: its sessions still find the
// tools on the person's login PATH, and a client's own PATH wins over it.
func TestDaemonSessionsGetTheLoginPath(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	root := filepath.Dir(w.project)
	tools, other := filepath.Join(root, "tools"), filepath.Join(root, "other-tools")
	for dir, says := range map[string]string{tools: "from the login PATH", other: "from the client PATH"} {
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, "mytool"), []byte("#!/bin/sh\necho "+says+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The person's login shell puts the tools on PATH.
	if err := os.WriteFile(filepath.Join(w.home, ".profile"), []byte(`export PATH="`+tools+`:$PATH"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The daemon as systemd starts it: a bare environment.
	bareDaemon(t, w, "/bin/sh")
	exec := func(env map[string]string) string {
		t.Helper()
		return daemonExec(t, w, []string{tools, other}, env, "mytool")
	}
	// A client that sends no PATH (env set, but empty) gets the login one.
	if out := exec(map[string]string{}); !strings.Contains(out, "from the login PATH") {
		t.Fatalf("a session of a daemon with a bare PATH did not find the login PATH's tool: %q", out)
	}
	if out := exec(map[string]string{"PATH": other + ":/usr/bin:/bin"}); !strings.Contains(out, "from the client PATH") {
		t.Fatalf("the client's PATH did not win: %q", out)
	}
}

// The login shell is read off the daemon's (and the app's) start: the local API answers at
// once while a slow startup file runs, and only a session waits for the login PATH.
func TestLoginShellIsReadOffTheStart(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	root := filepath.Dir(w.project)
	tools := filepath.Join(root, "tools")
	os.MkdirAll(tools, 0o755)
	if err := os.WriteFile(filepath.Join(tools, "mytool"), []byte("#!/bin/sh\necho from the login PATH\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A login shell whose startup files take 3 s (nvm's and conda's take seconds), with no
	// SHELL in the daemon's environment: the account's shell is not it, so it is named.
	slow := filepath.Join(root, "slow-login-shell")
	os.WriteFile(slow, []byte("#!/bin/sh\nsleep 3\nPATH=\""+tools+":$PATH\"; export PATH\nexec /bin/sh -c \"$4\"\n"), 0o755)
	if took := bareDaemon(t, w, slow); took > 2500*time.Millisecond {
		t.Errorf("the local API came after %v: it waited for the login shell (3 s)", took)
	}
	if out := daemonExec(t, w, []string{tools}, map[string]string{}, "mytool"); !strings.Contains(out, "from the login PATH") {
		t.Fatalf("a session started while the login shell ran did not get its PATH: %q", out)
	}
}

// bareDaemon starts `openworker serve` as launchd or systemd would, with a bare environment
// whose SHELL is shell, stopped when the test ends, and returns how long its local API took
// to come.
func bareDaemon(t *testing.T, w *world, shell string) time.Duration {
	t.Helper()
	d := w.cmd("serve")
	d.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + w.home, "SHELL=" + shell,
		"XDG_CONFIG_HOME=" + filepath.Join(w.home, ".config"), "XDG_STATE_HOME=" + filepath.Join(w.home, ".local", "state")}
	stderr, _ := d.StderrPipe()
	start := time.Now()
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Process.Signal(syscall.SIGTERM); d.Wait() })
	ready := make(chan time.Duration, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "serving the local API") {
				ready <- time.Since(start)
			}
		}
	}()
	select {
	case took := <-ready:
		return took
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon did not start")
	}
	return 0
}

// daemonExec runs command in a session of the daemon of w on its project, with readOnly
// shared and env as the client's, and returns what it printed; the session ends after.
func daemonExec(t *testing.T, w *world, readOnly []string, env map[string]string, command string) string {
	t.Helper()
	c := apiclient.New(api.SocketPath(w.state))
	ctx := context.Background()
	info, err := c.Start(ctx, apitype.StartRequest{Provider: "linux", Writable: []string{w.project}, ReadOnly: readOnly, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer c.End(ctx, info.ID)
	res, err := c.Exec(ctx, info.ID, apitype.ExecRequest{Command: command})
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Stdout) + string(res.Stderr)
}
