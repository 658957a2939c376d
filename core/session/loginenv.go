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
)

// ClientVars are the variables a client that attaches to the daemon (the CLI, an MCP server)
// sends with a session's start, taken over the daemon's own (apitype.ClientVars). Nothing
// else a client sends reaches a sandbox: WithVars takes only these.
var ClientVars = apitype.ClientVars

// loginWait bounds the login shell: a slow or interactive startup file must not hold the
// daemon's start.
const loginWait = 5 * time.Second

// LoginEnv is env (a daemon's or the app's own environment) with the person's PATH and
// language as their login shell sets them. An app opened from Finder, or a daemon started by
// launchd or systemd, gets a minimal PATH (/usr/bin:/bin:…) and no LANG, so the tools a person
// installed (Homebrew's, nvm's, cargo's) would be "command not found" in every session. It is
// read once, outside any sandbox: the login shell, interactive as the person's terminal is,
// prints its environment NUL-separated; when it fails, the system's path files and
// Homebrew's folders are added to PATH instead, and LANG becomes fallbackLang. Only
// ClientVars are taken from it.
func LoginEnv(ctx context.Context, env []string, goos string) []string {
	got := loginShellEnv(ctx, hostVar(env, "SHELL"))
	if got == nil {
		got = map[string]string{"PATH": fallbackPath(hostVar(env, "PATH"), goos)}
	}
	if got["LANG"] == "" && hostVar(env, "LANG") == "" && got["LC_ALL"] == "" {
		got["LANG"] = fallbackLang(goos)
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

// loginShellEnv runs shell as a login, interactive shell that prints its environment, and
// returns ClientVars from it, or nil when it could not.
func loginShellEnv(ctx context.Context, shell string) map[string]string {
	if shell == "" || !filepath.IsAbs(shell) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, loginWait)
	defer cancel()
	// The marker keeps apart what startup files print from the environment itself.
	const marker = "\x00openworker-env\x00"
	cmd := exec.CommandContext(ctx, shell, "-l", "-i", "-c", `printf '\0openworker-env\0'; /usr/bin/env -0`)
	cmd.Stdin = nil // no terminal: an interactive startup file that reads input gets EOF
	cmd.Stderr = nil
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	_, after, ok := bytes.Cut(out, []byte(marker))
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

// fallbackLang is a UTF-8 locale: on a Mac the person's (AppleLocale), elsewhere C.UTF-8.
func fallbackLang(goos string) string {
	if goos == "darwin" {
		out, err := exec.Command("/usr/bin/defaults", "read", "-g", "AppleLocale").Output()
		if loc := strings.TrimSpace(string(out)); err == nil && loc != "" && !strings.ContainsAny(loc, " \t\"'") {
			if i := strings.IndexByte(loc, '@'); i >= 0 {
				loc = loc[:i]
			}
			return loc + ".UTF-8"
		}
		return "en_US.UTF-8"
	}
	return "C.UTF-8"
}
