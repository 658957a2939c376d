package linux

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

// secret is planted in the fake home's ~/.ssh/id_ed25519; no output may ever contain it.
const secret = "OPENWORKER-TEST-SECRET-KEY-7f3a"

// world is one test's machine: a fake home with a planted key and a file that is not shared,
// a writable project folder inside it with a read-only folder inside that, and a private tmp.
type world struct {
	home, project, readonly, privateTmp string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	// The fake home lies outside /tmp, as a real one does: inside, /tmp is the private tmp,
	// and a home under it would be a (writable) folder of the private tmp there.
	base, err := os.MkdirTemp("/var/tmp", "openworker-linux-test-")
	if err != nil {
		base = t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	base = resolved(t, base)
	w := &world{
		home:       filepath.Join(base, "home"),
		privateTmp: filepath.Join(resolved(t, t.TempDir()), "private-tmp"),
	}
	w.project = filepath.Join(w.home, "project")
	w.readonly = filepath.Join(w.project, "vendor")
	for _, d := range []string{filepath.Join(w.home, ".ssh"), w.readonly, w.privateTmp + "/home"} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(w.home, ".ssh", "id_ed25519"), []byte(secret+"\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(w.home, "notshared.txt"), []byte(secret+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(w.readonly, "lib.txt"), []byte("vendored\n"), 0o644))
	return w
}

func (w *world) policy(t *testing.T, network policy.Network, port int) *policy.Policy {
	t.Helper()
	// Built by hand as policy.New would build it (paths are already resolved): the project
	// folder lies inside the fake home on purpose, to show that a session folder below the
	// home appears while the rest of the home does not.
	return &policy.Policy{
		Writable:   []string{w.project},
		ReadOnly:   []string{w.readonly},
		PrivateTmp: w.privateTmp,
		Home:       filepath.Join(w.privateTmp, "home"),
		UserHome:   w.home,
		System:     policy.SystemPaths("linux"),
		Network:    network,
		ProxyPort:  port,
		Marker:     "openworker-test",
	}
}

// env is what the script sees: where things are on the host, by the same paths.
func (w *world) env(p *policy.Policy) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"HOME=" + p.Home,
		"H=" + w.home,
		"P=" + w.project,
		"RO=" + w.readonly,
		"LC_ALL=C",
	}
}

// sandboxed is a running script.
type sandboxed struct {
	proc sandbox.Process
	out  chan string
}

// start runs /bin/sh -c script behind a wall built from p; its stdout and stderr are
// collected together.
func start(t *testing.T, w *world, p *policy.Policy, script string, env ...string) *sandboxed {
	t.Helper()
	return startFrom(t, &Provider{}, p, append(w.env(p), env...), sandbox.Limits{}, 10*time.Second, script)
}

// startFrom is start from provider pv with environment env and limits l, the wall given
// within to be up.
func startFrom(t *testing.T, pv *Provider, p *policy.Policy, env []string, l sandbox.Limits, within time.Duration, script string) *sandboxed {
	t.Helper()
	r, wr, err := os.Pipe()
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	proc, err := pv.Start(ctx, p, sandbox.RunnerSpec{Path: "/bin/sh", Args: []string{"-c", script}, Env: env, Dir: p.Home, Stderr: wr, Limits: l})
	wr.Close()
	if err != nil {
		r.Close()
		t.Fatalf("start the sandbox: %v", err)
	}
	s := &sandboxed{proc: proc, out: make(chan string, 1)}
	go func() {
		b, _ := io.ReadAll(r)
		r.Close()
		s.out <- string(b)
	}()
	t.Cleanup(func() {
		proc.Kill()
		proc.Wait()
	})
	return s
}

// wait returns the output and the exit code, killing the sandbox if it takes too long.
func (s *sandboxed) wait(t *testing.T) (string, int) {
	t.Helper()
	timer := time.AfterFunc(20*time.Second, func() { s.proc.Kill() })
	defer timer.Stop()
	err := s.proc.Wait()
	code := 0
	if err != nil {
		var ok bool
		if code, ok = exitCode(err); !ok {
			t.Fatalf("wait: %v", err)
		}
	}
	select {
	case out := <-s.out:
		if strings.Contains(out, secret) {
			t.Fatalf("the secret leaked into the output:\n%s", out)
		}
		return out, code
	case <-time.After(5 * time.Second):
		t.Fatal("the sandbox's output stayed open after it ended: something inside survived")
		return "", 0
	}
}

// run runs script to the end.
func run(t *testing.T, w *world, p *policy.Policy, script string, env ...string) (string, int) {
	t.Helper()
	return start(t, w, p, script, env...).wait(t)
}

func exitCode(err error) (int, bool) {
	type exitCoder interface{ ExitCode() int }
	if e, ok := err.(exitCoder); ok {
		return e.ExitCode(), true
	}
	return 0, false
}

// pidsRunning lists the host PIDs of processes whose command line is exactly argv.
func pidsRunning(argv ...string) []int {
	want := []byte(strings.Join(argv, "\x00") + "\x00")
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Equal(b, want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// childrenRunning is pidsRunning for this process's own children: other test binaries
// running at the same time start builders with the same command line.
func childrenRunning(argv ...string) []int {
	var pids []int
	for _, pid := range pidsRunning(argv...) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue // gone since
		}
		// The parent's PID is the second field after the command name, which may hold ") ".
		if i := bytes.LastIndex(b, []byte(") ")); i >= 0 {
			if f := strings.Fields(string(b[i+2:])); len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func resolved(t *testing.T, path string) string {
	t.Helper()
	r, err := policy.Resolve(path)
	must(t, err)
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func sandboxSpec(path string, args ...string) sandbox.RunnerSpec {
	return sandbox.RunnerSpec{Path: path, Args: args}
}

func uidString() string { return strconv.Itoa(os.Getuid()) }
