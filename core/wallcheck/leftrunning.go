package wallcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// LeftRunningName is the battery's line for what ending a session must take with it.
const LeftRunningName = "a command's background process, after End"

// leftRunningLock is the file in the session folder the background process holds a lock on:
// from outside, the lock is free exactly when no process holds it, whatever its PID inside.
const leftRunningLock = ".openworker-check-lock"

// LeftRunningProbe starts, in the session folder, what a session's end must take with it: a
// process in the background that outlives its command, in a process group of its own (out of
// reach of the runner's end of its commands' groups) and deaf to SIGTERM, as a daemonizing
// dev server or a test runner that traps signals is. It holds a lock on a file in the folder
// and prints "holding" once it does. AfterEnd judges it once the session has ended.
func LeftRunningProbe() Probe {
	return Probe{
		Name: LeftRunningName,
		Command: `rm -f ` + leftRunningLock + `.ready; perl -e 'use Fcntl ":flock"; $SIG{TERM} = "IGNORE"; setpgrp(0, 0); ` +
			`open(my $f, ">>", "` + leftRunningLock + `") or die "$!"; flock($f, LOCK_EX) or die "$!"; ` +
			`open(my $r, ">", "` + leftRunningLock + `.ready") or die "$!"; close($r); sleep 600' </dev/null >/dev/null 2>&1 & ` +
			`i=0; while [ ! -e ` + leftRunningLock + `.ready ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; ` +
			`rm -f ` + leftRunningLock + `.ready; [ $i -lt 100 ] && echo holding`,
		Needs: "perl",
		Judge: wantOutput("holding"),
	}
}

// AfterEnd is r, LeftRunningProbe's result in a session whose folder is folder, judged once
// that session has ended: whatever holds the lock must have ended with it, within wait.
func AfterEnd(r Result, folder string, wait time.Duration) Result {
	if r.Status != Works {
		return r // it never got to hold the lock: its line says why
	}
	lock := filepath.Join(folder, leftRunningLock)
	defer os.Remove(lock)
	deadline := time.Now().Add(wait)
	for {
		free, err := lockFree(lock)
		switch {
		case err != nil:
			r.Status, r.OK, r.Detail = Failed, false, "checking the lock after the session ended: "+err.Error()
			return r
		case free:
			return r
		case time.Now().After(deadline):
			r.Status, r.OK = Broken, false
			r.Detail = fmt.Sprintf("it outlived the session: %s after End, a process in a process group of its own that ignores SIGTERM still held its lock in the session folder", wait)
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lockFree says whether no process holds a lock on path.
func lockFree(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
