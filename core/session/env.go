package session

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/openworker/openworker/core/policy"
)

// passedVars are the variables of OpenWorker's own environment a sandboxed command gets.
// Everything else is left out: an environment is where keys hide.
var passedVars = []string{
	"PATH", "LANG", "LANGUAGE", "TERM", "COLORTERM", "USER", "LOGNAME", "SHELL", "TZ",
	"EDITOR", "VISUAL", "PAGER", "LESS", "NO_COLOR", "FORCE_COLOR", "CLICOLOR",
	// The account's text encoding, which Foundation would otherwise read from
	// ~/.CFUserTextEncoding, out of reach in the home folder.
	"__CF_USER_TEXT_ENCODING",
}

// secretWords mark a variable as holding a secret. Such a variable is never passed, whatever
// list it is on: secrets are absent, not denied.
var secretWords = []string{
	"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL", "CRED", "AUTH",
	"COOKIE", "SESSION", "PRIVATE", "CERT", "SIGNATURE", "SALT", "PWD_", "DSN", "APIKEY",
}

// IsSecretName reports whether a variable's name says it holds a secret.
func IsSecretName(name string) bool {
	u := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

// EnvOptions are what the sandbox's environment is built from.
type EnvOptions struct {
	Host       []string // OpenWorker's own environment
	Home       string   // the sandbox home
	Tmp        string   // the private tmp
	ProxyURL   string   // empty when there is no proxy (open or none)
	GOOS       string
	ExtraVars  map[string]string // set by credential entries (GH_CONFIG_DIR, …); never filtered
	PathFirst  []string          // folders put first on PATH (the shared ssh login's wrapper)
	NoProxyFor []string
	// Readable, when set, are the paths the sandbox can read (policy.Readable): a PATH
	// entry that resolves outside them does not exist inside and is left out (InsidePath).
	Readable []string
	// DeveloperTools is the Mac's developer folder, found outside (FindDeveloperTools).
	DeveloperTools DeveloperTools
	// ToolchainHomes are the home variables of the toolchains switched on (ToolchainHomes).
	ToolchainHomes map[string]string
	// NpmLinkCopies, when set, is npmLinkCopies's file: the wall refuses hard links, and
	// Node loads it first in every process (NODE_OPTIONS), so that npm's become copies.
	NpmLinkCopies string
	// GitSystemConfig, when set, is the git system settings the session's git reads
	// (GIT_CONFIG_SYSTEM; see writeGitSystemConfig).
	GitSystemConfig string
	// Caches is the folder of the tools' caches: the project's kept ones, where the session
	// reaches them; empty: the private tmp's CacheDir, which goes with the session.
	Caches string
	// GoProxy, when set, is the GOPROXY that reads the person's module downloads first.
	GoProxy string
}

// toolchainHomes are the home-folder toolchains whose programs find their data through a
// variable, each with the variable its own documentation names. Inside, HOME is the sandbox
// home, so without it a shim (~/.cargo/bin/cargo, pyenv's, volta's) looks there and finds
// nothing. cargo is not here: it writes its registry and checkouts under CARGO_HOME, which
// is one of the tools' caches (cacheVars); its binaries are found on PATH.
var toolchainHomes = []struct{ dir, name string }{
	{".rustup", "RUSTUP_HOME"},
	{".pyenv", "PYENV_ROOT"},
	{".volta", "VOLTA_HOME"},
	{".asdf", "ASDF_DATA_DIR"},
	{".nvm", "NVM_DIR"},
	{".sdkman", "SDKMAN_DIR"},
	{".bun", "BUN_INSTALL"},
	{".rbenv", "RBENV_ROOT"},
	{".local/share/mise", "MISE_DATA_DIR"},
}

// ToolchainHomes returns the home variables of the toolchains in enabled (as the settings
// name them, relative to userHome) that the sandbox can read, each at its real, resolved path:
// read only, as the wall shows it.
func ToolchainHomes(userHome string, enabled, readable []string) map[string]string {
	out := map[string]string{}
	for _, tc := range toolchainHomes {
		if !slices.Contains(enabled, tc.dir) {
			continue
		}
		r, err := policy.Resolve(filepath.Join(userHome, tc.dir))
		if err == nil && slices.ContainsFunc(readable, func(d string) bool { return policy.Within(d, r) }) {
			out[tc.name] = r
		}
	}
	return out
}

// DeveloperTools is the Mac's active developer folder (xcode-select -p) and SDK, found
// outside the sandbox. Inside, the /usr/bin shims (git, make, cc, clang, python3) would ask
// xcrun for them, and xcrun's cache is out of reach; with DEVELOPER_DIR set and the folder's
// binaries on PATH just before /usr/bin, the real tools run and xcrun has nothing to look up.
type DeveloperTools struct {
	Dir       string   // DEVELOPER_DIR; empty when none is installed
	SDKRoot   string   // SDKROOT; empty when unknown
	PathFirst []string // Dir/usr/bin, and the default toolchain's usr/bin in Xcode.app: put before /usr/bin
}

// loopbackNoProxy are the names of the sandbox's own loopback. On Linux the sandbox has a
// network of its own, where loopback is its own servers and the forwarded host ports, which
// a client reaches directly; through the proxy it would reach the host's instead (and be
// refused). On macOS the sandbox shares the host's loopback, where only the proxy's port is
// open to it, so an allowed host port is reached through the proxy, and NO_PROXY stays
// without them.
var loopbackNoProxy = []string{"localhost", "127.0.0.1", "::1"}

// javaToolOptions is JAVA_TOOL_OPTIONS on a Mac, where Java reads neither HOME nor the proxy
// variables. Seatbelt matches 127.0.0.1 and ::1 but not ::ffff:127.0.0.1, so a dual-stack JVM
// cannot reach the proxy until it uses IPv4; user.home comes from NSHomeDirectory (Gradle's,
// Maven's and sbt's caches and settings live under it). Nothing else: every JVM prints the
// variable whole on its error output ("Picked up JAVA_TOOL_OPTIONS: ..."), into an agent's
// transcript and a CI log, so the proxy and its login go to Gradle and Maven through their
// own files in the sandbox home (writeJVMProxyFiles).
func javaToolOptions(home string) string {
	return "-Djava.net.preferIPv4Stack=true -Duser.home=" + home
}

// InsidePath splits a PATH into the entries that exist inside a sandbox that can read
// readable (resolved paths) and those that do not: entries that are missing on the host or
// resolve outside every readable path (a toolchain under the home folder that is not
// switched on). Relative entries are kept as they are: they name the working folder.
func InsidePath(path string, readable []string) (kept, dropped []string) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			kept = append(kept, dir)
			continue
		}
		r, err := policy.Resolve(dir)
		if err == nil && slices.ContainsFunc(readable, func(d string) bool { return policy.Within(d, r) }) {
			kept = append(kept, dir)
		} else {
			dropped = append(dropped, dir)
		}
	}
	return kept, dropped
}

// beforeUsrBin is path with dirs put just before its first /usr/bin, or at its end when it
// has none. The developer folder replaces only the /usr/bin shims of git, make, clang and
// python3 (whose xcrun cache is out of reach inside); first on PATH it would shadow the
// person's own python3, pip3, git and make (Homebrew's, pyenv's, uv's), which come earlier.
func beforeUsrBin(path string, dirs []string) string {
	entries := filepath.SplitList(path)
	i := slices.Index(entries, "/usr/bin")
	if i < 0 {
		i = len(entries)
	}
	return strings.Join(slices.Concat(entries[:i], dirs, entries[i:]), string(filepath.ListSeparator))
}

// CacheDir is the folder of the private tmp where the session's tools keep their caches
// when the project's kept ones are not used (or are placed there: see caches.go).
const CacheDir = "cache"

// cacheVars point each tool's cache into the session's caches folder (EnvOptions.Caches),
// under the name XDG_CACHE_HOME would give it where the tool has one. XDG_CACHE_HOME
// itself is the folder: what other tools keep there (golangci-lint, staticcheck, gopls,
// node-gyp's headers, deno, pre-commit, Playwright's browsers on Linux) is kept with it.
// GOPATH and PNPM_HOME hold programs a command installs, not caches: they stay in the
// private tmp.
var cacheVars = []struct{ name, dir string }{
	{"XDG_CACHE_HOME", ""},
	{"GOCACHE", "go-build"},
	{"GOMODCACHE", "go-mod"},
	{"npm_config_cache", "npm"},
	{"PIP_CACHE_DIR", "pip"},
	{"UV_CACHE_DIR", "uv"},
	{"YARN_CACHE_FOLDER", "yarn"},
	// Its registry, its git checkouts and its package-cache lock, which concurrent
	// sessions of the project then share as cargo means them to.
	{"CARGO_HOME", "cargo"},
}

// BuildEnv returns the environment of the sandbox's commands.
func BuildEnv(o EnvOptions) []string {
	vars := map[string]string{}
	for _, kv := range o.Host {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || IsSecretName(k) {
			continue
		}
		if slices.Contains(passedVars, k) || strings.HasPrefix(k, "LC_") {
			vars[k] = v
		}
	}
	if o.Readable != nil && vars["PATH"] != "" {
		// A PATH entry that does not exist inside would only change which program runs
		// by its absence; the session says which toolchain to switch on instead.
		kept, _ := InsidePath(vars["PATH"], o.Readable)
		vars["PATH"] = strings.Join(kept, string(filepath.ListSeparator))
	}
	if vars["PATH"] == "" {
		vars["PATH"] = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	}
	dev := o.DeveloperTools
	if _, out := InsidePath(dev.Dir, o.Readable); o.Readable != nil && len(out) > 0 {
		dev = DeveloperTools{} // a developer folder the sandbox cannot read (in the home folder)
	}
	if o.GOOS == "darwin" && dev.Dir != "" {
		vars["DEVELOPER_DIR"] = dev.Dir
		if dev.SDKRoot != "" {
			vars["SDKROOT"] = dev.SDKRoot
		}
		if len(dev.PathFirst) > 0 {
			vars["PATH"] = beforeUsrBin(vars["PATH"], dev.PathFirst)
		}
	}
	if len(o.PathFirst) > 0 {
		vars["PATH"] = strings.Join(o.PathFirst, ":") + ":" + vars["PATH"]
	}
	vars["HOME"] = o.Home
	vars["TMPDIR"] = o.Tmp
	// zsh writes here-documents, here-strings and =(...) under TMPPREFIX, /tmp/zsh by
	// default, whatever TMPDIR says; the shared /tmp is not writable inside.
	vars["TMPPREFIX"] = filepath.Join(o.Tmp, "zsh")
	// A command has no terminal to answer on (the wall denies opening one): git must fail
	// at once instead of waiting for a password prompt.
	vars["GIT_TERMINAL_PROMPT"] = "0"
	cache := o.Caches
	if cache == "" {
		cache = filepath.Join(o.Tmp, CacheDir)
	}
	for _, c := range cacheVars {
		vars[c.name] = filepath.Join(cache, c.dir)
	}
	if o.GoProxy != "" {
		vars["GOPROXY"] = o.GoProxy
	}
	vars["XDG_CONFIG_HOME"] = filepath.Join(o.Home, ".config")
	vars["XDG_DATA_HOME"] = filepath.Join(o.Home, ".local", "share")
	// npm (and pnpm, which reads npm's settings) asks the registry for a newer npm as a
	// command starts, which no command needs: refused in a sandbox without the registry, it
	// would be reported as a site to ask for. A session's npm does not ask.
	vars["npm_config_update_notifier"] = "false"
	vars["GOPATH"] = filepath.Join(o.Tmp, "go")
	vars["PNPM_HOME"] = filepath.Join(o.Tmp, "pnpm")
	for k, v := range o.ToolchainHomes {
		vars[k] = v
	}
	if o.ProxyURL != "" {
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
			vars[k] = o.ProxyURL
		}
		noProxy := o.NoProxyFor
		if o.GOOS != "darwin" {
			noProxy = append(slices.Clone(loopbackNoProxy), noProxy...)
		}
		vars["NO_PROXY"] = strings.Join(noProxy, ",")
		vars["no_proxy"] = vars["NO_PROXY"]
		// git and npm read these too, with their own names.
		vars["npm_config_proxy"] = o.ProxyURL
		vars["npm_config_https_proxy"] = o.ProxyURL
		vars["GIT_HTTP_PROXY"] = o.ProxyURL
	}
	// Node's built-in fetch uses the proxy variables only when asked (Node 22.21+, 24.5+);
	// older Nodes ignore it, and their fetch reaches nothing (the session says so).
	vars["NODE_USE_ENV_PROXY"] = "1"
	if o.GitSystemConfig != "" {
		vars["GIT_CONFIG_SYSTEM"] = o.GitSystemConfig
	}
	if o.NpmLinkCopies != "" {
		vars["NODE_OPTIONS"] = "--require=" + o.NpmLinkCopies
	}
	if o.GOOS == "darwin" {
		// Foundation's NSHomeDirectory (and so its preferences, and Java's user.home) takes
		// the account's home folder, not HOME, unless this says otherwise.
		vars["CFFIXED_USER_HOME"] = o.Home
		vars["JAVA_TOOL_OPTIONS"] = javaToolOptions(o.Home)
	}
	for k, v := range o.ExtraVars {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}
