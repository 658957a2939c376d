package api

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == session.RunnerArg {
		if runner.Main() != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestLocalAPI(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home, state, project := filepath.Join(root, "home"), filepath.Join(root, "home", "state"), filepath.Join(root, "project")
	os.MkdirAll(project, 0o755)
	os.MkdirAll(home, 0o700)
	exe, _ := os.Executable()
	store, err := backend.OpenStore(context.Background(), filepath.Join(root, "config.toml"), state, "linux", false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := backend.New(backend.Options{Settings: store, GOOS: "linux", Session: session.Options{Providers: map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}},
		UserHome: home, StateDir: state, TmpRoot: root, GOOS: "linux", RunnerPath: exe, HostEnv: []string{"PATH=" + os.Getenv("PATH")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.EndAll()
	srv := &Server{Backend: b}
	l, err := Listen(state)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())
	for _, p := range []string{state, SocketPath(state)} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s is not owner-only: %v %v", p, fi.Mode(), err)
		}
	}
	if _, err := Listen(state); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("a second daemon on the same socket: %v", err)
	}
	c := apiclient.New(SocketPath(state))
	ctx := context.Background()
	for _, req := range []StartRequest{{Writable: []string{"project"}}, {Writable: []string{project}, ReadOnly: []string{"docs"}}} {
		if _, err := c.Start(ctx, req); err == nil || !strings.Contains(err.Error(), "is relative") {
			t.Fatalf("start with %+v: %v, want a refusal of the relative folder", req, err)
		}
	}
	info, err := c.Start(ctx, StartRequest{Writable: []string{project}})
	if err != nil || info.Enforcement != "direct" {
		t.Fatalf("start: %v %+v", err, info)
	}
	var chunks []string
	res, err := c.ExecStream(ctx, info.ID, ExecRequest{Command: "echo hi; exit 4"}, nil, func(s string, d []byte) { chunks = append(chunks, s+":"+string(d)) })
	if err != nil || res.ExitCode != 4 || res.Enforcement != sandbox.Direct || strings.Join(chunks, "") != "stdout:hi\n" {
		t.Fatalf("exec: %v %+v %q", err, res, chunks)
	}
	// One word in argv is a program's name, not a shell command; both fields at once are refused.
	os.WriteFile(filepath.Join(project, "pwn"), nil, 0o644)
	res, err = c.Exec(ctx, info.ID, ExecRequest{Argv: []string{"rm pwn"}})
	if err != nil || res.ExitCode != 127 {
		t.Fatalf(`exec argv ["rm pwn"]: %v %+v, want 127 (no program of that name)`, err, res)
	}
	if _, err := os.Stat(filepath.Join(project, "pwn")); err != nil {
		t.Fatalf(`exec argv ["rm pwn"] ran a shell: %v`, err)
	}
	if _, err := c.Exec(ctx, info.ID, ExecRequest{Command: "true", Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("exec with both command and argv: %v, want a refusal", err)
	}
	if err := c.End(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, info.ID, ExecRequest{Command: "true"}); err == nil || !strings.Contains(err.Error(), "no session") {
		t.Fatalf("exec after end: %v", err)
	}
}

// A stop that comes before the daemon serves (a signal right after start) still stops it.
func TestShutdownBeforeServe(t *testing.T) {
	state := t.TempDir()
	l, err := Listen(state)
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{}
	srv.Shutdown(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after Shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		l.Close()
		t.Fatal("Serve kept serving after Shutdown")
	}
	if _, err := net.Dial("unix", SocketPath(state)); err == nil {
		t.Error("the socket still accepts connections")
	}
}
