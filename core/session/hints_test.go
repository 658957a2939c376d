package session

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openworker/openworker/core/dnsstub"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/policy"
	"github.com/openworker/openworker/core/runner"
	"github.com/openworker/openworker/core/sandbox"
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
	path = ~/.config/git/config
[alias]
	path = not-an-include
`)
	write(filepath.Join(home, ".gitconfig.work"), "")
	write(filepath.Join(home, "relative.inc"), "")
	write(filepath.Join(home, ".config", "git", "config"), "")
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
	// A settings file, a missing one and a non-include line say nothing. (An include in a
	// shared folder refuses the session: see policy's TestWhatGitSettingsNameIsObeyed.)
	for _, not := range []string{"include ~/.config/git/config", "absent.inc", "not-an-include"} {
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
			if again := h.gitMetadataHint(&runner.Result{ExitCode: 1, Stderr: []byte(tc.stderr)}, tc.guarded, "linux"); strings.Contains(again, "--git-metadata writable") {
				t.Errorf("the setting is explained twice: %s", again)
			}
		})
	}
}

// A name the DNS stub could not give an address (every one of the session's names held by an
// open connection) is said with the next result, once, escaped as a command's text is.
func TestStubRefusalIsSaid(t *testing.T) {
	m := dnsstub.NewMap()
	for i := range dnsstub.MaxNames {
		a, _ := m.AddrFor("n" + strconv.Itoa(i) + ".test")
		if _, _, ok := m.Hold(a); !ok {
			t.Fatal("a name given out cannot be held")
		}
	}
	for _, n := range []string{"wanted.test", "evil\x1b[2J.test", "wanted.test"} {
		if _, ok := m.AddrFor(n); ok {
			t.Fatalf("%q was given an address with every name held", n)
		}
	}
	s := &Session{names: m}
	line := s.stubRefused()
	for _, want := range []string{"wanted.test", `evil\x1b[2J.test`, "3 lookups", "16384", "held by open connections"} {
		if !strings.Contains(line, want) {
			t.Errorf("the line does not say %q: %s", want, line)
		}
	}
	if strings.Contains(line, "\x1b") {
		t.Errorf("the line carries a name's escape sequence: %q", line)
	}
	if again := s.stubRefused(); again != "" {
		t.Errorf("said twice: %s", again)
	}
}

// A tool's words when a refused link or clone made it fail bring, where the wall refuses them
// all, the line that says why and what still works; other failures, and walls that allow
// them, do not.
func TestLinkHint(t *testing.T) {
	for _, tc := range []struct {
		name, stderr string
		refused      bool
		want         bool
	}{
		{"cargo", "error: failed to link or copy `/p/target/debug/deps/app-1` to `/p/target/debug/app`\n\nCaused by:\n  Operation not permitted (os error 1)\n", true, true},
		{"npm", "npm error code EPERM\nnpm error syscall link\nnpm error Error: EPERM: operation not permitted, link '/t/a' -> '/t/b'\n", true, true},
		{"node_clone", "Error: EPERM: operation not permitted, copyfile '/p/a' -> '/p/b'\n", true, true},
		{"ln", "ln: /p/b: Operation not permitted\n", true, true},
		{"cp_clone", "cp: /p/b: clonefile failed: Operation not permitted\n", true, true},
		{"allowed_here", "error: failed to link or copy `/a` to `/b`\n", false, false},
		{"other_failure", "error: could not compile `app`\n", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hints{linksRefused: tc.refused, enforcement: sandbox.Seatbelt}
			got := strings.Join(h.toolHints(&runner.Result{ExitCode: 1, Stderr: []byte(tc.stderr)}), "")
			if (got != "") != tc.want {
				t.Fatalf("hint %q, want one: %v", got, tc.want)
			}
			if got != "" && (!strings.Contains(got, "npm's links are made copies") || !strings.Contains(got, "openworker sandbox check") || !strings.HasSuffix(got, "\n")) {
				t.Errorf("the hint: %s", got)
			}
			if again := h.toolHints(&runner.Result{ExitCode: 1, Stderr: []byte(tc.stderr)}); len(again) != 0 {
				t.Errorf("said twice: %s", again)
			}
		})
	}
	h := hints{linksRefused: true, enforcement: sandbox.Seatbelt}
	if got := h.toolHints(&runner.Result{ExitCode: 0, Stderr: []byte("ln: /p/b: Operation not permitted\n")}); len(got) != 0 {
		t.Errorf("said after a command that succeeded: %s", got)
	}
}

// What a Mac's sandbox refuses that everyday tools need, said once after a command that failed
// on it, in words that name the tool: SysV IPC (initdb, LMDB), URLSession's downloads
// (SwiftPM, xcodebuild), and git's https logins. Other failures, and walls where it is not
// so, get nothing.
func TestToolHints(t *testing.T) {
	for _, tc := range []struct {
		name, stderr string
		seatbelt     bool
		allowlist    bool
		want         string // a word of the line; "" for none
	}{
		{"initdb", "FATAL:  could not create shared memory segment: Operation not permitted\nDETAIL:  Failed system call was shmget(key=5432001, size=56, 03600).\n", true, true, "SysV"},
		{"initdb_semaphores", "FATAL:  could not create semaphores: Operation not permitted\n", true, true, "SysV"},
		{"lmdb", "lmdb.Error: /p/.parcel-cache: mdb_env_open: Operation not permitted\n", true, true, "SysV"},
		{"sysv_on_linux", "FATAL:  could not create shared memory segment: Operation not permitted\n", false, true, ""},
		{"swiftpm_binary_target", "error: failed downloading 'https://example.com/Lib.xcframework.zip' which is required by binary target 'Lib': The Internet connection appears to be offline.\n", true, true, "URLSession"},
		{"xcodebuild_resolve", "xcodebuild: error: Could not resolve package dependencies:\n  A server with the specified hostname could not be found.\n", true, true, "URLSession"},
		{"swiftpm_open_network", "error: failed downloading 'https://example.com/Lib.zip': The Internet connection appears to be offline.\n", true, false, ""},
		{"git_https_login", "fatal: could not read Username for 'https://github.com': terminal prompts disabled\n", true, true, "https remotes"},
		{"git_https_login_linux", "fatal: could not read Password for 'https://me@gitlab.com': terminal prompts disabled\n", false, true, "https remotes"},
		{"other_failure", "error: could not compile `app`\n", true, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hints{enforcement: wallOf(tc.seatbelt), allowlist: tc.allowlist}
			got := h.toolHints(&runner.Result{ExitCode: 1, Stderr: []byte(tc.stderr)})
			if (len(got) > 0) != (tc.want != "") || len(got) > 1 {
				t.Fatalf("lines %q, want one with %q", got, tc.want)
			}
			if tc.want == "" {
				return
			}
			if !strings.Contains(got[0], tc.want) || !strings.HasPrefix(got[0], "openworker: ") || !strings.HasSuffix(got[0], "\n") {
				t.Errorf("the line: %q", got[0])
			}
			if again := h.toolHints(&runner.Result{ExitCode: 1, Stderr: []byte(tc.stderr)}); len(again) != 0 {
				t.Errorf("said twice: %q", again)
			}
			if ok := (&hints{enforcement: wallOf(tc.seatbelt), allowlist: tc.allowlist}).toolHints(&runner.Result{ExitCode: 0, Stderr: []byte(tc.stderr)}); len(ok) != 0 {
				t.Errorf("said after a command that succeeded: %q", ok)
			}
		})
	}
}

func wallOf(seatbelt bool) sandbox.Enforcement {
	if seatbelt {
		return sandbox.Seatbelt
	}
	return sandbox.Linux
}

// In a session with no wall the person's own logins and helpers are there: git's failure is
// its own, and no line follows it.
func TestGitHintNotForDirect(t *testing.T) {
	h := hints{enforcement: sandbox.Direct, allowlist: true}
	if got := h.toolHints(&runner.Result{ExitCode: 128, Stderr: []byte("fatal: could not read Username for 'https://github.com': terminal prompts disabled\n")}); len(got) != 0 {
		t.Errorf("direct: %q", got)
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

// A config write git could not make is said whatever git's status (git push -u exits 0 with
// the upstream never set), naming what was not recorded where git says it, each time; the
// setting that allows it is explained once.
func TestGitConfigWriteRefusedIsSaid(t *testing.T) {
	var h hints
	pushU := "error: could not write config file .git/config: Device or resource busy\nbranch 'feature' set up to track 'origin/feature'.\n"
	got := h.gitMetadataHint(&runner.Result{ExitCode: 0, Stderr: []byte(pushU)}, true, "linux")
	for _, want := range []string{"branch.feature.remote", "branch.feature.merge", "not set", "git branch --set-upstream-to=origin/feature feature", "--git-metadata writable"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q is not in: %s", want, got)
		}
	}
	remote := "error: could not write config file /p/.git/config: Device or resource busy\nfatal: could not set 'remote.up.url' to '/b'\n"
	again := h.gitMetadataHint(&runner.Result{ExitCode: 128, Stderr: []byte(remote)}, true, "linux")
	if !strings.Contains(again, "remote.up.url") || strings.Contains(again, "--git-metadata writable") {
		t.Errorf("the second refusal: %s", again)
	}
}

// What was moved aside is named in the line after the command with its path escaped: a
// folder a command named with \r or an escape sequence cannot erase the line that says it.
func TestMovedAsideNoteIsEscaped(t *testing.T) {
	note := gitMetadataNote([]string{"/w/evil\r\x1b[2K/.git/config (settings file: it sets core.fsmonitor) was moved to /q/x"})
	if strings.ContainsAny(note, "\r\x1b") || !strings.Contains(note, `evil\r\x1b[2K`) {
		t.Fatalf("%q", note)
	}
}
