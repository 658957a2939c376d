package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestLocations(t *testing.T) {
	tests := []struct {
		name       string
		goos       string
		env        map[string]string
		wantConfig string
		wantState  string
	}{
		{"darwin", "darwin", nil,
			"/Users/ann/Library/Application Support/OpenWorker/config.toml",
			"/Users/ann/Library/Application Support/OpenWorker"},
		{"darwin_ignores_xdg", "darwin", map[string]string{"XDG_CONFIG_HOME": "/x"},
			"/Users/ann/Library/Application Support/OpenWorker/config.toml",
			"/Users/ann/Library/Application Support/OpenWorker"},
		{"linux_default", "linux", nil,
			"/Users/ann/.config/openworker/config.toml",
			"/Users/ann/.local/state/openworker"},
		{"linux_xdg", "linux", map[string]string{"XDG_CONFIG_HOME": "/cfg", "XDG_STATE_HOME": "/st"},
			"/cfg/openworker/config.toml",
			"/st/openworker"},
		{"linux_relative_xdg_ignored", "linux", map[string]string{"XDG_CONFIG_HOME": "cfg", "XDG_STATE_HOME": "st"},
			"/Users/ann/.config/openworker/config.toml",
			"/Users/ann/.local/state/openworker"},
		{"override", "darwin", map[string]string{"OPENWORKER_CONFIG": "/tmp/x/c.toml"},
			"/tmp/x/c.toml",
			"/Users/ann/Library/Application Support/OpenWorker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			got, err := pathFor(tt.goos, getenv, "/Users/ann")
			if err != nil || got != tt.wantConfig {
				t.Errorf("config = %q, %v; want %q", got, err, tt.wantConfig)
			}
			loc, err := locate(tt.goos, getenv, "/Users/ann")
			if err != nil || loc.stateDir != tt.wantState {
				t.Errorf("state = %q, %v; want %q", loc.stateDir, err, tt.wantState)
			}
		})
	}
	if _, err := pathFor("linux", func(string) string { return "" }, ""); err == nil {
		t.Error("no home folder: want an error")
	}
}

func TestPathFromEnvironment(t *testing.T) {
	t.Setenv(EnvConfig, "")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	p, err := Path()
	if err != nil || !filepath.IsAbs(p) || filepath.Base(p) != FileName || !slices.Contains([]string{
		filepath.Join(home, ".config", "openworker", FileName),
		filepath.Join(home, "Library", "Application Support", "OpenWorker", FileName),
	}, p) {
		t.Errorf("Path = %q, %v", p, err)
	}
	if d, err := StateDir(); err != nil || !filepath.IsAbs(d) {
		t.Errorf("StateDir = %q, %v", d, err)
	}
	t.Setenv(EnvConfig, "rel/c.toml")
	wd, _ := os.Getwd()
	if p, err := Path(); err != nil || p != filepath.Join(wd, "rel", "c.toml") {
		t.Errorf("Path with a relative override = %q, %v", p, err)
	}
}

func TestLoadProject(t *testing.T) {
	proj, err := LoadProject("testdata/project")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("testdata", "project", ".openworker", "config.toml")
	if proj.File != file {
		t.Errorf("File = %q", proj.File)
	}
	var got []string
	for _, p := range proj.Ignored {
		got = append(got, p.String())
	}
	want := []string{
		file + ":3:1: sandbox_provider is ignored: sandbox settings are per machine and a project cannot change them; set it in Settings ▸ Sandbox",
		file + ":4:1: sandbox_network_profile is ignored: sandbox settings are per machine and a project cannot change them; set it in Settings ▸ Sandbox",
		file + ":6:3: sandbox_credentials is ignored: sandbox settings are per machine and a project cannot change them; set it in Settings ▸ Sandbox",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Ignored:\n got %q\nwant %q", got, want)
	}

	none, err := LoadProject(t.TempDir())
	if err != nil || none.File != "" || len(none.Ignored) != 0 {
		t.Errorf("no project config: %+v, %v", none, err)
	}

	broken := t.TempDir()
	if err := os.MkdirAll(filepath.Join(broken, ".openworker"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(broken, ".openworker", "config.toml"), "sandbox_provider = \n")
	if _, err := LoadProject(broken); err == nil {
		t.Error("broken project config: want an error")
	}
}
