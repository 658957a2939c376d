package session

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBuildEnvDropsSecrets(t *testing.T) {
	host := []string{
		"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm",
		"GITHUB_TOKEN=ghp_x", "AWS_SECRET_ACCESS_KEY=aws", "MY_API_KEY=k", "OPENAI_API_KEY=sk",
		"SSH_AUTH_SOCK=/tmp/agent", "HOME=/home/me", "DATABASE_PASSWORD=pw",
		"LC_SECRET_THING=x", "SHELL=/bin/bash", "RANDOM_VAR=1",
	}
	env := BuildEnv(EnvOptions{Host: host, Home: "/tmp/ow/home", Tmp: "/tmp/ow", ProxyURL: "http://openworker:t@127.0.0.1:9"})
	get := func(k string) (string, bool) {
		for _, kv := range env {
			if strings.HasPrefix(kv, k+"=") {
				return kv[len(k)+1:], true
			}
		}
		return "", false
	}
	for _, k := range []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "MY_API_KEY", "OPENAI_API_KEY", "SSH_AUTH_SOCK", "DATABASE_PASSWORD", "LC_SECRET_THING", "RANDOM_VAR"} {
		if v, ok := get(k); ok {
			t.Errorf("%s passed into the sandbox (%q)", k, v)
		}
	}
	for k, want := range map[string]string{
		"HOME": "/tmp/ow/home", "TMPDIR": "/tmp/ow", "PATH": "/usr/bin:/bin", "LC_ALL": "C",
		"HTTPS_PROXY": "http://openworker:t@127.0.0.1:9", "HTTP_PROXY": "http://openworker:t@127.0.0.1:9",
		"ALL_PROXY": "http://openworker:t@127.0.0.1:9", "https_proxy": "http://openworker:t@127.0.0.1:9",
		"PIP_CACHE_DIR": "/tmp/ow/cache/pip", "npm_config_cache": "/tmp/ow/cache/npm", "npm_config_update_notifier": "false", "GOCACHE": "/tmp/ow/cache/go-build",
		"GIT_TERMINAL_PROMPT": "0",
	} {
		if v, _ := get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	if _, ok := get("JAVA_TOOL_OPTIONS"); ok {
		t.Error("JAVA_TOOL_OPTIONS set off macOS")
	}
	if !slices.IsSorted(env) {
		t.Error("environment not sorted")
	}
	mac := BuildEnv(EnvOptions{Home: "/h", Tmp: "/t", GOOS: "darwin"})
	if !slices.ContainsFunc(mac, func(s string) bool { return strings.HasPrefix(s, "JAVA_TOOL_OPTIONS=-Djava.net.preferIPv4Stack=true ") }) {
		t.Error("JAVA_TOOL_OPTIONS missing on macOS")
	}
	if slices.ContainsFunc(mac, func(s string) bool { return strings.HasPrefix(s, "HTTPS_PROXY=") }) {
		t.Error("proxy variables set with no proxy")
	}
}

func TestBuildEnvLoopbackAndNode(t *testing.T) {
	get := func(env []string, k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return "(unset)"
	}
	tests := []struct {
		name, goos, noProxy string
	}{
		// Linux: the sandbox's own loopback is reached directly.
		{name: "linux", goos: "linux", noProxy: "localhost,127.0.0.1,::1,internal.example"},
		// macOS: loopback is the host's, reached through the proxy when allowed.
		{name: "darwin", goos: "darwin", noProxy: "internal.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := BuildEnv(EnvOptions{Home: "/h", Tmp: "/t", GOOS: tt.goos, ProxyURL: "http://openworker:t@127.0.0.1:9", NoProxyFor: []string{"internal.example"}})
			for _, k := range []string{"NO_PROXY", "no_proxy"} {
				if v := get(env, k); v != tt.noProxy {
					t.Errorf("%s = %q, want %q", k, v, tt.noProxy)
				}
			}
			if v := get(env, "NODE_USE_ENV_PROXY"); v != "1" {
				t.Errorf("NODE_USE_ENV_PROXY = %q, want 1", v)
			}
		})
	}
}

func TestBuildEnvDropsPathEntriesThatAreNotInside(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	sys, tool, home := filepath.Join(root, "usr", "bin"), filepath.Join(root, "home", ".pyenv", "shims"), filepath.Join(root, "home")
	for _, d := range []string{sys, tool} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "linked-bin")
	if err := os.Symlink(tool, link); err != nil {
		t.Fatal(err)
	}
	path := strings.Join([]string{tool, sys, filepath.Join(root, "missing"), link, "bin"}, ":")
	env := BuildEnv(EnvOptions{Host: []string{"PATH=" + path}, Home: "/h", Tmp: "/t", Readable: []string{filepath.Join(root, "usr")}})
	if want := "PATH=" + sys + ":bin"; !slices.Contains(env, want) {
		t.Errorf("want %s (the toolchain under the home, a missing folder and a link into the home dropped) in %q", want, env)
	}
	kept, dropped := InsidePath(path, []string{filepath.Join(root, "usr"), filepath.Join(home, ".pyenv")})
	if !slices.Equal(kept, []string{tool, sys, link, "bin"}) || !slices.Equal(dropped, []string{filepath.Join(root, "missing")}) {
		t.Errorf("with the toolchain switched on: kept %q dropped %q", kept, dropped)
	}
	// Without a wall nothing is dropped.
	if env := BuildEnv(EnvOptions{Host: []string{"PATH=" + path}, Home: "/h", Tmp: "/t"}); !slices.Contains(env, "PATH="+path) {
		t.Errorf("PATH changed without a wall: %q", env)
	}
}

// A shared login's variables point at its copy, and the ssh wrapper comes first on PATH;
// an agent of the host's never gets in, shared logins or not.
func TestBuildEnvSharedLogins(t *testing.T) {
	env := BuildEnv(EnvOptions{Host: []string{"PATH=/usr/bin:/bin", "SSH_AUTH_SOCK=/tmp/agent"}, Home: "/t/home", Tmp: "/t",
		ExtraVars: map[string]string{"GH_CONFIG_DIR": "/t/home/.config/gh", "GIT_SSH_COMMAND": "ssh -F '/t/home/.ssh-openworker/config'"},
		PathFirst: []string{"/t/home/.ssh-openworker/bin"}})
	for _, want := range []string{"PATH=/t/home/.ssh-openworker/bin:/usr/bin:/bin", "GH_CONFIG_DIR=/t/home/.config/gh", "GIT_SSH_COMMAND=ssh -F '/t/home/.ssh-openworker/config'"} {
		if !slices.Contains(env, want) {
			t.Errorf("no %s in %v", want, env)
		}
	}
	if slices.ContainsFunc(env, func(s string) bool { return strings.HasPrefix(s, "SSH_AUTH_SOCK=") }) {
		t.Error("SSH_AUTH_SOCK passed into the sandbox")
	}
}

// envMap is BuildEnv's result by name.
func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// On a Mac the developer folder is found outside: its real binaries stand just before
// /usr/bin on PATH, so that git, make and clang run without xcrun's shim (and its cache) in
// between, and the person's own python3, pip3, git and make (Homebrew's, pyenv's, uv's),
// earlier on PATH, still come first.
func TestBuildEnvDeveloperTools(t *testing.T) {
	dev := DeveloperTools{Dir: "/Applications/Xcode.app/Contents/Developer", SDKRoot: "/Applications/Xcode.app/Contents/Developer/Platforms/MacOSX.platform/Developer/SDKs/MacOSX.sdk",
		PathFirst: []string{"/Applications/Xcode.app/Contents/Developer/usr/bin", "/Applications/Xcode.app/Contents/Developer/Toolchains/XcodeDefault.xctoolchain/usr/bin"}}
	devPath := strings.Join(dev.PathFirst, ":")
	host := []string{"PATH=/opt/homebrew/bin:/usr/bin:/bin"}
	v := envMap(BuildEnv(EnvOptions{Host: host, Home: "/private/tmp/ow/home", Tmp: "/private/tmp/ow", GOOS: "darwin", DeveloperTools: dev}))
	if v["DEVELOPER_DIR"] != dev.Dir || v["SDKROOT"] != dev.SDKRoot {
		t.Errorf("DEVELOPER_DIR = %q, SDKROOT = %q", v["DEVELOPER_DIR"], v["SDKROOT"])
	}
	for _, tt := range []struct{ path, want string }{
		{"/opt/homebrew/bin:/usr/bin:/bin", "/opt/homebrew/bin:" + devPath + ":/usr/bin:/bin"},
		{"/Users/me/.pyenv/shims:/Users/me/.local/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin", "/Users/me/.pyenv/shims:/Users/me/.local/bin:/usr/local/bin:" + devPath + ":/usr/bin:/bin:/usr/sbin"},
		{"/usr/bin:/opt/homebrew/bin:/usr/bin", devPath + ":/usr/bin:/opt/homebrew/bin:/usr/bin"}, // before the first
		{"/opt/homebrew/bin:/bin", "/opt/homebrew/bin:/bin:" + devPath},                           // none: last
	} {
		v := envMap(BuildEnv(EnvOptions{Host: []string{"PATH=" + tt.path}, Home: "/h", Tmp: "/t", GOOS: "darwin", DeveloperTools: dev}))
		if v["PATH"] != tt.want {
			t.Errorf("PATH %s: %q, want %q", tt.path, v["PATH"], tt.want)
		}
	}
	// The person's shared logins' wrapper stays first of all.
	v = envMap(BuildEnv(EnvOptions{Host: host, Home: "/h", Tmp: "/t", GOOS: "darwin", DeveloperTools: dev, PathFirst: []string{"/t/home/.openworker/bin"}}))
	if want := "/t/home/.openworker/bin:/opt/homebrew/bin:" + devPath + ":/usr/bin:/bin"; v["PATH"] != want {
		t.Errorf("PATH = %q, want %q", v["PATH"], want)
	}
	// Nothing found: nothing set.
	v = envMap(BuildEnv(EnvOptions{Host: host, Home: "/h", Tmp: "/t", GOOS: "darwin"}))
	if _, ok := v["DEVELOPER_DIR"]; ok || v["PATH"] != "/opt/homebrew/bin:/usr/bin:/bin" {
		t.Errorf("without developer tools: DEVELOPER_DIR set or PATH %q", v["PATH"])
	}
	// Not on Linux.
	v = envMap(BuildEnv(EnvOptions{Host: host, Home: "/h", Tmp: "/t", GOOS: "linux", DeveloperTools: dev}))
	if _, ok := v["DEVELOPER_DIR"]; ok || strings.Contains(v["PATH"], "Xcode") {
		t.Errorf("on Linux: %v", v)
	}
}

// On a Mac: zsh's here-documents go to TMPDIR (its default, /tmp/zsh, is not writable);
// Foundation keeps its text encoding and takes the sandbox home for its own; Java takes the
// sandbox home and IPv4, which it reads from no variable.
func TestBuildEnvMacShellsFoundationJava(t *testing.T) {
	host := []string{"PATH=/usr/bin:/bin", "__CF_USER_TEXT_ENCODING=0x1F5:0x0:0x0"}
	v := envMap(BuildEnv(EnvOptions{Host: host, Home: "/private/tmp/ow/home", Tmp: "/private/tmp/ow", GOOS: "darwin",
		ProxyURL: "http://openworker:tok3n@127.0.0.1:53127", NoProxyFor: []string{"internal.example"}}))
	for k, want := range map[string]string{
		"TMPPREFIX":               "/private/tmp/ow/zsh",
		"__CF_USER_TEXT_ENCODING": "0x1F5:0x0:0x0",
		"CFFIXED_USER_HOME":       "/private/tmp/ow/home",
	} {
		if v[k] != want {
			t.Errorf("%s = %q, want %q", k, v[k], want)
		}
	}
	// Every JVM prints JAVA_TOOL_OPTIONS on its error output ("Picked up JAVA_TOOL_OPTIONS:
	// ..."): it holds the sandbox home and IPv4 only, never the proxy's login, which Gradle
	// and Maven take from their own files in the sandbox home (JVMProxyFiles).
	if j, want := v["JAVA_TOOL_OPTIONS"], "-Djava.net.preferIPv4Stack=true -Duser.home=/private/tmp/ow/home"; j != want {
		t.Errorf("JAVA_TOOL_OPTIONS = %q, want %q", j, want)
	}
	for k, val := range v {
		if strings.HasPrefix(k, "JAVA") && strings.Contains(val, "tok3n") {
			t.Errorf("%s holds the proxy's password: %q", k, val)
		}
	}
	// With no proxy (open or none), the same.
	v = envMap(BuildEnv(EnvOptions{Host: host, Home: "/h", Tmp: "/t", GOOS: "darwin"}))
	if j := v["JAVA_TOOL_OPTIONS"]; j != "-Djava.net.preferIPv4Stack=true -Duser.home=/h" {
		t.Errorf("JAVA_TOOL_OPTIONS without a proxy = %q", j)
	}
	// Off macOS: zsh's here-documents still go to TMPDIR; the Mac's variables are absent.
	v = envMap(BuildEnv(EnvOptions{Host: host, Home: "/h", Tmp: "/t", GOOS: "linux"}))
	if v["TMPPREFIX"] != "/t/zsh" {
		t.Errorf("TMPPREFIX on Linux = %q", v["TMPPREFIX"])
	}
	for _, k := range []string{"CFFIXED_USER_HOME", "JAVA_TOOL_OPTIONS"} {
		if _, ok := v[k]; ok {
			t.Errorf("%s set on Linux", k)
		}
	}
}

// A toolchain switched on is found at its real, read-only path: its shims (~/.cargo/bin's
// rustup proxies, pyenv's, volta's, asdf's) look for it through its home variable, which
// would otherwise name a folder in the sandbox home.
func TestToolchainHomes(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(root, "home")
	for _, d := range []string{".rustup", ".pyenv", ".volta", ".asdf", ".nvm", ".sdkman", ".bun", ".rbenv", ".local/share/mise", ".cargo"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// .nvm is a link to where the person keeps it.
	elsewhere := filepath.Join(root, "disk", "nvm")
	os.MkdirAll(elsewhere, 0o755)
	os.RemoveAll(filepath.Join(home, ".nvm"))
	if err := os.Symlink(elsewhere, filepath.Join(home, ".nvm")); err != nil {
		t.Fatal(err)
	}
	enabled := []string{".rustup", ".pyenv", ".volta", ".asdf", ".nvm", ".sdkman", ".bun", ".rbenv", ".local/share/mise", ".cargo", ".deno"}
	readable := []string{filepath.Join(home, ".rustup"), filepath.Join(home, ".pyenv"), filepath.Join(home, ".volta"), filepath.Join(home, ".asdf"),
		elsewhere, filepath.Join(home, ".sdkman"), filepath.Join(home, ".bun"), filepath.Join(home, ".rbenv"), filepath.Join(home, ".local/share/mise"), filepath.Join(home, ".cargo")}
	got := ToolchainHomes(home, enabled, readable)
	want := map[string]string{
		"RUSTUP_HOME": filepath.Join(home, ".rustup"), "PYENV_ROOT": filepath.Join(home, ".pyenv"),
		"VOLTA_HOME": filepath.Join(home, ".volta"), "ASDF_DATA_DIR": filepath.Join(home, ".asdf"),
		"NVM_DIR": elsewhere, "SDKMAN_DIR": filepath.Join(home, ".sdkman"), "BUN_INSTALL": filepath.Join(home, ".bun"),
		"RBENV_ROOT": filepath.Join(home, ".rbenv"), "MISE_DATA_DIR": filepath.Join(home, ".local/share/mise"),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// cargo writes its registry and git checkouts under CARGO_HOME: it is one of the tools'
	// caches, where BuildEnv puts it.
	if _, ok := got["CARGO_HOME"]; ok {
		t.Error("CARGO_HOME points at the read-only toolchain")
	}
	// Switched off, or not readable inside: nothing.
	if got := ToolchainHomes(home, []string{".pyenv"}, readable); len(got) != 1 || got["PYENV_ROOT"] == "" {
		t.Errorf("only .pyenv on: %v", got)
	}
	if got := ToolchainHomes(home, enabled, nil); len(got) != 0 {
		t.Errorf("nothing readable: %v", got)
	}
	// BuildEnv exports them, on every OS.
	for _, goos := range []string{"linux", "darwin"} {
		v := envMap(BuildEnv(EnvOptions{Home: "/h", Tmp: "/t", GOOS: goos, ToolchainHomes: map[string]string{"RUSTUP_HOME": "/x/.rustup"}}))
		if v["RUSTUP_HOME"] != "/x/.rustup" || v["CARGO_HOME"] != "/t/cache/cargo" {
			t.Errorf("%s: RUSTUP_HOME %q, CARGO_HOME %q", goos, v["RUSTUP_HOME"], v["CARGO_HOME"])
		}
	}
}

// The tools' caches are in the project's kept folder where the session reaches it, otherwise
// in the private tmp's cache folder; GOPROXY is set only to read the person's downloads
// first; the programs a command installs stay in the private tmp apart from them.
func TestBuildEnvCaches(t *testing.T) {
	for _, tt := range []struct{ caches, goProxy, root string }{
		{"", "", "/t/cache"},
		{"/s/caches/k/tools", "file:///t/go-downloads,https://proxy.example,direct", "/s/caches/k/tools"},
	} {
		goProxy := tt.goProxy
		v := envMap(BuildEnv(EnvOptions{Home: "/t/home", Tmp: "/t", GOOS: "linux", Caches: tt.caches, GoProxy: goProxy}))
		for name, dir := range map[string]string{
			"XDG_CACHE_HOME": "", "GOCACHE": "go-build", "GOMODCACHE": "go-mod", "npm_config_cache": "npm",
			"PIP_CACHE_DIR": "pip", "UV_CACHE_DIR": "uv", "YARN_CACHE_FOLDER": "yarn", "CARGO_HOME": "cargo",
		} {
			if want := filepath.Join(tt.root, dir); v[name] != want {
				t.Errorf("%s = %q, want %q", name, v[name], want)
			}
		}
		if v["GOPATH"] != "/t/go" || v["PNPM_HOME"] != "/t/pnpm" {
			t.Errorf("GOPATH %q, PNPM_HOME %q: installed programs are not caches", v["GOPATH"], v["PNPM_HOME"])
		}
		if got, ok := v["GOPROXY"]; ok != (goProxy != "") || got != goProxy {
			t.Errorf("GOPROXY = %q (set: %v), want %q", got, ok, goProxy)
		}
	}
}
