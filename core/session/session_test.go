package session

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/audit"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/linux"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
)

// The test binary doubles as the tool runner, as the openworker binary does.
func TestMain(m *testing.M) {
	linux.MaybeRunInit()
	if len(os.Args) > 1 && os.Args[1] == runner.EnvArg {
		runner.PrintEnv(os.Stdout)
		os.Exit(0)
	}
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
	lock, err := f.m.claim(&Session{ID: "live", tmp: live, m: f.m})
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
	ds := sandbox.Denials{
		Text:   "openworker sandbox: Seatbelt denied 2 operation(s) of this command:\n  network-outbound 93.184.216.34:443 (curl)\n  file-write-create /Users/me/notes.txt (touch)\n",
		Listed: []string{"network-outbound 93.184.216.34:443 (curl)", "file-write-create /Users/me/notes.txt (touch)"},
		Egress: []sandbox.Egress{{Host: "93.184.216.34", Port: 443, Reason: "a direct connection, not through the egress proxy"}, {Host: "example.com", Port: 443, Reason: "not on the allow list"}},
	}
	var streamed []string
	applyDenials(r, ds, func(s string, d []byte) { streamed = append(streamed, s+":"+string(d)) })
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

// A command that cannot start is the command's failure, reported as a shell reports it;
// the session stays usable.
func TestCommandsThatCannotStart(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(f.project, "script.py")
	if err := os.WriteFile(script, []byte("print(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   runner.ExecArgs
		code   int
		stderr string
	}{
		{"not_found", runner.ExecArgs{Argv: []string{"nosuchcmd"}}, 127, "nosuchcmd: command not found"},
		{"not_executable", runner.ExecArgs{Argv: []string{"./script.py"}}, 126, "./script.py: permission denied"},
		{"no_working_folder", runner.ExecArgs{Argv: []string{"true"}, Dir: filepath.Join(f.project, "gone")}, 126, "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := s.Exec(tc.args, nil)
			if err != nil {
				t.Fatalf("exec: %v", err)
			}
			if r.ExitCode != tc.code || !strings.Contains(string(r.Stderr), tc.stderr) {
				t.Fatalf("exit %d stderr %q error %q; want %d and %q", r.ExitCode, r.Stderr, r.Error, tc.code, tc.stderr)
			}
			// The session is still usable, in the folder it was in.
			r, err = s.Exec(runner.ExecArgs{Command: "pwd"}, nil)
			if err != nil || r.ExitCode != 0 || strings.TrimSpace(string(r.Stdout)) != f.project {
				t.Fatalf("the next exec: %v %+v", err, r)
			}
		})
	}
}

func startDirect(t *testing.T) (*fixture, *Session) {
	t.Helper()
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
	if err != nil {
		t.Fatal(err)
	}
	return f, s
}

// waitForFile waits until path exists: a command got as far as making it.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	tstest.WaitFor(t, 10*time.Second, func() error {
		if _, err := os.Stat(path); err != nil {
			return err
		}
		return nil
	})
}

// An interrupt reaches the command, whose cleanup runs; the result and the audit trail say
// it was interrupted, and the session stays usable.
func TestSignalReachesTheCommand(t *testing.T) {
	f, s := startDirect(t)
	ready, cleaned := filepath.Join(f.project, "ready"), filepath.Join(f.project, "cleaned")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *Result, 1)
	go func() {
		r, err := s.ExecContext(ctx, runner.ExecArgs{Command: "trap 'touch " + cleaned + "; exit 9' INT; touch " + ready + "; while :; do sleep 0.05; done"}, nil, nil)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	waitForFile(t, ready)
	cancel() // as the daemon does when its client goes away (Ctrl-C on session exec)
	var r *Result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the interrupted command did not end")
	}
	if r == nil {
		t.Fatal("no result")
	}
	if r.Interrupted != "SIGINT" || r.ExitCode != 9 {
		t.Fatalf("interrupted %q exit %d; want SIGINT and the trap's 9", r.Interrupted, r.ExitCode)
	}
	if _, err := os.Stat(cleaned); err != nil {
		t.Fatal("the command's INT trap did not run")
	}
	if r, err := s.Exec(runner.ExecArgs{Command: "echo still"}, nil); err != nil || string(r.Stdout) != "still\n" {
		t.Fatalf("the session after an interrupt: %v %+v", err, r)
	}
	b, _ := os.ReadFile(f.log)
	if !strings.Contains(string(b), `"type":"tool.started"`) || !strings.Contains(string(b), `"outcome":"interrupted"`) {
		t.Fatalf("the interrupted call has no end record:\n%s", b)
	}
}

// A command that ignores SIGINT and SIGTERM is still ended.
func TestSignalEscalates(t *testing.T) {
	f, s := startDirect(t)
	ready := filepath.Join(f.project, "ready")
	done := make(chan *Result, 1)
	go func() {
		r, _ := s.ExecContext(context.Background(), runner.ExecArgs{Command: "trap '' INT TERM; touch " + ready + "; while :; do sleep 0.05; done"}, nil, nil)
		done <- r
	}()
	waitForFile(t, ready)
	s.Signal(syscall.SIGTERM)
	select {
	case r := <-done:
		if r == nil || r.Interrupted != "SIGTERM" || r.ExitCode != 128+int(syscall.SIGKILL) {
			t.Fatalf("result %+v; want interrupted by SIGTERM and killed", r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a command that ignores signals was never ended")
	}
}

func TestSecondCallWhileOneRunsIsRefused(t *testing.T) {
	f, s := startDirect(t)
	ready := filepath.Join(f.project, "ready")
	done := make(chan struct{})
	go func() {
		s.Exec(runner.ExecArgs{Command: "touch " + ready + "; sleep 30"}, nil)
		close(done)
	}()
	waitForFile(t, ready)
	_, err := s.Exec(runner.ExecArgs{Command: "true"}, nil)
	var be *BusyError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "sleep 30") {
		t.Fatalf("second exec: %v; want a refusal naming the running command", err)
	}
	// Ending the session does not wait for the command.
	start := time.Now()
	s.End()
	<-done
	if time.Since(start) > 10*time.Second {
		t.Fatalf("End waited %v for the running command", time.Since(start))
	}
}

func TestStdinIsStreamed(t *testing.T) {
	_, s := startDirect(t)
	// More than the window, so the command's pace decides.
	in := strings.Repeat("line of input\n", 200000)
	r, err := s.ExecContext(context.Background(), runner.ExecArgs{Command: "wc -c"}, strings.NewReader(in), nil)
	if err != nil || strings.TrimSpace(string(r.Stdout)) != strconv.Itoa(len(in)) {
		t.Fatalf("wc -c of %d bytes: %v %q", len(in), err, r.Stdout)
	}
	// A command that does not read its input still ends, and the next one works.
	r, err = s.ExecContext(context.Background(), runner.ExecArgs{Command: "echo done"}, strings.NewReader(in), nil)
	if err != nil || string(r.Stdout) != "done\n" {
		t.Fatalf("a command that ignores its input: %v %+v", err, r)
	}
	r, err = s.Exec(runner.ExecArgs{Command: "cat"}, nil)
	if err != nil || r.ExitCode != 0 || len(r.Stdout) != 0 {
		t.Fatalf("without input, cat reads nothing: %v %+v", err, r)
	}
}

// A session whose owner died mid-call gets its call's end and its own end in the audit
// trail at the next start.
func TestCleanStaleEndsTheDeadSessionInTheAudit(t *testing.T) {
	f := newFixture(t, nil)
	dead := filepath.Join(f.tmpRoot, "openworker-dead")
	os.MkdirAll(dead, 0o700)
	os.WriteFile(filepath.Join(f.home, "state", "sessions", "dead.json"),
		[]byte(`{"id":"dead","tmp":"`+dead+`","pid":1,"enforcement":"linux","network":"allowlist","call":{"tool":"exec","summary":"npm install","start":"2026-01-01T00:00:00Z"}}`), 0o600)
	f.m.CleanStale()
	b, _ := os.ReadFile(f.log)
	for _, want := range []string{`"type":"tool.call","session":"dead","tool":"exec","summary":"npm install"`, `"outcome":"daemon ended"`, `"type":"session.ended","session":"dead"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("audit trail lacks %s:\n%s", want, b)
		}
	}
}

// fakeReport is a command's report as a wall gives it, which keeps what it was told of
// the run.
type fakeReport struct {
	got *sandbox.DenialRun
	out sandbox.Denials
}

func (f fakeReport) Close(run sandbox.DenialRun) sandbox.Denials { *f.got = run; return f.out }

// A command's report is told whether the command failed, the real home folder and the
// local-servers switch; its denials join the result and the session's violations file.
func TestReportToldOfTheRun(t *testing.T) {
	var got sandbox.DenialRun
	var gotMarker string
	out := sandbox.Denials{Listed: []string{"file-read-metadata /Users/me/node_modules (node)"}, Violations: []byte("{\"process\":\"node\"}\n")}
	state := t.TempDir()
	s := &Session{ID: "s1", Enforcement: sandbox.Seatbelt, pol: &policy.Policy{UserHome: "/Users/me", Marker: "openworker-0123456789", LocalServers: true},
		m: &Manager{opts: Options{StateDir: state, FollowDenials: func(_ context.Context, marker string, _ sandbox.Process) (sandbox.DenialReport, error) {
			gotMarker = marker
			return fakeReport{&got, out}, nil
		}}}}
	for _, exit := range []int{0, 1} {
		r := &Result{Result: &runner.Result{ExitCode: exit}}
		s.startDenials(nil)(r)
		if want := (sandbox.DenialRun{UserHome: "/Users/me", Failed: exit != 0, LocalServers: true}); got != want || gotMarker != s.pol.Marker {
			t.Errorf("exit %d: the report was told %+v (marker %q), want %+v", exit, got, gotMarker, want)
		}
		if len(r.Denials) != 1 {
			t.Errorf("exit %d: denials %v", exit, r.Denials)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(state, "violations", "s1.jsonl")); strings.Count(string(b), "\n") != 2 {
		t.Errorf("violations file %q, want both runs' lines", b)
	}
	// A wall whose denials cannot be read says so first in the error output.
	s.m.opts.FollowDenials = func(context.Context, string, sandbox.Process) (sandbox.DenialReport, error) {
		return nil, errors.New("Seatbelt's denials are not reported for this run: reading the unified log needs an administrator account")
	}
	r := &Result{Result: &runner.Result{Stderr: []byte("boom\n")}}
	s.startDenials(nil)(r)
	if want := "openworker sandbox: Seatbelt's denials are not reported for this run: reading the unified log needs an administrator account\nboom\n"; string(r.Stderr) != want {
		t.Errorf("error output %q, want %q", r.Stderr, want)
	}
}

// recorder is a provider that keeps the policy it was asked to wall, then fails: enough to
// see what a session asks of its wall.
type recorder struct {
	name sandbox.Enforcement
	got  *policy.Policy
}

func (r *recorder) Name() sandbox.Enforcement             { return r.name }
func (r *recorder) Status(context.Context) sandbox.Status { return sandbox.Status{OK: true} }
func (r *recorder) Start(_ context.Context, p *policy.Policy, _ sandbox.RunnerSpec) (sandbox.Process, error) {
	r.got = p
	return nil, errors.New("recorded")
}

// On a Mac the sandbox shares the host's loopback: an allowed loopback entry reaches the
// profile (Forwards), and so does the person's local-servers switch.
func TestSeatbeltGetsLoopbackEntriesAndLocalServers(t *testing.T) {
	rec := &recorder{name: sandbox.Seatbelt}
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Seatbelt: rec})
	pg, err := hosts.Parse("127.0.0.1:5432")
	if err != nil {
		t.Fatal(err)
	}
	web, _ := hosts.Parse("example.com")
	_, err = f.m.Start(context.Background(), Spec{Provider: sandbox.Seatbelt, Writable: []string{f.project}, Network: policy.Allowlist,
		SessionHosts: []hosts.Entry{pg, web}, LocalServers: true})
	if rec.got == nil {
		t.Fatalf("the provider was not asked to start (%v)", err)
	}
	if want := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:5432")}; !slices.Equal(rec.got.Forwards, want) {
		t.Errorf("Forwards = %v, want %v", rec.got.Forwards, want)
	}
	if !rec.got.LocalServers {
		t.Error("the local-servers switch did not reach the policy")
	}
}

type stateful struct {
	recorder
	dir string
}

func (s *stateful) UseStateDir(dir string) { s.dir = dir }

// A provider that keeps what it learned of the machine is told the state folder.
func TestProviderToldTheStateFolder(t *testing.T) {
	p := &stateful{recorder: recorder{name: sandbox.Seatbelt}}
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Seatbelt: p})
	if want := filepath.Join(f.home, "state"); p.dir != want {
		t.Errorf("state folder %q, want %q", p.dir, want)
	}
}

// reporter is a direct provider whose wall reports denials: it counts how often what it
// keeps running for that was stopped.
type reporter struct {
	sandbox.DirectProvider
	stopped *atomic.Int32
}

func (reporter) FollowDenials(context.Context, string, sandbox.Process) (sandbox.DenialReport, error) {
	return nil, errors.New("no report here")
}
func (r reporter) StopFollowing() { r.stopped.Add(1) }

// What a provider keeps running to report denials (the unified log's stream on a Mac) ends
// when the process's sessions end: at EndAll (the daemon or the app stopping, a check
// ending) and at a run's EndBeforeExit.
func TestEndingStopsFollowingDenials(t *testing.T) {
	stopped := &atomic.Int32{}
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: reporter{stopped: stopped}})
	s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
	if err != nil {
		t.Fatal(err)
	}
	s.EndBeforeExit("its command finished")
	if n := stopped.Load(); n != 1 {
		t.Errorf("after a run's end, following was stopped %d times, want once", n)
	}
	f.m.EndAll()
	if n := stopped.Load(); n != 2 {
		t.Errorf("after EndAll, following was stopped %d times in all, want twice", n)
	}
}

// The person's local-servers switch of a running session restarts its runner behind a wall
// with the switch as asked (a profile is fixed when a process starts), as adding a folder
// does: the session goes on, the next result says shell state was lost, the audit says why.
func TestSetLocalServersRestartsTheWall(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
	if err != nil {
		t.Fatal(err)
	}
	if s.LocalServers() {
		t.Fatal("a session started without the switch has it on")
	}
	if err := s.SetLocalServers(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if !s.LocalServers() {
		t.Error("the switch is still off")
	}
	r, err := s.Exec(runner.ExecArgs{Command: "echo after"}, nil)
	if err != nil || string(r.Stdout) != "after\n" {
		t.Fatalf("after the restart: %v %+v", err, r)
	}
	if !r.ShellStateLost {
		t.Error("the next result does not say shell state was lost")
	}
	b, _ := os.ReadFile(f.log)
	if !strings.Contains(string(b), `"type":"session.restarted"`) || !strings.Contains(string(b), "local servers on") {
		t.Errorf("the audit trail lacks the restart:\n%s", b)
	}
	// Asking for what it already is changes nothing.
	if err := s.SetLocalServers(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Exec(runner.ExecArgs{Command: "true"}, nil); r.ShellStateLost {
		t.Error("a switch already on restarted the runner again")
	}
}
