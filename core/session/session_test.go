package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/seatbelt"
)

// The test binary doubles as the tool runner, as the openworker binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == RunnerArg {
		if err := runner.Main(); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// pretender starts the runner with no wall at all but claims to be a sandbox: the wall
// check must catch it.
type pretender struct{ sandbox.DirectProvider }

func (pretender) Name() sandbox.Enforcement { return sandbox.Linux }

type fixture struct {
	m       *Manager
	home    string
	project string
	tmpRoot string
	log     string
}

func newFixture(t *testing.T, provs map[sandbox.Enforcement]sandbox.Provider) *fixture {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	f := &fixture{home: filepath.Join(root, "home"), project: filepath.Join(root, "project"), tmpRoot: filepath.Join(root, "tmp")}
	for _, d := range []string{f.home, f.project, f.tmpRoot} {
		os.MkdirAll(d, 0o755)
	}
	f.log = filepath.Join(f.home, "state", "audit.jsonl")
	l, err := audit.Open(f.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	exe, _ := os.Executable()
	f.m, err = NewManager(Options{Providers: provs, UserHome: f.home, StateDir: filepath.Join(f.home, "state"), TmpRoot: f.tmpRoot,
		GOOS: "linux", RunnerPath: exe, HostEnv: []string{"PATH=" + os.Getenv("PATH"), "GITHUB_TOKEN=x"}, Audit: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.m.EndAll)
	return f
}

func TestWallCheckRefusesAWallThatIsNotUp(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Linux: pretender{}})
	_, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Linux, Writable: []string{f.project}, Network: policy.None})
	var re *RefusedError
	if !errors.As(err, &re) || re.Check != "home hidden" || re.Target != f.home {
		t.Fatalf("got %v, want the session refused by the home check", err)
	}
	if des, _ := os.ReadDir(f.tmpRoot); len(des) != 0 {
		t.Fatalf("a refused session left %d private tmp folder(s)", len(des))
	}
	if len(f.m.List()) != 0 {
		t.Fatal("a refused session is listed as running")
	}
	b, _ := os.ReadFile(f.log)
	if !strings.Contains(string(b), `"type":"session.refused"`) || !strings.Contains(string(b), "home hidden") {
		t.Fatalf("refusal not audited:\n%s", b)
	}
}

func TestDirectSessionLifecycle(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
	if err != nil {
		t.Fatal(err)
	}
	des, _ := os.ReadDir(f.tmpRoot)
	if len(des) != 1 {
		t.Fatalf("%d private tmp folders, want 1", len(des))
	}
	tmp := filepath.Join(f.tmpRoot, des[0].Name())
	if fi, _ := os.Stat(tmp); fi.Mode().Perm() != 0o700 {
		t.Fatalf("private tmp mode %v, want 0700", fi.Mode().Perm())
	}
	r, err := s.Exec(runner.ExecArgs{Command: `export A=1; echo "$HOME $GITHUB_TOKEN"`}, nil)
	if err != nil || r.Enforcement != sandbox.Direct {
		t.Fatalf("exec: %v %+v", err, r)
	}
	if got := strings.TrimSpace(string(r.Stdout)); got != filepath.Join(tmp, "home") {
		t.Fatalf("HOME and token inside: %q", got)
	}
	r, _ = s.Exec(runner.ExecArgs{Command: `echo "$A"`}, nil)
	if string(r.Stdout) != "1\n" {
		t.Fatalf("export did not carry over: %q", r.Stdout)
	}
	s.End()
	if _, err := os.Stat(tmp); err == nil {
		t.Fatal("private tmp left after End")
	}
	if _, err := s.Exec(runner.ExecArgs{Command: "true"}, nil); !errors.Is(err, ErrEnded) {
		t.Fatalf("exec after End: %v", err)
	}
}

func TestCleanStaleRemovesOnlyDeadOwnersFolders(t *testing.T) {
	f := newFixture(t, nil)
	dead := filepath.Join(f.tmpRoot, "openworker-dead")
	os.MkdirAll(filepath.Join(dead, "home", ".ssh"), 0o700)
	os.WriteFile(filepath.Join(f.home, "state", "sessions", "dead.json"), []byte(`{"id":"dead","tmp":"`+dead+`","pid":1}`), 0o600)
	// A record naming anything but a private tmp folder is never followed.
	victim := filepath.Join(f.home, "precious")
	os.Mkdir(victim, 0o700)
	os.WriteFile(filepath.Join(f.home, "state", "sessions", "evil.json"), []byte(`{"id":"evil","tmp":"`+victim+`","pid":1}`), 0o600)
	// A live owner's record is locked and left alone.
	live := filepath.Join(f.tmpRoot, "openworker-live")
	os.Mkdir(live, 0o700)
	lock, err := f.m.claim("live", live)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	removed := f.m.CleanStale()
	if len(removed) != 1 || removed[0] != dead {
		t.Fatalf("removed %v, want only %s", removed, dead)
	}
	for _, p := range []string{victim, live} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s was removed", p)
		}
	}
}

func TestDenialsJoinTheResult(t *testing.T) {
	r := &Result{Result: &runner.Result{Stderr: []byte("curl: (7) Failed\n")}, Blocked: []Blocked{{Host: "example.com", Port: 443, Reason: "not on the allow list"}}}
	ds := []seatbelt.Denial{
		{Process: "curl", PID: 42, Operation: "network-outbound", Target: "93.184.216.34:443", Count: 1},
		{Process: "touch", PID: 43, Operation: "file-write-create", Target: "/Users/me/notes.txt", Count: 1},
	}
	var streamed []string
	applyDenials(r, seatbelt.Summarize(ds), func(s string, d []byte) { streamed = append(streamed, s+":"+string(d)) })
	if len(r.Blocked) != 2 || r.Blocked[1].Host != "93.184.216.34" || r.Blocked[1].Reason != "a direct connection, not through the egress proxy" {
		t.Fatalf("blocked: %+v", r.Blocked)
	}
	stderr := string(r.Stderr)
	if !strings.HasPrefix(stderr, "curl: (7) Failed\nopenworker sandbox: Seatbelt denied 2 operation(s) of this command:\n") ||
		!strings.Contains(stderr, "  file-write-create /Users/me/notes.txt (touch)\n") {
		t.Fatalf("report not appended to the error output:\n%s", stderr)
	}
	if len(streamed) != 1 || !strings.HasPrefix(streamed[0], "stderr:openworker sandbox:") {
		t.Fatalf("report not streamed: %q", streamed)
	}
	if len(r.Denials) != 2 {
		t.Fatalf("denials %v", r.Denials)
	}
}
