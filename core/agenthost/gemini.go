package agenthost

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// gemini-cli (0.61) runs every shell command, its hooks' too, as `bash -c SCRIPT`, and finds
// bash on its PATH just before it starts it: a folder whose bash is openworker-shell, first on
// its PATH, sends each command into the session. Its file tools (read_file, write_file,
// replace, glob, grep_search, list_directory, read_many_files) and web_fetch run in its own
// process, outside the wall, so an admin policy (--admin-policy, which no user, project or
// --yolo setting outranks) denies them, and gemini-cli then does not offer them at all;
// OpenWorker's MCP server gives their like behind the wall. Its settings (the MCP server, the
// shell without a terminal of its own, nothing trusted to a project's .env) can be given for
// one run only by a home folder of the run's (GEMINI_CLI_HOME), which takes the person's
// settings and logins along (see geminiHome).
var gemini = &Host{
	Name:   "gemini",
	Title:  "gemini-cli",
	launch: launchGemini,
	// --sandbox starts gemini-cli again inside a container or Seatbelt, with its shell; a
	// worktree is made by git outside, and the commands then run in it.
	owned: []string{"--admin-policy", "--sandbox", "-s", "--worktree", "-w"},
	check: checkGeminiArgs,
	preflight: func(dir, home string) error {
		return checkGeminiPlaces(dir, home, systemGemini(os.Getenv))
	},
}

// geminiDenied are gemini-cli's tools that read, write or fetch from its own process (and
// google_web_search, which searches at the model's provider with what the model gives it);
// save_memory, which writes the home folder's GEMINI.md, is gone from 0.61 and named for the
// versions that have it.
var geminiDenied = []string{"read_file", "read_many_files", "write_file", "replace", "glob", "grep_search", "list_directory",
	"web_fetch", "google_web_search", "save_memory"}

// geminiAgents are gemini-cli's own subagents, which get the same tools and the same policy.
// Any other (a project's .gemini/agents, a remote agent gemini-cli would talk to from its own
// process) is refused.
var geminiAgents = []string{"codebase_investigator", "cli_help", "generalist"}

// geminiMCPName is OpenWorker's MCP server's name in gemini-cli: its tools are
// mcp_openworker_TOOL.
const geminiMCPName = "openworker"

// geminiPolicy is the admin policy of a run, and the same at the user's tier (a second layer).
func geminiPolicy() string {
	var b strings.Builder
	b.WriteString(`# OpenWorker: gemini-cli's own file and web tools read, write and fetch from its own
# process, outside the sandbox; OpenWorker's MCP server gives their like behind it.
[[rule]]
toolName = [`)
	for i, t := range geminiDenied {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", t)
	}
	fmt.Fprintf(&b, `]
decision = "deny"
priority = 999
denyMessage = "Switched off by OpenWorker: use the mcp_%[1]s_ tools (read_file, write_file, list_directory, web_fetch), which run behind its wall."

# Only gemini-cli's own subagents: a project's or a remote one is refused.
[[rule]]
toolName = "invoke_agent"
argsPattern = '^\{"agent_name":"(?!(?:%[2]s)")'
decision = "deny"
priority = 999
denyMessage = "Only gemini-cli's own subagents (%[3]s) run under OpenWorker."

# OpenWorker's MCP server, as allowed as gemini-cli's own read-only tools.
[[rule]]
toolName = "*"
mcpName = %[4]q
decision = "allow"
priority = 900
`, geminiMCPName, strings.Join(geminiAgents, "|"), strings.Join(geminiAgents, ", "), geminiMCPName)
	return b.String()
}

func launchGemini(r Routing, args []string) (Launch, error) {
	if r.HostHome == "" || !filepath.IsAbs(r.HostHome) {
		return Launch{}, errors.New("gemini-cli needs a home folder of the run's (GEMINI_CLI_HOME)")
	}
	var mcpServer map[string]any
	if r.MCP.URL != "" {
		mcpServer = map[string]any{
			// Over HTTP, which gemini-cli reaches itself; its token is read from a variable
			// (gemini-cli expands $NAME in its settings), so that it is in no file.
			"type": "http", "url": r.MCP.URL, "headers": map[string]string{"Authorization": "Bearer $" + MCPTokenVar},
			"trust": true,
		}
	}
	settings, err := geminiSettings(r.Home, mcpServer)
	if err != nil {
		return Launch{}, err
	}
	dot := filepath.Join(r.HostHome, ".gemini")
	policy := []byte(geminiPolicy())
	admin := filepath.Join(r.HostHome, "openworker-policy.toml")
	l := Launch{
		Args: []string{"--admin-policy", admin},
		Env: []string{
			"GEMINI_CLI_HOME=" + r.HostHome,
			// Before its settings, which a project could otherwise name a sandbox in: one
			// would start gemini-cli again inside it, with its shell.
			"GEMINI_SANDBOX=false",
			// The settings trust the project's folder already (no folder trust): its headless
			// mode would otherwise stop in a folder nobody trusted in this home.
			"GEMINI_CLI_TRUST_WORKSPACE=true",
		},
		Files: []File{
			{Path: filepath.Join(dot, "settings.json"), Data: settings},
			{Path: admin, Data: policy},
			{Path: filepath.Join(dot, "policies", "openworker.toml"), Data: policy},
		},
	}
	if r.MCP.Token != "" {
		l.Env = append(l.Env, MCPTokenVar+"="+r.MCP.Token)
	}
	if r.PathDir != "" {
		l.PathFirst = []string{r.PathDir}
	}
	l.Files = append(l.Files, geminiLinks(r.Home, r.HostHome)...)
	return l, nil
}

// geminiLinked are what of the person's own ~/.gemini a run's home links to, where it is:
// the logins (a Google login's tokens, kept up to date through the link as gemini-cli keeps
// them, its account, the encrypted store), the variables its .env files give it (an API
// key's usual place), and what only tells the model something (GEMINI.md, the person's
// commands and skills). Not the extensions, whose MCP servers would run outside, nor the
// person's agents, of which only gemini-cli's own are allowed.
var geminiLinked = []string{".gemini/oauth_creds.json", ".gemini/google_accounts.json", ".gemini/gemini-credentials.json",
	".gemini/.env", ".env", ".gemini/GEMINI.md", ".gemini/commands", ".gemini/skills"}

func geminiLinks(home, hostHome string) []File {
	if home == "" {
		return nil
	}
	var out []File
	for _, name := range geminiLinked {
		p := filepath.Join(home, filepath.FromSlash(name))
		if _, err := os.Stat(p); err != nil {
			continue
		}
		out = append(out, File{Path: filepath.Join(hostHome, filepath.FromSlash(name)), Link: p})
	}
	return out
}

// geminiSettings are the run's settings: the person's own ~/.gemini/settings.json, without
// what would start programs outside the wall, with the routing's settings over it. A
// setting of the person's that a project's settings cannot change stays as it is (the
// login, the model, hooks, which gemini-cli runs with bash, that is in the session).
func geminiSettings(home string, mcpServer map[string]any) ([]byte, error) {
	s := map[string]any{}
	if home != "" {
		p := filepath.Join(home, ".gemini", "settings.json")
		b, err := os.ReadFile(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, settingsErrorf("reading your gemini-cli settings: %v", err)
		default:
			if s, err = parseJSONC(b); err != nil {
				return nil, settingsErrorf("your gemini-cli settings, %s, cannot be read as gemini-cli reads them (%v): correct the file, then start it again", p, err)
			}
		}
	}
	// Programs gemini-cli starts itself, outside: MCP servers (only OpenWorker's), the
	// commands that list and run discovered tools, a sandbox it would start again inside, and
	// admin policies a setting names (above --admin-policy's tier, or beside it).
	delete(s, "mcpServers")
	delete(s, "adminPolicyPaths")
	for _, k := range []string{"tools.discoveryCommand", "tools.callCommand", "tools.sandbox", "tools.sandboxAllowedPaths", "tools.sandboxNetworkAccess", "mcp"} {
		deletePath(s, k)
	}
	if mcpServer != nil {
		s["mcpServers"] = map[string]any{geminiMCPName: mcpServer}
		setPath(s, "mcp.allowed", []any{geminiMCPName})
	} else {
		setPath(s, "mcp.allowed", []any{})
	}
	for _, kv := range []struct {
		path  string
		value any
	}{
		// Commands run without a terminal, as every command in the session does.
		{"tools.shell.enableInteractiveShell", false},
		// No trust dialog: gemini-cli reads the project's settings, which openworker agent
		// has checked (checkGeminiPlaces); untrusted, it would start no MCP server.
		{"security.folderTrust.enabled", false},
		// Its tool sandbox runs sh and bwrap (the shell's wrapper) from PATH.
		{"security.toolSandboxing", false},
		// A project's .env, which commands in the session can write, would set gemini-cli's
		// own variables (where its requests and key go, what its Node.js loads).
		{"advanced.ignoreLocalEnv", true},
		// Checkpoints run git on the project outside.
		{"general.checkpointing.enabled", false},
		// The browser agent drives a browser of this machine's, outside.
		{"agents.overrides.browser_agent.enabled", false},
	} {
		setPath(s, kv.path, kv.value)
	}
	return json.MarshalIndent(s, "", "  ")
}

// checkGeminiArgs refuses gemini-cli's subcommands, which run no agent: they would change
// the run's home folder, not the person's.
func checkGeminiArgs(args []string) error {
	valued := map[string]bool{"-m": true, "--model": true, "-p": true, "--prompt": true, "-i": true, "--prompt-interactive": true,
		"--approval-mode": true, "--policy": true, "--allowed-mcp-server-names": true, "--allowed-tools": true, "-e": true,
		"--extensions": true, "-r": true, "--resume": true, "--session-file": true, "--session-id": true, "--delete-session": true,
		"--include-directories": true, "-o": true, "--output-format": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if strings.HasPrefix(a, "-") {
			// Short options given together (-ys) are gemini-cli's too.
			if len(a) > 2 && a[1] != '-' && !strings.Contains(a, "=") && strings.ContainsAny(a[1:], "sw") && strings.Trim(a[1:], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
				return fmt.Errorf("gemini %s: openworker agent sets the sandbox (-s) and runs in no worktree (-w) itself, to route gemini-cli's tools through the sandbox; leave them out", a)
			}
			if valued[a] {
				i++
			}
			continue
		}
		switch a {
		case "mcp", "extensions", "extension", "skills", "skill", "hooks", "hook", "gemma":
			return fmt.Errorf("gemini %s runs no agent (it changes gemini-cli's settings, and openworker agent gives gemini-cli a home folder of the run's); run it as gemini itself", a)
		}
		return nil
	}
	return nil
}

// geminiProjectKeys are the settings a project's .gemini/settings.json may hold under
// openworker agent: what only changes how gemini-cli looks, which model it asks, how it
// sums up and how long a command may print nothing. Any other key (mcpServers,
// tools.discoveryCommand and tools.callCommand, mcp.serverCommand and hooks start programs
// outside; context.fileName and context.includeDirectories read files outside into the
// model's context; tools.sandbox, security, advanced and the keys the routing sets undo it;
// telemetry writes a file it names) refuses the start: gemini-cli has no way to read a
// project's settings in part.
var geminiProjectKeys = []string{"$schema", "ui", "accessibility", "output", "model", "privacy", "useWriteTodos", "contextManagement", "skills",
	"general.vimMode", "general.sessionRetention", "general.maxAttempts", "general.retryFetchErrors", "general.enableAutoUpdateNotification",
	"general.topicUpdateNarration",
	"context.includeDirectoryTree", "context.discoveryMaxDirs", "context.fileFiltering.respectGitIgnore",
	"context.fileFiltering.respectGeminiIgnore", "context.fileFiltering.enableRecursiveFileSearch",
	"context.fileFiltering.enableFuzzySearch", "context.fileFiltering.enableFileWatcher",
	"tools.shell.inactivityTimeout", "tools.shell.showColor", "tools.shell.pager", "tools.shell.backgroundCompletionBehavior",
	"tools.shell.enableShellOutputEfficiency", "tools.truncateToolOutputThreshold", "tools.disableLLMCorrection", "tools.useRipgrep"}

// geminiSystemKeys are the settings this machine's own gemini-cli settings (which outrank the
// person's, the run's and the project's) may not hold: those that start programs outside,
// and those the routing sets.
var geminiSystemKeys = []string{"mcpServers", "mcp", "adminPolicyPaths", "hooks", "tools.discoveryCommand", "tools.callCommand",
	"tools.sandbox", "tools.exclude", "tools.core", "tools.shell.enableInteractiveShell", "security.folderTrust",
	"security.toolSandboxing", "advanced.ignoreLocalEnv", "general.checkpointing", "agents"}

// geminiSystem are this machine's own gemini-cli settings files and policies folder.
type geminiSystem struct {
	Settings, Defaults, Policies string
}

// systemGemini is where gemini-cli looks for this machine's settings, as its variables move
// them.
func systemGemini(getenv func(string) string) geminiSystem {
	s := geminiSystem{Settings: filepath.Join(geminiSystemDir, "settings.json"), Policies: filepath.Join(geminiSystemDir, "policies")}
	if v := getenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH"); v != "" {
		s.Settings = v
	}
	s.Defaults = filepath.Join(filepath.Dir(s.Settings), "system-defaults.json")
	if v := getenv("GEMINI_CLI_SYSTEM_DEFAULTS_PATH"); v != "" {
		s.Defaults = v
	}
	return s
}

// checkGeminiPlaces refuses a start where gemini-cli would read settings that run programs
// outside the sandbox or undo the routing: the project's .gemini/settings.json (in dir, the
// folder it starts in), a .gemini/.env it would load (dir's or a folder's above it, other
// than the person's own ~/.gemini/.env), and this machine's own settings and policies.
func checkGeminiPlaces(dir, home string, sys geminiSystem) error {
	if dir != "" {
		p := filepath.Join(dir, ".gemini", "settings.json")
		if keys, err := settingsKeys(p); err != nil {
			return err
		} else if bad := outside(keys, geminiProjectKeys); len(bad) > 0 {
			return settingsErrorf("gemini-cli reads the settings of the folder it starts in, %s, and they hold settings that could start programs outside the sandbox, "+
				"read files outside it or undo what routes gemini-cli through it: %s. Nothing was started: take them out of that file "+
				"(the sandbox keeps .gemini read-only, so a command in a session cannot have put them there), or run gemini-cli here without OpenWorker",
				p, strings.Join(bad, ", "))
		}
		for d := dir; ; d = filepath.Dir(d) {
			env := filepath.Join(d, ".gemini", ".env")
			if _, err := os.Lstat(env); err == nil && (home == "" || d != filepath.Clean(home)) {
				return settingsErrorf("gemini-cli loads %s into its own environment when it starts here, and a variable there can send its requests and "+
					"its key elsewhere, or have its Node.js load a program. Nothing was started: move the variables you need into your own "+
					"~/.gemini/.env or your environment, and remove that file", env)
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, p := range []string{sys.Settings, sys.Defaults} {
		keys, err := settingsKeys(p)
		if err != nil {
			return err
		}
		var bad []string
		for _, k := range keys {
			if covered(k, geminiSystemKeys) {
				bad = append(bad, k)
			}
		}
		if len(bad) > 0 {
			return settingsErrorf("this machine's gemini-cli settings, %s, outrank the ones openworker agent gives it, and hold %s. "+
				"Nothing was started: ask whoever manages this machine, or run gemini-cli without OpenWorker", p, strings.Join(bad, ", "))
		}
	}
	entries, _ := os.ReadDir(sys.Policies)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".toml") {
			return settingsErrorf("gemini-cli ignores --admin-policy on this machine, which has policies of its own in %s, so openworker agent cannot "+
				"switch off gemini-cli's own file tools, which would read and write outside the sandbox. Nothing was started: run gemini-cli without OpenWorker", sys.Policies)
		}
	}
	return nil
}

// settingsKeys are the leaves of a settings file's keys, as dotted paths ("tools.shell.pager";
// an object under mcpServers or hooks, a key there), or none where there is no file.
func settingsKeys(p string) ([]string, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, settingsErrorf("reading gemini-cli's settings %s: %v", p, err)
	}
	s, err := parseJSONC(b)
	if err != nil {
		return nil, settingsErrorf("gemini-cli's settings %s cannot be read as gemini-cli reads them (%v), so openworker agent cannot tell what they would run: correct the file", p, err)
	}
	var keys []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			path := prefix + k
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walk(path+".", sub)
				continue
			}
			keys = append(keys, path)
		}
	}
	walk("", s)
	slices.Sort(keys)
	return keys, nil
}

// outside are the keys that no entry of allowed covers.
func outside(keys, allowed []string) []string {
	var out []string
	for _, k := range keys {
		if !covered(k, allowed) {
			out = append(out, k)
		}
	}
	return out
}

// covered says whether key is one of list or under one of them.
func covered(key string, list []string) bool {
	for _, a := range list {
		if key == a || strings.HasPrefix(key, a+".") {
			return true
		}
	}
	return false
}

// getPath, setPath and deletePath read and change a settings tree by a dotted path.
func getPath(m map[string]any, path string) any {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		sub, ok := m[k].(map[string]any)
		if !ok {
			return nil
		}
		m = sub
	}
	return m[keys[len(keys)-1]]
}

func setPath(m map[string]any, path string, v any) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		sub, ok := m[k].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[k] = sub
		}
		m = sub
	}
	m[keys[len(keys)-1]] = v
}

func deletePath(m map[string]any, path string) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		sub, ok := m[k].(map[string]any)
		if !ok {
			return
		}
		m = sub
	}
	delete(m, keys[len(keys)-1])
}

// parseJSONC reads a settings file as gemini-cli does: JSON with // and /* */ comments, an
// object at the top.
func parseJSONC(b []byte) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(stripComments(b), &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("it is not a JSON object")
	}
	return m, nil
}

// stripComments blanks out // and /* */ comments outside strings, keeping the offsets.
func stripComments(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			j := i
			for ; j < len(out) && !(out[j] == '*' && j+1 < len(out) && out[j+1] == '/' && j > i+1); j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			if j+1 < len(out) {
				out[j], out[j+1] = ' ', ' '
			}
			i = j + 1
		}
	}
	return out
}
