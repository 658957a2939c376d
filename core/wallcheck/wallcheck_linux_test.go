package wallcheck

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/linux"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/session"
)

func TestMain(m *testing.M) {
	linux.MaybeRunInit()
	if len(os.Args) > 1 && os.Args[1] == session.RunnerArg {
		if runner.Main() != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// linuxWallGaps are programs of the battery the Linux wall breaks today, and why; the battery
// found them. The test fails when one starts working, so the list stays true.
var linuxWallGaps = map[string]string{}

// TestBatteryBehindTheLinuxWall runs the whole battery in a real session behind the Linux
// wall: the programs must work, the login file and the direct connection must be refused, and
// the listener outside must see no connection.
func TestBatteryBehindTheLinuxWall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	prov := &linux.Provider{}
	if st := prov.Check(ctx); !st.OK {
		t.Skipf("the Linux wall cannot run here: %s", st.Reason)
	}
	rs, b, secret, port, accepted := runBattery(t, ctx, prov, "")
	t.Logf("sandbox check on this machine:\n%s", b.String())
	statuses, details := map[string]string{}, map[string]string{}
	for _, r := range rs {
		statuses[r.Name], details[r.Name] = r.Status, r.Detail
		gap, known := linuxWallGaps[r.Name]
		switch {
		case known && r.Status == Broken:
			t.Logf("%s: broken, a known gap of the Linux wall (%s): %s", r.Name, gap, r.Detail)
		case known:
			t.Errorf("%s: %s, but it is listed as a gap of the Linux wall (%s); take it off the list", r.Name, r.Status, gap)
		case !r.OK:
			t.Errorf("%s: %s (%s)", r.Name, r.Status, r.Detail)
		}
	}
	for name, want := range map[string]string{
		"sh here-document and $(...)":            Works,
		"env":                                    Works,
		"write and read in the session folder":   Works,
		"read of " + secret:                      Refused,
		"command line of a process outside":      Refused,
		"open a host kernel setting for writing": Refused,
		"make a set-user-ID file":                Refused,
	} {
		if statuses[name] != want {
			t.Errorf("%s: %q, want %q", name, statuses[name], want)
		}
	}
	if _, err := exec.LookPath("bash"); err == nil && statuses["direct connection to 127.0.0.1:"+itoa(port)] != Refused {
		t.Errorf("direct connection: %q", statuses["direct connection to 127.0.0.1:"+itoa(port)])
	}
	if accepted.Load() != 0 {
		t.Error("a connection from inside the wall reached the host's loopback listener")
	}
	if n := strings.Count(b.String(), "\n"); n < len(rs) {
		t.Errorf("%d lines for %d programs", n, len(rs))
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(secret)), "..", "project", ".openworker-check")); err == nil {
		t.Error("the write probe left its file behind")
	}
	// The toolchains' lines run the real programs where this machine has them, and skip
	// those that fail outside the wall too (rustup with no default toolchain for this home),
	// as the check does: the machine's, not the wall's.
	for name, program := range map[string]string{
		"java -version":                           "java",
		"cargo build of a one-file crate":         "cargo",
		"npm install from a registry on loopback": "npm",
	} {
		if _, err := exec.LookPath(program); err != nil {
			if statuses[name] != Skipped {
				t.Errorf("%s: %q without %s, want skipped", name, statuses[name], program)
			}
			continue
		}
		if statuses[name] == Skipped && strings.HasPrefix(details[name], "fails outside the sandbox too") {
			t.Logf("%s: skipped, %s", name, details[name])
			continue
		}
		if statuses[name] != Works {
			t.Errorf("%s: %q, want it to work behind the wall", name, statuses[name])
		}
	}
	project := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(secret))), "project")
	for _, left := range []string{".openworker-check-npm", ".openworker-check-crate"} {
		if _, err := os.Stat(filepath.Join(project, left)); err == nil {
			t.Errorf("%s was left in the session folder", left)
		}
	}
}

// TestNpmInstallFetchesFromTheRegistry: the npm line works because npm fetched the package
// from the stand-in outside the wall, through what the session allows, and not otherwise.
func TestNpmInstallFetchesFromTheRegistry(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prov := &linux.Provider{}
	if st := prov.Check(ctx); !st.OK {
		t.Skipf("the Linux wall cannot run here: %s", st.Reason)
	}
	reg, err := ServeRegistry()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	npm := func(allowed bool) Result {
		s := startSession(t, ctx, prov, allowed, reg.Port, false)
		probes := Battery(Options{GOOS: "linux", RegistryPort: reg.Port})
		var p []Probe
		for _, pr := range probes {
			if strings.HasPrefix(pr.Name, "npm install") {
				p = append(p, pr)
			}
		}
		return Run(ctx, sessionExec(s), p, Outside{LookPath: exec.LookPath})[0]
	}
	if r := npm(false); r.Status != Broken {
		t.Errorf("with the registry not on the allow list, npm install was %q (%s), want broken", r.Status, r.Detail)
	}
	if n := reg.Served.Load(); n != 0 {
		t.Fatalf("the registry served its tarball %d times to a session that may not reach it", n)
	}
	if r := npm(true); r.Status != Works {
		t.Errorf("npm install: %q (%s)", r.Status, r.Detail)
	}
	if reg.Served.Load() == 0 {
		t.Error("npm install worked without fetching from the registry")
	}
}

// TestServerWithLocalServers: the second session's line, with the switch on; on Linux the
// sandbox's own loopback serves with it as without it.
func TestServerWithLocalServers(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prov := &linux.Provider{}
	if st := prov.Check(ctx); !st.OK {
		t.Skipf("the Linux wall cannot run here: %s", st.Reason)
	}
	s := startSession(t, ctx, prov, false, 0, true)
	rs := Run(ctx, sessionExec(s), LocalServerProbes(), Outside{LookPath: exec.LookPath})
	if len(rs) != 2 {
		t.Fatalf("%d lines, want the loopback server's and the one on ::", len(rs))
	}
	for _, r := range rs {
		if r.Status != Works {
			t.Errorf("%s: %q (%s)", r.Name, r.Status, r.Detail)
		}
	}
}

// startSession starts a session of prov on a fresh folder, with 127.0.0.1:port on its allow
// list when allowed, and the local-servers switch as given.
func startSession(t *testing.T, ctx context.Context, prov sandbox.Provider, allowed bool, port int, localServers bool) *session.Session {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	for _, d := range []string{home, project} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m, err := session.NewManager(session.Options{
		Providers: map[sandbox.Enforcement]sandbox.Provider{prov.Name(): prov},
		UserHome:  home, StateDir: filepath.Join(root, "state"), TmpRoot: root, GOOS: "linux",
		RunnerPath: exe, HostEnv: []string{"PATH=" + os.Getenv("PATH")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.EndAll)
	spec := session.Spec{Provider: prov.Name(), Writable: []string{project}, Network: policy.Allowlist, LocalServers: localServers}
	if allowed {
		e, err := hosts.Parse("127.0.0.1:" + itoa(port))
		if err != nil {
			t.Fatal(err)
		}
		spec.SessionHosts = []hosts.Entry{e}
	}
	s, err := m.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sessionExec runs the battery's commands in s.
func sessionExec(s *session.Session) Exec {
	return func(ctx context.Context, cmd string) (Outcome, error) {
		res, err := s.Exec(runner.ExecArgs{Command: cmd, Timeout: time.Minute}, nil)
		if err != nil {
			return Outcome{}, err
		}
		if res.Error != "" {
			return Outcome{ExitCode: -1, Stderr: res.Error}, nil
		}
		return Outcome{ExitCode: res.ExitCode, Stdout: string(res.Stdout), Stderr: string(res.Stderr), Denials: res.Denials}, nil
	}
}

// TestBatteryCatchesNoWall runs the battery with no wall at all: it must say that the login
// file was read and the direct connection got through, or it could not catch a broken wall.
func TestBatteryCatchesNoWall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rs, _, secret, port, accepted := runBattery(t, ctx, sandbox.DirectProvider{}, "")
	statuses := map[string]string{}
	for _, r := range rs {
		statuses[r.Name] = r.Status
	}
	if statuses["read of "+secret] != NotRefused {
		t.Errorf("with no wall, the login file read was %q", statuses["read of "+secret])
	}
	if got := statuses["command line of a process outside"]; got != NotRefused {
		t.Errorf("with no wall, the command line of a process outside was %q", got)
	}
	if got := statuses["make a set-user-ID file"]; got != NotRefused {
		t.Errorf("with no wall, making a set-user-ID file was %q", got)
	}
	if os.Geteuid() == 0 {
		if got := statuses["open a host kernel setting for writing"]; got != NotRefused {
			t.Errorf("with no wall, root opening a kernel setting for writing was %q", got)
		}
	}
	if _, err := exec.LookPath("bash"); err == nil {
		if got := statuses["direct connection to 127.0.0.1:"+itoa(port)]; got != NotRefused || accepted.Load() == 0 {
			t.Errorf("with no wall, the direct connection was %q (%d accepted)", got, accepted.Load())
		}
	}
	if OK(rs) || Holds(rs) {
		t.Error("the battery passed with no wall")
	}
}

// runBattery starts a session with prov, a fake home with a login file, and a loopback
// listener outside, and runs the battery in it, trying outside the programs that fail inside.
// first, when given, is a folder shared read-only and put first on PATH, inside and outside.
func runBattery(t *testing.T, ctx context.Context, prov sandbox.Provider, first string) (rs []Result, b *bytes.Buffer, secret string, port int, accepted *atomic.Int32) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	for _, d := range []string{filepath.Join(home, ".ssh"), project} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	secret = filepath.Join(home, ".ssh", "id_ed25519")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The listener a direct connection must not reach: on the host's loopback, outside the
	// wall's network namespace.
	ln, err := sandbox.ListenOutside(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = &atomic.Int32{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := ServeRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	regEntry, err := hosts.Parse("127.0.0.1:" + itoa(reg.Port))
	if err != nil {
		t.Fatal(err)
	}
	// A toolchain in a home folder is readable inside once the person switches it on, as
	// rustup's is for cargo: the test gives the session the folders the real cargo needs.
	toolchains, path := toolchainFolders(t)
	if first != "" {
		// Shared read-only, so that the program there is the one found inside too.
		path, toolchains = first+":"+path, append(toolchains, first)
	}
	m, err := session.NewManager(session.Options{
		Providers: map[sandbox.Enforcement]sandbox.Provider{prov.Name(): prov},
		UserHome:  home, StateDir: filepath.Join(root, "state"), TmpRoot: root, GOOS: "linux",
		RunnerPath: exe, HostEnv: []string{"PATH=" + path},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.EndAll)
	s, err := m.Start(ctx, session.Spec{Provider: prov.Name(), Writable: []string{project}, ReadOnly: toolchains, Network: policy.Allowlist,
		SessionHosts: []hosts.Entry{regEntry}})
	if err != nil {
		t.Fatal(err)
	}
	port = ln.Addr().(*net.TCPAddr).Port
	rs = Run(ctx, sessionExec(s), Battery(Options{
		GOOS: "linux", UserHome: home, DirectPort: port, Reached: func() bool { return accepted.Load() > 0 },
		OutsidePID: os.Getpid(), OutsideArg: filepath.Base(os.Args[0]), RegistryPort: reg.Port,
	}), Outside{LookPath: func(name string) (string, error) { return lookPathIn(path, name) },
		Exec: ExecOutside(filepath.Join(root, "outside"), append(os.Environ(), "PATH="+path))})
	b = &bytes.Buffer{}
	Print(b, rs)
	return rs, b, secret, port, accepted
}

func itoa(n int) string { return strconv.Itoa(n) }

// lookPathIn is exec.LookPath over path instead of this process's PATH.
func lookPathIn(path, name string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// A cargo that fails outside the wall too, as rustup's does in a home with no default
// toolchain, is skipped with what it said there: the battery, the check and the README's test
// command do not blame the wall for it.
func TestBatteryWithAToolBrokenOutside(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	prov := &linux.Provider{}
	if st := prov.Check(ctx); !st.OK {
		t.Skipf("the Linux wall cannot run here: %s", st.Reason)
	}
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "cargo"), []byte("#!/bin/sh\necho \"error: rustup could not choose a version of cargo to run, because one wasn't specified explicitly, and no default is configured.\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rs, b, _, _, _ := runBattery(t, ctx, prov, broken)
	for _, r := range rs {
		if r.Name != "cargo build of a one-file crate" {
			continue
		}
		if r.Status != Skipped || !r.OK || !strings.HasPrefix(r.Detail, "fails outside the sandbox too (exit status 1: error: rustup could not choose") {
			t.Errorf("cargo broken outside: %+v\n%s", r, b)
		}
		return
	}
	t.Errorf("no cargo line:\n%s", b)
}

// toolchainFolders are the folders of the real cargo's toolchain when rustup manages it (its
// proxies in ~/.cargo/bin look in RUSTUP_HOME, which a session only gets for a toolchain
// switched on), and a PATH with its binaries first: the real cargo and rustc, not the proxy.
func toolchainFolders(t *testing.T) (folders []string, path string) {
	t.Helper()
	path = os.Getenv("PATH")
	out, err := exec.Command("rustup", "which", "cargo").Output()
	if err != nil {
		return nil, path
	}
	bin := filepath.Dir(strings.TrimSpace(string(out)))
	toolchain := filepath.Dir(bin)
	return []string{toolchain}, bin + ":" + path
}

// TestLeftRunningEndsWithTheSession: the battery's line for what End takes with it, behind
// the Linux wall (whose PID namespace ends everything): held while the session runs, free
// once it has ended.
func TestLeftRunningEndsWithTheSession(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prov := &linux.Provider{}
	if st := prov.Check(ctx); !st.OK {
		t.Skipf("the Linux wall cannot run here: %s", st.Reason)
	}
	s := startSession(t, ctx, prov, false, 0, false)
	writable, _ := s.Folders()
	folder := writable[0]
	r := Run(ctx, sessionExec(s), []Probe{LeftRunningProbe()}, Outside{LookPath: exec.LookPath})[0]
	if r.Status != Works {
		t.Fatalf("%s: %q (%s)", r.Name, r.Status, r.Detail)
	}
	if free, err := lockFree(filepath.Join(folder, leftRunningLock)); free || err != nil {
		t.Fatalf("nothing holds the lock while the session runs (%v, %v): the line would prove nothing", free, err)
	}
	s.End()
	if r := AfterEnd(r, folder, 5*time.Second); r.Status != Works {
		t.Errorf("%s: %q (%s)", r.Name, r.Status, r.Detail)
	}
}
