package agenthost

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// geminiWorld is a person's home and a project for gemini-cli's recipe.
func geminiWorld(t *testing.T, personSettings string) (home, project string) {
	t.Helper()
	root := t.TempDir()
	home, project = filepath.Join(root, "home"), filepath.Join(root, "home", "src", "project")
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	if personSettings != "" {
		write(t, filepath.Join(home, ".gemini", "settings.json"), personSettings)
	}
	return home, project
}

func write(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestGeminiLaunch(t *testing.T) {
	home, project := geminiWorld(t, `{
	  // the person's own
	  "security": {"auth": {"selectedType": "oauth-personal"}, "folderTrust": {"enabled": true}},
	  "mcpServers": {"theirs": {"command": "node", "args": ["srv.js"]}},
	  "mcp": {"serverCommand": "evil", "allowed": ["theirs"]},
	  "adminPolicyPaths": ["/tmp/allow-all.toml"],
	  "tools": {"discoveryCommand": "list-tools", "callCommand": "call-tool", "sandbox": "docker", "shell": {"inactivityTimeout": 60}},
	  "hooks": {"BeforeTool": [{"matcher": ".*", "hooks": [{"type": "command", "command": "audit.sh"}]}]},
	  "model": {"name": "gemini-2.5-pro"}, /* and a URL: "http://x//y" */ "ui": {"theme": "http://themes//dark"}
	}`)
	write(t, filepath.Join(home, ".gemini", "oauth_creds.json"), `{"refresh_token": "planted"}`)
	r := routing
	r.PathDir, r.HostHome, r.Home, r.Dir = "/tmp/ow-agent/bin", filepath.Join(t.TempDir(), "run"), home, project
	l, err := gemini.Launch(r, []string{"-p", "fix the tests", "--yolo"})
	if err != nil {
		t.Fatal(err)
	}
	admin := filepath.Join(r.HostHome, "openworker-policy.toml")
	if !slices.Equal(l.Args, []string{"--admin-policy", admin}) || !slices.Equal(l.PathFirst, []string{"/tmp/ow-agent/bin"}) {
		t.Errorf("args %q, path %q", l.Args, l.PathFirst)
	}
	for _, want := range []string{"GEMINI_CLI_HOME=" + r.HostHome, "GEMINI_SANDBOX=false", MCPTokenVar + "=tok-9f3a", "OPENWORKER_SESSION=s1", "OPENWORKER_SOCKET=/s/openworker.sock"} {
		if !slices.Contains(l.Env, want) {
			t.Errorf("%s not in %q", want, l.Env)
		}
	}
	files := map[string]File{}
	for _, f := range l.Files {
		if !strings.HasPrefix(f.Path, r.HostHome+"/") {
			t.Errorf("%s is outside the run's home", f.Path)
		}
		if strings.Contains(string(f.Data), "tok-9f3a") || strings.Contains(string(f.Data), "planted") {
			t.Errorf("%s holds a secret:\n%s", f.Path, f.Data)
		}
		files[strings.TrimPrefix(f.Path, r.HostHome+"/")] = f
	}
	if f := files[".gemini/oauth_creds.json"]; f.Link != filepath.Join(home, ".gemini", "oauth_creds.json") || f.Data != nil {
		t.Errorf("the login is not linked: %+v", f)
	}
	if _, ok := files[".gemini/google_accounts.json"]; ok {
		t.Error("a file the person has not is linked")
	}
	if string(files["openworker-policy.toml"].Data) != geminiPolicy() || string(files[".gemini/policies/openworker.toml"].Data) != geminiPolicy() {
		t.Error("the policies")
	}
	var s map[string]any
	if err := json.Unmarshal(files[".gemini/settings.json"].Data, &s); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"security.auth.selectedType":                  "oauth-personal",
		"security.folderTrust.enabled":                false,
		"security.toolSandboxing":                     false,
		"tools.shell.inactivityTimeout":               float64(60),
		"tools.shell.enableInteractiveShell":          false,
		"advanced.ignoreLocalEnv":                     true,
		"general.checkpointing.enabled":               false,
		"agents.overrides.browser_agent.enabled":      false,
		"model.name":                                  "gemini-2.5-pro",
		"ui.theme":                                    "http://themes//dark",
		"mcpServers.openworker.url":                   "http://127.0.0.1:4000/mcp",
		"mcpServers.openworker.type":                  "http",
		"mcpServers.openworker.trust":                 true,
		"mcpServers.openworker.headers.Authorization": "Bearer $" + MCPTokenVar,
		"hooks.BeforeTool":                            getPath(s, "hooks.BeforeTool"),
	} {
		if got := getPath(s, path); got == nil || !equalJSON(got, want) {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
	for _, gone := range []string{"mcpServers.theirs", "mcp.serverCommand", "adminPolicyPaths", "tools.discoveryCommand", "tools.callCommand", "tools.sandbox"} {
		if getPath(s, gone) != nil {
			t.Errorf("%s was kept", gone)
		}
	}
	// The person's hooks run with bash, that is in the session.
	if !equalJSON(getPath(s, "mcp.allowed"), []any{"openworker"}) || !strings.Contains(string(files[".gemini/settings.json"].Data), `"command": "audit.sh"`) {
		t.Errorf("mcp.allowed %v, hooks %v", getPath(s, "mcp.allowed"), getPath(s, "hooks"))
	}

	refused := r
	refused.Refused, refused.MCP = "no session", MCPServer{}
	l, err = gemini.Launch(refused, nil)
	if err != nil || !slices.Contains(l.Env, "OPENWORKER_AGENT_REFUSED=no session") {
		t.Fatalf("a refused run: %v %q", err, l.Env)
	}
	s = nil
	if err := json.Unmarshal(l.Files[0].Data, &s); err != nil || getPath(s, "mcpServers") != nil || !equalJSON(getPath(s, "mcp.allowed"), []any{}) {
		t.Errorf("a refused run's settings: %v %s", err, l.Files[0].Data)
	}

	for _, bad := range [][]string{{"--admin-policy", "/x.toml"}, {"--admin-policy=/x.toml"}, {"-s"}, {"--sandbox"}, {"-ys"}, {"-w"}, {"--worktree", "x"},
		{"mcp", "add", "x", "y"}, {"-m", "pro", "extensions", "install", "x"}, {"skills", "list"}, {"hooks"}} {
		if _, err := gemini.Launch(r, bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
	for _, ok := range [][]string{{"-p", "mcp"}, {"-m", "gemini-2.5-flash", "fix the mcp server"}, {"--yolo", "--include-directories", "/w"}, {"-y"}, {"--", "-s"}} {
		if _, err := gemini.Launch(r, ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	noHome := r
	noHome.HostHome = ""
	if _, err := gemini.Launch(noHome, nil); err == nil {
		t.Error("started with no home of the run's")
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// The person's settings that gemini-cli would not read either stop the start, with the file named.
func TestGeminiPersonSettingsBroken(t *testing.T) {
	home, project := geminiWorld(t, `{"model": {"name": "x"},}`)
	r := routing
	r.HostHome, r.Home, r.Dir = t.TempDir(), home, project
	_, err := gemini.Launch(r, nil)
	var se *SettingsError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), filepath.Join(home, ".gemini", "settings.json")) {
		t.Fatalf("%v", err)
	}
}

func TestGeminiPolicy(t *testing.T) {
	var p struct {
		Rule []struct {
			ToolName    any    `toml:"toolName"`
			McpName     string `toml:"mcpName"`
			ArgsPattern string `toml:"argsPattern"`
			Decision    string `toml:"decision"`
			Priority    int    `toml:"priority"`
		} `toml:"rule"`
	}
	if err := toml.Unmarshal([]byte(geminiPolicy()), &p); err != nil {
		t.Fatalf("%v\n%s", err, geminiPolicy())
	}
	if len(p.Rule) != 3 {
		t.Fatalf("rules %+v", p.Rule)
	}
	denied, _ := p.Rule[0].ToolName.([]any)
	for _, tool := range []string{"read_file", "read_many_files", "write_file", "replace", "glob", "grep_search", "list_directory", "web_fetch", "google_web_search"} {
		if !slices.Contains(denied, any(tool)) {
			t.Errorf("%s is not denied", tool)
		}
	}
	if p.Rule[0].Decision != "deny" || p.Rule[0].Priority != 999 {
		t.Errorf("deny rule %+v", p.Rule[0])
	}
	// gemini-cli matches the pattern against the call's arguments as JSON with sorted keys.
	if r := p.Rule[1]; r.ToolName != "invoke_agent" || r.Decision != "deny" ||
		r.ArgsPattern != `^\{"agent_name":"(?!(?:codebase_investigator|cli_help|generalist)")` {
		t.Errorf("subagents rule %+v", r)
	}
	if r := p.Rule[2]; r.ToolName != "*" || r.McpName != "openworker" || r.Decision != "allow" {
		t.Errorf("MCP rule %+v", r)
	}
}

func TestGeminiPlaces(t *testing.T) {
	none := geminiSystem{Settings: "/nonexistent/settings.json", Defaults: "/nonexistent/system-defaults.json", Policies: "/nonexistent/policies"}
	tests := []struct {
		name    string
		files   map[string]string // relative to the project's parent ("home/..."), or "sys/..."
		refused []string          // words the refusal says; nil: no refusal
	}{
		{"no settings", nil, nil},
		{"what only changes the look, the model and the timeout", map[string]string{"project/.gemini/settings.json": `{
			"$schema": "https://x/settings.schema.json", // the schema
			"ui": {"theme": "GitHub", "hideTips": true}, "model": {"name": "gemini-2.5-pro"},
			"tools": {"shell": {"inactivityTimeout": 10}}, "context": {"fileFiltering": {"respectGitIgnore": false}}}`}, nil},
		{"MCP servers", map[string]string{"project/.gemini/settings.json": `{"mcpServers": {"openworker": {"command": "sh", "args": ["-c", "curl x"]}}}`},
			[]string{"project/.gemini/settings.json", "mcpServers.openworker.args", "mcpServers.openworker.command", "Nothing was started"}},
		{"a discovery command", map[string]string{"project/.gemini/settings.json": `{"ui": {"theme": "x"}, "tools": {"discoveryCommand": "x", "callCommand": "y"}}`},
			[]string{"tools.callCommand, tools.discoveryCommand"}},
		{"hooks", map[string]string{"project/.gemini/settings.json": `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "x"}]}]}}`}, []string{"hooks.SessionStart"}},
		{"files read into the context", map[string]string{"project/.gemini/settings.json": `{"context": {"fileName": ".netrc", "includeDirectories": ["~"]}}`},
			[]string{"context.fileName", "context.includeDirectories"}},
		{"what the routing sets", map[string]string{"project/.gemini/settings.json": `{"security": {"folderTrust": {"enabled": true}}, "advanced": {"ignoreLocalEnv": false}, "tools": {"shell": {"enableInteractiveShell": true}}}`},
			[]string{"advanced.ignoreLocalEnv", "security.folderTrust.enabled", "tools.shell.enableInteractiveShell"}},
		{"an empty object is a key too", map[string]string{"project/.gemini/settings.json": `{"telemetry": {}}`}, []string{"telemetry"}},
		{"settings gemini-cli cannot read", map[string]string{"project/.gemini/settings.json": `{"ui": {"theme": "x"},}`}, []string{"cannot be read"}},
		{"settings that are no object", map[string]string{"project/.gemini/settings.json": `[]`}, []string{"cannot be read"}},
		{"the project's .env", map[string]string{"project/.gemini/.env": "GOOGLE_GEMINI_BASE_URL=http://x\n"}, []string{"project/.gemini/.env", "Nothing was started"}},
		{"a .env above the project", map[string]string{"home/src/.gemini/.env": "NODE_OPTIONS=--require=x\n"}, []string{"home/src/.gemini/.env"}},
		{"the person's own .env", map[string]string{"home/.gemini/.env": "GEMINI_API_KEY=x\n", "home/.env": "X=1\n", "project/.env": "X=1\n"}, nil},
		{"the machine's settings", map[string]string{"sys/settings.json": `{"mcpServers": {"corp": {"httpUrl": "https://x"}}, "ui": {"theme": "x"}}`},
			[]string{"sys/settings.json", "mcpServers.corp.httpUrl", "outrank"}},
		{"the machine's defaults", map[string]string{"sys/system-defaults.json": `{"tools": {"discoveryCommand": "x"}}`}, []string{"tools.discoveryCommand"}},
		{"the machine's harmless settings", map[string]string{"sys/settings.json": `{"ui": {"theme": "x"}, "security": {"auth": {"enforcedType": "oauth-personal"}}}`}, nil},
		{"the machine's policies", map[string]string{"sys/policies/corp.toml": "[[rule]]\n"}, []string{"ignores --admin-policy", "sys/policies"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			home, project := filepath.Join(root, "home"), filepath.Join(root, "home", "src", "project")
			sys := geminiSystem{Settings: filepath.Join(root, "sys", "settings.json"), Defaults: filepath.Join(root, "sys", "system-defaults.json"), Policies: filepath.Join(root, "sys", "policies")}
			if err := os.MkdirAll(project, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, text := range tt.files {
				p := filepath.Join(root, name)
				if rest, ok := strings.CutPrefix(name, "project/"); ok {
					p = filepath.Join(project, rest)
				}
				write(t, p, text)
			}
			err := checkGeminiPlaces(project, home, sys)
			if tt.refused == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var se *SettingsError
			if !errors.As(err, &se) {
				t.Fatalf("not refused: %v", err)
			}
			for _, w := range tt.refused {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q is not in %v", w, err)
				}
			}
		})
	}
	if err := checkGeminiPlaces("", "", none); err != nil {
		t.Errorf("no folder: %v", err)
	}
}

func TestStripComments(t *testing.T) {
	in := `{"a": "// not a comment", /* one */ "b": "/* nor this */", "c": "a \" // quote", // line
	/* several
	lines */ "d": 1}`
	m, err := parseJSONC([]byte(in))
	if err != nil || m["a"] != "// not a comment" || m["b"] != "/* nor this */" || m["c"] != `a " // quote` || m["d"] != float64(1) {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := parseJSONC([]byte(`{"a": 1 /* open`)); err == nil {
		t.Error("an open comment was taken")
	}
	if _, err := parseJSONC([]byte(`null`)); err == nil {
		t.Error("null was taken for settings")
	}
}
