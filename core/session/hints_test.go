package session

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
)

func TestForwardsOf(t *testing.T) {
	var list []hosts.Entry
	for _, s := range []string{"127.0.0.1:5432", "[::1]:6379", "localhost:3000", "example.com:443", "10.0.0.1:80", "127.0.0.1:5432", "*.localhost.example:1"} {
		e, err := hosts.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, e)
	}
	var got []string
	for _, a := range forwardsOf(list) {
		got = append(got, a.String())
	}
	want := []string{"127.0.0.1:5432", "[::1]:6379", "127.0.0.1:3000", "[::1]:3000"}
	if !slices.Equal(got, want) {
		t.Errorf("forwards %q, want %q (loopback literals and localhost, once each)", got, want)
	}
}

func TestGitIncludeHints(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home, tmp := filepath.Join(root, "home"), filepath.Join(root, "tmp")
	shared := filepath.Join(home, "project")
	for _, d := range []string{filepath.Join(home, ".config", "git"), filepath.Join(tmp, "home"), shared} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".gitconfig"), `[user]
	name = Pat
[include]
	path = ~/.gitconfig.work
	path = "relative.inc"
	path = ~/.config/git/config
	path = ~/absent.inc
[includeIf "gitdir:~/project/"]
	path = ~/project/.gitconfig-project
[alias]
	path = not-an-include
`)
	write(filepath.Join(home, ".gitconfig.work"), "")
	write(filepath.Join(home, "relative.inc"), "")
	write(filepath.Join(home, ".config", "git", "config"), "")
	write(filepath.Join(shared, ".gitconfig-project"), "")
	write(filepath.Join(home, "not-an-include"), "")
	p, err := policy.New(policy.Options{Writable: []string{shared}, PrivateTmp: tmp, UserHome: home, GOOS: "linux", Settings: policy.GitSettings})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(gitIncludeHints(p), "")
	for _, want := range []string{"include ~/.gitconfig.work, which is not readable inside", "include ~/relative.inc, which is not readable inside"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
	// A settings file, a file in a shared folder, a missing one and a non-include line say nothing.
	for _, not := range []string{"include ~/.config/git/config", "gitconfig-project", "absent.inc", "not-an-include"} {
		if strings.Contains(got, not) {
			t.Errorf("%q named in:\n%s", not, got)
		}
	}
	if n := strings.Count(got, "\n"); n != 2 {
		t.Errorf("%d lines, want 2:\n%s", n, got)
	}
}

// git's own words when the wall refuses its settings or hooks bring the hint that names the
// setting; other failures do not.
func TestGitMetadataHint(t *testing.T) {
	for _, tc := range []struct {
		name, stderr string
		guarded      bool
		want         bool
	}{
		{"config_busy", "error: could not write config file .git/config: Device or resource busy\n", true, true},
		{"remote_add", "error: could not write config file /p/.git/config: Device or resource busy\nfatal: could not set 'remote.origin.url' to '/b'\n", true, true},
		{"lock", "error: could not lock config file .git/config: Read-only file system\n", true, true},
		{"hook", "sh: 1: cannot create .git/hooks/pre-commit: Read-only file system\n", true, true},
		{"not_guarded", "error: could not write config file .git/config: Device or resource busy\n", false, false},
		{"other_failure", "fatal: not a git repository\n", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h hints
			got := h.gitMetadataHint(&runner.Result{ExitCode: 1, Stderr: []byte(tc.stderr)}, tc.guarded, "linux")
			if (got != "") != tc.want {
				t.Fatalf("hint %q, want one: %v", got, tc.want)
			}
			if got != "" && (!strings.Contains(got, "--git-metadata writable") || !strings.Contains(got, `sandbox_git_metadata = "writable"`)) {
				t.Errorf("the hint does not name the setting: %s", got)
			}
			if got != "" && (strings.Contains(got, "Settings ▸") || !strings.Contains(got, "openworker config path")) {
				t.Errorf("on Linux the hint names a Mac's screen, or not the settings file: %s", got)
			}
			if again := h.gitMetadataHint(&runner.Result{ExitCode: 1, Stderr: []byte(tc.stderr)}, tc.guarded, "linux"); again != "" {
				t.Errorf("said twice: %s", again)
			}
		})
	}
}

// On a Mac the git metadata hint names the app's screen besides the setting.
func TestGitMetadataHintOnAMac(t *testing.T) {
	var h hints
	got := h.gitMetadataHint(&runner.Result{ExitCode: 1, Stderr: []byte("error: could not lock config file .git/config: Operation not permitted\nerror: could not write config file .git/config: Device or resource busy\n")}, true, "darwin")
	if !strings.Contains(got, "Settings ▸ Sandbox") || !strings.Contains(got, `sandbox_git_metadata = "writable"`) {
		t.Errorf("hint %q", got)
	}
}
