package session

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/openworker/openworker/core/sandbox"
)

// kindCheck marks a record as a wall check's folder rather than a session's.
const kindCheck = "check"

// CheckFolder is a folder a wall check works in (its private tmp, which a provider may
// mount a tmpfs over, and the battery's writable folder beneath), recorded in the state
// folder as a session's private tmp is: a check killed before Release leaves it behind, and
// the next manager's start removes it, unmounting what was mounted on it.
type CheckFolder struct {
	Dir  string
	m    *Manager
	lock *os.File
}

// ClaimCheck makes and records a folder for a wall check under the tmp root.
func (m *Manager) ClaimCheck() (*CheckFolder, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	id := "check-" + hex.EncodeToString(b[:])
	dir := filepath.Join(m.opts.TmpRoot, "openworker-"+id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating a folder for the check: %w", err)
	}
	rec, _ := json.Marshal(record{ID: id, Tmp: dir, Pid: os.Getpid(), Kind: kindCheck})
	path := filepath.Join(m.opts.StateDir, "sessions", id+".json")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err == nil {
		if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			_, err = f.Write(rec)
		}
		if err != nil {
			f.Close()
			os.Remove(path)
		}
	}
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("recording the check's folder: %w", err)
	}
	return &CheckFolder{Dir: dir, m: m, lock: f}, nil
}

// Release unmounts and removes the folder, and its record. It is safe to call more than once.
func (c *CheckFolder) Release() {
	if c.lock == nil {
		return
	}
	for _, p := range c.m.opts.Providers {
		if tb, ok := p.(sandbox.TmpBounder); ok {
			tb.ReleaseTmp(c.Dir)
		}
	}
	_ = removeAll(c.Dir)
	_ = os.Remove(c.lock.Name())
	c.lock.Close()
	c.lock = nil
}
