package linux

import (
	"archive/tar"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
)

// The escapes in this file go past the files and the network, to the kernel itself: a
// set-user-ID file left on the host, the host's kernel settings in /proc, address families
// outside the network namespace, and threads of the sandbox's first process that are not
// behind its wall. Where a tool would hide the system call, this test binary, started inside
// the wall, makes it itself (attempt_linux_test.go).

// noSetID fails the test for every set-user-ID or set-group-ID file or folder under dir on
// the host, and for every file with capabilities attached.
func noSetID(dir string) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			fi, err := os.Lstat(path)
			if err != nil {
				return nil
			}
			if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				t.Errorf("%s is %v on the host", path, fi.Mode())
			}
			if _, err := unix.Lgetxattr(path, "security.capability", nil); !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.ENOTSUP) {
				t.Errorf("%s has file capabilities on the host (%v)", path, err)
			}
			return nil
		})
	}
}

// setIDSource makes, on the host, a folder outside the project holding a set-user-ID file
// and a tar archive of one with its mode, and adds it to the policy read-only.
func setIDSource(t *testing.T, w *world, p *policy.Policy) string {
	t.Helper()
	src := filepath.Join(filepath.Dir(w.home), "setid-source")
	must(t, os.MkdirAll(src, 0o755))
	suid := filepath.Join(src, "suid")
	must(t, os.WriteFile(suid, []byte("#!/bin/sh\nid\n"), 0o755))
	must(t, os.Chmod(suid, 0o755|fs.ModeSetuid|fs.ModeSetgid))
	f, err := os.Create(filepath.Join(src, "suid.tar"))
	must(t, err)
	tw := tar.NewWriter(f)
	body := []byte("#!/bin/sh\nid\n")
	must(t, tw.WriteHeader(&tar.Header{Name: "from-tar", Mode: 0o6755, Size: int64(len(body)), Typeflag: tar.TypeReg,
		Uid: os.Getuid(), Gid: os.Getgid()}))
	_, err = tw.Write(body)
	must(t, err)
	must(t, tw.Close())
	must(t, f.Close())
	p.ReadOnly = append(p.ReadOnly, src)
	return src
}

// No command can make a set-user-ID or set-group-ID file, or give a file capabilities: a
// root caller's sandbox has no user namespace, so such a file in a session folder would be
// a root shell for any user of the machine afterwards (inside, nosuid only stops it there).
// Every call that sets a mode is tried, by the tools that keep modes and by raw calls.
func TestEscapeSetID(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	src := setIDSource(t, w, p)
	got, out := attempts(t, w, p, "modes", w.project)
	t.Logf("inside:\n%s", out)
	for _, a := range modeAttempts() {
		want := "EPERM"
		switch {
		case strings.HasPrefix(a.name, "openat2") || strings.HasPrefix(a.name, "io_uring"):
			want = "ENOSYS" // as on a kernel without the call, so that programs fall back
		case strings.HasPrefix(a.name, "kept_"):
			want = "ok"
		}
		if got[a.name] != want {
			t.Errorf("%s: %q, want %s", a.name, got[a.name], want)
		}
	}
	noSetID(w.project)(t)

	const refused = "Operation not permitted"
	clean := noSetID(w.project)
	var escapes []escape
	for _, e := range []escape{
		{name: "chmod_4755", script: `cd "$P" && cp /bin/true rootme && chmod 4755 rootme`},
		{name: "chmod_u+s", script: `cd "$P" && touch us && chmod u+s us`},
		{name: "chmod_g+s", script: `cd "$P" && touch gs && chmod g+s gs`},
		{name: "chmod_g+s_folder", script: `cd "$P" && mkdir gsdir && chmod g+s gsdir`},
		{name: "install_4755", script: `install -m 4755 /bin/true "$P/installed"`},
		{name: "cp_p", script: `cp -p ` + src + `/suid "$P/copied"`},
		{name: "cp_a", script: `cp -a ` + src + `/suid "$P/archived"`},
		{name: "tar_p", script: `tar -C "$P" -xpf ` + src + `/suid.tar`},
		{name: "python_chmod", script: `python3 -c 'import os; open("` + w.project + `/py", "w").close(); os.chmod("` + w.project + `/py", 0o4755)'`},
	} {
		e.reasons, e.host = []string{refused}, clean
		escapes = append(escapes, e)
	}
	// A host's set-user-ID program is on another mount: it cannot be linked into a session
	// folder.
	for _, prog := range []string{"/usr/bin/su", "/usr/bin/passwd", "/bin/su", "/usr/bin/mount"} {
		if fi, err := os.Stat(prog); err == nil && fi.Mode()&fs.ModeSetuid != 0 {
			escapes = append(escapes, escape{name: "hard_link_setuid_program", script: `ln ` + prog + ` "$P/linked"`,
				reasons: []string{"Invalid cross-device link"}, host: clean})
			break
		}
	}
	runEscapes(t, w, p, escapes)
}

// /proc inside is read-only whatever Landlock says: with no Landlock (an older kernel) the
// sandbox's uid 0 could otherwise write the host's sysctls, and kernel.core_pattern set to a
// program in a session folder runs it as root on the host. Every file of /proc with a write
// bit is opened for writing (never written).
func TestEscapeProcWrites(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	got, out := attempts(t, w, p, "proc", w.project)
	if got["proc_mounted_read_only"] != "ok" {
		t.Errorf("/proc inside is not mounted read-only: %s", got["proc_mounted_read_only"])
	}
	n := 0
	for name, res := range got {
		path, ok := strings.CutPrefix(name, "write ")
		if !ok {
			continue
		}
		n++
		if res == "ok" {
			t.Errorf("%s opens for writing inside", path)
		}
	}
	if n < 100 {
		t.Errorf("only %d files of /proc were tried:\n%s", n, out)
	}
	// The mount refuses first (not Landlock, not the file's owner), as root: uid 0 inside
	// owns these files.
	for _, path := range []string{"/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger", "/proc/irq/default_smp_affinity", "/proc/1/oom_score_adj"} {
		if !exists(path) {
			continue
		}
		res, tried := got["write "+path]
		switch {
		case !tried:
			t.Errorf("%s was not tried", path)
		case os.Getuid() == 0 && res != "EROFS":
			t.Errorf("%s: %s, want EROFS from the read-only mount", path, res)
		}
	}
}

// Only the address families a sandbox needs can be made: AF_VSOCK reaches the hypervisor's
// services past any network namespace, and the others are kernel code no command needs.
func TestEscapeSocketFamilies(t *testing.T) {
	w := newWorld(t)
	for _, network := range []policy.Network{policy.None, policy.Open} {
		t.Run(string(network), func(t *testing.T) {
			p := w.policy(t, network, 0)
			got, out := attempts(t, w, p, "sockets", w.project)
			for _, a := range socketAttempts() {
				want := "EAFNOSUPPORT"
				if strings.HasPrefix(a.name, "kept_") {
					want = "ok"
				}
				if got[a.name] != want {
					t.Errorf("%s: %q, want %s", a.name, got[a.name], want)
				}
			}
			if t.Failed() {
				t.Logf("inside:\n%s", out)
			}
		})
	}
}

// Every thread of every process inside, the wall builder's own included, is behind the
// same wall as the command: no_new_privs, the seccomp filter, no capabilities in any set,
// and the sandbox's network. The Go runtime starts threads before the wall is built.
func TestEscapeThreads(t *testing.T) {
	w := newWorld(t)
	for _, network := range []policy.Network{policy.None, policy.Allowlist} {
		t.Run(string(network), func(t *testing.T) {
			p := w.policy(t, network, 18082)
			got, out := attempts(t, w, p, "threads", w.project)
			threads := 0
			for name, res := range got {
				if strings.HasPrefix(name, "thread 1/") {
					threads++
				}
				if res != "ok" {
					t.Errorf("%s: %s", name, res)
				}
			}
			if threads < 2 {
				t.Errorf("PID 1 shows %d threads:\n%s", threads, out)
			}
		})
	}
}

// The same, for a wall whose first process serves the runner: the threads it starts while
// it serves are behind the wall too.
func TestServedRunnerThreads(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	self := resolved(t, must1(t, os.Executable))
	p.ReadOnly = append(p.ReadOnly, filepath.Dir(self))
	c, _ := startServed(t, &Provider{}, w, p)
	// Keep the runner busy on a few goroutines first, so that it has its threads.
	for range 3 {
		execIn(t, c, "true")
	}
	if _, err := c.Call(&runner.Request{Tool: runner.ToolList, List: &runner.ListArgs{Path: w.project}}, nil); err != nil {
		t.Fatal(err)
	}
	r := execIn(t, c, underAttempts+`=threads "`+self+`"`)
	out := string(r.Stdout) + string(r.Stderr)
	if r.ExitCode != 0 {
		t.Fatalf("exit %d:\n%s", r.ExitCode, out)
	}
	threads := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, res, _ := strings.Cut(line, ": ")
		if strings.HasPrefix(name, "thread 1/") {
			threads++
		}
		if res != "ok" {
			t.Errorf("%s", line)
		}
	}
	if threads < 2 {
		t.Errorf("PID 1 shows %d threads:\n%s", threads, out)
	}
}

func must1[T any](t *testing.T, f func() (T, error)) T {
	t.Helper()
	v, err := f()
	must(t, err)
	return v
}

// The wall check's probe of the host's kernel settings passes behind a real wall: each is
// refused and on a read-only mount. With /proc left writable it fails, even where Landlock
// refuses the write.
func TestWallCheckKernelSettings(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	c, _ := startServed(t, &Provider{}, w, p)
	r, err := c.Call(&runner.Request{Tool: runner.ToolProbe, Probe: &runner.ProbeArgs{Unwritable: runner.KernelSettings}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Checks) != len(runner.KernelSettings) {
		t.Fatalf("%d checks for %d files: %+v", len(r.Checks), len(runner.KernelSettings), r.Checks)
	}
	for _, ch := range r.Checks {
		t.Logf("%s: ok=%v %s", ch.Target, ch.OK, ch.Detail)
		if !ch.OK {
			t.Errorf("%s: %s", ch.Target, ch.Detail)
		}
	}
}

// The served runner stops a command from a thread other than the one the command was forked
// from: with every thread behind Landlock, a signal scope that kept each thread to its own
// domain would leave the command running.
func TestServedRunnerStopsACommand(t *testing.T) {
	w := newWorld(t)
	p := w.policy(t, policy.None, 0)
	c, _ := startServed(t, &Provider{}, w, p)
	t0 := time.Now()
	r, err := c.Call(&runner.Request{Tool: runner.ToolExec, Exec: &runner.ExecArgs{Command: "sleep 20", Timeout: 300 * time.Millisecond}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); !r.TimedOut || took > 10*time.Second {
		t.Errorf("a command past its timeout: timed out %v after %v (exit %d, %s)", r.TimedOut, took, r.ExitCode, r.Stderr)
	}
}
