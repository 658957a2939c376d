package wallcheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A lock still held after the session's end is a process that outlived it: the line says so.
// One that is free is a process that ended with it.
func TestAfterEnd(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, leftRunningLock)
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	started := Result{Name: LeftRunningName, Status: Works, OK: true}
	holder, err := os.Open(lock)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	r := AfterEnd(started, dir, 200*time.Millisecond)
	if r.Status != Broken || r.OK || !strings.Contains(r.Detail, "outlived") {
		t.Errorf("with the lock held: %+v", r)
	}
	holder.Close()
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = AfterEnd(started, dir, 5*time.Second)
	if r.Status != Works || !r.OK {
		t.Errorf("with the lock free: %+v", r)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Error("the lock file was left in the session folder")
	}
	// What never started is left as it was.
	skipped := Result{Name: LeftRunningName, Status: Skipped, OK: true, Detail: "perl is not installed here"}
	if r := AfterEnd(skipped, dir, time.Second); r.Status != Skipped || r.Detail != skipped.Detail {
		t.Errorf("a skipped line became %+v", r)
	}
}

// The probe's command, run here with no wall, leaves a process holding the lock in a group
// of its own that ignores SIGTERM: what the session's end must take with it.
func TestLeftRunningProbeLeavesAHolder(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed")
	}
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", LeftRunningProbe().Command+"; echo $!")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "holding\n") {
		t.Fatalf("the probe's command: %q %v", out, err)
	}
	var pid int
	if _, err := fmt.Sscan(strings.TrimPrefix(string(out), "holding\n"), &pid); err != nil || pid <= 1 {
		t.Fatalf("no background PID in %q", out)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if free, err := lockFree(filepath.Join(dir, leftRunningLock)); free || err != nil {
		t.Fatalf("the lock is not held: %v %v", free, err)
	}
	if pgid, _ := syscall.Getpgid(pid); pgid != pid {
		t.Errorf("the holder is in group %d, not one of its own", pgid)
	}
	syscall.Kill(pid, syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond)
	if free, _ := lockFree(filepath.Join(dir, leftRunningLock)); free {
		t.Error("the holder ended on SIGTERM; it must ignore it")
	}
}
