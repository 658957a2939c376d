package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
)

// TestLinkPlantedBySessionIsNotFollowed: a symlink in a folder any session had writable is
// never followed to a later session's folder, though the session has ended and the later
// one is started by another process.
func TestLinkPlantedBySessionIsNotFollowed(t *testing.T) {
	direct := map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}}
	f := newFixture(t, direct)
	private := filepath.Join(f.home, "private")
	os.MkdirAll(private, 0o755)
	s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.Exec(runner.ExecArgs{Command: `mkdir vendor && ln -s ` + private + ` vendor/lib`}, nil); err != nil || r.ExitCode != 0 {
		t.Fatalf("planting: %v %+v", err, r)
	}
	s.End()
	// Another process: a manager of its own on the same state folder.
	m2, err := NewManager(f.m.opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m2.Start(context.Background(), Spec{Provider: sandbox.Direct, ReadOnly: []string{filepath.Join(f.project, "vendor", "lib")}, Network: policy.None})
	var unsafe *policy.UnsafeLinkError
	if !errors.As(err, &unsafe) {
		t.Fatalf("got %v, want the planted link refused", err)
	}
}

// TestWorkingFolderIsResolved: a session given its folder by a symlinked path starts its
// commands where the policy resolved it.
func TestWorkingFolderIsResolved(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	link := filepath.Join(filepath.Dir(f.project), "link")
	if err := os.Symlink(f.project, link); err != nil {
		t.Fatal(err)
	}
	s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{link}, Network: policy.None})
	if err != nil {
		t.Fatal(err)
	}
	defer s.End()
	r, err := s.Exec(runner.ExecArgs{Command: `pwd -P; pwd`}, nil)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("exec: %v %+v", err, r)
	}
	if got := strings.Fields(string(r.Stdout)); len(got) != 2 || got[0] != f.project || got[1] != f.project {
		t.Fatalf("working folder %q, want %s", r.Stdout, f.project)
	}
}
