package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helper is this test binary, which prints its environment when started with
// runner.EnvArg (TestMain), as the runner helper does.
func helper(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func TestLoginEnv(t *testing.T) {
	home := t.TempDir()
	tools := filepath.Join(home, "tools")
	os.Mkdir(tools, 0o755)
	os.WriteFile(filepath.Join(home, ".profile"), []byte("echo noise from a startup file\nexport PATH=\""+tools+":$PATH\"\nexport LANG=xx_YY.UTF-8\nexport SECRET_TOKEN=x\n"), 0o644)
	t.Setenv("HOME", home)
	env := []string{"PATH=/usr/bin:/bin", "SHELL=/bin/sh", "HOME=" + home, "KEEP=1"}
	got := LoginEnv(context.Background(), env, LoginOptions{GOOS: "linux", Helper: helper(t)})
	if p := hostVar(got, "PATH"); !strings.HasPrefix(p, tools+":") {
		t.Fatalf("PATH %q: the login shell's not taken", p)
	}
	if hostVar(got, "LANG") != "xx_YY.UTF-8" || hostVar(got, "KEEP") != "1" || hostVar(got, "SECRET_TOKEN") != "" {
		t.Fatalf("login env: %q", got)
	}
	// A shell that cannot run: the system's folders are added, and a UTF-8 language set.
	got = LoginEnv(context.Background(), []string{"PATH=/nonexistent", "SHELL=/nonexistent/sh"}, LoginOptions{GOOS: "linux", Helper: helper(t), AccountShell: func() string { return "" }})
	if p := hostVar(got, "PATH"); !strings.HasPrefix(p, "/nonexistent:") || !strings.Contains(p, "/usr/bin") {
		t.Fatalf("fallback PATH %q", p)
	}
	if hostVar(got, "LANG") != "C.UTF-8" {
		t.Fatalf("fallback LANG %q", hostVar(got, "LANG"))
	}
}

// loginShell writes a login shell that sets PATH to tools, as a person's startup files do:
// a stand-in for zsh or bash started with -l -i -c COMMAND. rewrite, when set, is a sed
// expression it applies to COMMAND first.
func loginShell(t *testing.T, dir, tools, rewrite string) string {
	t.Helper()
	sh := filepath.Join(dir, "login-shell")
	body := "#!/bin/sh\n# -l -i -c COMMAND\ncmd=\"$4\"\n"
	if rewrite != "" {
		body += "cmd=$(printf '%s' \"$cmd\" | sed '" + rewrite + "')\n"
	}
	body += "PATH=\"" + tools + ":$PATH\"; export PATH\nexec /bin/sh -c \"$cmd\"\n"
	if err := os.WriteFile(sh, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return sh
}

// The login environment as a Mac's app or daemon captures it, in the cases people hit:
// golden environments (PATH and LANG) for each.
func TestLoginEnvGolden(t *testing.T) {
	root := t.TempDir()
	tools := filepath.Join(root, "tools")
	locales := filepath.Join(root, "locale")
	for _, d := range []string{tools, locales} {
		os.Mkdir(d, 0o755)
	}
	// macOS's /usr/share/locale has en_US.UTF-8, de_DE.UTF-8, zh_CN.UTF-8, fr_CA.UTF-8, ...;
	// never en_DE or de_US.
	for _, l := range []string{"en_US.UTF-8", "en_GB.UTF-8", "de_DE.UTF-8", "de_AT.UTF-8", "zh_CN.UTF-8", "zh_TW.UTF-8", "fr_FR.UTF-8", "fr_CA.UTF-8", "sv_SE.UTF-8", "ja_JP.UTF-8"} {
		os.Mkdir(filepath.Join(locales, l), 0o755)
	}
	// An env that knows no -0, as BSD env before it did: it prints the usage and fails.
	oldEnv := filepath.Join(root, "env-without-0")
	os.WriteFile(oldEnv, []byte("#!/bin/sh\ncase \"$1\" in -0) echo 'env: illegal option -- 0' >&2; echo 'usage: env [-iv] [-P utilpath] [-S string] [-u name]' >&2; exit 1;; esac\nexec /usr/bin/env \"$@\"\n"), 0o755)
	shell := loginShell(t, root, tools, "")
	os.Mkdir(filepath.Join(root, "bsd"), 0o755)
	noEnv0 := loginShell(t, filepath.Join(root, "bsd"), tools, "s#/usr/bin/env#"+oldEnv+"#g")
	base := []string{"PATH=/usr/bin:/bin", "HOME=" + root}
	for _, tt := range []struct {
		name        string
		env         []string
		account     string // the account record's shell
		appleLocale string
		path, lang  string
	}{
		{name: "installed_locale", env: append(base, "SHELL="+shell), appleLocale: "de_AT", path: tools + ":", lang: "de_AT.UTF-8"},
		{name: "english_in_germany", env: append(base, "SHELL="+shell), appleLocale: "en_DE", path: tools + ":", lang: "en_US.UTF-8"},
		{name: "german_in_the_us", env: append(base, "SHELL="+shell), appleLocale: "de_US", path: tools + ":", lang: "de_DE.UTF-8"},
		{name: "swedish_in_finland", env: append(base, "SHELL="+shell), appleLocale: "sv_FI", path: tools + ":", lang: "sv_SE.UTF-8"},
		{name: "script_tag", env: append(base, "SHELL="+shell), appleLocale: "zh-Hans_CN", path: tools + ":", lang: "zh_CN.UTF-8"},
		{name: "traditional_script", env: append(base, "SHELL="+shell), appleLocale: "zh-Hant_HK", path: tools + ":", lang: "zh_TW.UTF-8"},
		{name: "calendar_keyword", env: append(base, "SHELL="+shell), appleLocale: "fr_CA@calendar=gregorian", path: tools + ":", lang: "fr_CA.UTF-8"},
		{name: "region_override", env: append(base, "SHELL="+shell), appleLocale: "en_US@rg=dezzzz", path: tools + ":", lang: "en_US.UTF-8"},
		{name: "no_such_language", env: append(base, "SHELL="+shell), appleLocale: "tlh_QO", path: tools + ":", lang: "en_US.UTF-8"},
		{name: "no_apple_locale", env: append(base, "SHELL="+shell), appleLocale: "", path: tools + ":", lang: "en_US.UTF-8"},
		{name: "hostile_apple_locale", env: append(base, "SHELL="+shell), appleLocale: "../../etc/x y", path: tools + ":", lang: "en_US.UTF-8"},
		{name: "shell_unset", env: base, account: shell, appleLocale: "ja_JP", path: tools + ":", lang: "ja_JP.UTF-8"},
		{name: "shell_without_env_0", env: append(base, "SHELL="+noEnv0), appleLocale: "en_GB", path: tools + ":", lang: "en_GB.UTF-8"},
		{name: "lang_from_the_person", env: append(base, "SHELL="+shell, "LANG=pt_BR.UTF-8"), appleLocale: "en_DE", path: tools + ":", lang: "pt_BR.UTF-8"},
		{name: "no_shell_at_all", env: base, account: "", appleLocale: "en_DE", path: "/usr/bin:/bin", lang: "en_US.UTF-8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := LoginEnv(context.Background(), tt.env, LoginOptions{
				GOOS: "darwin", Helper: helper(t), LocaleDir: locales,
				AccountShell: func() string { return tt.account },
				AppleLocale:  func() string { return tt.appleLocale },
			})
			if p := hostVar(got, "PATH"); !strings.HasPrefix(p, tt.path) {
				t.Errorf("PATH = %q, want it to start %q", p, tt.path)
			}
			if l := hostVar(got, "LANG"); l != tt.lang {
				t.Errorf("LANG = %q, want %q", l, tt.lang)
			}
		})
	}
}

// The capture waits for a slow login shell no longer than its bound.
func TestLoginEnvIsBounded(t *testing.T) {
	dir := t.TempDir()
	slow := filepath.Join(dir, "slow-shell")
	os.WriteFile(slow, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755)
	start := time.Now()
	got := LoginEnv(context.Background(), []string{"PATH=/usr/bin:/bin", "SHELL=" + slow}, LoginOptions{GOOS: "linux", Helper: helper(t), Wait: 300 * time.Millisecond})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the capture took %v", took)
	}
	if hostVar(got, "PATH") == "" || hostVar(got, "LANG") != "C.UTF-8" {
		t.Errorf("after a slow shell: %q", got)
	}
}

// The account record's shell: dscl's answer on a Mac, the passwd file's elsewhere.
func TestAccountShellParsers(t *testing.T) {
	if got := dsclShell("UserShell: /opt/homebrew/bin/fish\n"); got != "/opt/homebrew/bin/fish" {
		t.Errorf("dscl: %q", got)
	}
	for _, bad := range []string{"", "UserShell:\n", "No such key: UserShell\n", "UserShell: fish\n"} {
		if got := dsclShell(bad); got != "" {
			t.Errorf("dscl %q: %q", bad, got)
		}
	}
	passwd := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/bash\n# a comment\nme:x:1000:1000:Me,,,:/home/me:/usr/bin/zsh\nbad:x:1001\n"), 0o644)
	if got := passwdShell(passwd, 1000); got != "/usr/bin/zsh" {
		t.Errorf("passwd 1000: %q", got)
	}
	if got := passwdShell(passwd, 1001); got != "" {
		t.Errorf("passwd 1001: %q", got)
	}
}
