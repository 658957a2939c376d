package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/sandbox"
)

// TestLinkedSettingsFolderIsGuarded: a settings file that is a link into a dotfiles folder
// is guarded where it leads, at the start of a session and when a folder is added.
func TestLinkedSettingsFolderIsGuarded(t *testing.T) {
	f := newFixture(t, map[sandbox.Enforcement]sandbox.Provider{sandbox.Direct: sandbox.DirectProvider{}})
	dots := filepath.Join(filepath.Dir(f.home), "dotfiles")
	real := filepath.Join(dots, "openworker", "config.toml")
	link := filepath.Join(f.home, ".config", "openworker", "config.toml")
	for _, d := range []string{filepath.Dir(real), filepath.Dir(link)} {
		mustOK(t, os.MkdirAll(d, 0o700))
	}
	mustOK(t, os.WriteFile(real, nil, 0o600))
	mustOK(t, os.Symlink(real, link))
	f.m.opts.SettingsPath = link
	want := "contains the folder of OpenWorker's settings file " + filepath.Dir(real)
	if _, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{dots}, Network: policy.None}); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("starting with the dotfiles folder writable: %v, want %q", err, want)
	}
	s, err := f.m.Start(context.Background(), Spec{Provider: sandbox.Direct, Writable: []string{f.project}, Network: policy.None})
	if err != nil {
		t.Fatal(err)
	}
	defer s.End()
	if err := s.AddFolder(context.Background(), dots, true); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("adding the dotfiles folder: %v, want %q", err, want)
	}
	// The default settings file (a daemon started without OPENWORKER_CONFIG reads it) is
	// followed too, though this manager's settings are elsewhere.
	f.m.opts.SettingsPath = filepath.Join(f.home, "elsewhere.toml")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(f.home, ".config"))
	if err := s.AddFolder(context.Background(), dots, false); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("adding the dotfiles folder of the default settings: %v, want %q", err, want)
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
