package backend

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
)

// TestLinkedSettingsFileFollowsItsTarget: a settings file that is a symlink into a dotfiles
// folder is reloaded when the file it leads to is edited there (a site the person took out
// is refused to the running session at once) and when the link is pointed elsewhere.
func TestLinkedSettingsFileFollowsItsTarget(t *testing.T) {
	f := newFixture(t, "")
	_, px := f.start(t)
	o := origin(t)
	dots := filepath.Join(filepath.Dir(filepath.Dir(f.settings)), "dotfiles")
	os.MkdirAll(dots, 0o700)
	real, other := filepath.Join(dots, "config.toml"), filepath.Join(dots, "other", "config.toml")
	os.MkdirAll(filepath.Dir(other), 0o700)
	allowed := fmt.Sprintf("sandbox_network_hosts = [%q]\n", o)
	os.WriteFile(real, []byte(allowed), 0o600)
	if err := os.Symlink(real, f.settings); err != nil {
		t.Fatal(err)
	}
	status := func(want int) {
		t.Helper()
		tstest.WaitFor(t, 5*time.Second, func() error {
			if got, err := get(px, o); err != nil || got != want {
				return fmt.Errorf("GET %s: %d %v, want %d", o, got, err, want)
			}
			return nil
		})
	}
	status(http.StatusOK)
	// The site taken out where the file really lies.
	os.WriteFile(real, []byte("sandbox_network_hosts = []\n"), 0o600)
	status(http.StatusForbidden)
	// The link pointed at another file that allows it.
	os.WriteFile(other, []byte(allowed), 0o600)
	tmp := f.settings + ".tmp"
	os.Symlink(other, tmp)
	if err := os.Rename(tmp, f.settings); err != nil {
		t.Fatal(err)
	}
	status(http.StatusOK)
	// And that file edited in its own folder.
	os.WriteFile(other, []byte("sandbox_network_hosts = []\n"), 0o600)
	status(http.StatusForbidden)
}
