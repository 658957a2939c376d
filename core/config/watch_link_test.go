package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWatchFollowsALinkedFile: a settings file that is a symlink into a dotfiles folder is
// reloaded when the file it leads to is edited there, however the editor saves it, and when
// the link is pointed elsewhere; and then when that file is edited.
func TestWatchFollowsALinkedFile(t *testing.T) {
	root := t.TempDir()
	dots, other, cfg := filepath.Join(root, "dotfiles", "openworker"), filepath.Join(root, "other"), filepath.Join(root, "cfg")
	for _, d := range []string{dots, other, cfg} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	real := filepath.Join(dots, "config.toml")
	writeFile(t, real, hostsFile("a.com:443", "b.com:443"))
	path := filepath.Join(cfg, "config.toml")
	if err := os.Symlink(real, path); err != nil {
		t.Fatal(err)
	}
	w, events := startWatch(t, path)
	wantHosts(t, w.Current(), "a.com:443", "b.com:443")

	// Edited in place where it lies: a site taken out.
	writeFile(t, real, hostsFile("a.com:443"))
	wantHosts(t, next(t, events).Settings, "a.com:443")
	// Saved there by rename, as editors do.
	tmp := filepath.Join(dots, ".config.toml.swp")
	writeFile(t, tmp, hostsFile("c.com:443"))
	if err := os.Rename(tmp, real); err != nil {
		t.Fatal(err)
	}
	wantHosts(t, next(t, events).Settings, "c.com:443")

	// The link pointed at another file, in a folder not watched before.
	moved := filepath.Join(other, "config.toml")
	writeFile(t, moved, hostsFile("d.com:443"))
	link := filepath.Join(cfg, ".link.tmp")
	if err := os.Symlink(moved, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(link, path); err != nil {
		t.Fatal(err)
	}
	wantHosts(t, next(t, events).Settings, "d.com:443")
	writeFile(t, moved, hostsFile("e.com:443"))
	wantHosts(t, next(t, events).Settings, "e.com:443")
	// The file it left is no longer the settings.
	writeFile(t, real, hostsFile("f.com:443"))
	quiet(t, events, 4*testDebounce)
	wantHosts(t, w.Current(), "e.com:443")
}
