package agenthost

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	for _, p := range []string{"claude", "/usr/local/bin/claude", "codex", "/opt/x/node_modules/.bin/codex", "gemini", "/opt/x/node_modules/.bin/gemini"} {
		if _, err := Find(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"bash", "cursor-agent", "claude-helper", "gemini-helper"} {
		_, err := Find(p)
		if err == nil || !strings.Contains(err.Error(), "claude (Claude Code)") || !strings.Contains(err.Error(), "codex (Codex CLI)") ||
			!strings.Contains(err.Error(), "gemini (gemini-cli)") {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := Find("cursor-agent"); !strings.Contains(err.Error(), "cursor-agent is not among them") {
		t.Errorf("cursor-agent: %v", err)
	}
}

var routing = Routing{Shell: "/opt/ow/openworker-shell", Tmp: "/tmp/ow-agent/tmp", MCP: MCPServer{URL: "http://127.0.0.1:4000/mcp", Token: "tok-9f3a"},
	Executor: "ws://127.0.0.1:4001/secret", Socket: "/s/openworker.sock", Session: "s1"}

func TestClaudeLaunch(t *testing.T) {
	l, err := claude.Launch(routing, []string{"-p", "hi"})
	if err != nil {
		t.Fatal(err)
	}
	arg := func(flag string) string {
		i := slices.Index(l.Args, flag)
		if i < 0 || i+1 >= len(l.Args) {
			t.Fatalf("no %s in %q", flag, l.Args)
		}
		return l.Args[i+1]
	}
	if arg("--setting-sources") != "user" || !slices.Contains(l.Args, "--strict-mcp-config") || arg("--allowedTools") != "mcp__openworker" {
		t.Errorf("args %q", l.Args)
	}
	tools := strings.Split(arg("--tools"), ",")
	for _, off := range []string{"Read", "Write", "Edit", "NotebookEdit", "WebFetch", "Monitor", "SendMessage", "Workflow"} {
		if slices.Contains(tools, off) || !strings.Contains(arg("--disallowedTools"), off) {
			t.Errorf("%s is offered, or not denied", off)
		}
	}
	var settings struct {
		Env map[string]string
	}
	if err := json.Unmarshal([]byte(arg("--settings")), &settings); err != nil || settings.Env["CLAUDE_CODE_SHELL_PREFIX"] != routing.Shell {
		t.Errorf("settings %s: %v", arg("--settings"), err)
	}
	var mcpConfig struct {
		MCPServers map[string]struct {
			Type, URL string
			Headers   map[string]string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(arg("--mcp-config")), &mcpConfig); err != nil || mcpConfig.MCPServers["openworker"].Type != "http" ||
		mcpConfig.MCPServers["openworker"].Headers["Authorization"] != "Bearer tok-9f3a" {
		t.Errorf("mcp config %s: %v", arg("--mcp-config"), err)
	}
	for _, want := range []string{"CLAUDE_CODE_SHELL_PREFIX=/opt/ow/openworker-shell", "CLAUDE_CODE_TMPDIR=/tmp/ow-agent/tmp", "OPENWORKER_SESSION=s1", "OPENWORKER_SOCKET=/s/openworker.sock"} {
		if !slices.Contains(l.Env, want) {
			t.Errorf("%s not in %q", want, l.Env)
		}
	}
	for _, undo := range [][]string{{"--tools", "Read"}, {"--settings", "{}"}, {"--setting-sources=user,project"}, {"--disallowedTools", "x"}, {"--mcp-config", "{}"}} {
		if _, err := claude.Launch(routing, undo); err == nil {
			t.Errorf("%q was taken", undo)
		}
	}
	refused := routing
	refused.Refused = "no session"
	if l, _ := claude.Launch(refused, nil); !slices.Contains(l.Env, "OPENWORKER_AGENT_REFUSED=no session") {
		t.Errorf("a refused run's env: %q", l.Env)
	}
}

func TestCodexLaunch(t *testing.T) {
	l, err := codex.Launch(routing, []string{"exec", "do it"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(l.Env, "CODEX_EXEC_SERVER_URL=ws://127.0.0.1:4001/secret") || !slices.Contains(l.Env, MCPTokenVar+"=tok-9f3a") ||
		!slices.Contains(l.Args, "--dangerously-bypass-approvals-and-sandbox") || slices.Contains(l.Args, "--no-daemon") ||
		strings.Contains(strings.Join(l.Args, " "), "tok-9f3a") {
		t.Errorf("exec: %q %q", l.Args, l.Env)
	}
	if l, _ := codex.Launch(routing, []string{"fix the tests"}); !slices.Contains(l.Args, "--no-daemon") {
		t.Errorf("interactive: %q", l.Args)
	}
	for _, bad := range [][]string{
		{"sandbox", "linux", "cat", "/etc/shadow"}, {"login"}, {"-c", "shell_environment_policy.inherit=none"}, {"--config=mcp_servers.openworker.url=x"},
		{"-cshell_environment_policy.exclude=[]"}, {"--sandbox", "read-only"}, {"--add-dir", "/"}, {"exec", "--full-auto", "x"},
	} {
		if _, err := codex.Launch(routing, bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
	if _, err := codex.Launch(Routing{Shell: "/x/openworker-shell"}, nil); err == nil {
		t.Error("codex started with no executor")
	}
}

func TestKept(t *testing.T) {
	in := Installed{Shell: "/opt/ow/openworker-shell", MCP: "/opt/ow/openworker-mcp", Host: "/opt/codex/bin/codex.js", ClaudeTmp: "/tmp/openworker-claude-501"}
	c, err := claude.Kept(in)
	if err != nil || !strings.Contains(c, `"CLAUDE_CODE_SHELL_PREFIX": "/opt/ow/openworker-shell"`) || !strings.Contains(c, "claude mcp add --scope user openworker -- /opt/ow/openworker-mcp mcp --agent-host") {
		t.Errorf("%v\n%s", err, c)
	}
	g, err := gemini.Kept(in)
	if err != nil || !strings.Contains(g, `"command": "/opt/ow/openworker-mcp"`) || !strings.Contains(g, "ln -sf /opt/ow/openworker-shell ~/.openworker-gemini/bash") ||
		!strings.Contains(g, `alias gemini='PATH="$HOME/.openworker-gemini:$PATH" gemini'`) || !strings.Contains(g, geminiPolicy()) {
		t.Errorf("%v\n%s", err, g)
	}
	x, err := codex.Kept(in)
	if err != nil || !strings.Contains(x, `program = "/opt/ow/openworker-shell"`) || !strings.Contains(x, `args = ["--codex-executor", "/opt/codex/bin/codex.js"]`) ||
		!strings.Contains(x, "include_local = false") {
		t.Errorf("%v\n%s", err, x)
	}
}
