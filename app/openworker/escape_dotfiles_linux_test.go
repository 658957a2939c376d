package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// dotfiles makes ~/name (a dotfiles folder) and links each of files (relative to the home
// folder) to the file of the same name there, as a dotfiles manager does, writing text into
// the ones given any. It returns the dotfiles folder.
func (w *world) dotfiles(name string, files map[string]string) string {
	w.t.Helper()
	dots := filepath.Join(w.home, name)
	for rel, text := range files {
		real := filepath.Join(dots, strings.TrimPrefix(rel, "."))
		link := filepath.Join(w.home, rel)
		for _, d := range []string{filepath.Dir(real), filepath.Dir(link)} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				w.t.Fatal(err)
			}
		}
		if strings.HasSuffix(text, "/") {
			if err := os.MkdirAll(filepath.Join(real, text), 0o700); err != nil {
				w.t.Fatal(err)
			}
		} else if text != "" {
			if err := os.WriteFile(real, []byte(text), 0o600); err != nil {
				w.t.Fatal(err)
			}
		}
		if err := os.Symlink(real, link); err != nil {
			w.t.Fatal(err)
		}
	}
	return dots
}

// TestDotfilesAreNotWritableInside: a settings file, git's settings or a toolchain's login
// file that is a symlink into a dotfiles folder is obeyed outside the sandbox; a session
// with that folder writable is refused, saying which file and why, and the file is
// unchanged. Each case writes what an attacker would, so that a session which starts
// shows the escape.
func TestDotfilesAreNotWritableInside(t *testing.T) {
	w := newWorld(t)
	requireSandbox(t, w)
	w.homeOutsideTmp()
	settingsDots := w.dotfiles("dots-settings", map[string]string{".config/openworker/config.toml": "sandbox_network_profile = \"allowlist\"\n"})
	gitDots := w.dotfiles("dots-git", map[string]string{".gitconfig": "[user]\n\tname = Person\n"})
	// A folder link: git's config there does not exist yet, and git reads it once it does.
	xdgDots := w.dotfiles("dots-xdg", map[string]string{".config/git": "./"})
	cargoDots := w.dotfiles("dots-cargo", map[string]string{".cargo": "bin/"})
	tests := []struct {
		name  string
		dots  string
		write string // a shell command run in the dotfiles folder
		file  string // what it changes
		want  []string
	}{
		{"settings", settingsDots, `echo 'sandbox_network_profile = "open"' > config/openworker/config.toml`, filepath.Join(settingsDots, "config", "openworker", "config.toml"),
			[]string{"writable folder " + settingsDots + " contains the folder of OpenWorker's settings file " + filepath.Join(settingsDots, "config", "openworker"), "rewrite the settings"}},
		{"gitconfig", gitDots, `printf '[core]\n\tfsmonitor = touch /tmp/ran\n' >> gitconfig`, filepath.Join(gitDots, "gitconfig"),
			[]string{"writable folder " + gitDots + " holds ~/.gitconfig (which is " + filepath.Join(gitDots, "gitconfig") + ")", "fsmonitor", "read-only"}},
		{"git_config_folder", xdgDots, `printf '[core]\n\tfsmonitor = touch /tmp/ran\n' > config/git/config`, filepath.Join(xdgDots, "config", "git", "config"),
			[]string{"holds ~/.config/git/config (which is " + filepath.Join(xdgDots, "config", "git", "config") + ")"}},
		{"cargo_login", cargoDots, `printf '[registry]\ntoken = "stolen"\n' > cargo/credentials.toml`, filepath.Join(cargoDots, "cargo", "credentials.toml"),
			[]string{"holds ~/.cargo/credentials (which is " + filepath.Join(cargoDots, "cargo", "credentials") + ")", "login"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := os.ReadFile(tt.file)
			c := w.cmd("run", "--rw", tt.dots, "--network", "none", "--", "sh", "-c", tt.write)
			c.Dir = tt.dots
			out, err := c.CombinedOutput()
			after, _ := os.ReadFile(tt.file)
			if string(after) != string(before) {
				os.WriteFile(tt.file, before, 0o600)
				t.Fatalf("a command inside changed %s (exit %v):\n%s", tt.file, err, out)
			}
			if err == nil {
				t.Fatalf("the session started:\n%s", out)
			}
			for _, want := range tt.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("the refusal does not say %q:\n%s", want, out)
				}
			}
		})
	}
	// The person's git outside never obeys what a command wrote.
	c := exec.Command("git", "config", "--global", "--get", "core.fsmonitor")
	c.Env = w.env
	if out, err := c.Output(); err == nil {
		t.Fatalf("the person's git obeys a core.fsmonitor written inside: %s", out)
	}
	// Sharing git's dotfiles folder read-only is fine: nothing in it can change.
	if out, err := w.cmd("run", "--ro", gitDots, "--network", "none", "--", "cat", filepath.Join(gitDots, "gitconfig")).CombinedOutput(); err != nil || !strings.Contains(string(out), "Person") {
		t.Fatalf("reading the dotfiles folder: %v\n%s", err, out)
	}
}
