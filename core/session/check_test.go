package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/sandbox"
)

// A check's folder is removed by Release, and, when its owner died before that, by the next
// manager's start, which writes no session record for it; a live owner's folder is kept.
func TestCheckFolderIsSweptWhenItsOwnerDied(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	c, err := f.m.ClaimCheck()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(c.Dir) != f.tmpRoot || !strings.HasPrefix(filepath.Base(c.Dir), "openworker-check-") {
		t.Fatalf("check folder %s is not in the tmp root", c.Dir)
	}
	os.WriteFile(filepath.Join(c.Dir, "left"), []byte("x"), 0o600)
	if _, err := NewManager(f.m.opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir); err != nil {
		t.Fatalf("a running check's folder was swept: %v", err)
	}
	c.lock.Close() // as the process's death lets go of the lock
	if _, err := NewManager(f.m.opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(c.Dir); err == nil {
		t.Fatal("a dead check's folder was not swept by the next start")
	}
	if des, _ := os.ReadDir(filepath.Join(f.home, "state", "sessions")); len(des) != 0 {
		t.Fatalf("records left after the sweep: %v", des)
	}
	if b, _ := os.ReadFile(f.log); strings.Contains(string(b), "check-") {
		t.Fatalf("the sweep wrote an audit record for a check:\n%s", b)
	}
	c2, err := f.m.ClaimCheck()
	if err != nil {
		t.Fatal(err)
	}
	c2.Release()
	c2.Release()
	if _, err := os.Lstat(c2.Dir); err == nil {
		t.Fatal("Release left the check folder")
	}
}
