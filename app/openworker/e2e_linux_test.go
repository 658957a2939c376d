package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// These tests drive the real binary, as a user or a script would, behind the real wall of
// this OS. They need a provider that works here; where none does they are skipped with the
// reason `openworker sandbox check` gives.

var binary string

func TestMain(m *testing.M) {
	// A test that runs again in a network namespace of its own (see inNetNS) is given the
	// binaries its parent built.
	if dir := os.Getenv(builtEnv); dir != "" {
		binary = filepath.Join(dir, "openworker")
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "openworker-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "openworker")
	// As build.sh builds it on Linux: static, without cgo, which starts faster; with the
	// agent hosts' shell beside it, as build.sh puts it.
	for _, b := range []struct{ out, pkg string }{{binary, "."}, {filepath.Join(dir, "openworker-shell"), "../openworker-shell"}} {
		build := exec.Command("go", "build", "-o", b.out, b.pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", b.pkg, err, out)
			os.Exit(1)
		}
	}
	os.Setenv(builtEnv, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// builtEnv names the folder of the binaries the test binary built.
const builtEnv = "OPENWORKER_TEST_BUILT"

// world is a fake user: a home folder with a planted secret, settings and state of its own,
// and a project folder outside the home.
type world struct {
	t       *testing.T
	home    string
	project string
	env     []string
	state   string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("end-to-end tests run the Linux provider")
	}
	// A short root: the daemon's socket lies in the state folder under it, and a Unix
	// socket's path is at most 107 bytes.
	root, err := os.MkdirTemp("", "ow")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	w := &world{t: t, home: filepath.Join(root, "home"), project: filepath.Join(root, "project")}
	for _, d := range []string{w.project, filepath.Join(w.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.home, ".ssh", "id_ed25519"), []byte("-----BEGIN OPENSSH PRIVATE KEY----- planted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.state = filepath.Join(w.home, ".local", "state", "openworker")
	w.env = []string{
		"HOME=" + w.home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8",
		"XDG_CONFIG_HOME=" + filepath.Join(w.home, ".config"), "XDG_STATE_HOME=" + filepath.Join(w.home, ".local", "state"),
		"GITHUB_TOKEN=ghp_planted", "AWS_SECRET_ACCESS_KEY=planted", "MY_API_KEY=planted",
	}
	return w
}

func (w *world) cmd(args ...string) *exec.Cmd {
	c := exec.Command(binary, args...)
	c.Env = w.env
	c.Dir = w.project
	return c
}

// run runs the binary and returns stdout, stderr and the exit status.
func (w *world) run(args ...string) (string, string, int) {
	w.t.Helper()
	return w.runWith(nil, args...)
}

// runWith is run with env on top of the world's.
func (w *world) runWith(env []string, args ...string) (string, string, int) {
	w.t.Helper()
	c := w.cmd(args...)
	c.Env = append(c.Env[:len(c.Env):len(c.Env)], env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("running openworker %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// sandboxHere is whether the machine's sandbox works, found once for the test binary: the
// check's battery takes seconds (npm install, cargo build), and the answer is the machine's,
// not a world's.
var sandboxHere struct {
	once sync.Once
	why  string // empty when it works
}

func requireSandbox(t *testing.T, w *world) {
	t.Helper()
	sandboxHere.once.Do(func() {
		if out, errs, code := w.run("sandbox", "check"); code != 0 {
			sandboxHere.why = out + errs
		}
	})
	if sandboxHere.why != "" {
		t.Skipf("no sandbox here: %s", sandboxHere.why)
	}
}

func TestRunWritesTheProjectAndHidesTheHome(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	secret := filepath.Join(w.home, ".ssh", "id_ed25519")
	out, errs, code := w.run("run", "--", "sh", "-c",
		"echo made > made.txt; echo \"$TMPDIR\" > tmpdir.txt; cat "+secret+" && echo SECRET-READ; ls "+w.home+" && echo HOME-LISTED; exit 3")
	if code != 3 {
		t.Fatalf("exit %d, want the command's 3\nstdout %s\nstderr %s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(w.project, "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("file written inside did not appear in the project: %v %q", err, b)
	}
	if strings.Contains(out, "SECRET-READ") || strings.Contains(out, "planted") || strings.Contains(out, "HOME-LISTED") {
		t.Fatalf("the home folder was reachable:\n%s", out)
	}
	if !strings.Contains(errs, "No such file or directory") {
		t.Fatalf("the secret's read did not fail for the expected reason:\n%s", errs)
	}
	w.requireGone("tmpdir.txt")
}

// requireGone checks that the private tmp folder a command wrote down in the project file
// name (its $TMPDIR, which is at the same path inside and out) is gone after its run.
func (w *world) requireGone(name string) {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.project, name))
	tmp := strings.TrimSpace(string(b))
	if err != nil || !strings.HasPrefix(tmp, "/tmp/openworker-") {
		w.t.Fatalf("the command did not write down its private tmp: %v %q", err, b)
	}
	if _, err := os.Lstat(tmp); err == nil {
		w.t.Fatalf("private tmp %s left behind after run", tmp)
	}
}

// run ends everything the command started before it exits. A command that leaves a process
// behind is waited for until the kernel has ended it; one that leaves nothing lets run exit
// without waiting for the sandbox's first process to finish dying, which it then does.
func TestRunEndsEverythingItStarted(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	builders := processes("openworker-linux-wall")

	marker := fmt.Sprint(time.Now().UnixNano() % 1e6)
	out, errs, code := w.run("run", "--", "sh", "-c", "echo \"$TMPDIR\" > tmp1.txt; sleep 300."+marker+" >/dev/null 2>&1 & echo started")
	if code != 0 || out != "started\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if left := processes("sleep", "300."+marker); len(left) > 0 {
		t.Fatalf("the command's background process is still there after run: PIDs %v", left)
	}

	w.requireGone("tmp1.txt")
	// A command that leaves nothing running: run exits without waiting for the sandbox.
	if _, errs, code := w.run("run", "--", "sh", "-c", "echo \"$TMPDIR\" > tmp2.txt"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	w.requireGone("tmp2.txt")
	tstest.WaitFor(t, 5*time.Second, func() error {
		var left []int
		for pid := range processes("openworker-linux-wall") {
			if !builders[pid] {
				left = append(left, pid)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("sandbox first processes still there 5 s after run: PIDs %v", left)
		}
		return nil
	})
}

// Ctrl-C on run ends the command behind the wall at once, not when it finishes.
func TestRunStopsOnInterrupt(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	marker := fmt.Sprint(time.Now().UnixNano() % 1e6)
	c := w.cmd("run", "--", "sh", "-c", "echo started; exec sleep 9."+marker)
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "started\n" {
		c.Process.Kill()
		c.Wait()
		t.Fatalf("first line %q", line)
	}
	start := time.Now()
	c.Process.Signal(os.Interrupt)
	err = c.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("after Ctrl-C: %v, want exit status 130", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("run took %v to stop after Ctrl-C", d)
	}
	if left := processes("sleep", "9."+marker); len(left) > 0 {
		t.Errorf("the command still runs after run stopped: PIDs %v", left)
	}
}

// processes returns the PIDs of the live processes whose command line is exactly argv.
func processes(argv ...string) map[int]bool {
	want := []byte(strings.Join(argv, "\x00") + "\x00")
	pids := map[int]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err == nil && bytes.Equal(b, want) && !bytes.Contains(stat, []byte(") Z ")) {
			pids[pid] = true
		}
	}
	return pids
}

func TestRunEnvironmentHasNoSecrets(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	out, errs, code := w.run("run", "--", "env")
	if code != 0 {
		t.Fatalf("env failed: %d %s", code, errs)
	}
	for _, k := range []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "MY_API_KEY", "planted"} {
		if strings.Contains(out, k) {
			t.Errorf("%s reached the sandbox:\n%s", k, out)
		}
	}
	vars := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, "=")
		vars[k] = v
	}
	if !strings.HasPrefix(vars["HOME"], "/tmp/openworker-") || !strings.HasPrefix(vars["TMPDIR"], "/tmp/openworker-") {
		t.Errorf("HOME=%q TMPDIR=%q, want the private tmp", vars["HOME"], vars["TMPDIR"])
	}
	if !strings.HasPrefix(vars["HTTPS_PROXY"], "http://openworker:") || !strings.Contains(vars["HTTPS_PROXY"], "@127.0.0.1:") || vars["HTTP_PROXY"] != vars["HTTPS_PROXY"] {
		t.Errorf("proxy variables: HTTPS_PROXY=%q HTTP_PROXY=%q", vars["HTTPS_PROXY"], vars["HTTP_PROXY"])
	}
}

func TestRunReportsBlockedSitesAndAdmitsAllowedOnes(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	origin := httpOrigin(t, "hello from the origin")
	_, errs, code := w.run("run", "--", "curl", "-sS", "-o", "/dev/null", "https://blocked.example.com/")
	if code == 0 {
		t.Fatalf("curl to a site not on the list succeeded")
	}
	if !strings.Contains(errs, "openworker: blocked blocked.example.com:443 — not on the allow list (allow with --allow blocked.example.com:443)") {
		t.Fatalf("blocked site not reported after the command:\n%s", errs)
	}
	out, errs, code := w.run("run", "--allow", origin, "--", "curl", "-sS", "http://"+origin+"/")
	if code != 0 || out != "hello from the origin" {
		t.Fatalf("allowed literal-loopback origin: exit %d out %q err %s", code, out, errs)
	}
	// Around the proxy there is no network at all: an allowed host loopback port is
	// forwarded into the sandbox (TestRunReachesAnAllowedHostLoopbackPortDirectly), one
	// that is not allowed is not there.
	_, _, code = w.run("run", "--", "curl", "-sS", "--noproxy", "*", "--max-time", "3", "http://"+origin+"/")
	if code == 0 {
		t.Fatal("a direct connection around the proxy reached the host's loopback")
	}
}

// TestRunSaysWhichAddressOpensANameThatLeadsToLoopback: an allowed name that resolves to a
// loopback address is refused by the proxy, and the line after the command says to allow the
// address (the name is allowed already), as the proxy's own refusal text does. The name is
// made to resolve to 127.0.0.1 by a hosts file of the test's own, bound over /etc/hosts in a
// mount namespace of the run's own.
func TestRunSaysWhichAddressOpensANameThatLeadsToLoopback(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	for _, p := range []string{"curl", "unshare"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed", p)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("binding a hosts file over /etc/hosts needs root")
	}
	origin := httpOrigin(t, "the host's own service")
	_, port, _ := net.SplitHostPort(origin)
	hostsFile := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hostsFile, []byte("127.0.0.1 localhost\n127.0.0.1 db.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c", `mount --bind "$1" /etc/hosts && shift && exec "$@"`,
		"sh", hostsFile, binary, "run", "--allow", "db.test:"+port, "--", "curl", "-sS", "http://db.test:"+port+"/")
	c.Env, c.Dir = w.env, w.project
	var out, errs bytes.Buffer
	c.Stdout, c.Stderr = &out, &errs
	c.Run()
	if strings.Contains(out.String(), "own service") {
		t.Fatalf("an allowed name that resolves to 127.0.0.1 reached the host's service:\n%s", out.String())
	}
	if want := "(allow with --allow 127.0.0.1:" + port + ")"; !strings.Contains(errs.String(), "openworker: blocked db.test:"+port+" — ") || !strings.Contains(errs.String(), want) {
		t.Fatalf("the refusal line does not say %s:\n%s", want, errs.String())
	}
}

func httpOrigin(t *testing.T, body string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

func TestRunRefusesWhenTheWallCheckFails(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	if os.Geteuid() != 0 {
		t.Skip("mounting a read-only folder needs root")
	}
	// A writable folder that cannot be written: the wall check's write probe fails, and
	// the session must be refused rather than run.
	ro := filepath.Join(t.TempDir(), "readonly-mount")
	os.Mkdir(ro, 0o755)
	if err := syscall.Mount("tmpfs", ro, "tmpfs", syscall.MS_RDONLY, "size=1m"); err != nil {
		t.Skipf("cannot mount a read-only tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(ro, syscall.MNT_DETACH) })
	marker := filepath.Join(w.project, "ran")
	out, errs, code := w.run("run", "--rw", ro, "--rw", w.project, "--", "touch", marker)
	if code == 0 {
		t.Fatalf("session ran with an unprovable wall:\n%s%s", out, errs)
	}
	if !strings.Contains(errs, "session refused") || !strings.Contains(errs, ro) {
		t.Fatalf("refusal does not say which check failed:\n%s", errs)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although the session was refused")
	}
}

// daemon starts `openworker serve` for w and returns a stop function.
func (w *world) daemon() (*exec.Cmd, func()) {
	w.t.Helper()
	c := w.cmd("serve")
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		w.t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "serving the local API") {
				ready <- sc.Text()
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		c.Process.Kill()
		w.t.Fatal("daemon did not start")
	}
	return c, func() {
		c.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			c.Process.Kill()
			w.t.Error("the daemon did not stop within 15 s of SIGTERM")
		}
	}
}

func TestServeSessionsCarryShellState(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.settings("sandbox_provider = \"linux\"\n")
	_, stop := w.daemon()
	defer stop()
	id, errs, code := w.run("session", "start", "--rw", w.project)
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("session start: %d %s", code, errs)
	}
	tmp := w.sessionTmp(id)
	os.Mkdir(filepath.Join(w.project, "sub"), 0o755)
	if _, errs, code := w.run("session", "exec", id, "cd sub && export COLOR=green"); code != 0 {
		t.Fatalf("first exec: %d %s", code, errs)
	}
	out, errs, code := w.run("session", "exec", id, `echo "$(pwd) $COLOR"`)
	if code != 0 || strings.TrimSpace(out) != filepath.Join(w.project, "sub")+" green" {
		t.Fatalf("shell state not carried: %q %s", out, errs)
	}
	// file tools
	c := w.cmd("session", "write", id, "notes/a.txt")
	c.Stdin = strings.NewReader("written through the API")
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("write: %v %s", err, b)
	}
	if b, _ := os.ReadFile(filepath.Join(w.project, "sub", "notes", "a.txt")); string(b) != "written through the API" {
		t.Fatalf("write landed as %q", b)
	}
	out, _, _ = w.run("session", "read", id, filepath.Join(w.project, "sub", "notes", "a.txt"))
	if out != "written through the API" {
		t.Fatalf("read: %q", out)
	}
	_, errs, code = w.run("session", "read", id, filepath.Join(w.home, ".ssh", "id_ed25519"))
	if code == 0 || !strings.Contains(errs, "no such file") {
		t.Fatalf("reading the secret through the API: %d %s", code, errs)
	}

	// The daemon's own socket is out of reach from inside its sessions.
	sock := filepath.Join(w.state, "openworker.sock")
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("the daemon's socket is not at %s: %v", sock, err)
	}
	out, _, code = w.run("session", "exec", id, "curl -sS --max-time 3 --unix-socket "+sock+" http://x/v1/sessions || ls -l "+sock)
	if code == 0 || strings.Contains(out, id) {
		t.Fatalf("a sandboxed command reached the local API: %q", out)
	}

	// Adding a folder restarts the runner: the next result says shell state was lost.
	extra := t.TempDir()
	os.WriteFile(filepath.Join(extra, "data.txt"), []byte("extra"), 0o644)
	if _, errs, code := w.run("session", "add-folder", id, "--ro", extra); code != 0 {
		t.Fatalf("add-folder: %d %s", code, errs)
	}
	out, errs, code = w.run("session", "exec", id, "cat "+filepath.Join(extra, "data.txt")+`; echo " $COLOR"`)
	if code != 0 || out != "extra \n" || !strings.Contains(errs, "shell state from earlier commands was lost") {
		t.Fatalf("after add-folder: %d %q %s", code, out, errs)
	}
	_, _, code = w.run("session", "exec", id, "--", "touch", filepath.Join(extra, "new"))
	if code == 0 {
		t.Fatal("a read-only folder added to the session could be written")
	}

	if _, errs, code := w.run("session", "end", id); code != 0 {
		t.Fatalf("end: %s", errs)
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Fatalf("the session's private tmp %s is left after end", tmp)
	}
	if _, err := os.Stat(filepath.Join(w.state, "sessions", id+".json")); err == nil {
		t.Fatalf("session %s record left after end", id)
	}
	out, _, _ = w.run("audit")
	for _, want := range []string{"session.started  " + id, "tool.call  " + id + "  [linux, allowlist]  exec", "session.restarted", "session.ended  " + id} {
		if !strings.Contains(out, want) {
			t.Errorf("audit trail lacks %q:\n%s", want, out)
		}
	}
}

func TestKilledDaemonLeavesNothingBehind(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.settings("sandbox_provider = \"linux\"\n")
	d, _ := w.daemon()
	id, errs, code := w.run("session", "start", "--rw", w.project)
	if code != 0 {
		t.Fatalf("session start: %s", errs)
	}
	id = strings.TrimSpace(id)
	tmp := w.sessionTmp(id)
	// A process that leaves the command's group and session, found on the host by its
	// command line, which holds a number of this test's own.
	nanos := time.Now().UnixNano() % 1e9
	marker := fmt.Sprintf("300.%d", nanos)
	if _, errs, code := w.run("session", "exec", id, "setsid nohup sleep "+marker+" >/dev/null 2>&1 & echo started"); code != 0 {
		t.Fatalf("starting the background process: %d %s", code, errs)
	}
	var pids map[int]bool
	tstest.WaitFor(t, 5*time.Second, func() error {
		if pids = processes("sleep", marker); len(pids) == 0 {
			return fmt.Errorf("the background process never started")
		}
		return nil
	})
	// A call in flight when the daemon dies.
	inflight := w.cmd("session", "exec", id, "--", "sleep", fmt.Sprintf("120.%d", nanos))
	inflightErr := &syncBuffer{}
	inflight.Stderr = inflightErr
	if err := inflight.Start(); err != nil {
		t.Fatal(err)
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		if len(processes("sleep", fmt.Sprintf("120.%d", nanos))) == 0 {
			return fmt.Errorf("the in-flight command never started: %s", inflightErr.String())
		}
		return nil
	})
	d.Process.Kill()
	d.Wait()
	inflight.Wait()
	// Everything behind the wall dies with its daemon: these very processes, by PID.
	tstest.WaitFor(t, 5*time.Second, func() error {
		for pid := range pids {
			if err := syscall.Kill(pid, 0); err == nil {
				if processes("sleep", marker)[pid] {
					return fmt.Errorf("process %d started in the session outlived its killed daemon", pid)
				}
			}
		}
		return nil
	})
	// The next daemon removes the private tmp the dead one left, and writes the ends the
	// dead one could not.
	_, stop := w.daemon()
	defer stop()
	if _, err := os.Stat(tmp); err == nil {
		t.Fatalf("private tmp %s of a killed daemon not removed at the next start", tmp)
	}
	out, _, _ := w.run("audit", "--session", id)
	for _, want := range []string{"tool.call  " + id + "  [linux, allowlist]  exec: sleep " + fmt.Sprintf("120.%d", nanos), "(daemon ended)", "session.ended  " + id} {
		if !strings.Contains(out, want) {
			t.Errorf("audit trail lacks %q:\n%s", want, out)
		}
	}
}

// sessionTmp is the private tmp folder of session id, as its record in the state folder
// names it (other tests' sessions make folders of their own meanwhile).
func (w *world) sessionTmp(id string) string {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.state, "sessions", id+".json"))
	if err != nil {
		w.t.Fatalf("the record of session %s: %v", id, err)
	}
	var r struct{ Tmp string }
	if err := json.Unmarshal(b, &r); err != nil || !strings.HasPrefix(r.Tmp, "/tmp/openworker-") {
		w.t.Fatalf("the record of session %s names no private tmp: %s", id, b)
	}
	if _, err := os.Stat(r.Tmp); err != nil {
		w.t.Fatalf("session %s's private tmp: %v", id, err)
	}
	return r.Tmp
}

// settings writes the world's settings file.
func (w *world) settings(text string) {
	w.t.Helper()
	path := filepath.Join(w.home, ".config", "openworker", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// homeOutsideTmp moves the world's home folder out of /tmp, as a real one is: inside, /tmp
// is the sandbox's private one, and a home folder under it would be judged (and shown)
// as a folder of that. It returns the folder that holds the home folder.
func (w *world) homeOutsideTmp() string {
	w.t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "openworker-e2e-")
	if err != nil {
		w.t.Skipf("no /var/tmp: %v", err)
	}
	w.t.Cleanup(func() { os.RemoveAll(root) })
	w.home = filepath.Join(root, "home")
	w.env = append(w.env, "HOME="+w.home, "XDG_CONFIG_HOME="+filepath.Join(w.home, ".config"), "XDG_STATE_HOME="+filepath.Join(w.home, ".local", "state"))
	if err := os.MkdirAll(filepath.Join(w.home, ".ssh"), 0o700); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.home, ".ssh", "id_ed25519"), []byte("-----BEGIN OPENSSH PRIVATE KEY----- planted\n"), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return root
}

// TestSensitiveFoldersAreRefused: a session folder that holds logins, OpenWorker's own
// settings or the machine's own folders is refused before anything starts, saying which
// and why; a symlinked working folder is the folder it leads to, inside as outside.
func TestSensitiveFoldersAreRefused(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	root := w.homeOutsideTmp()
	ssh := filepath.Join(w.home, ".ssh")
	for _, d := range []string{ssh, filepath.Join(w.home, ".aws"), filepath.Join(w.home, ".config", "openworker")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	const key = "-----BEGIN OPENSSH PRIVATE KEY----- planted"
	if err := os.WriteFile(filepath.Join(ssh, "id_ed25519"), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dir  string // the current folder; default the project
		args []string
		want []string
		env  string // one more variable
	}{
		{"cd_ssh", ssh, []string{"run", "--", "cat", "id_ed25519"}, []string{"is ~/.ssh, which holds logins", "[[sandbox_credentials]]"}, ""},
		{"ro_aws", "", []string{"run", "--ro", filepath.Join(w.home, ".aws"), "--", "true"}, []string{"is ~/.aws"}, ""},
		{"rw_config", "", []string{"run", "--rw", filepath.Join(w.home, ".config"), "--", "true"}, []string{"contains the folder of OpenWorker's settings file", "rewrite the settings"}, ""},
		{"rw_settings_folder", "", []string{"run", "--rw", filepath.Join(w.home, ".config", "openworker"), "--", "true"}, []string{"is the folder of OpenWorker's settings file"}, ""},
		// Settings of this run's own elsewhere leave the machine's guarded: a daemon reads them.
		{"rw_default_settings_folder", "", []string{"run", "--rw", filepath.Join(w.home, ".config", "openworker"), "--", "true"}, []string{"is the folder of OpenWorker's settings file"},
			"OPENWORKER_CONFIG=" + filepath.Join(root, "cfg", "elsewhere.toml")},
		{"rw_etc", "", []string{"run", "--rw", "/etc", "--", "true"}, []string{"writable folder /etc is this machine's settings"}, ""},
		{"rw_usr", "", []string{"run", "--rw", "/usr", "--", "true"}, []string{"writable folder /usr is part of the system"}, ""},
		{"rw_proc", "", []string{"run", "--rw", "/proc", "--", "true"}, []string{"writable folder /proc is the kernel's view"}, ""},
		{"rw_tmp", "", []string{"run", "--rw", "/tmp", "--", "true"}, []string{"the sandbox's /tmp is a private one of its own"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := w.cmd(tt.args...)
			if tt.env != "" {
				c.Env = append(c.Env, tt.env)
			}
			if tt.dir != "" {
				c.Dir = tt.dir
				c.Env = append(c.Env, "PWD="+tt.dir)
			}
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			err := c.Run()
			if strings.Contains(out.String()+errb.String(), "PRIVATE KEY") {
				t.Fatalf("the key was printed:\n%s%s", out.String(), errb.String())
			}
			if err == nil {
				t.Fatalf("the session started:\n%s%s", out.String(), errb.String())
			}
			for _, want := range tt.want {
				if !strings.Contains(errb.String(), want) {
					t.Errorf("the refusal does not say %q:\n%s", want, errb.String())
				}
			}
		})
	}
	t.Run("symlinked_working_folder", func(t *testing.T) {
		link := filepath.Join(root, "link")
		if err := os.Symlink(w.project, link); err != nil {
			t.Fatal(err)
		}
		c := w.cmd("run", "--", "pwd")
		c.Dir = link
		c.Env = append(c.Env, "PWD="+link)
		out, err := c.CombinedOutput()
		real, _ := filepath.EvalSymlinks(w.project)
		if err != nil || strings.TrimSpace(string(out)) != real {
			t.Fatalf("pwd in a symlinked folder: %v\n%s(want %s)", err, out, real)
		}
	})
}

// TestToolchainTokensAreHidden: with sandbox_toolchains = [".cargo"], cargo runs inside but
// its crates.io token reads as an empty file; a toolchain of one's own that leads to ~/.ssh
// is refused.
func TestToolchainTokensAreHidden(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.homeOutsideTmp()
	cargo := filepath.Join(w.home, ".cargo")
	if err := os.MkdirAll(filepath.Join(cargo, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	const token = "cio-planted-token"
	for name, text := range map[string]string{
		"bin/cargo": "#!/bin/sh\necho cargo-ran\n", "credentials.toml": "[registry]\ntoken = \"" + token + "\"\n",
	} {
		if err := os.WriteFile(filepath.Join(cargo, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w.settings("sandbox_toolchains = [\".cargo\"]\n")
	out, errs, code := w.run("run", "--", "sh", "-c", `"$0/bin/cargo"; cat "$0/credentials.toml"; echo "size $(wc -c < "$0/credentials.toml")"`, cargo)
	if strings.Contains(out+errs, token) {
		t.Fatalf("the token was printed:\n%s%s", out, errs)
	}
	if code != 0 || !strings.Contains(out, "cargo-ran") || !strings.Contains(out, "size 0") {
		t.Fatalf("exit %d: cargo did not run or its token file was not empty:\n%s%s", code, out, errs)
	}
	if err := os.Symlink(filepath.Join(w.home, ".ssh"), filepath.Join(w.home, "sdk")); err != nil {
		t.Fatal(err)
	}
	w.settings("sandbox_toolchains = [\"sdk\"]\n")
	out, errs, code = w.run("run", "--", "cat", filepath.Join(w.home, "sdk", "id_ed25519"))
	if strings.Contains(out+errs, "PRIVATE KEY") || code == 0 || !strings.Contains(errs, "is ~/.ssh") {
		t.Fatalf("exit %d: a toolchain leading to ~/.ssh:\n%s%s", code, out, errs)
	}
}

// syncBuffer is a buffer a child's output is copied into while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
