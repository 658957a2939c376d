package session

import (
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
		"PIP_CACHE_DIR": "/tmp/ow/cache/pip", "npm_config_cache": "/tmp/ow/cache/npm", "GOCACHE": "/tmp/ow/cache/go-build",
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
	if !slices.Contains(mac, "JAVA_TOOL_OPTIONS=-Djava.net.preferIPv4Stack=true") {
		t.Error("JAVA_TOOL_OPTIONS missing on macOS")
	}
	if slices.ContainsFunc(mac, func(s string) bool { return strings.HasPrefix(s, "HTTPS_PROXY=") }) {
		t.Error("proxy variables set with no proxy")
	}
}
