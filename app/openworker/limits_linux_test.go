package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/sandbox"
	"github.com/openworker/openworker/core/tstest"
)

// cgroupsOf lists the cgroups the openworker process pid made, in every hierarchy.
func cgroupsOf(pid int) []string {
	prefix := "openworker-" + strconv.Itoa(pid) + "-"
	var found []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), prefix) {
			found = append(found, p)
			return filepath.SkipDir
		}
		if strings.Count(p, "/") > 7 {
			return filepath.SkipDir
		}
		return nil
	})
	return found
}

// TestRunLimitsAndNothingLeft: `openworker run` puts its command in a cgroup of its own
// (as root, where the machine delegates them), with its private tmp a bounded tmpfs; once it
// has exited its mount is gone and nothing runs in its cgroups, which it does not wait to
// remove (its exit does not wait for the sandbox's end): the next run removes them.
func TestRunLimitsAndNothingLeft(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	if os.Geteuid() != 0 {
		t.Skip("the machine delegates cgroups and mounts to root here")
	}
	before := tmpMounts()
	c := w.cmd("run", "--", "sh", "-c", "cat /proc/self/cgroup; df -P /tmp | tail -1")
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		t.Fatalf("run: %v\n%s%s", err, out.String(), errb.String())
	}
	pid := c.Process.Pid
	if !strings.Contains(out.String(), "openworker-"+strconv.Itoa(pid)+"-") {
		t.Errorf("the command was not in a cgroup of its sandbox's own:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "tmpfs") {
		t.Errorf("the command's /tmp is not a tmpfs:\n%s", out.String())
	}
	// Nothing runs in them once the kernel has ended the sandbox.
	for _, dir := range cgroupsOf(pid) {
		if err := tstest.Poll(5*time.Second, func() error {
			if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil && len(bytes.TrimSpace(b)) > 0 {
				return fmt.Errorf("still holds %s", b)
			}
			return nil
		}); err != nil {
			t.Errorf("the run's cgroup %s %v after it exited", dir, err)
		}
	}
	// The next run removes them.
	if out, err := w.cmd("run", "--", "true").CombinedOutput(); err != nil {
		t.Fatalf("the next run: %v\n%s", err, out)
	}
	if left := cgroupsOf(pid); len(left) > 0 {
		t.Errorf("cgroups left behind by the run after the next: %v", left)
	}
	for m := range tmpMounts() {
		if !before[m] {
			t.Errorf("the run's private tmp is still mounted at %s", m)
		}
	}
}

// tmpMounts are the tmpfs mounts on private tmp folders (other tests' sessions may hold
// some at the same time).
func tmpMounts() map[string]bool {
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	m := map[string]bool{}
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.Contains(line, " - tmpfs ") && strings.HasPrefix(f[4], "/tmp/openworker-") {
			m[f[4]] = true
		}
	}
	return m
}

// TestStatusSaysLimits: machine sandbox status says the settings' limits and which of them
// are in force here.
func TestStatusSaysLimits(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	cfg := filepath.Join(w.home, ".config", "openworker", "config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("sandbox_max_processes = 1000\nsandbox_max_memory = \"2GiB\"\nsandbox_max_tmp = \"256MiB\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := w.run("machine", "sandbox", "status")
	if code != 0 {
		t.Fatalf("status: %s%s", out, errs)
	}
	for _, want := range []string{"Limits:        processes 1000, memory 2GiB, cpu weight 100 a CPU, private tmp 256MiB a sandbox; proxy connections 256 a session, 1024 in all"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	if os.Geteuid() == 0 {
		for _, want := range []string{"limits: processes 1000 (cgroup", "memory 2GiB (cgroup", "private tmp: a tmpfs of 256MiB"} {
			if !strings.Contains(out, want) {
				t.Errorf("as root, want %q in:\n%s", want, out)
			}
		}
	}
}

// TestDefaultLimitsAgree: a machine without settings gets the sandbox's own defaults.
func TestDefaultLimitsAgree(t *testing.T) {
	got := backend.Limits(config.Default().Limits)
	want := sandbox.Limits{}.WithDefaults()
	if got.CPUWeight != 0 || got.WithDefaults() != want || got.Processes != want.Processes || got.Memory != want.Memory || got.Tmp != want.Tmp {
		t.Errorf("the settings' default limits %+v are not the sandbox's %+v", got, want)
	}
}

// TestBombsInASession: a fork bomb, a memory bomb and a disk fill in one session of the
// daemon leave another session working, and the host; the session whose memory bomb was
// killed goes on; ending them leaves no cgroup and no mount.
func TestBombsInASession(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	if os.Geteuid() != 0 {
		t.Skip("the machine delegates cgroups and mounts to root here")
	}
	w.settings("sandbox_provider = \"linux\"\nsandbox_max_processes = 256\nsandbox_max_memory = \"256MiB\"\nsandbox_max_tmp = \"64MiB\"\n")
	d, stop := w.daemon()
	defer stop()
	start := func() string {
		t.Helper()
		id, errs, code := w.run("session", "start", "--rw", w.project)
		if code != 0 {
			t.Fatalf("session start: %s", errs)
		}
		return strings.TrimSpace(id)
	}
	exec := func(id, command string) (string, int) {
		t.Helper()
		out, errs, code := w.run("session", "exec", id, command)
		return out + errs, code
	}
	a, b := start(), start()
	// Other packages' tests mount private tmp folders of their own meanwhile: only these
	// two sessions' are looked at.
	ours := map[string]bool{w.sessionTmp(a): true, w.sessionTmp(b): true}
	alive := func(what string) {
		t.Helper()
		if out, code := exec(b, "echo b-alive; ls /tmp >/dev/null"); code != 0 || !strings.Contains(out, "b-alive") {
			t.Fatalf("the other session failed after %s in the first: %d %s", what, code, out)
		}
		if out, err := osexec.Command("/bin/echo", "host-alive").Output(); err != nil || !strings.Contains(string(out), "host-alive") {
			t.Fatalf("the host could not start a program after %s: %v", what, err)
		}
	}
	// The memory bomb: killed, and the session goes on.
	out, _ := exec(a, `head -c 2G /dev/zero | tail >/dev/null; echo "bomb=$?"`)
	if !strings.Contains(out, "bomb=137") {
		t.Errorf("the memory bomb was not killed at the session's limit:\n%s", out)
	}
	if out, code := exec(a, "echo a-alive"); code != 0 || !strings.Contains(out, "a-alive") {
		t.Errorf("the session did not outlive its memory bomb: %d %s", code, out)
	}
	alive("a memory bomb")
	// The disk fill: the private tmp is full, not the host's disk.
	out, _ = exec(a, `dd if=/dev/zero of=/tmp/fill bs=1M count=512 2>&1; echo "dd=$?"; rm -f /tmp/fill`)
	if !strings.Contains(out, "No space left on device") || !strings.Contains(out, "dd=1") {
		t.Errorf("a 512 MiB file fit in a 64 MiB private tmp:\n%s", out)
	}
	alive("a disk fill")
	// The fork bomb, left running; only where the process limit holds, as a bomb without
	// one would take the machine down with the test.
	if out, _ := exec(a, "cat /proc/self/cgroup"); !strings.Contains(out, "pids:/") || !strings.Contains(out, "/openworker-") {
		t.Fatalf("the session is not in a cgroup of its own; not starting the fork bomb:\n%s", out)
	}
	// The fork bomb, left running.
	if out, code := exec(a, `sh -c 'b() { b | b & }; b' >/dev/null 2>&1 & echo started`); code != 0 {
		t.Fatalf("starting the fork bomb: %d %s", code, out)
	}
	alive("a fork bomb")
	for _, id := range []string{a, b} {
		if _, errs, code := w.run("session", "end", id); code != 0 {
			t.Errorf("session end %s: %s", id, errs)
		}
	}
	if left := cgroupsOf(d.Process.Pid); len(left) > 0 {
		t.Errorf("cgroups left behind by the ended sessions: %v", left)
	}
	for m := range tmpMounts() {
		if ours[m] {
			t.Errorf("an ended session's private tmp is still mounted at %s", m)
		}
	}
}
