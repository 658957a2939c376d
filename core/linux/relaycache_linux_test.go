package linux

import (
	"os"
	"path/filepath"
	"testing"
)

// The relay's "works here" is kept for the boot, and only that answer, and only for this
// boot: a file that says otherwise (another boot's, or anything else) is tried again.
func TestRelayAnswerKeptForTheBoot(t *testing.T) {
	path := relayCachePath()
	if path == "" || bootID() == "" {
		t.Skip("no runtime folder or boot ID here")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	old, had := os.ReadFile(path)
	t.Cleanup(func() {
		if had == nil {
			os.WriteFile(path, old, 0o600)
		} else {
			os.Remove(path)
		}
	})
	forgetRelayWorks()
	if relayKnownToWork() {
		t.Fatal("no file, yet the relay is known to work")
	}
	for _, forged := range []string{"", "yes\n", "00000000-0000-0000-0000-000000000000\n"} {
		if err := os.WriteFile(path, []byte(forged), 0o600); err != nil {
			t.Fatal(err)
		}
		if relayKnownToWork() {
			t.Errorf("a file saying %q is taken as this boot's answer", forged)
		}
	}
	rememberRelayWorks()
	if !relayKnownToWork() {
		t.Fatal("the answer was not kept")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the kept answer's file: %v %v", fi, err)
	}
	forgetRelayWorks()
	if relayKnownToWork() {
		t.Error("the answer was not forgotten")
	}
}
