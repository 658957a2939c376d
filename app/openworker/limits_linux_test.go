package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/backend"
	"github.com/openworker/openworker/core/config"
	"github.com/openworker/openworker/core/sandbox"
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
// (as root, where the machine delegates them), with its private tmp a bounded tmpfs, and
// once it has exited neither its cgroups nor the mount are left.
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
	// Nothing is left to remove them once the run has exited.
	if left := cgroupsOf(pid); len(left) > 0 {
		t.Errorf("cgroups left behind by the run: %v", left)
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
	for _, want := range []string{"Limits:        processes 1000, memory 2GiB, cpu weight 100, private tmp 256MiB a sandbox; proxy connections 256 a session, 1024 in all"} {
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
	if got != want {
		t.Errorf("the settings' default limits %+v are not the sandbox's %+v", got, want)
	}
}
