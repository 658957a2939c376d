package session

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/openworker/openworker/core/apitype"
	"github.com/openworker/openworker/core/runner"
)

// ClientVars are the variables a client that attaches to the daemon (the CLI, an MCP server)
// sends with a session's start, taken over the daemon's own (apitype.ClientVars). Nothing
// else a client sends reaches a sandbox: WithVars takes only these.
var ClientVars = apitype.ClientVars

// loginWait bounds the login shell: a slow or interactive startup file must not hold the
// sessions that wait for it.
const loginWait = 5 * time.Second

// LoginOptions are what LoginEnv reads besides the environment it is given; the zero value
// of each field but GOOS and Helper asks this machine.
type LoginOptions struct {
	GOOS string
	// Helper is the program the login shell runs to print its environment, started with
	// runner.EnvArg (the runner helper, or the openworker binary): no program of the
	// system's (an env without -0, as macOS's was) stands between the shell and the answer.
	// Empty: no login shell is asked.
	Helper string
	// AccountShell is the person's login shell from the account record, for when SHELL is
	// unset (an app started by launchd may have none); nil asks this machine (AccountShell).
	AccountShell func() string
	// AppleLocale is the person's language and region on a Mac (defaults read -g
	// AppleLocale), for LANG where nothing sets it; nil asks this Mac.
	AppleLocale func() string
	// LocaleDir holds the installed locales; empty is /usr/share/locale.
	LocaleDir string
	// Wait bounds the login shell; zero is loginWait.
	Wait time.Duration
}

// LoginEnv is env (a daemon's or the app's own environment) with the person's PATH and
// language as their login shell sets them. An app opened from Finder, or a daemon started by
// launchd or systemd, gets a minimal PATH (/usr/bin:/bin:…) and no LANG, so the tools a person
// installed (Homebrew's, nvm's, cargo's) would be "command not found" in every session. It is
// read once, outside any sandbox: the login shell ($SHELL, or the account's when SHELL is
// unset), interactive as the person's terminal is, runs o.Helper, which prints its
// environment NUL-separated; when that fails, the system's path files and Homebrew's folders
// are added to PATH instead. Where nothing sets a language, LANG is the person's (on a Mac
// from AppleLocale, an installed locale only) or C.UTF-8. Only ClientVars are taken.
func LoginEnv(ctx context.Context, env []string, o LoginOptions) []string {
	shell := hostVar(env, "SHELL")
	if shell == "" {
		if o.AccountShell == nil {
			o.AccountShell = AccountShell
		}
		shell = o.AccountShell()
	}
	wait := o.Wait
	if wait <= 0 {
		wait = loginWait
	}
	got := loginShellEnv(ctx, env, shell, o.Helper, wait)
	if got == nil {
		got = map[string]string{"PATH": fallbackPath(hostVar(env, "PATH"), o.GOOS)}
	}
	if got["LANG"] == "" && hostVar(env, "LANG") == "" && got["LC_ALL"] == "" {
		got["LANG"] = o.fallbackLang()
	}
	return WithVars(env, got)
}

// WithVars is env with each of ClientVars that vars sets (non-empty) set to its value there.
func WithVars(env []string, vars map[string]string) []string {
	out := slices.Clone(env)
	for _, k := range ClientVars {
		v := vars[k]
		if v == "" {
			continue
		}
		out = slices.DeleteFunc(out, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
		out = append(out, k+"="+v)
	}
	return out
}

// loginMarker keeps apart what startup files print from the environment itself.
const loginMarker = "\x00openworker-env\x00"

// loginShellEnv runs shell, in env, as a login, interactive shell that runs helper to print
// its environment, and returns ClientVars from it, or nil when it could not.
func loginShellEnv(ctx context.Context, env []string, shell, helper string, wait time.Duration) map[string]string {
	// The helper's path is quoted for the shell, which a quote in it would end.
	if shell == "" || !filepath.IsAbs(shell) || helper == "" || !filepath.IsAbs(helper) || strings.ContainsAny(helper, "'\x00") {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, shell, "-l", "-i", "-c", `printf '\0openworker-env\0'; exec '`+helper+`' `+runner.EnvArg)
	cmd.Env = env
	cmd.Stdin = nil // no terminal: an interactive startup file that reads input gets EOF
	cmd.Stderr = nil
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	_, after, ok := bytes.Cut(out, []byte(loginMarker))
	if !ok {
		return nil
	}
	vars := map[string]string{}
	for _, kv := range bytes.Split(after, []byte{0}) {
		k, v, ok := strings.Cut(string(kv), "=")
		if ok && slices.Contains(ClientVars, k) {
			vars[k] = v
		}
	}
	if vars["PATH"] == "" {
		return nil
	}
	return vars
}

// fallbackPath is path with the system's path files' folders (/etc/paths, /etc/paths.d on a
// Mac) and Homebrew's bin folders added where they exist and are missing.
func fallbackPath(path, goos string) string {
	dirs := filepath.SplitList(path)
	var more []string
	if goos == "darwin" {
		more = append(more, pathFile("/etc/paths")...)
		files, _ := filepath.Glob("/etc/paths.d/*")
		for _, f := range files {
			more = append(more, pathFile(f)...)
		}
		more = append(more, "/opt/homebrew/bin", "/opt/homebrew/sbin", "/usr/local/bin")
	} else {
		more = append(more, "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/home/linuxbrew/.linuxbrew/bin")
	}
	for _, d := range more {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, string(filepath.ListSeparator))
}

func pathFile(name string) []string {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); filepath.IsAbs(line) {
			out = append(out, line)
		}
	}
	return out
}

// fallbackLang is a UTF-8 locale: on a Mac the person's (AppleLocale), as an installed
// locale (MacLang); elsewhere C.UTF-8.
func (o LoginOptions) fallbackLang() string {
	if o.GOOS != "darwin" {
		return "C.UTF-8"
	}
	if o.AppleLocale == nil {
		o.AppleLocale = appleLocale
	}
	dir := o.LocaleDir
	if dir == "" {
		dir = "/usr/share/locale"
	}
	return MacLang(o.AppleLocale(), dir)
}

// appleLocale is this Mac's AppleLocale ("en_DE", "zh-Hans_CN", "fr_CA@calendar=…"), or "".
func appleLocale() string {
	out, err := exec.Command("/usr/bin/defaults", "read", "-g", "AppleLocale").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// usualCountry is the country a language's everyday locale names where it is not the
// language's own code in capitals (de_DE, fr_FR): AppleLocale pairs any language with any
// region ("en_DE", "de_US"), and macOS installs few such pairs.
var usualCountry = map[string]string{
	"en": "US", "ja": "JP", "ko": "KR", "zh": "CN", "zh-Hant": "TW", "sv": "SE", "da": "DK",
	"nb": "NO", "cs": "CZ", "el": "GR", "he": "IL", "uk": "UA", "ca": "ES", "et": "EE", "sl": "SI",
	"sr": "RS", "hi": "IN", "pt": "PT", "eu": "ES", "hy": "AM", "kk": "KZ",
}

// MacLang is LANG for a Mac whose AppleLocale is appleLocale, among the locales installed in
// dir: the language in its region when that is installed (de_AT.UTF-8), else in its usual
// country (en_DE gives en_US.UTF-8, de_US gives de_DE.UTF-8, zh-Hant_HK gives zh_TW.UTF-8),
// else en_US.UTF-8. A locale that is not installed makes perl print "Setting locale failed"
// at every start (shasum, git's perl helpers, Homebrew's scripts) and leaves Python and Ruby
// in ASCII.
func MacLang(appleLocale, dir string) string {
	loc, _, _ := strings.Cut(strings.TrimSpace(appleLocale), "@")
	lang, region, _ := strings.Cut(loc, "_")
	base, script, _ := strings.Cut(lang, "-")
	installed := func(name string) bool {
		if name == "" || strings.ContainsAny(name, "/\\ \t\"'") || strings.HasPrefix(name, ".") {
			return false
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		return err == nil && fi.IsDir()
	}
	var candidates []string
	if base != "" && region != "" {
		candidates = append(candidates, base+"_"+region+".UTF-8")
	}
	usual, ok := usualCountry[base+"-"+script]
	if !ok {
		usual, ok = usualCountry[base]
	}
	if !ok {
		usual = strings.ToUpper(base)
	}
	if base != "" {
		candidates = append(candidates, base+"_"+usual+".UTF-8")
	}
	for _, c := range candidates {
		if installed(c) {
			return c
		}
	}
	return "en_US.UTF-8"
}
