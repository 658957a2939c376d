package linux

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

// boundedWorld is a world whose private tmp is a fresh folder bounded by pv, as a session
// makes it: bounded first, the sandbox home made inside after.
func boundedWorld(t *testing.T, pv *Provider, size int64) *world {
	t.Helper()
	w := newWorld(t)
	dir := filepath.Join(resolved(t, t.TempDir()), "openworker-bounded")
	must(t, os.Mkdir(dir, 0o700))
	must(t, pv.BoundTmp(dir, sandbox.Amount{Bytes: size}))
	t.Cleanup(func() { pv.ReleaseTmp(dir) })
	must(t, os.Mkdir(filepath.Join(dir, "home"), 0o700))
	w.privateTmp = dir
	return w
}

func tmpBounded(pv *Provider, dir string) bool {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	return pv.tmps[dir].bounded
}

// TestTmpBoundReported: the Active list says how the private tmp is bounded, or that it is
// not and why (an ordinary user may not mount on the host).
func TestTmpBoundReported(t *testing.T) {
	pv := &Provider{}
	w := boundedWorld(t, pv, 32<<20)
	s := startLimited(t, pv, w, sandbox.Limits{}, "true")
	s.wait(t)
	active := strings.Join(s.proc.Active(), "\n")
	want := "private tmp: a tmpfs of 32MiB"
	if !tmpBounded(pv, w.privateTmp) {
		want = "limit not in force: private tmp size 32MiB: mounting a tmpfs on the host takes root"
		if os.Geteuid() == 0 {
			t.Errorf("root could not bound the private tmp")
		}
	}
	if !strings.Contains(active, want) {
		t.Errorf("want %q in the active list:\n%s", want, active)
	}
}

// TestDiskFill: a command that fills its /tmp and its home meets the private tmp's size,
// not the host's disk; the host still sees the private tmp, another sandbox runs, a
// restarted sandbox finds what the first left, and nothing stays mounted after.
func TestDiskFill(t *testing.T) {
	pv := &Provider{}
	// The builder starts before the tmpfs is mounted, as a session's does.
	pv.Prepare(policy.None)
	const size = 32 << 20
	w := boundedWorld(t, pv, size)
	if !tmpBounded(pv, w.privateTmp) {
		t.Skip("the private tmp cannot be bounded here (mounting on the host takes root)")
	}
	s := startLimited(t, pv, w, sandbox.Limits{}, `
dd if=/dev/zero of=/tmp/fill bs=1M count=100 2>&1; echo "dd=$?"
dd if=/dev/zero of="$HOME/fill" bs=1M count=100 2>&1; echo "dd-home=$?"
rm -f /tmp/fill "$HOME/fill"
echo kept > /tmp/kept && cat /tmp/kept`)
	out, code := s.wait(t)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"dd=1", "dd-home=1", "No space left on device", "kept"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	var st unix.Statfs_t
	must(t, unix.Statfs(w.privateTmp, &st))
	if st.Type != unix.TMPFS_MAGIC {
		t.Errorf("the host's private tmp is not the tmpfs (type %#x)", st.Type)
	}
	if b, err := os.ReadFile(filepath.Join(w.privateTmp, "kept")); err != nil || string(b) != "kept\n" {
		t.Errorf("the host does not see the sandbox's /tmp: %q %v", b, err)
	}
	// The next sandbox of the session (a runner restarted to add a folder) finds it.
	out, code = startLimited(t, pv, w, sandbox.Limits{}, `cat /tmp/kept; cat "`+w.privateTmp+`/kept"`).wait(t)
	if code != 0 || strings.Count(out, "kept") != 2 {
		t.Errorf("a restarted sandbox lost the private tmp: exit %d\n%s", code, out)
	}
	other := newWorld(t)
	out, code = startLimited(t, &Provider{}, other, sandbox.Limits{}, `echo other-ok > /tmp/x && cat /tmp/x`).wait(t)
	if code != 0 || !strings.Contains(out, "other-ok") {
		t.Errorf("another sandbox failed after the disk fill: exit %d\n%s", code, out)
	}
	pv.ReleaseTmp(w.privateTmp)
	if isMountPoint(w.privateTmp) {
		t.Errorf("the private tmp %s is still mounted after ReleaseTmp", w.privateTmp)
	}
	must(t, os.RemoveAll(w.privateTmp))
}
