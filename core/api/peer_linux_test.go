package api

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/apiclient"
	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
)

// TestPeerProgramIsGuarded: the daemon guards the program the kernel says is at the other
// end of the connection, whatever the client names: a folder that holds it is not shared
// writable. Here the client is this test's binary and names the daemon's program instead.
func TestPeerProgramIsGuarded(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home, state := filepath.Join(root, "home"), filepath.Join(root, "home", "state")
	os.MkdirAll(home, 0o700)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ = filepath.EvalSymlinks(exe)
	// The daemon's program is a copy elsewhere, so that only the client's guard can refuse.
	daemon := filepath.Join(root, "daemon", "openworker")
	os.MkdirAll(filepath.Dir(daemon), 0o755)
	b, _ := os.ReadFile(exe)
	if err := os.WriteFile(daemon, b, 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := backend.OpenStore(context.Background(), filepath.Join(root, "config.toml"), state, "linux", false)
	if err != nil {
		t.Fatal(err)
	}
	be, err := backend.New(backend.Options{Settings: store, GOOS: "linux", Session: session.Options{Providers: map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}},
		UserHome: home, StateDir: state, TmpRoot: root, GOOS: "linux", RunnerPath: daemon, HostEnv: []string{"PATH=" + os.Getenv("PATH")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer be.EndAll()
	srv := &Server{Backend: be}
	l, err := Listen(state)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())
	c := apiclient.New(SocketPath(state))
	_, err = c.Start(context.Background(), StartRequest{Provider: "direct", Writable: []string{filepath.Dir(exe)}, Program: daemon})
	if want := "contains the program of the client that asked for this session " + exe; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("start with the client's folder writable: %v, want %q", err, want)
	}
	beside := filepath.Join(root, "beside")
	os.MkdirAll(beside, 0o755)
	info, err := c.Start(context.Background(), StartRequest{Provider: "direct", Writable: []string{beside}, Program: daemon})
	if err != nil {
		t.Fatalf("start beside it: %v", err)
	}
	c.End(context.Background(), info.ID)
}
